// State formats and weight stores, and the one element-wise driver that every producer uses
// (host twin, host two-phase step, GPU fused epilogue, GPU standalone rule kernel): it loads a
// segment of weights and state, decodes, applies the rule, encodes, stores.
#pragma once
#include <string>

#include "kernels/common/bf16.h"
#include "kernels/common/philox.h"
#include "kernels/formats/int8_block.h"
#include "kernels/rules/rule_common.h"

namespace fh {

enum class StateFormat : uint8_t { fp32 = 0, bf16 = 1, int8 = 2 };
enum class WeightStore : uint8_t { fp32_master = 0, bf16_rne = 1, bf16_sr = 2 };

inline const char* state_format_name(StateFormat f) {
  switch (f) { case StateFormat::fp32: return "fp32"; case StateFormat::bf16: return "bf16";
               case StateFormat::int8: return "int8"; }
  return "?";
}
inline const char* weight_store_name(WeightStore w) {
  switch (w) { case WeightStore::fp32_master: return "fp32_master";
               case WeightStore::bf16_rne: return "bf16_rne"; case WeightStore::bf16_sr: return "bf16_sr"; }
  return "?";
}
// The names' inverses (host): false, `out` untouched, for a name that is none of them.
inline bool state_format_from_name(const std::string& s, StateFormat& out) {
  for (StateFormat f : {StateFormat::fp32, StateFormat::bf16, StateFormat::int8})
    if (s == state_format_name(f)) return out = f, true;
  return false;
}
inline bool weight_store_from_name(const std::string& s, WeightStore& out) {
  for (WeightStore w : {WeightStore::fp32_master, WeightStore::bf16_rne, WeightStore::bf16_sr})
    if (s == weight_store_name(w)) return out = w, true;
  return false;
}

// One optimizer-state tensor [rows, cols] in its format: one typed pointer set, the one of the
// format (f32, bf16 bit patterns, or i8: signed bytes for signed moments, with absmax [rows,
// blocks_per_row]), so that a float buffer handed over as bf16 state does not compile. None set:
// the rule keeps no such slot.
struct StateView {
  float* f32 = nullptr;
  fh::bf16* bf16 = nullptr;  // qualified: the member takes the type's name
  uint8_t* i8 = nullptr;
  float* absmax = nullptr;
  bool nonnegative = false;
  FH_HD bool present() const { return f32 != nullptr || bf16 != nullptr || i8 != nullptr; }
};
// The storage of format f (nullptr when absent), as bytes: for checks and digests, never values.
FH_HD const void* state_storage(const StateView& s, StateFormat f) {
  return f == StateFormat::fp32 ? static_cast<const void*>(s.f32)
                                : f == StateFormat::bf16 ? static_cast<const void*>(s.bf16) : static_cast<const void*>(s.i8);
}

// A weight (or a shard of one) and its state. Its memory space is in the type that carries it
// between producers (HostParamView, DeviceParamView below). Element (r, c) of this view is global element
// (row0 + r, col0 + c) of the full tensor, whose row length is global_cols; random bits and
// INT8 blocks are keyed by the global position.
struct ParamView {
  int64_t rows = 0, cols = 0;
  int64_t row0 = 0, col0 = 0, global_cols = 0;
  float* master = nullptr;     // fp32_master: the fp32 master weights
  fh::bf16* bf16 = nullptr;    // bf16 stores: the weights; fp32_master: the bf16 working copy
  StateView state[kMaxStates];
  sr_key sr;                   // bf16_sr: seed, step, tensor id
  FH_HD int64_t blocks_per_row() const { return (cols + kInt8Block - 1) / kInt8Block; }
};

// Where a view's memory is. The host producers take a HostParamView (HostParam::view()), the GPU
// entry points a DeviceParamView (DeviceParam::view(), the model step's pools), and neither
// converts to the other, so a host view handed to a kernel launch does not compile. Made from a
// plain ParamView only explicitly, where the memory is allocated; the kernels and the element-wise
// driver read the plain ParamView inside (suites/cpu/test_memory_spaces.cpp holds the rule).
enum class MemSpace : uint8_t { host, device };
template <MemSpace S>
struct ParamViewIn : ParamView {
  ParamViewIn() = default;
  explicit ParamViewIn(const ParamView& v) : ParamView(v) {}
};
using HostParamView = ParamViewIn<MemSpace::host>;
using DeviceParamView = ParamViewIn<MemSpace::device>;

FH_HD float load_state(const StateView& s, StateFormat f, int64_t idx) {
  switch (f) {
    case StateFormat::fp32: return s.f32[idx];
    case StateFormat::bf16: return bf16_to_float(s.bf16[idx]);
    default: return 0.0f;  // int8 is decoded per block by update_segment
  }
}
FH_HD void store_state(const StateView& s, StateFormat f, int64_t idx, float v) {
  switch (f) {
    case StateFormat::fp32: s.f32[idx] = v; break;
    case StateFormat::bf16: s.bf16[idx] = float_to_bf16_rne(v); break;
    default: break;
  }
}

FH_HD float load_weight(const ParamView& pv, WeightStore ws, int64_t idx) {
  return ws == WeightStore::fp32_master ? pv.master[idx] : bf16_to_float(pv.bf16[idx]);
}
FH_HD void store_weight(const ParamView& pv, WeightStore ws, int64_t idx, int64_t global_idx, float p) {
  switch (ws) {
    case WeightStore::fp32_master:
      pv.master[idx] = p;
      if (pv.bf16) pv.bf16[idx] = float_to_bf16_rne(p);  // the copy the forward pass reads
      break;
    case WeightStore::bf16_rne: pv.bf16[idx] = float_to_bf16_rne(p); break;
    case WeightStore::bf16_sr: pv.bf16[idx] = float_to_bf16_sr(p, sr_bits(pv.sr, uint64_t(global_idx))); break;
  }
}

// One element's weight and state, loaded (fp32 / bf16 state formats). Loading, updating and
// storing are separate pieces so that a GPU thread can load several elements before it updates
// the first (more loads in flight); each element's bits depend only on its own inputs.
// idx indexes the weight, sidx the state: they are equal except where a planted-defect suite
// points the state at the wrong row (kernels/gpu/fused_wgrad_update.cuh).
struct ElementValues {
  float p;
  float st[kMaxStates];
};

// kSlots: the rule's Rule::kStateSlots where the caller knows the rule (slots past it are 0).
template <StateFormat SF, WeightStore WS, int kSlots = kMaxStates>
FH_HD ElementValues load_element(const ParamView& pv, int64_t idx, int64_t sidx) {
  static_assert(SF != StateFormat::int8, "int8 state is decoded per block");
  ElementValues e;
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int k = 0; k < kMaxStates; ++k)
    e.st[k] = k < kSlots && pv.state[k].present() ? load_state(pv.state[k], SF, sidx) : 0.0f;
  e.p = load_weight(pv, WS, idx);
  return e;
}

