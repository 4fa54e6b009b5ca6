// The fused wgrad-plus-update kernel (FORGE): each block computes one TR x TC tile of
// G = dY^T X with the shared mainloop, parks the fp32 tile in shared memory (no byte of G reaches
// global memory) and applies the rule to it with the element-wise pieces every producer uses
// (fh::update_element's load / update / store; for int8 state Int8BlockQuad below, the per-element
// functions of fh::Int8BlockWarp on half-warps), in a
// coalesced order: consecutive lanes take consecutive four-column quads, moved with vector
// accesses (kernels/gpu/NOTES.md records the measurements). Also the order-matched materializer kernel (same
// mainloop, stores G).
// Instantiated per rule family in kernels/gpu/rule_family_*.cu.
#pragma once
#include <stdexcept>
#include <string>

#include "kernels/formats/formats.h"
#include "kernels/gpu/gpu_api.h"
#include "kernels/gpu/speculative_update.cuh"
#include "kernels/gpu/wgrad_mainloop.cuh"

namespace fh::gpu {

// Epilogue batch (fp32 / bf16 state): two quads (eight elements) per thread, each with its
// weight and state loads issued together; two batches in flight (a software pipeline).
constexpr int kFusedEpilogueQuads = 2;
// Whole tiles prefetch their epilogue's weight and state lines into L2 kFusedPrefetchPasses passes
// before loading them, and the first kFusedEarlyPrefetchPasses passes' lines while the mainloop
// multiplies its kFusedEarlyPrefetchChunks-th chunk from the end, so that the epilogue's loads do not
// wait on DRAM (the runner's sweep found 4 / 4 / 2 fastest; longer distances lost).
constexpr int kFusedPrefetchPasses = 2 * kFusedEpilogueQuads;
constexpr int kFusedEarlyPrefetchPasses = 4;
constexpr int kFusedEarlyPrefetchChunks = 2;
// The mainloop chunk (of nchunks) during which a whole tile's early prefetch is issued.
__device__ __forceinline__ bool early_prefetch_chunk(int64_t chunk, int64_t nchunks) {
  return chunk == (nchunks > kFusedEarlyPrefetchChunks ? nchunks - kFusedEarlyPrefetchChunks : 0);
}

// Four consecutive fp32 or bf16 values as floats, from one vector's bits.
__device__ __forceinline__ void unpack4(float4 x, float (&v)[4]) { v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w; }
__device__ __forceinline__ void unpack4(uint2 x, float (&v)[4]) {
  v[0] = bf16_to_float(bf16_low(x.x)), v[1] = bf16_to_float(bf16_high(x.x));
  v[2] = bf16_to_float(bf16_low(x.y)), v[3] = bf16_to_float(bf16_high(x.y));
}
// Four consecutive fp32 or bf16 values, one vector access. Streaming cache hints: the epilogue
// touches each weight and state byte once, and the operands should keep the L2.
__device__ __forceinline__ void load4(const float* p, float (&v)[4]) {
  unpack4(__ldcs(reinterpret_cast<const float4*>(p)), v);
}
__device__ __forceinline__ void load4(const bf16* p, float (&v)[4]) {
  unpack4(__ldcs(reinterpret_cast<const uint2*>(p)), v);
}
// L2 prefetch of the line holding p: no register waits for it.
__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

__device__ __forceinline__ void store4(float* p, const float (&v)[4]) {
  __stcs(reinterpret_cast<float4*>(p), make_float4(v[0], v[1], v[2], v[3]));
}
__device__ __forceinline__ void store4(bf16* p, const bf16 (&b)[4]) {
  __stcs(reinterpret_cast<uint2*>(p), make_uint2(bf16_pack2(b[0], b[1]), bf16_pack2(b[2], b[3])));
}

// Elements idx .. idx + 3 (state sidx .. sidx + 3) with one vector access per array: the same
// values load_element / store_element give element by element (launch_fused_cfg checks the
// alignment: fused_params_vec4). States past the rule's kStateSlots are never kept.
template <class Rule, StateFormat SF, WeightStore WS>
__device__ __forceinline__ void load_quad(const ParamView& pv, int64_t idx, int64_t sidx, ElementValues (&e)[4]) {
  float v[4];
#pragma unroll
  for (int k = 0; k < kMaxStates; ++k) {
    if (k < Rule::kStateSlots && pv.state[k].present()) {
      if constexpr (SF == StateFormat::fp32)
        load4(pv.state[k].f32 + sidx, v);
      else
        load4(pv.state[k].bf16 + sidx, v);
    } else {
      v[0] = v[1] = v[2] = v[3] = 0.0f;
    }
#pragma unroll
    for (int b = 0; b < 4; ++b) e[b].st[k] = v[b];
  }
  if constexpr (WS == WeightStore::fp32_master)
    load4(pv.master + idx, v);
  else
    load4(pv.bf16 + idx, v);
#pragma unroll
  for (int b = 0; b < 4; ++b) e[b].p = v[b];
}
// L2 prefetch of the weight and state lines of a whole-tile epilogue pass, from the pass's
// first element index idx in the view.
template <class Rule, StateFormat SF, WeightStore WS>
__device__ __forceinline__ void prefetch_quad_lines(const ParamView& pv, int64_t idx) {
  constexpr int ebytes = SF == StateFormat::fp32 ? 4 : 2;
#pragma unroll
  for (int k = 0; k < Rule::kStateSlots; ++k)
    if (pv.state[k].present())
      prefetch_l2(SF == StateFormat::fp32 ? static_cast<const void*>(pv.state[k].f32 + idx) : pv.state[k].bf16 + idx);
  if constexpr (WS == WeightStore::fp32_master)
    prefetch_l2(pv.master + idx);
  else
    prefetch_l2(pv.bf16 + idx);
}
// L2 prefetch of the first kPasses epilogue passes of a whole piece of a tile at (o0, i0), ahead
// of its loads (the same lines the epilogue's own prefetch would take, earlier); first: this
// thread's quad in pass 0 (epilogue_quad<Cfg>(tid, 0)).
template <class Cfg, class Rule, StateFormat SF, WeightStore WS, int kPasses = Cfg::kEarlyPrefetchPasses>
__device__ __forceinline__ void prefetch_first_passes(const ParamView& pv, FragCoord first, int64_t o0, int64_t i0) {
  static_assert(kPasses <= Cfg::kQuadPasses, "early prefetch past the piece");
  const int64_t idx_first = (o0 + first.row) * pv.cols + (i0 + first.col);
#pragma unroll
  for (int j = 0; j < kPasses; ++j)
    prefetch_quad_lines<Rule, SF, WS>(pv, idx_first + j * int64_t(Cfg::kQuadRowsPerPass) * pv.cols);
}

template <class Rule, StateFormat SF, WeightStore WS>
__device__ __forceinline__ void store_quad(const ParamView& pv, int64_t idx, int64_t sidx, int64_t gidx,
                                           const ElementValues (&e)[4]) {
  float v[4];
  bf16 h[4];
#pragma unroll
  for (int k = 0; k < Rule::kStateSlots; ++k) {
    if (!pv.state[k].present()) continue;
    if constexpr (SF == StateFormat::fp32) {
#pragma unroll
      for (int b = 0; b < 4; ++b) v[b] = e[b].st[k];
      store4(pv.state[k].f32 + sidx, v);
    } else {
#pragma unroll
      for (int b = 0; b < 4; ++b) h[b] = float_to_bf16_rne(e[b].st[k]);
      store4(pv.state[k].bf16 + sidx, h);
    }
  }
#pragma unroll
  for (int b = 0; b < 4; ++b) {
    v[b] = e[b].p;
    h[b] = WS == WeightStore::bf16_sr ? float_to_bf16_sr(e[b].p, sr_bits(pv.sr, uint64_t(gidx + b)))
                                      : float_to_bf16_rne(e[b].p);
  }
  if constexpr (WS == WeightStore::fp32_master) {
    store4(pv.master + idx, v);
    if (pv.bf16) store4(pv.bf16 + idx, h);  // the copy the forward pass reads
  } else {
    store4(pv.bf16 + idx, h);
  }
}

// Does an epilogue geometry load G with its batch's weights and state (Cfg::kGWithBatch, where G is
// in global memory), or at the update (absent or false: G in shared memory)?
template <class Cfg>
__host__ __device__ constexpr bool epilogue_g_with_batch() {
  if constexpr (requires { Cfg::kGWithBatch; })
    return Cfg::kGWithBatch;
  else
    return false;
}

// fp32 / bf16 state: pass j of thread tid takes the tile's quad epilogue_quad(tid, j), four
// consecutive columns, moved with vector accesses where the whole quad is in the view and `vec`
// (fused_params_vec4) holds, element by element otherwise (ragged edges). Each element is the same
// update_element step the host applies. The batches are software pipelined: batch k + 1's loads
// are issued before batch k is updated and stored. kWholeTile: the tile lies wholly inside the
// view and every quad moves by vectors, so each pass's indices are pass 0's plus constant steps
// (no per-quad bounds or index arithmetic; same elements, same order).
template <class Cfg, class Rule, StateFormat SF, WeightStore WS, bool kWholeTile>
__device__ __forceinline__ void fused_epilogue_quads(const typename Rule::Scalars& s, const ParamView& pv,
                                                     const float* sG, int64_t o0, int64_t i0, bool vec,
                                                     const FragCoord& first, int tid, int rows = Cfg::TR) {
  constexpr int Q = Cfg::kEpilogueQuads;
  static_assert(Cfg::kQuadPasses % (2 * Q) == 0, "pairs of batches must divide the passes");
  // The piece's first `rows` rows only (a multiple of Cfg::kQuadRowsPerPass * 2 * Q).
  const int passes = rows * (Cfg::TC / 4) / Cfg::kThreads;
  // Only the weight and state values stay live across a batch: indices are recomputed and G is
  // read from the tile at the update (fewer registers), except where the tile is in global memory
  // (epilogue_g_with_batch: an L2 round trip at each update otherwise; v49).
  constexpr bool kGWithBatch = epilogue_g_with_batch<Cfg>();
  struct Batch {
    ElementValues e[Q][4];
    float g[kGWithBatch ? Q : 1][4];
  };
  auto load_g = [&](FragCoord t, float (&g)[4]) {
    const float4 g4 = *reinterpret_cast<const float4*>(sG + t.row * Cfg::kLdG + t.col);
    g[0] = g4.x, g[1] = g4.y, g[2] = g4.z, g[3] = g4.w;
  };
  const int64_t idx_first = (o0 + first.row) * pv.cols + (i0 + first.col), idx_step = Cfg::kQuadRowsPerPass * pv.cols;
  // The key of tile element t's random bits (bf16_sr): its global index.
  auto bits_key = [&](FragCoord t) { return global_element_index(pv, o0 + t.row, i0 + t.col); };
  const int64_t gidx_first = bits_key(first);
  const int64_t gidx_step = int64_t(Cfg::kQuadRowsPerPass) * pv.global_cols;
  auto where = [&](int pass, FragCoord& t, int64_t& r, int64_t& c) {
    t = kWholeTile ? FragCoord{first.row + pass * Cfg::kQuadRowsPerPass, first.col} : epilogue_quad<Cfg>(tid, pass);
    r = o0 + t.row;
    c = i0 + t.col;
  };
  auto in_view = [&](int64_t r, int64_t c) {
    return kWholeTile || (r < pv.rows && c < pv.cols);
  };
  auto whole_quad = [&](int64_t r, int64_t c) {
    return kWholeTile || (vec && r < pv.rows && c + 3 < pv.cols);
  };
  auto index = [&](int pass, int64_t r, int64_t c) { return kWholeTile ? idx_first + pass * idx_step : r * pv.cols + c; };
  // Whole tile: pass j's weight and state lines are prefetched into L2 Cfg::kPrefetchPasses
  // passes before they are loaded, so the loads' DRAM latency is not waited for in registers.
  auto prefetch = [&](int pass) {
    if constexpr (kWholeTile)
      if (pass < passes) prefetch_quad_lines<Rule, SF, WS>(pv, idx_first + pass * idx_step);
  };
  auto load = [&](int j0, Batch& x) {
#pragma unroll
    for (int q = 0; q < Q; ++q) {
      prefetch(j0 + q + Cfg::kPrefetchPasses);
      FragCoord t;
      int64_t r, c;
      where(j0 + q, t, r, c);
      const int64_t idx = index(j0 + q, r, c);
      if constexpr (kGWithBatch) load_g(t, x.g[q]);
      if (whole_quad(r, c)) {
        load_quad<Rule, SF, WS>(pv, idx, idx, x.e[q]);
      } else {
#pragma unroll
        for (int b = 0; b < 4; ++b)
          if (in_view(r, c + b))
            x.e[q][b] = load_element<SF, WS, Rule::kStateSlots>(pv, idx + b, idx + b);
      }
    }
  };
  auto update_and_store = [&](int j0, Batch& x) {
#pragma unroll
    for (int q = 0; q < Q; ++q) {
      FragCoord t;
      int64_t r, c;
      where(j0 + q, t, r, c);
      const int64_t idx = index(j0 + q, r, c);
      const int64_t gidx = kWholeTile ? gidx_first + (j0 + q) * gidx_step : bits_key(t);
      float g[4];
      if constexpr (kGWithBatch) {
#pragma unroll
        for (int b = 0; b < 4; ++b) g[b] = x.g[q][b];
      } else {
        load_g(t, g);
      }
      if (whole_quad(r, c)) {
        // The quad's four updates interleave (speculative_update.cuh); a quad that leaves the fast
        // range reloads.
        update_speculative<Rule, 4>(s, x.e[q], g, [&](ElementValues(&e)[4]) { load_quad<Rule, SF, WS>(pv, idx, idx, e); });
        store_quad<Rule, SF, WS>(pv, idx, idx, gidx, x.e[q]);
      } else {
#pragma unroll
        for (int b = 0; b < 4; ++b) {
          if (!in_view(r, c + b)) continue;
          Rule::update(s, x.e[q][b].p, g[b], x.e[q][b].st);
          store_element<SF, WS, Rule::kStateSlots>(pv, idx + b, idx + b, gidx + b, x.e[q][b]);
        }
      }
    }
  };
  Batch x0, x1;
  // A whole tile's first Cfg::kEarlyPrefetchPasses passes were prefetched during the mainloop.
#pragma unroll
  for (int j = kWholeTile ? Cfg::kEarlyPrefetchPasses : 0; j < Cfg::kPrefetchPasses; ++j) prefetch(j);
  load(0, x0);
#pragma unroll 1
  for (int j0 = 0; j0 < passes; j0 += 2 * Q) {
    load(j0 + Q, x1);
    update_and_store(j0, x0);
    if (j0 + 2 * Q < passes) load(j0 + 2 * Q, x0);
    update_and_store(j0 + Q, x1);
  }
}

// L2 prefetch of the lines one int8 block (row r, columns c0 .. c0 + 63, state row srow) touches,
// one line per lane: the fp32 master's two lines, the bf16 copy's, each state's bytes and its
// absmax. A warp's int8 passes run one after another, each waiting on its loads, so a pass whose
// lines are already in L2 waits for L2 and not for DRAM. Addresses stay inside the block's row.
template <class Rule, WeightStore WS>
__device__ __forceinline__ void prefetch_int8_block(const ParamView& pv, int64_t r, int64_t srow, int64_t c0, int lane) {
  if (r >= pv.rows || c0 >= pv.cols) return;
  const int64_t base = r * pv.cols + c0, sbase = srow * pv.cols + c0;
  const int64_t blk = srow * pv.blocks_per_row() + c0 / kInt8Block;
  const int64_t last = (pv.cols - c0 < kInt8Block ? pv.cols - c0 : kInt8Block) - 1;
  const void* p = nullptr;
  if (lane < 2) {
    if (WS == WeightStore::fp32_master) p = pv.master + base + (lane == 0 ? 0 : (last < 32 ? last : 32));
  } else if (lane == 2) {
    if (pv.bf16) p = pv.bf16 + base;
  } else if (lane < 3 + Rule::kStateSlots) {
    if (pv.state[lane - 3].i8) p = pv.state[lane - 3].i8 + sbase;
  } else if (lane < 3 + 2 * Rule::kStateSlots) {
    const StateView& sv = pv.state[lane - 3 - Rule::kStateSlots];
    if (sv.i8) p = sv.absmax + blk;
  }
  if (p) prefetch_l2(p);
}
// Can Int8BlockQuad move whole blocks with vector accesses? Row length a multiple of 4 and each
// array aligned to a quad's bytes (fused_params_vec4's test, 4-byte codes).
__device__ __forceinline__ bool int8_params_vec4(const ParamView& pv) {
  auto aligned = [](const void* p, uintptr_t n) { return reinterpret_cast<uintptr_t>(p) % n == 0; };
  bool ok = pv.cols % 4 == 0 && aligned(pv.master, 16) && aligned(pv.bf16, 8);
  for (const StateView& sv : pv.state) ok = ok && aligned(sv.i8, 4);
  return ok;
}
// The int8 epilogue's passes in flight per warp (loads of kInt8PassesInFlight blocks issued
// before the first is updated) and its prefetch distance (the next group's lines).
constexpr int kInt8PassesInFlight = 4;
constexpr int kInt8PrefetchPasses = kInt8PassesInFlight;
template <class Cfg, class Rule, WeightStore WS>
__device__ __forceinline__ void prefetch_int8_pass(const ParamView& pv, int64_t o0, int64_t i0, int warp, int pass,
                                                   int lane, int block_passes = Cfg::kBlockPasses) {
  if (pass >= block_passes) return;
  const FragCoord b = epilogue_int8_block<Cfg>(warp, pass);
  prefetch_int8_block<Rule, WS>(pv, o0 + b.row, o0 + b.row, i0 + b.col, lane);
}

// One 64-column int8 block on a half-warp, four consecutive elements a lane (l16: the lane's index
// in its half): the fused epilogue's form of Int8BlockWarp (formats.h), with half the passes and
// vector loads and stores where the block is whole and the arrays aligned (vec4), element by
// element otherwise. The same per-element functions (int8_decode, Rule::update, store_weight's
// roundings, int8_encode_value), and the new absmax is the max over the same 64 values (any order:
// int8_absmax_step, NaN made canonical), so the same bits as the warp form and the twin. A half
// with no block (n = 0) loads and stores nothing but joins the shuffles.
struct Int8BlockQuad {
  int64_t r, c0, base, sbase, blk;
  int n;
  bool vec4;
  float amax_old[kMaxStates];
  uint32_t qold[kMaxStates];  // element 4 * l16 + i's code in byte i
  float p[4];

