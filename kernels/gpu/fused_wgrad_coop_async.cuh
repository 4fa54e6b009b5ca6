// The asynchronous cooperative fused kernel for a 128 x 256 tile: what fused_wgrad_update runs
// where the cooperative kernel is chosen and T >= FusedSchedule::coop_async_min_tokens
// (coop_async_chosen, fused_wgrad_update.cuh). One persistent block per SM, three warpgroups:
//   - warp 0 (one thread) loads each 16-token chunk of the tile's dY rows (two 64-column boxes) and
//     X columns (four boxes) with TMA into a ring of eight 12 KB slots;
//   - warps 2 and 3 are the epilogue: they update a parked G tile with the rule while the
//     consumers multiply the next tile (warp 1 has no work);
//   - both consumers (warpgroups 1, 2) multiply the same tile as in the cooperative kernel
//     (consumer c its rows 64 c .. 64 c + 63, one wgmma m64n256k16 per k16 step), wait until the
//     epilogue has read the previous G tile, park theirs in its own buffer and go on.
// Why: the cooperative kernel's consumers run the epilogue themselves, and the tensor cores idle
// while 128 x 256 weights and states stream from DRAM (kernels/gpu/NOTES.md v26, v36). Here the
// epilogue overlaps the next tile's mainloop; the last tile's epilogue is the only one not hidden.
// The G tile (128 KB) leaves 96 KB for the ring: eight 16-token slots, so that only two of them
// (24 KB) wait on the tensor cores and 72 KB can be loading (four 32-token slots left 48 KB
// loading and the mainloop starved: kernels/gpu/NOTES.md v37). INT8 state stays on the
// cooperative kernel (its block epilogue on two warps took longer than a tile's mainloop). No padding fits beside the ring, so the tile is
// swizzled (g_tile_offset, wgrad_tile_layout.h).
// Per output element the chain is the other kernels': +0, one k16 instruction per 16 tokens in
// token order, k-steps wholly past T not issued; the GPU fused suite compares the bits.
#pragma once
#include "kernels/gpu/fused_wgrad_coop.cuh"  // the wgmma, the park, the stagger

