// The fused wgrad-plus-update kernel (FORGE): each block computes one TR x TC tile of
// G = dY^T X with the shared mainloop, parks the fp32 tile in shared memory (no byte of G reaches
// global memory) and applies the rule to it with the element-wise pieces every producer uses
// (fh::update_element's load / update / store, fh::update_int8_block_warp for int8 state), in a
// coalesced order: consecutive lanes take consecutive columns (kernels/gpu/NOTES.md, v2). Also the order-matched materializer kernel (same mainloop, stores G).
// Instantiated per rule family in kernels/gpu/rule_family_*.cu.
#pragma once
#include <stdexcept>
#include <string>

#include "kernels/formats/formats.h"
#include "kernels/gpu/gpu_api.h"
#include "kernels/gpu/wgrad_mainloop.cuh"

namespace fh::gpu {

// Epilogue loads per thread before the first update (fp32 / bf16 state): eight elements, each
// with its weight and state loads, in flight at once (v5; v2 and v3: four).
constexpr int kFusedEpilogueBatch = 8;

// The planted edge-mask defect (suite only): the last column of a row whose final 64-column
// segment is short (2..63 columns) is left unupdated, as a segment loop with n - 1 would.
__device__ __forceinline__ bool planted_short_edge_skips(int64_t c, int64_t cols) {
  const int64_t tail = cols % 64;
  return c == cols - 1 && tail >= 2;
}

// The epilogue in steps that the persistent kernel spreads over the next tile's chunks (v7):
// one batch of kFusedEpilogueBatch passes each (fp32 / bf16 state; the int8 passes in as many).
template <class Cfg>
constexpr int fused_epilogue_steps() {
  return Cfg::kElementPasses / kFusedEpilogueBatch;
}

// fp32 / bf16 state: pass j of thread tid takes tile element tid + kThreads * j (epilogue_element),
// so a warp walks 32 consecutive columns of one row: coalesced global accesses, conflict-free
// G-tile reads. Each element is the same update_element step the host applies. Runs epilogue
// steps [step_begin, step_end): step k is passes kFusedEpilogueBatch k .. + kFusedEpilogueBatch - 1.
template <class Cfg, class Rule, StateFormat SF, WeightStore WS>
__device__ __forceinline__ void fused_epilogue_elements(const typename Rule::Scalars& s, const ParamView& pv,
                                                        const float* sG, int64_t o0, int64_t i0,
                                                        bool short_edge, bool shift_state, int planted,
                                                        int step_begin, int step_end, int tid) {
  static_assert(Cfg::kElementPasses % kFusedEpilogueBatch == 0, "batches must divide the passes");
#pragma unroll 1
  for (int j0 = step_begin * kFusedEpilogueBatch; j0 < step_end * kFusedEpilogueBatch; j0 += kFusedEpilogueBatch) {
    // Only the values and whether each element is in range stay live across the batch; the
    // indices are recomputed at the store (cheap integer work, fewer registers).
    ElementValues e[kFusedEpilogueBatch];
    float g[kFusedEpilogueBatch];
    bool ok[kFusedEpilogueBatch];
    auto index_of = [&](int b, FragCoord& t, int64_t& r, int64_t& c) {
      t = epilogue_element<Cfg>(tid, j0 + b);
      r = o0 + t.row;
      c = i0 + t.col;
    };
    // Planted defect (suite only): the state of the row below, a wrong state tile offset.
    auto state_index = [&](int64_t r, int64_t idx) { return (shift_state && r + 1 < pv.rows) ? idx + pv.cols : idx; };
#pragma unroll
    for (int b = 0; b < kFusedEpilogueBatch; ++b) {
      FragCoord t;
      int64_t r, c;
      index_of(b, t, r, c);
      ok[b] = r < pv.rows && c < pv.cols && !(short_edge && planted_short_edge_skips(c, pv.cols));
      if (ok[b]) {
        const int64_t idx = r * pv.cols + c;
        e[b] = load_element<SF, WS>(pv, idx, state_index(r, idx));
        g[b] = sG[t.row * Cfg::kLdG + t.col];
      }
    }
#pragma unroll
    for (int b = 0; b < kFusedEpilogueBatch; ++b) {
      if (!ok[b]) continue;
      FragCoord t;
      int64_t r, c;
      index_of(b, t, r, c);
      const int64_t idx = r * pv.cols + c;
      // Planted defect (suite only): random bits keyed by the place inside the tile.
      const int64_t gidx = planted == int(FusedPlantedDefect::sr_tile_local_bits) ? int64_t(t.row) * Cfg::TC + t.col
                                                                                  : global_element_index(pv, r, c);
      Rule::update(s, e[b].p, g[b], e[b].st);
      store_element<SF, WS>(pv, idx, state_index(r, idx), gidx, e[b]);
      if (WS == WeightStore::bf16_sr && planted == int(FusedPlantedDefect::sr_bits8))  // planted (suite only)
        pv.bf16[idx] = float_to_bf16_sr(e[b].p, sr_bits(pv.sr, uint64_t(gidx)) & 0xff00u);
    }
  }
}

// int8 state: pass j of warp w takes the tile's 64-column block w + kWarps * j (epilogue_int8_block),
// two elements per lane, the new absmax a warp reduction (update_int8_block_warp). Epilogue step k
// is passes kBlockPasses / kEpilogueSteps * k .. .
template <class Cfg, class Rule, WeightStore WS>
__device__ __forceinline__ void fused_epilogue_int8(const typename Rule::Scalars& s, const ParamView& pv,
                                                    const float* sG, int64_t o0, int64_t i0,
                                                    bool short_edge, bool shift_state, int step_begin, int step_end,
                                                    int tid) {
  constexpr int kPassesPerStep = Cfg::kBlockPasses / fused_epilogue_steps<Cfg>();
  static_assert(kPassesPerStep * fused_epilogue_steps<Cfg>() == Cfg::kBlockPasses, "steps must divide the passes");
  const int warp = tid >> 5, lane = tid & 31;
#pragma unroll 1
  for (int j = step_begin * kPassesPerStep; j < step_end * kPassesPerStep; ++j) {
    const FragCoord b = epilogue_int8_block<Cfg>(warp, j);
    const int64_t r = o0 + b.row, c0 = i0 + b.col;
    if (r >= pv.rows || c0 >= pv.cols) continue;  // uniform across the warp
    const int64_t left = pv.cols - c0;
    int n = left < kInt8Block ? int(left) : kInt8Block;
    if (short_edge && left < kInt8Block && n > 1) --n;  // planted defect (suite only)
    const int64_t srow = (shift_state && r + 1 < pv.rows) ? r + 1 : r;  // planted defect (suite only)
    const float* grow = sG + b.row * Cfg::kLdG + b.col;
    update_int8_block_warp<Rule, WS>(s, pv, r, srow, c0, n, [grow](int e) { return grow[e]; }, lane);
  }
}

// One tile's epilogue with its planted-defect switches: run(b, e, tid) applies steps [b, e) as
// thread tid of the Cfg::kThreads epilogue threads.
template <class Cfg, class Rule, StateFormat SF, WeightStore WS>
struct FusedTileEpilogue {
  const typename Rule::Scalars& s;
  const ParamView& pv;
  const float* sG;
  int64_t o0, i0;
  int planted;
  __device__ __forceinline__ void run(int step_begin, int step_end, int tid) const {
    const bool short_edge = planted == int(FusedPlantedDefect::edge_mask_short);
    // Planted defect (suite only): tile (0, 0) reads and writes the state one row down.
    const bool shift_state = planted == int(FusedPlantedDefect::state_row_offset) && o0 == 0 && i0 == 0;
    if constexpr (SF == StateFormat::int8)
      fused_epilogue_int8<Cfg, Rule, WS>(s, pv, sG, o0, i0, short_edge, shift_state, step_begin, step_end, tid);
    else
      fused_epilogue_elements<Cfg, Rule, SF, WS>(s, pv, sG, o0, i0, short_edge, shift_state, planted, step_begin,
                                                 step_end, tid);
  }
};

// The accumulators into the G tile in shared memory, one 8-byte store per pair (warp: the
// mainloop warp, 0 .. Cfg::kWarps - 1); kLdG makes them conflict free.
template <class Cfg>
__device__ __forceinline__ void park_g_tile(float* sG, const float (&acc)[Cfg::kMT][Cfg::kNT][4], int warp, int lane) {
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

// Block per tile (the 64 x 64 mma.sync tile): mainloop, G parked over the operand buffers (the
// mainloop ended on a barrier), then the whole epilogue.
template <class Cfg, class Rule, StateFormat SF, WeightStore WS>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocksPerSm)
    fused_wgrad_update_kernel(WgradTileArgs a, typename Rule::Scalars s, ParamView pv) {
  extern __shared__ __align__(16) unsigned char fused_smem[];
  unsigned char* base = Cfg::kWgmma ? align_to_atom(fused_smem) : fused_smem;
  const int64_t o0 = int64_t(blockIdx.y) * Cfg::TR, i0 = int64_t(blockIdx.x) * Cfg::TC;
  float acc[Cfg::kMT][Cfg::kNT][4];
  wgrad_mainloop<Cfg>(a, o0, i0, reinterpret_cast<uint16_t*>(base), acc);
  float* sG = reinterpret_cast<float*>(base);
  park_g_tile<Cfg>(sG, acc, threadIdx.x >> 5, threadIdx.x & 31);
  __syncthreads();
  FusedTileEpilogue<Cfg, Rule, SF, WS>{s, pv, sG, o0, i0, a.planted_defect}.run(0, fused_epilogue_steps<Cfg>(),
                                                                                threadIdx.x);
}

// Named barriers of the warp-specialized kernel (0 is __syncthreads; 1 and 2 hand the G tile
// over, 3 is the mainloop's own barrier among its 256 threads).
inline constexpr int kBarGFull = 1, kBarGEmpty = 2, kBarMainloop = 3;
__device__ __forceinline__ void named_bar_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Warp-specialized persistent fused kernel (v9; the 128 x 128 wgmma tile): one block of
// 2 x Cfg::kThreads threads per SM walks tiles blockIdx.x, + gridDim.x, ... in row-major tile
// order. Threads 0 .. 255 (two warpgroups) run the mainloop of each tile (wgmma, their own named
// barrier) and park G in a tile buffer after the operand ring; threads 256 .. 511 apply the rule
// to the parked tile while the first half multiplies the next one. Hand-over, one buffer:
//   mainloop side, tile n: [n > 0: bar.sync G_EMPTY] park; bar.arrive G_FULL
//   epilogue side, tile n: bar.sync G_FULL; epilogue; [tile n + 1 exists: bar.arrive G_EMPTY]
// so every sync meets exactly one arrive per tile, and parking waits until the epilogue of the
// previous tile has read the whole buffer.
template <class Cfg, class Rule, StateFormat SF, WeightStore WS>
__global__ void __launch_bounds__(2 * Cfg::kThreads, 1)
    fused_wgrad_update_persistent_kernel(WgradTileArgs a, typename Rule::Scalars s, ParamView pv) {
  static_assert(Cfg::kWgmma && Cfg::kThreads == 256, "two 256-thread halves: wgmma mainloop, epilogue");
  constexpr int kAll = 2 * Cfg::kThreads;
  extern __shared__ __align__(16) unsigned char fused_smem[];
  unsigned char* base = align_to_atom(fused_smem);
  float* sG = reinterpret_cast<float*>(base + Cfg::kOperandBytes);
  const int64_t tiles_x = (a.in + Cfg::TC - 1) / Cfg::TC, tiles = tiles_x * ((a.out + Cfg::TR - 1) / Cfg::TR);
  const int tid = threadIdx.x;
  if (tid < Cfg::kThreads) {
    float acc[Cfg::kMT][Cfg::kNT][4];
    for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      const int64_t o0 = (tile / tiles_x) * Cfg::TR, i0 = (tile % tiles_x) * Cfg::TC;
      wgrad_mainloop<Cfg, NamedSync<kBarMainloop, Cfg::kThreads>>(a, o0, i0, reinterpret_cast<uint16_t*>(base), acc);
      if (tile != blockIdx.x) named_bar_sync(kBarGEmpty, kAll);
      park_g_tile<Cfg>(sG, acc, tid >> 5, tid & 31);
      named_bar_arrive(kBarGFull, kAll);
    }
  } else {
    const int etid = tid - Cfg::kThreads;
    for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      const int64_t o0 = (tile / tiles_x) * Cfg::TR, i0 = (tile % tiles_x) * Cfg::TC;
      named_bar_sync(kBarGFull, kAll);
      FusedTileEpilogue<Cfg, Rule, SF, WS>{s, pv, sG, o0, i0, a.planted_defect}.run(0, fused_epilogue_steps<Cfg>(), etid);
      if (tile + gridDim.x < tiles) named_bar_arrive(kBarGEmpty, kAll);
    }
  }
}