  // The lane's four weights (recompute reads them again: they are stored only after it).
  template <WeightStore WS, bool Whole>
  __device__ __forceinline__ void load_weights(const ParamView& pv, int l16) {
    const int e0 = 4 * l16;
    if (Whole || vec4) {
      if constexpr (WS == WeightStore::fp32_master) {
        const float4 v = *reinterpret_cast<const float4*>(pv.master + base + e0);
        p[0] = v.x, p[1] = v.y, p[2] = v.z, p[3] = v.w;
      } else {
        const uint2 v = *reinterpret_cast<const uint2*>(pv.bf16 + base + e0);
        p[0] = bf16_to_float(bf16_low(v.x)), p[1] = bf16_to_float(bf16_high(v.x));
        p[2] = bf16_to_float(bf16_low(v.y)), p[3] = bf16_to_float(bf16_high(v.y));
      }
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) p[i] = e0 + i < n ? load_weight(pv, WS, base + e0 + i) : 0.0f;
    }
  }
  // Whole: the caller knows the block is whole and the arrays aligned (vec4 at compile time).
  template <WeightStore WS, bool Whole>
  __device__ __forceinline__ void load(const ParamView& pv, int64_t r_, int64_t srow, int64_t c0_, int n_,
                                       bool aligned, int l16) {
    r = r_, c0 = c0_, n = n_;
    base = r * pv.cols + c0;
    sbase = srow * pv.cols + c0;
    blk = srow * pv.blocks_per_row() + c0 / kInt8Block;
    vec4 = Whole || (aligned && n == kInt8Block);
    const int e0 = 4 * l16;
#pragma unroll
    for (int k = 0; k < kMaxStates; ++k) amax_old[k] = ((Whole || n > 0) && pv.state[k].i8) ? pv.state[k].absmax[blk] : 0.0f;
    load_weights<WS, Whole>(pv, l16);
    if (Whole || vec4) {
#pragma unroll
      for (int k = 0; k < kMaxStates; ++k)
        qold[k] = pv.state[k].i8
                      ? *reinterpret_cast<const uint32_t*>(pv.state[k].i8 + sbase + e0)
                      : 0u;
    } else {
#pragma unroll
      for (int k = 0; k < kMaxStates; ++k) {
        uint32_t q = 0;
        const uint8_t* bytes = pv.state[k].i8;
#pragma unroll
        for (int i = 0; i < 4; ++i)
          if (bytes && e0 + i < n) q |= uint32_t(bytes[sbase + e0 + i]) << (8 * i);
        qold[k] = q;
      }
    }
  }