namespace fh::gpu {

struct CoopAsyncCfg {
  static constexpr int TR = 128, TC = 256, TK = 16, kKSteps = TK / 16;
  static constexpr int kThreads = 384, kStages = 8;
  static constexpr int kBoxBytes = kTmaBoxCols * TK * 2;
  static constexpr int kABoxes = TR / kTmaBoxCols, kBBoxes = TC / kTmaBoxCols;
  static constexpr int kABytes = kABoxes * kBoxBytes, kSlotBytes = (kABoxes + kBBoxes) * kBoxBytes;
  static constexpr size_t kRingBytes = size_t(kStages) * kSlotBytes;
  static constexpr size_t kGBytes = size_t(TR) * TC * 4;
  static constexpr size_t kBarrierOffset = kRingBytes + kGBytes;
  static constexpr size_t kSmemBytes = kBarrierOffset + (2 * kStages + 2) * sizeof(uint64_t) + kWgmmaAtomBytes;
  static_assert(kSmemBytes <= 232448, "one block's shared memory on sm_90");
  static constexpr int kFirstEpilogueWarp = 2;
};

template <class Rule, StateFormat SF, WeightStore WS>
__global__ void __launch_bounds__(CoopAsyncCfg::kThreads, 1)
    fused_wgrad_coop_async_kernel(WgradTileArgs a, typename Rule::Scalars s, ParamView pv, bool vec,
                                  CoopStagger stagger, const __grid_constant__ WgradTmaMaps maps) {
  static_assert(SF != StateFormat::int8, "INT8 state runs the cooperative kernel");
  using Cfg = CoopAsyncCfg;
  using Tile = CoopAsyncTile;
  constexpr int S = Cfg::kStages;
  extern __shared__ __align__(16) unsigned char coop_async_smem[];
  unsigned char* ring = align_to_atom(coop_async_smem);
  float* sG = reinterpret_cast<float*>(ring + Cfg::kRingBytes);
  uint64_t* full = reinterpret_cast<uint64_t*>(ring + Cfg::kBarrierOffset);
  uint64_t* empty = full + S;
  uint64_t* g_full = empty + S;  // both consumers parked the tile
  uint64_t* g_empty = g_full + 1;  // the epilogue has read it
  // The warp index from lane 0, so that ptxas sees the role branches as warp-uniform.
  const int warp = __shfl_sync(0xffffffffu, int(threadIdx.x / 32), 0), lane = threadIdx.x & 31;
  const int64_t tiles_x = (a.in + Cfg::TC - 1) / Cfg::TC, tiles = tiles_x * ((a.out + Cfg::TR - 1) / Cfg::TR);
  const int64_t nchunks = (a.T + Cfg::TK - 1) / Cfg::TK;
  if (threadIdx.x == 0) {
    for (int i = 0; i < S; ++i) {
      mbar_init(full + i, 1);
      mbar_init(empty + i, 8);  // the eight consumer warps
    }
    // Every thread arrives on the G barriers (no lane relies on another's arrival to order its
    // shared-memory accesses).
    mbar_init(g_full, 256);
    mbar_init(g_empty, 32 * Tile::kWarps);
    fence_mbarrier_init();
  }
  __syncthreads();

  // As in the cooperative kernel: the block's start delay, and the planted late-group skip.
  const uint32_t stagger_ns = stagger.step_ns * uint32_t(coop_stagger_group(blockIdx.x, gridDim.x, stagger.groups));
  const bool late_skips = stagger_ns != 0 && a.planted_defect == int(FusedPlantedDefect::late_blocks_skip_update);
  const bool short_edge = a.planted_defect == int(FusedPlantedDefect::edge_mask_short);
  auto tile_origin = [&](int64_t u, int64_t& o0, int64_t& i0) {
    o0 = (u / tiles_x) * Cfg::TR;
    i0 = (u % tiles_x) * Cfg::TC;
  };
  // Planted defect (suite only): tile (0, 0) reads and writes the state one row down.
  auto shifted = [&](int64_t o0, int64_t i0) {
    return a.planted_defect == int(FusedPlantedDefect::state_row_offset) && o0 == 0 && i0 == 0;
  };

  if (warp == 0) {  // producer: one thread
    if (lane == 0) {
      if (stagger_ns != 0) spin_for_ns(stagger_ns);
      int64_t n = 0;  // the block's chunk index
      for (int64_t u = blockIdx.x; u < tiles; u += gridDim.x) {
        int64_t o0, i0;
        tile_origin(u, o0, i0);
        // Boxes wholly past W's edge are not loaded: they only feed G rows or columns outside W.
        int a_boxes = 0, b_boxes = 0;
        for (int j = 0; j < Cfg::kABoxes; ++j) a_boxes += o0 + j * kTmaBoxCols < a.out;
        for (int j = 0; j < Cfg::kBBoxes; ++j) b_boxes += i0 + j * kTmaBoxCols < a.in;
        const uint32_t tx_bytes = uint32_t(Cfg::kBoxBytes) * uint32_t(a_boxes + b_boxes);
        for (int64_t c = 0; c < nchunks; ++c, ++n) {
          const int slot = int(n % S);
          if (n >= S) mbar_wait(empty + slot, uint32_t(n / S - 1) & 1u);
          unsigned char* sA = ring + size_t(slot) * Cfg::kSlotBytes;
          unsigned char* sB = sA + Cfg::kABytes;
          const int t0 = int(c * Cfg::TK);
          mbar_arrive_expect_tx(full + slot, tx_bytes);
          for (int j = 0; j < a_boxes; ++j) tma_load_box(sA + j * Cfg::kBoxBytes, maps.dy, int(o0) + j * kTmaBoxCols, t0, full + slot);
          for (int j = 0; j < b_boxes; ++j) tma_load_box(sB + j * Cfg::kBoxBytes, maps.x, int(i0) + j * kTmaBoxCols, t0, full + slot);
        }
      }
    }
    return;
  }
  if (warp < Cfg::kFirstEpilogueWarp) return;

  if (warp < 4) {  // the epilogue warps
    const int etid = threadIdx.x - 32 * Cfg::kFirstEpilogueWarp;
    const FragCoord first = epilogue_quad<Tile>(etid, 0);
    uint32_t tile_k = 0;
    for (int64_t u = blockIdx.x; u < tiles; u += gridDim.x, ++tile_k) {
      int64_t o0, i0;
      tile_origin(u, o0, i0);
      const bool shift_state = shifted(o0, i0);
      const bool whole = vec && !short_edge && !shift_state && o0 + Cfg::TR <= pv.rows && i0 + Cfg::TC <= pv.cols;
      // The tile's first lines into L2 while its mainloop runs.
      if (whole) prefetch_first_passes<Tile, Rule, SF, WS>(pv, first, o0, i0);
      mbar_wait(g_full, tile_k & 1u);
      if (late_skips) {  // planted defect (suite only): a late block skips its updates
      } else if (whole)
        fused_epilogue_quads<Tile, Rule, SF, WS, true>(s, pv, sG, o0, i0, vec, short_edge, shift_state,
                                                       a.planted_defect, first, etid);
      else
        fused_epilogue_quads<Tile, Rule, SF, WS, false>(s, pv, sG, o0, i0, vec, short_edge, shift_state,
                                                        a.planted_defect, first, etid);
      mbar_arrive(g_empty);
    }
    return;
  }

  const int consumer = warp / 4 - 1, cwarp = warp & 3;
  float acc[32][4];
  int64_t seq = 0;  // the block-wide index of the tile's first chunk
  uint32_t tile_k = 0;
  for (int64_t u = blockIdx.x; u < tiles; u += gridDim.x, seq += nchunks, ++tile_k) {
#pragma unroll
    for (int j = 0; j < 32; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[j][i] = 0.0f;  // +0: the chain's start
    for (int64_t c = 0; c < nchunks; ++c) {
      const int64_t n = seq + c;
      const int slot = int(n % S);
      mbar_wait(full + slot, uint32_t(n / S) & 1u);
      const unsigned char* sA = ring + size_t(slot) * Cfg::kSlotBytes;
      const unsigned char* sB = sA + Cfg::kABytes;
      const int ksteps = chunk_ksteps(a.T, c * Cfg::TK, Cfg::kKSteps);
      wgmma_fence_operands<32>(acc);
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < Cfg::kKSteps; ++ks)
        if (ksteps == Cfg::kKSteps || ks < ksteps)  // the ragged last chunk: k-steps wholly past T are not issued
          wgmma_m64n256k16_ss(acc, tma_operand_desc<Cfg::kBoxBytes>(sA, ks, consumer),
                              tma_operand_desc<Cfg::kBoxBytes>(sB, ks, 0));
      wgmma_commit();
      wgmma_wait<1>();  // chunk c - 1's instructions are done: its slot may be refilled
      wgmma_fence_operands<32>(acc);
      if (c > 0 && lane == 0) mbar_arrive(empty + int((n - 1) % S));
    }
    wgmma_wait<0>();
    wgmma_fence_operands<32>(acc);
    if (nchunks > 0 && lane == 0) mbar_arrive(empty + int((seq + nchunks - 1) % S));
    if (tile_k > 0) mbar_wait(g_empty, (tile_k - 1) & 1u);  // the previous tile's G is read
    coop_park_rows<Tile>(sG, acc, consumer, cwarp, lane);
    mbar_arrive(g_full);
  }
}

template <class Rule, StateFormat SF, WeightStore WS>
void launch_fused_coop_async(const WgradTileArgs& a, const typename Rule::Scalars& s, const ParamView& pv,
                             cudaStream_t stream) {
  auto kernel = fused_wgrad_coop_async_kernel<Rule, SF, WS>;
  static const bool attributes_set =
      set_smem_limit(kernel, CoopAsyncCfg::kSmemBytes, "fused_wgrad_coop_async: cudaFuncSetAttribute");
  (void)attributes_set;
  const CoopLaunch l = coop_launch<CoopAsyncCfg, SF>(a, pv, CoopAsyncCfg::TK);
  kernel<<<l.blocks, CoopAsyncCfg::kThreads, CoopAsyncCfg::kSmemBytes, stream>>>(a, s, pv, l.vec, l.stagger, l.maps);
  cuda_check(cudaGetLastError(), "fused_wgrad_coop_async: launch");
}

}  // namespace fh::gpu
