// State formats and weight stores, and the one element-wise driver that every producer uses
// (host twin, host two-phase step, GPU fused epilogue, GPU standalone rule kernel): it loads a
// segment of weights and state, decodes, applies the rule, encodes, stores.
#pragma once
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

// One optimizer-state tensor [rows, cols] in its format. data: float* (fp32), uint16_t* (bf16),
// uint8_t* (int8, signed bytes for signed moments). absmax: int8 only, [rows, blocks_per_row].
struct StateView {
  void* data = nullptr;
  float* absmax = nullptr;
  bool nonnegative = false;
};

// A weight (or a shard of one) and its state. Pointers are host or device memory, matching the
// producer that uses the view. Element (r, c) of this view is global element
// (row0 + r, col0 + c) of the full tensor, whose row length is global_cols; random bits and
// INT8 blocks are keyed by the global position.
struct ParamView {
  int64_t rows = 0, cols = 0;
  int64_t row0 = 0, col0 = 0, global_cols = 0;
  float* master = nullptr;     // fp32_master: the fp32 master weights
  uint16_t* bf16 = nullptr;    // bf16 stores: the weights; fp32_master: the bf16 working copy
  StateView state[kMaxStates];
  sr_key sr;                   // bf16_sr: seed, step, tensor id
  FH_HD int64_t blocks_per_row() const { return (cols + kInt8Block - 1) / kInt8Block; }
};

FH_HD float load_state(const StateView& s, StateFormat f, int64_t idx) {
  switch (f) {
    case StateFormat::fp32: return static_cast<const float*>(s.data)[idx];
    case StateFormat::bf16: return bf16_to_float(static_cast<const uint16_t*>(s.data)[idx]);
    default: return 0.0f;  // int8 is decoded per block by update_segment
  }
}
FH_HD void store_state(const StateView& s, StateFormat f, int64_t idx, float v) {
  switch (f) {
    case StateFormat::fp32: static_cast<float*>(s.data)[idx] = v; break;
    case StateFormat::bf16: static_cast<uint16_t*>(s.data)[idx] = float_to_bf16_rne(v); break;
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

// Update the segment [c0, c0 + n) of row r with gradient values g[0..n). For int8 state the
// segment must be exactly one block of the view: c0 % 64 == 0 and n == min(64, cols - c0)
// (callers guarantee it; the host entry points check it and refuse otherwise).
template <class Rule, StateFormat SF, WeightStore WS>
FH_HD void update_segment(const typename Rule::Scalars& s, const ParamView& pv, int64_t r,
                          int64_t c0, int n, const float* g) {
  const int64_t base = r * pv.cols + c0;
  const int64_t gbase = (pv.row0 + r) * pv.global_cols + (pv.col0 + c0);
  if constexpr (SF != StateFormat::int8) {
    for (int i = 0; i < n; ++i) {
      float st[kMaxStates];
      for (int k = 0; k < kMaxStates; ++k)
        st[k] = pv.state[k].data ? load_state(pv.state[k], SF, base + i) : 0.0f;
      float p = load_weight(pv, WS, base + i);
      Rule::update(s, p, g[i], st);
      for (int k = 0; k < kMaxStates; ++k)
        if (pv.state[k].data) store_state(pv.state[k], SF, base + i, st[k]);
      store_weight(pv, WS, base + i, gbase + i, p);
    }
  } else {
    const int64_t blk = r * pv.blocks_per_row() + c0 / kInt8Block;
    float st_new[kMaxStates][kInt8Block];
    for (int i = 0; i < n; ++i) {
      float st[kMaxStates];
      for (int k = 0; k < kMaxStates; ++k) {
        const StateView& sv = pv.state[k];
        st[k] = sv.data ? int8_decode(static_cast<const uint8_t*>(sv.data)[base + i],
                                      sv.nonnegative, sv.absmax[blk]) : 0.0f;
      }
      float p = load_weight(pv, WS, base + i);
      Rule::update(s, p, g[i], st);
      for (int k = 0; k < kMaxStates; ++k) st_new[k][i] = st[k];
      store_weight(pv, WS, base + i, gbase + i, p);
    }
    for (int k = 0; k < kMaxStates; ++k) {
      const StateView& sv = pv.state[k];
      if (!sv.data) continue;
      int8_encode_block(st_new[k], n, sv.nonnegative, static_cast<uint8_t*>(sv.data) + base,
                        sv.absmax + blk);
    }
  }
}

}  // namespace fh