  // The four elements' decode and update, the rule dividing with policy D (st_new: the new states, +0 past
  // the block's end, where it leaves the max alone).
  template <class Rule, bool Whole, class D>
  __device__ __forceinline__ void step4(const typename Rule::Scalars& s, const ParamView& pv, const float (&g)[4],
                                        int e0, float (&st_new)[4][kMaxStates], const D& d) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float st[kMaxStates];
#pragma unroll
      for (int k = 0; k < kMaxStates; ++k)
        st[k] = pv.state[k].i8 ? int8_decode(uint8_t(qold[k] >> (8 * i)), pv.state[k].nonnegative, amax_old[k]) : 0.0f;
      const bool in = Whole || e0 + i < n;
      if (in) Rule::update(s, p[i], g[i], st, d);
#pragma unroll
      for (int k = 0; k < kMaxStates; ++k) st_new[i][k] = in ? st[k] : 0.0f;
    }
  }

  // The phases of a block's update, so that the caller runs its pairs side by side with one redo
  // branch for all of them (a branch per block split the code into blocks the compiler could not
  // interleave, NOTES.md v34):
  //   compute      G and the four updates with the branch-free division and square root; bad |=
  //                a lane's operation left the fast range;
  //   recompute    the four again with the IEEE path from the same inputs (the weights read
  //                again: they are stored after it); the same bits where the fast path was in
  //                range, so redoing a block that was fine changes nothing;
  //   store_weights, then per state: new_absmax, encode (speculating too, with its own redo by
  //                the caller), store_state.
  float g[4];
  float st_new[4][kMaxStates];  // the new states, +0 past the block's end (leaves the max alone)

  template <class Rule, bool Whole>
  __device__ __forceinline__ void compute(const typename Rule::Scalars& s, const ParamView& pv, const float* grow,
                                          int l16, bool& bad) {
    const int e0 = 4 * l16;
    if (Whole || vec4) {
      const float4 v = *reinterpret_cast<const float4*>(grow + e0);
      g[0] = v.x, g[1] = v.y, g[2] = v.z, g[3] = v.w;
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) g[i] = e0 + i < n ? grow[e0 + i] : 0.0f;
    }
    step4<Rule, Whole>(s, pv, g, e0, st_new, SpeculativeDivSqrt{&bad});
  }
  template <class Rule, WeightStore WS, bool Whole>
  __device__ __forceinline__ void recompute(const typename Rule::Scalars& s, const ParamView& pv, int l16) {
    load_weights<WS, Whole>(pv, l16);
    step4<Rule, Whole>(s, pv, g, 4 * l16, st_new, IeeeDivSqrt{});
  }
  template <WeightStore WS, bool Whole>
  __device__ __forceinline__ void store_weights(const ParamView& pv, int l16) {
    const int e0 = 4 * l16;
    bf16 wb[4];  // the bf16 weights (or fp32 master's bf16 copy) to store
#pragma unroll
    for (int i = 0; i < 4; ++i)
      wb[i] = WS == WeightStore::bf16_sr
                  ? float_to_bf16_sr(p[i], sr_bits(pv.sr, uint64_t(global_element_index(pv, r, c0 + e0 + i))))
                  : float_to_bf16_rne(p[i]);
    // store_weight's stores, four at a time where whole.
    if (Whole || vec4) {
      if constexpr (WS == WeightStore::fp32_master)
        *reinterpret_cast<float4*>(pv.master + base + e0) = make_float4(p[0], p[1], p[2], p[3]);
      if (WS != WeightStore::fp32_master || pv.bf16)
        *reinterpret_cast<uint2*>(pv.bf16 + base + e0) =
            make_uint2(bf16_pack2(wb[0], wb[1]), bf16_pack2(wb[2], wb[3]));
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if (e0 + i >= n) continue;
        if (WS == WeightStore::fp32_master) pv.master[base + e0 + i] = p[i];
        if (WS != WeightStore::fp32_master || pv.bf16) pv.bf16[base + e0 + i] = wb[i];
      }
    }
  }
  // State k's new absmax: the max over the half's 64 new values (NaN canonical). Every lane of
  // the half read the old absmax in load, before any lane stores the new one.
  __device__ __forceinline__ float new_absmax(int k) const {
    float a = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) a = int8_absmax_step(a, st_new[i][k]);