template <StateFormat SF, WeightStore WS, int kSlots = kMaxStates>
FH_HD void store_element(const ParamView& pv, int64_t idx, int64_t sidx, int64_t global_idx,
                         const ElementValues& e) {
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int k = 0; k < kSlots; ++k)
    if (pv.state[k].present()) store_state(pv.state[k], SF, sidx, e.st[k]);
  store_weight(pv, WS, idx, global_idx, e.p);
}

// The global element index of view element (r, c): the key of its random bits.
FH_HD int64_t global_element_index(const ParamView& pv, int64_t r, int64_t c) {
  return (pv.row0 + r) * pv.global_cols + (pv.col0 + c);
}

// Update element (r, c) of the view with gradient g (fp32 / bf16 state): the element-wise step
// every producer applies, for the host loop and for a GPU thread alike.
template <class Rule, StateFormat SF, WeightStore WS>
FH_HD void update_element(const typename Rule::Scalars& s, const ParamView& pv, int64_t r, int64_t c, float g) {
  const int64_t idx = r * pv.cols + c;
  ElementValues e = load_element<SF, WS>(pv, idx, idx);
  Rule::update(s, e.p, g, e.st);
  store_element<SF, WS>(pv, idx, idx, global_element_index(pv, r, c), e);
}

// Update the segment [c0, c0 + n) of row r with gradient values g[0..n). For int8 state the
// segment must be exactly one block of the view: c0 % 64 == 0 and n == min(64, cols - c0)
// (callers guarantee it; the host entry points check it and refuse otherwise).
template <class Rule, StateFormat SF, WeightStore WS>
FH_HD void update_segment(const typename Rule::Scalars& s, const ParamView& pv, int64_t r,
                          int64_t c0, int n, const float* g) {
  if constexpr (SF != StateFormat::int8) {
    for (int i = 0; i < n; ++i) update_element<Rule, SF, WS>(s, pv, r, c0 + i, g[i]);
  } else {
    const int64_t base = r * pv.cols + c0;
    const int64_t blk = r * pv.blocks_per_row() + c0 / kInt8Block;
    float st_new[kMaxStates][kInt8Block];
    for (int i = 0; i < n; ++i) {
      float st[kMaxStates];
      for (int k = 0; k < kMaxStates; ++k) {
        const StateView& sv = pv.state[k];
        st[k] = sv.i8 ? int8_decode(sv.i8[base + i],
                                      sv.nonnegative, sv.absmax[blk]) : 0.0f;
      }
      float p = load_weight(pv, WS, base + i);
      Rule::update(s, p, g[i], st);
      for (int k = 0; k < kMaxStates; ++k) st_new[k][i] = st[k];
      store_weight(pv, WS, base + i, global_element_index(pv, r, c0 + i), p);
    }
    for (int k = 0; k < kMaxStates; ++k) {
      const StateView& sv = pv.state[k];
      if (!sv.i8) continue;
      int8_encode_block(st_new[k], n, sv.nonnegative, sv.i8 + base,
                        sv.absmax + blk);
    }
  }
}