// Order-matched materializer: the same mainloop, fp32 G [out, in] (row-major, ld = in) stored.
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocksPerSm) wgrad_materialize_kernel(WgradTileArgs a, float* g) {
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
        if (r < a.out && col < a.in) g[r * a.in + col] = acc[mt][nt][i];
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
                       rows_16b_aligned(p.dy, p.out), int(fused_planted_defect())};
}

// Raises a kernel's dynamic shared-memory limit, and asks for the largest shared-memory carveout
// so that two blocks of the 3-stage 128x128 tile (2 x 103 KB, v3) fit on one SM (the mainloop's
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

template <class Cfg, class Rule, StateFormat SF, WeightStore WS>
void launch_fused_cfg(const WgradTileArgs& a, const typename Rule::Scalars& s, const ParamView& pv,
                      cudaStream_t stream) {
  auto kernel = fused_wgrad_update_kernel<Cfg, Rule, SF, WS>;
  static const bool smem_ok = set_smem_limit(kernel, Cfg::kSmemBytes, "fused_wgrad_update: cudaFuncSetAttribute");
  (void)smem_ok;
  kernel<<<wgrad_grid<Cfg>(a), Cfg::kThreads, Cfg::kSmemBytes, stream>>>(a, s, pv);
  cuda_check(cudaGetLastError(), "fused_wgrad_update: launch");
}