#pragma unroll
    for (int off = 8; off > 0; off >>= 1) a = fmax_nan(a, __shfl_xor_sync(0xffffffffu, a, off));  // within the half
    return int8_canonical_absmax(a);
  }
  // The lane's four codes of state k in bytes 0..3, dividing with policy D.
  template <class D>
  __device__ __forceinline__ uint32_t encode(int k, float a, bool nonnegative, const D& d) const {
    uint32_t q = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) q |= uint32_t(int8_encode_value(st_new[i][k], a, nonnegative, d)) << (8 * i);
    return q;
  }
  template <bool Whole>
  __device__ __forceinline__ void store_state(const ParamView& pv, int k, float a, uint32_t q, int l16) const {
    const int e0 = 4 * l16;
    uint8_t* bytes = pv.state[k].i8 + sbase + e0;
    if (Whole || vec4) {
      *reinterpret_cast<uint32_t*>(bytes) = q;
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i)
        if (e0 + i < n) bytes[i] = uint8_t(q >> (8 * i));
    }
    if (l16 == 0 && (Whole || n > 0)) pv.state[k].absmax[blk] = a;
  }
};

// int8 state (warp: the warp's index among the Cfg::kWarps that run the epilogue): pass j of warp w
// takes the tile's 64-column block w + kWarps * j (epilogue_int8_block); the warp's two halves take
// passes j and j + 1 together (Int8BlockQuad: four elements a lane, the new absmax a half-warp
// reduction). The passes go in groups of kInt8PassesInFlight: the group's loads, then its updates
// (each pass waiting on its own loads was latency bound, kernels/gpu/NOTES.md v29). Blocks are
// distinct, so the order of passes changes no bit. Whole (the tile inside the tensor, the arrays
// aligned): every block whole, no edge tests, and no L2 prefetch (its
// instructions cost more than it saved, NOTES.md v33); otherwise each block is measured and the
// next group's lines are prefetched.
template <class Cfg, class Rule, WeightStore WS, bool Whole>
__device__ __forceinline__ void int8_epilogue_passes(const typename Rule::Scalars& s, const ParamView& pv,
                                                     const float* sG, int64_t o0, int64_t i0, bool aligned,
                                                     int warp, int block_passes) {
  constexpr int U = kInt8PassesInFlight, kPairs = U / 2;
  static_assert(Cfg::kBlockPasses % U == 0 && U % 2 == 0, "whole groups of int8 pass pairs");
  const int lane = threadIdx.x & 31, half = lane >> 4, l16 = lane & 15;
  if constexpr (!Whole) {
#pragma unroll
    for (int j = 0; j < U; ++j) prefetch_int8_pass<Cfg, Rule, WS>(pv, o0, i0, warp, j, lane, block_passes);
  }
#pragma unroll 1
  for (int j0 = 0; j0 < block_passes; j0 += U) {
    if constexpr (!Whole) {
#pragma unroll
      for (int u = 0; u < U; ++u) prefetch_int8_pass<Cfg, Rule, WS>(pv, o0, i0, warp, j0 + U + u, lane, block_passes);
    }
    Int8BlockQuad blocks[kPairs];
#pragma unroll
    for (int u = 0; u < kPairs; ++u) {
      const FragCoord b = epilogue_int8_block<Cfg>(warp, j0 + 2 * u + half);
      const int64_t r = o0 + b.row, c0 = i0 + b.col;
      int n = kInt8Block;
      if constexpr (!Whole) {
        const int64_t left = pv.cols - c0;
        n = (r < pv.rows && c0 < pv.cols) ? (left < kInt8Block ? int(left) : kInt8Block) : 0;
      }
      blocks[u].template load<WS, Whole>(pv, r, r, c0, n, aligned, l16);
    }
    // The group's pairs side by side, one redo branch each for the updates and the encodes.
    bool bad = false;
#pragma unroll
    for (int u = 0; u < kPairs; ++u) {
      const FragCoord b = epilogue_int8_block<Cfg>(warp, j0 + 2 * u + half);
      blocks[u].template compute<Rule, Whole>(s, pv, sG + b.row * Cfg::kLdG + b.col, l16, bad);
    }
    if (bad) {
#pragma unroll
      for (int u = 0; u < kPairs; ++u) blocks[u].template recompute<Rule, WS, Whole>(s, pv, l16);
    }
#pragma unroll
    for (int u = 0; u < kPairs; ++u) blocks[u].template store_weights<WS, Whole>(pv, l16);
#pragma unroll
    for (int k = 0; k < kMaxStates; ++k) {
      const StateView& sv = pv.state[k];
      if (!sv.i8) continue;  // uniform across the warp
      float a[kPairs];
      uint32_t q[kPairs];
      bool enc_bad = false;
#pragma unroll
      for (int u = 0; u < kPairs; ++u) a[u] = blocks[u].new_absmax(k);
#pragma unroll
      for (int u = 0; u < kPairs; ++u) q[u] = blocks[u].encode(k, a[u], sv.nonnegative, SpeculativeDivSqrt{&enc_bad});
      if (enc_bad) {
#pragma unroll
        for (int u = 0; u < kPairs; ++u) q[u] = blocks[u].encode(k, a[u], sv.nonnegative, IeeeDivSqrt{});
      }
#pragma unroll
      for (int u = 0; u < kPairs; ++u) blocks[u].template store_state<Whole>(pv, k, a[u], q[u], l16);
    }
  }
}
template <class Cfg, class Rule, WeightStore WS>
__device__ __forceinline__ void fused_epilogue_int8(const typename Rule::Scalars& s, const ParamView& pv,
                                                    const float* sG, int64_t o0, int64_t i0, int warp,
                                                    int rows = Cfg::TR) {
  const bool aligned = int8_params_vec4(pv);
  const bool whole = aligned && o0 + rows <= pv.rows && i0 + Cfg::TC <= pv.cols;
  // The piece's first `rows` rows only (their blocks a multiple of Cfg::kWarps * kInt8PassesInFlight).
  const int block_passes = rows * Cfg::kSegmentsPerRow / Cfg::kWarps;
  if (whole)
    int8_epilogue_passes<Cfg, Rule, WS, true>(s, pv, sG, o0, i0, aligned, warp, block_passes);
  else
    int8_epilogue_passes<Cfg, Rule, WS, false>(s, pv, sG, o0, i0, aligned, warp, block_passes);
}