#if defined(__CUDACC__)
// The int8 block of row r starting at column c0 (c0 % 64 == 0, n = min(64, cols - c0)), updated
// by one warp: lane l takes elements c0 + l and c0 + l + 32 (consecutive lanes, consecutive
// bytes), the old absmax of each slot is read once, the new one is a warp max-reduction. Same
// bits as update_segment's int8 path: decode, the rule and the per-element encode are the same
// functions, the max of magnitudes is exact and order independent, and a NaN absmax is stored
// canonical on both paths (int8_canonical_absmax). g(e) gives the gradient of element c0 + e.
// srow is the row whose state is used: r, except where a planted-defect suite points it
// elsewhere. Every lane of the warp must call it with the same r, srow, c0, n.
// Two pieces, so that a warp can issue the loads of several blocks before it updates the first
// (the fused kernel's epilogue): Int8BlockWarp::load, then Int8BlockWarp::update.
struct Int8BlockWarp {
  int64_t r, c0, base, sbase, blk;  // the weights' row and first column, element and block indices
  int n;
  float amax_old[kMaxStates];
  uint8_t qold[2][kMaxStates];
  float p[2];

  template <WeightStore WS>
  __device__ __forceinline__ void load(const ParamView& pv, int64_t r_, int64_t srow, int64_t c0_, int n_, int lane) {
    r = r_, c0 = c0_, n = n_;
    base = r * pv.cols + c0;                              // weights
    sbase = srow * pv.cols + c0;                          // state bytes
    blk = srow * pv.blocks_per_row() + c0 / kInt8Block;
#pragma unroll
    for (int k = 0; k < kMaxStates; ++k) amax_old[k] = pv.state[k].i8 ? pv.state[k].absmax[blk] : 0.0f;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int e = lane + 32 * h;
      const bool in = e < n;
      p[h] = in ? load_weight(pv, WS, base + e) : 0.0f;
#pragma unroll
      for (int k = 0; k < kMaxStates; ++k)
        qold[h][k] = (in && pv.state[k].i8) ? pv.state[k].i8[sbase + e] : uint8_t(0);
    }
  }

  template <class Rule, WeightStore WS, class GradAt>
  __device__ __forceinline__ void update(const typename Rule::Scalars& s, const ParamView& pv, GradAt g, int lane) {
    float st_new[2][kMaxStates];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int e = lane + 32 * h;
      float st[kMaxStates];
#pragma unroll
      for (int k = 0; k < kMaxStates; ++k)
        st[k] = pv.state[k].i8 ? int8_decode(qold[h][k], pv.state[k].nonnegative, amax_old[k]) : 0.0f;
      if (e < n) {
        Rule::update(s, p[h], g(e), st);
        store_weight(pv, WS, base + e, global_element_index(pv, r, c0 + e), p[h]);
      }
#pragma unroll
      for (int k = 0; k < kMaxStates; ++k) st_new[h][k] = e < n ? st[k] : 0.0f;  // +0 leaves the max alone
    }
#pragma unroll
    for (int k = 0; k < kMaxStates; ++k) {
      const StateView& sv = pv.state[k];
      if (!sv.i8) continue;  // uniform across the warp
      float a = int8_absmax_step(int8_absmax_step(0.0f, st_new[0][k]), st_new[1][k]);
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) a = fmax_nan(a, __shfl_xor_sync(0xffffffffu, a, off));
      a = int8_canonical_absmax(a);
      uint8_t* q = sv.i8 + sbase;
#pragma unroll
      for (int h = 0; h < 2; ++h)
        if (lane + 32 * h < n) q[lane + 32 * h] = int8_encode_value(st_new[h][k], a, sv.nonnegative);
      // Every lane read the old absmax before the shuffles above, which wait for the whole warp.
      if (lane == 0) sv.absmax[blk] = a;
    }
  }
};

template <class Rule, WeightStore WS, class GradAt>
__device__ __forceinline__ void update_int8_block_warp(const typename Rule::Scalars& s, const ParamView& pv,
                                                       int64_t r, int64_t srow, int64_t c0, int n,
                                                       GradAt g, int lane) {
  Int8BlockWarp b;
  b.load<WS>(pv, r, srow, c0, n, lane);
  b.update<Rule, WS>(s, pv, g, lane);
}
#endif

}  // namespace fh