// The persistent kernel's grid: one block per SM (its shared memory allows one), at most one per
// tile. The SM count is read once per process.
inline unsigned persistent_grid(int64_t tiles) {
  static const int sms = [] {
    int dev = 0, n = 0;
    cuda_check(cudaGetDevice(&dev), "fused_wgrad_update: cudaGetDevice");
    cuda_check(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev), "fused_wgrad_update: SM count");
    return n;
  }();
  return unsigned(tiles < sms ? tiles : sms);
}

template <class Cfg, class Rule, StateFormat SF, WeightStore WS>
void launch_fused_persistent(const WgradTileArgs& a, const typename Rule::Scalars& s, const ParamView& pv,
                             cudaStream_t stream) {
  static_assert(Cfg::kWgmma, "the persistent kernel overlaps through the asynchronous wgmma");
  constexpr size_t smem = Cfg::kOperandBytes + Cfg::kGTileBytes + Cfg::kAlignSlack;  // the ring, then the G tile
  auto kernel = fused_wgrad_update_persistent_kernel<Cfg, Rule, SF, WS>;
  static const bool smem_ok = set_smem_limit(kernel, smem, "fused_wgrad_update: cudaFuncSetAttribute");
  (void)smem_ok;
  const int64_t tiles = ((a.in + Cfg::TC - 1) / Cfg::TC) * ((a.out + Cfg::TR - 1) / Cfg::TR);
  kernel<<<persistent_grid(tiles), 2 * Cfg::kThreads, smem, stream>>>(a, s, pv);
  cuda_check(cudaGetLastError(), "fused_wgrad_update: launch");
}

// The 128 x 128 fused tile: the warp-specialized persistent wgmma kernel (v9): the mainloop half
// is the materializer's 256-thread configuration.
using FusedPersistentCfg = WgradTileCfg<128, 128>;

template <class Rule, StateFormat SF, WeightStore WS>
void launch_fused_tile(const WgradTileArgs& a, const typename Rule::Scalars& s, const ParamView& pv,
                       TileShape tile, cudaStream_t stream) {
  if (tile.rows == 128 && tile.cols == 128)
    return launch_fused_persistent<FusedPersistentCfg, Rule, SF, WS>(a, s, pv, stream);
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