// The accumulators into the G tile in shared memory, one 8-byte store per pair; kLdG makes them
// conflict free.
template <class Cfg>
__device__ __forceinline__ void park_g_tile(float* sG, const float (&acc)[Cfg::kMT][Cfg::kNT][4]) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll
  for (int mt = 0; mt < Cfg::kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < Cfg::kNT; ++nt)
#pragma unroll
      for (int pair = 0; pair < 2; ++pair) {
        const FragCoord c = acc_pair_tile_coord<Cfg>(warp, lane, mt, nt, pair);
        *reinterpret_cast<float2*>(sG + c.row * Cfg::kLdG + c.col) =
            make_float2(acc[mt][nt][2 * pair], acc[mt][nt][2 * pair + 1]);
      }
}

// FusedSchedule (gpu_api.h) as the kernel sees it: stagger_below = the blocks of one resident wave.
struct FusedKernelSchedule {
  uint32_t stagger_ns;
  int stagger_stride, stagger_below;
};

__device__ __forceinline__ uint64_t global_timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Half of the first wave starts late (FusedSchedule), so that one block's mainloop overlaps another's
// epilogue. Block-uniform; touches no data.
__device__ __forceinline__ bool starts_late(const FusedKernelSchedule& k) {
  return k.stagger_ns != 0 && staggered_block(int64_t(blockIdx.y) * gridDim.x + blockIdx.x, k.stagger_stride, k.stagger_below);
}
// Waits ns nanoseconds (a late start; touches no data).
__device__ __forceinline__ void spin_for_ns(uint32_t ns) {
  const uint64_t t0 = global_timer_ns();
  while (global_timer_ns() - t0 < ns) __nanosleep(256);
}
__device__ __forceinline__ void stagger_start(const FusedKernelSchedule& k) {
  if (starts_late(k)) spin_for_ns(k.stagger_ns);
}

// Block per tile: mainloop, G parked over the operand buffers (the mainloop ended on a barrier),
// then the epilogue.
template <class Cfg, class Rule, StateFormat SF, WeightStore WS>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocksPerSm)
    fused_wgrad_update_kernel(WgradTileArgs a, typename Rule::Scalars s, ParamView pv, bool vec,
                              FusedKernelSchedule sched) {
  extern __shared__ __align__(16) unsigned char fused_smem[];
  unsigned char* base = Cfg::kWgmma ? align_to_atom(fused_smem) : fused_smem;
  const int64_t o0 = int64_t(blockIdx.y) * Cfg::TR, i0 = int64_t(blockIdx.x) * Cfg::TC;
  const bool whole_tile = SF != StateFormat::int8 && vec && o0 + Cfg::TR <= pv.rows && i0 + Cfg::TC <= pv.cols;
  stagger_start(sched);
  // A whole tile prefetches its epilogue's first passes while the mainloop multiplies its
  // last chunks (the same lines the epilogue's own prefetch would take, earlier).
  const FragCoord first = epilogue_quad<Cfg>(threadIdx.x, 0);
  auto early_prefetch = [&](int64_t chunk, int64_t nchunks) {
    if (!early_prefetch_chunk(chunk, nchunks)) return;
    if constexpr (SF == StateFormat::int8) {
      for (int j = 0; j < kInt8PrefetchPasses; ++j)
        prefetch_int8_pass<Cfg, Rule, WS>(pv, o0, i0, int(threadIdx.x >> 5), j, int(threadIdx.x & 31));
    } else if (whole_tile) {
      prefetch_first_passes<Cfg, Rule, SF, WS, kFusedEarlyPrefetchPasses>(pv, first, o0, i0);
    }
  };
  float acc[Cfg::kMT][Cfg::kNT][4];
  wgrad_mainloop<Cfg>(a, o0, i0, reinterpret_cast<uint16_t*>(base), acc, early_prefetch);
  float* sG = reinterpret_cast<float*>(base);
  park_g_tile<Cfg>(sG, acc);
  __syncthreads();
  if constexpr (SF == StateFormat::int8) {
    fused_epilogue_int8<Cfg, Rule, WS>(s, pv, sG, o0, i0, int(threadIdx.x >> 5));
  } else {
    if (whole_tile)
      fused_epilogue_quads<Cfg, Rule, SF, WS, true>(s, pv, sG, o0, i0, vec, first, int(threadIdx.x));
    else
      fused_epilogue_quads<Cfg, Rule, SF, WS, false>(s, pv, sG, o0, i0, vec, first, int(threadIdx.x));
  }
}

// Order-matched materializer: the same mainloop, fp32 G [out, in] (row-major, ld = in) stored.
// accumulate: G = fp32 RNE sum of G and this chain (a later token slice of a split order).
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocksPerSm) wgrad_materialize_kernel(WgradTileArgs a, float* g,
                                                                                              bool accumulate) {
  extern __shared__ __align__(16) unsigned char materialize_smem[];
  uint16_t* smem = reinterpret_cast<uint16_t*>(Cfg::kWgmma ? align_to_atom(materialize_smem) : materialize_smem);
  const int64_t o0 = int64_t(blockIdx.y) * Cfg::TR, i0 = int64_t(blockIdx.x) * Cfg::TC;
  float acc[Cfg::kMT][Cfg::kNT][4];
  wgrad_mainloop<Cfg>(a, o0, i0, smem, acc);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
#pragma unroll
  for (int mt = 0; mt < Cfg::kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < Cfg::kNT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const FragCoord c = acc_tile_coord<Cfg>(warp, lane, mt, nt, i);
        const int64_t r = o0 + c.row, col = i0 + c.col;
        if (r < a.out && col < a.in) {
          float* e = g + r * a.in + col;
          *e = accumulate ? __fadd_rn(*e, acc[mt][nt][i]) : acc[mt][nt][i];
        }
      }
}

template <class Cfg>
dim3 wgrad_grid(const WgradTileArgs& a) {
  const int64_t gx = (a.in + Cfg::TC - 1) / Cfg::TC, gy = (a.out + Cfg::TR - 1) / Cfg::TR;
  if (gy > 65535) throw std::invalid_argument("wgrad: out too large for the grid's y dimension");
  return dim3(unsigned(gx), unsigned(gy), 1);
}

inline WgradTileArgs make_tile_args(const WgradProblem& p) {
  return WgradTileArgs{p.x, p.dy, p.tokens, p.out, p.in, rows_16b_aligned(p.x, p.in),
                       rows_16b_aligned(p.dy, p.out)};
}

// Raises a kernel's dynamic shared-memory limit, and asks for the largest shared-memory carveout
// so that two blocks of the 3-stage 128x128 tile (2 x 103 KB) fit on one SM (the mainloop's
// cp.async.cg bypasses L1; the carveout is a hint the driver may override). Callers keep a
// function-local static per kernel instantiation so that this runs once per process (a failed
// call is retried next launch).
template <class Kernel>
bool set_smem_limit(Kernel kernel, size_t bytes, const char* what) {
  cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)), what);
  cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                  int(cudaSharedmemCarveoutMaxShared)),
             what);
  return true;
}

// Can the epilogue move whole quads with vector accesses? Row length a multiple of 4 (every
// quad then starts on a multiple of 4) and each array aligned to its quad's bytes.
template <StateFormat SF>
bool fused_params_vec4(const ParamView& pv) {
  auto aligned = [](const void* p, uintptr_t n) { return reinterpret_cast<uintptr_t>(p) % n == 0; };
  bool ok = pv.cols % 4 == 0 && aligned(pv.master, 16) && aligned(pv.bf16, 8);
  for (const StateView& sv : pv.state)
    ok = ok && (SF == StateFormat::fp32 ? aligned(sv.f32, 16) : aligned(sv.bf16, 8));
  return ok;
}

// Can whole rows of 128 columns move by bulk copies (16-byte aligned starts and lengths; the
// G-through-L2 form's staging, v51)? Row length a multiple of 8 (a bf16 row of the view then starts
// on 16 bytes wherever a 128-column piece does) and every array aligned to 16 bytes.
inline bool fused_params_bulk16(const ParamView& pv) {
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  bool ok = pv.cols % 8 == 0 && aligned(pv.master) && aligned(pv.bf16);
  for (const StateView& sv : pv.state) ok = ok && aligned(sv.f32) && aligned(sv.bf16);
  return ok;
}

template <class Cfg, class Rule, StateFormat SF, WeightStore WS>
void launch_fused_cfg(const WgradTileArgs& a, const typename Rule::Scalars& s, const ParamView& pv,
                      cudaStream_t stream) {
  auto kernel = fused_wgrad_update_kernel<Cfg, Rule, SF, WS>;
  // Once per instantiation and process (one device model per process): the smem opt-in, then how
  // many blocks of this kernel one SM holds.
  static const int blocks_per_sm = [&] {
    set_smem_limit(kernel, Cfg::kSmemBytes, "fused_wgrad_update: cudaFuncSetAttribute");
    int n = 0;
    cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, Cfg::kThreads, Cfg::kSmemBytes),
               "fused_wgrad_update: occupancy");
    return n;
  }();
  int device = 0, sms = 0;
  cuda_check(cudaGetDevice(&device), "fused_wgrad_update: cudaGetDevice");
  cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "fused_wgrad_update: SM count");
  const FusedSchedule fs = fused_schedule();
  const int stagger_us = fs.stagger_us >= 0 ? fs.stagger_us : auto_stagger_us(SF);
  const FusedKernelSchedule sched{uint32_t(stagger_us) * 1000u, fs.stagger_stride > 0 ? fs.stagger_stride : sms,
                                  blocks_per_sm * sms};
  const bool vec = SF != StateFormat::int8 && fused_params_vec4<SF>(pv);
  kernel<<<wgrad_grid<Cfg>(a), Cfg::kThreads, Cfg::kSmemBytes, stream>>>(a, s, pv, vec, sched);
  cuda_check(cudaGetLastError(), "fused_wgrad_update: launch");
}

}  // namespace fh::gpu

// The warp-specialized kernels (they use the epilogue and launch helpers above).
#include "kernels/gpu/fused_wgrad_coop.cuh"
#include "kernels/gpu/fused_wgrad_coop_ilv.cuh"
#include "kernels/gpu/fused_wgrad_coop_l2g.cuh"
#include "kernels/gpu/fused_wgrad_coop_split.cuh"

namespace fh::gpu {

// The 128 x 128 tile setting: the cooperative 128 x 256 kernel from FusedSchedule::coop_min_tokens
// tokens on (coop_min_tokens_int8 for INT8 state; 0: never) where TMA can load the operands, the
// block-per-tile kernel otherwise (kernels/gpu/NOTES.md v26: from T = 2048 the cooperative kernel's
// mainloop runs at cuBLAS's rate; below, the block kernel's overlapped epilogues win; v35: INT8's
// longer epilogue moves its crossover to T = 8192).
inline bool coop_chosen(const WgradTileArgs& a, StateFormat sf) {
  const FusedSchedule sched = fused_schedule();
  const int64_t from = sf == StateFormat::int8 ? sched.coop_min_tokens_int8 : sched.coop_min_tokens;
  return from > 0 && a.T >= from && wgrad_tma_usable(a);
}
// Where the cooperative kernel is chosen, its G-through-L2 form from the threshold of the problem's
// class on (coop_l2g_class; 0: never).
inline bool coop_l2g_chosen(const WgradTileArgs& a, StateFormat sf, int declared_slots, int kept_slots) {
  const FusedSchedule sched = fused_schedule();
  const CoopL2gClass c =
      coop_l2g_class(sf, declared_slots, kept_slots, coop_tiles(a), sched.coop_l2g_light_min_tiles);
  const int64_t from = c == CoopL2gClass::heavy   ? sched.coop_l2g_min_tokens
                       : c == CoopL2gClass::light ? sched.coop_l2g_min_tokens_light
                       : c == CoopL2gClass::int8  ? sched.coop_l2g_min_tokens_int8
                                                  : 0;
  return from > 0 && a.T >= from && coop_chosen(a, sf);
}

// Where the cooperative kernel is chosen with fp32 or bf16 state, its interleaved form from
// FusedSchedule::coop_ilv_min_tokens on (0: never).
inline bool coop_ilv_chosen(const WgradTileArgs& a, StateFormat sf) {
  const int64_t from = fused_schedule().coop_ilv_min_tokens;
  return sf != StateFormat::int8 && from > 0 && a.T >= from && coop_chosen(a, sf);
}

// fused_token_splits for the 128 x 128 setting (gpu_api.h).
inline int coop_splits_for(const WgradTileArgs& a) {
  const FusedSchedule fs = fused_schedule();
  if (fs.coop_split_max < 2 || a.T < fs.coop_split_min_tokens || !wgrad_tma_usable(a)) return 1;
  return coop_split_count(coop_tiles(a), (a.T + CoopCfg::TK - 1) / CoopCfg::TK, coop_sm_count(), fs.coop_split_max,
                          fs.coop_split_overhead_chunks, fs.coop_split_gain_pct, fs.coop_split_unit_chunks,
                          (fs.coop_split_min_slice_tokens + CoopCfg::TK - 1) / CoopCfg::TK);
}

template <class Rule, StateFormat SF, WeightStore WS>
void launch_fused_tile(const WgradTileArgs& a, const typename Rule::Scalars& s, const ParamView& pv,
                       TileShape tile, cudaStream_t stream) {
  if (tile.rows == 128 && tile.cols == 128) {
    if (const int splits = coop_splits_for(a); splits > 1)
      return launch_fused_coop_split<Rule, SF, WS>(a, s, pv, splits, stream);
    if constexpr (SF != StateFormat::int8)
      if (coop_ilv_chosen(a, SF)) return launch_fused_coop_ilv<Rule, SF, WS>(a, s, pv, stream);
    if constexpr (coop_l2g_builds(Rule::kStateSlots)) {
      int kept = 0;  // the state arrays this view's epilogue moves (load_quad: the present slots)
      for (int k = 0; k < Rule::kStateSlots; ++k) kept += pv.state[k].present();
      if (coop_l2g_chosen(a, SF, Rule::kStateSlots, kept)) return launch_fused_coop_l2g<Rule, SF, WS>(a, s, pv, stream);
    }
    if (coop_chosen(a, SF)) return launch_fused_coop<Rule, SF, WS>(a, s, pv, stream);
    return launch_fused_cfg<WgradTileCfg<128, 128>, Rule, SF, WS>(a, s, pv, stream);
  }
  if (tile.rows == 64 && tile.cols == 64)
    return launch_fused_cfg<WgradTileCfg<64, 64>, Rule, SF, WS>(a, s, pv, stream);
  throw std::invalid_argument("fused_wgrad_update: unsupported tile " + std::to_string(tile.rows) +
                              "x" + std::to_string(tile.cols) + " (128x128 or 64x64)");
}

template <class Rule, StateFormat SF>
void launch_fused_ws(WeightStore ws, const WgradTileArgs& a, const typename Rule::Scalars& s,
                     const ParamView& pv, TileShape tile, cudaStream_t stream) {
  switch (ws) {
    case WeightStore::fp32_master: return launch_fused_tile<Rule, SF, WeightStore::fp32_master>(a, s, pv, tile, stream);
    case WeightStore::bf16_rne: return launch_fused_tile<Rule, SF, WeightStore::bf16_rne>(a, s, pv, tile, stream);
    case WeightStore::bf16_sr: return launch_fused_tile<Rule, SF, WeightStore::bf16_sr>(a, s, pv, tile, stream);
  }
  throw std::invalid_argument("fused_wgrad_update: unknown weight store");
}

// Entry for one rule (explicitly instantiated per rule family): state format and weight store
// dispatch at run time onto the template instantiations.
template <class Rule>
void launch_fused_typed(StateFormat sf, WeightStore ws, const WgradProblem& p,
                        const typename Rule::Scalars& s, const ParamView& pv, TileShape tile,
                        cudaStream_t stream) {
  const WgradTileArgs a = make_tile_args(p);
  switch (sf) {
    case StateFormat::fp32: return launch_fused_ws<Rule, StateFormat::fp32>(ws, a, s, pv, tile, stream);
    case StateFormat::bf16: return launch_fused_ws<Rule, StateFormat::bf16>(ws, a, s, pv, tile, stream);
    case StateFormat::int8: return launch_fused_ws<Rule, StateFormat::int8>(ws, a, s, pv, tile, stream);
  }
  throw std::invalid_argument("fused_wgrad_update: unknown state format");
}

}  // namespace fh::gpu
