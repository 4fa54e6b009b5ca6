// The cooperative kernel split over tokens: what fused_wgrad_update runs for the 128 x 128 tile
// setting where fused_token_splits (gpu_api.h) picks S >= 2 slices, i.e. where a layer has too few
// 128 x 256 tiles to fill the GPU for the tokens it multiplies (1024 x 1024 has 32 tiles for 132
// SMs). One block per (tile, slice) unit, all resident at once (tiles x S <= SMs, one block an SM):
// block b runs tile b / S, slice q = b % S.
//   - warp 0 (one thread) loads the slice's chunks with TMA into the cooperative kernel's ring;
//   - both consumers (warpgroups 1, 2) multiply the slice (a chain from +0, as every slice of the
//     order), prefetch their band's weights and state into L2 halfway through, store the partial
//     to the block's 128 KB slot of a global scratch and count the tile's arrivals; once all S
//     partials are stored, split q sums its band of the tile's rows (split_rows: eighths of 16 rows
//     cut S ways) over the S slots in ascending slice order (fp32 round to nearest even) and
//     updates that band: the reduction and the update are spread over the tile's S blocks.
// Order: cublas_wgrad_order(S, 64) (fused_order_for): slices of ceil(T / S) tokens rounded up to the
// 64-token chunk, each a chain from +0, summed ascending from slice 0's value. The host twin and the
// order-matched path (wgrad_materialize) follow the same S; the GPU fused suite compares the bits.
// The scratch is 128 KB a block (17 MB on 132 SMs) whatever the layer: G is never a tensor.
// A block waits only for the other blocks of its tile, all resident, so the wait cannot deadlock.
// Several units a block (a persistent form for layers of more tiles) measured slower than not
// splitting: each unit's reduction and update then stall its SM's next mainloop (NOTES.md v43).
#pragma once
#include "kernels/gpu/fused_wgrad_coop_l2g.cuh"  // the l2g epilogue's geometry and piece update

namespace fh::gpu {

// The first row of split q's band of a 128-row tile cut S ways (multiples of 8, S <= 16).
__host__ __device__ constexpr int split_rows(int q, int splits) { return 8 * ((16 * q) / splits); }

__device__ __forceinline__ int ld_acquire_gpu(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// One thread waits until *p >= target (another block's count, published after a __threadfence).
__device__ __forceinline__ void spin_until_at_least(const int* p, int target) {
  while (ld_acquire_gpu(p) < target) __nanosleep(32);
}
// The same for every lane of a whole warp, which leaves the loop together: inside the consumers'
// unit loop a per-thread exit makes ptxas serialise every wgmma of the kernel (C7520).
__device__ __forceinline__ void warp_spin_until_at_least(const int* p, int target) {
  while (!__all_sync(0xffffffffu, ld_acquire_gpu(p) >= target)) __nanosleep(32);
}
// Thread tid == 0 adds n to *p (gpu scope, release), without a branch (C7520 as above).
__device__ __forceinline__ void add_release_if_first(int* p, int n, int tid) {
  asm volatile(
      "{\n\t.reg .pred first;\n\t"
      "setp.eq.s32 first, %2, 0;\n\t"
      "@first red.release.gpu.global.add.s32 [%0], %1;\n}\n" ::"l"(p),
      "r"(n), "r"(tid)
      : "memory");
}

// Rows r0 .. r0 + rows - 1, columns c0 .. c0 + cols - 1 of a tile's S partials (the slots of blocks
// first .. first + S - 1, rows CoopCfg::TC floats apart) summed in ascending slice order with fp32
// RNE adds from slice 0's value into slot `into`, by kThreads threads of index
// tid: two float4 a thread at a time, each with up to four partials' loads issued before its adds.
template <int kThreads, int kPer = 2>
__device__ __forceinline__ void split_sum_rows(const float* scratch, int64_t first, int splits, float* into, int r0,
                                               int rows, int c0, int cols, int tid) {
  constexpr int TC = CoopCfg::TC;
  const int row4 = cols / 4, n4 = rows * row4;  // float4 of the rectangle
  auto offset = [&](int e) { return size_t(r0 + e / row4) * TC + size_t(c0) + size_t(e % row4) * 4; };
  for (int e0 = tid; e0 < n4; e0 += kPer * kThreads) {
    float4 g[kPer];
#pragma unroll
    for (int h = 0; h < kPer; ++h) {
      if (e0 + kThreads * h >= n4) break;
      const size_t off = offset(e0 + kThreads * h);
      for (int j0 = 0; j0 < splits; j0 += 4) {  // four partials in flight, then their adds in order
        float4 p[4];
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (j0 + j < splits)
            p[j] = __ldcg(reinterpret_cast<const float4*>(
                scratch + size_t(first + j0 + j) * kL2gScratchFloats + off));
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (j0 + j < splits)
            g[h] = j0 + j == 0 ? p[j]
                               : make_float4(__fadd_rn(g[h].x, p[j].x), __fadd_rn(g[h].y, p[j].y),
                                             __fadd_rn(g[h].z, p[j].z), __fadd_rn(g[h].w, p[j].w));
      }
    }
#pragma unroll
    for (int h = 0; h < kPer; ++h)
      if (e0 + kThreads * h < n4) *reinterpret_cast<float4*>(into + offset(e0 + kThreads * h)) = g[h];
  }
}

template <class Rule, StateFormat SF, WeightStore WS>
__global__ void __launch_bounds__(CoopCfg::kThreads, 1)
    fused_wgrad_coop_split_kernel(WgradTileArgs a, typename Rule::Scalars s, ParamView pv, bool vec, int group_rows,
                                  int splits, float* scratch, int* arrived, const __grid_constant__ WgradTmaMaps maps) {
  using Cfg = CoopCfg;
  using Tile = L2gLastTile;  // both consumers over a band of a G tile of rows 256 floats apart
  extern __shared__ __align__(16) unsigned char coop_split_smem[];
  unsigned char* ring = align_to_atom(coop_split_smem);
  uint64_t* full = reinterpret_cast<uint64_t*>(ring + CoopL2gCfg::kBarrierOffset);
  uint64_t* empty = full + Cfg::kStages;
  const int warp = __shfl_sync(0xffffffffu, int(threadIdx.x / 32), 0), lane = threadIdx.x & 31;
  const int64_t tiles_x = (a.in + Cfg::TC - 1) / Cfg::TC, tiles_y = (a.out + Cfg::TR - 1) / Cfg::TR;
  const int64_t tile = blockIdx.x / splits;
  const int q = int(blockIdx.x % splits);
  int64_t o0, i0;
  coop_tile_origin(tile, tiles_y, tiles_x, group_rows, o0, i0);
  const int64_t nchunks = (a.T + Cfg::TK - 1) / Cfg::TK, slice = (nchunks + splits - 1) / splits;
  const int64_t c0 = min(nchunks, int64_t(q) * slice), nc = min(nchunks, c0 + slice) - c0;
  if (threadIdx.x == 0) {
    coop_init_ring(full, empty);
    fence_mbarrier_init();
  }
  __syncthreads();

  if (warp < 4) {  // warpgroup 0: the producer (one thread); warps 1 .. 3 have no part
    setmaxnreg_dec<CoopCfg::kProducerRegs>();
    if (warp == 0 && lane == 0) {
      int64_t n = 0;
      coop_load_tile(a, maps, ring, full, empty, o0, i0, nc, n, c0);
    }
    return;
  }
  setmaxnreg_inc<CoopCfg::kConsumerRegs>();

  const int consumer = warp / 4 - 1, cwarp = warp & 3, ctid = threadIdx.x - 128;
  const int r0 = split_rows(q, splits), r1 = split_rows(q + 1, splits);
  float acc[32][4];
  coop_multiply_tile(acc, ring, full, empty, 0, nc, a.T - c0 * Cfg::TK, consumer, lane, [&](int64_t c) {
    // Halfway: the band's weight and state lines into L2 (one quad's lines a 32-column run: a
    // 128-byte line of fp32), so that the update after the reduction reads them from L2.
    if constexpr (SF != StateFormat::int8) {
      if (c != nc / 2 || !vec || o0 + Cfg::TR > pv.rows || i0 + Cfg::TC > pv.cols) return;
      for (int e = ctid; e < (r1 - r0) * (Cfg::TC / 32); e += 256)
        prefetch_quad_lines<Rule, SF, WS>(pv, (o0 + r0 + e / (Cfg::TC / 32)) * pv.cols + i0 + (e % (Cfg::TC / 32)) * 32);
    }
  });
  float* mine = scratch + size_t(blockIdx.x) * kL2gScratchFloats;
  coop_park_rows<Tile>(mine, acc, consumer, cwarp, lane);
  __threadfence();
  coop_consumers_barrier();
  if (ctid == 0) {  // publish the partial; wait for the tile's other slices
    atomicAdd(arrived + tile, 1);
    spin_until_at_least(arrived + tile, splits);
    __threadfence();
  }
  coop_consumers_barrier();
  // This split's band: the S partials summed in ascending slice order, into
  // this block's slot (no other split reads this band of it).
  split_sum_rows<256>(scratch, tile * splits, splits, mine, r0, r1 - r0, 0, Cfg::TC, ctid);
  coop_consumers_barrier();  // the band is stored (bar.sync orders the consumers' stores)
  coop_update_piece<Tile, Rule, SF, WS>(s, pv, vec, mine, o0, i0, L2gPiece{r0, 0, r1 - r0}, ctid);
}

// The split in waves: where tiles x S exceed the SMs (fused_token_splits chose S with the waves' cost,
// coop_split_count). A persistent grid of G = floor(SMs / S) * S blocks, a multiple of S, so that
// block b always holds slice q = b % S and each wave holds whole tiles; block b runs units b, b + G, ...
// (unit u: tile u / S, slice u % S), with the G-through-L2 kernel's three warpgroups:
//   - warp 0 (one thread) loads each unit's slice into the ring, from one unit straight into the next;
//   - both consumers multiply the unit, wait until the block's slot is free (its epilogue warps have
//     updated the previous unit's band, and the tile's S blocks have summed their bands out of it),
//     park the partial there, count the tile's arrivals and go on to the next unit; the block's last
//     unit they reduce and update themselves, as the one-wave kernel does;
//   - the epilogue warps (FusedSchedule::coop_l2g_epilogue_warps) take every other unit: once its
//     tile's S partials are parked, each warp sums its pieces of the band (l2g_piece over the band's
//     rows) over the S slots in ascending order into the block's slot, counts itself done reading the
//     tile's slots, and updates its pieces.
// The order is the one-wave kernel's, cublas_wgrad_order(S, 64); each element is summed and updated
// by the same operations. A wait is only ever for units of the same wave or an earlier one (a slot's
// reuse: the previous wave's tile; a reduction: its own wave's partials), and every block is resident,
// so no wait can deadlock.
template <class Rule, StateFormat SF, WeightStore WS>
__global__ void __launch_bounds__(CoopCfg::kThreads, 1)
    fused_wgrad_coop_split_waves_kernel(WgradTileArgs a, typename Rule::Scalars s, ParamView pv, bool vec,
                                        int group_rows, int splits, int epilogue_warps, float* scratch, int* arrived,
                                        int* summed, const __grid_constant__ WgradTmaMaps maps) {
  using Cfg = CoopCfg;
  extern __shared__ __align__(16) unsigned char coop_split_waves_smem[];
  unsigned char* ring = align_to_atom(coop_split_waves_smem);
  uint64_t* full = reinterpret_cast<uint64_t*>(ring + CoopL2gCfg::kBarrierOffset);
  uint64_t* empty = full + Cfg::kStages;
  uint64_t* g_empty = empty + Cfg::kStages;  // the epilogue warps are done with the block's slot
  const int warp = __shfl_sync(0xffffffffu, int(threadIdx.x / 32), 0), lane = threadIdx.x & 31;
  const int64_t tiles_x = (a.in + Cfg::TC - 1) / Cfg::TC, tiles_y = (a.out + Cfg::TR - 1) / Cfg::TR;
  const int64_t units = tiles_x * tiles_y * splits;
  const int64_t my_units = (units - blockIdx.x + gridDim.x - 1) / gridDim.x;  // the grid <= units
  const int q = int(blockIdx.x % splits);
  const int64_t nchunks = (a.T + Cfg::TK - 1) / Cfg::TK, slice = (nchunks + splits - 1) / splits;
  const int64_t c0 = min(nchunks, int64_t(q) * slice), nc = min(nchunks, c0 + slice) - c0;
  const int r0 = split_rows(q, splits), r1 = split_rows(q + 1, splits);
  float* mine = scratch + size_t(blockIdx.x) * kL2gScratchFloats;
  auto tile_of = [&](int64_t k) { return (int64_t(blockIdx.x) + k * gridDim.x) / splits; };
  // The block whose slot holds slice 0 of the block's k-th tile (a wave's units are blocks 0 .. G - 1).
  auto first_block_of = [&](int64_t k) { return tile_of(k) * splits - k * gridDim.x; };
  auto origin = [&](int64_t tile, int64_t& o0, int64_t& i0) {
    coop_tile_origin(tile, tiles_y, tiles_x, group_rows, o0, i0);
  };
  // A tile's slots are free once every block of it has summed its band: each epilogue warp counts
  // one, the consumers of a block's last unit count epilogue_warps.
  const int readers = splits * epilogue_warps;
  if (threadIdx.x == 0) {
    coop_init_ring(full, empty);
    mbar_init(g_empty, 32 * epilogue_warps);
    fence_mbarrier_init();
  }
  __syncthreads();

  if (warp == 0) {  // producer: one thread
    if (lane == 0) {
      int64_t n = 0;
      for (int64_t k = 0; k < my_units; ++k) {
        int64_t o0, i0;
        origin(tile_of(k), o0, i0);
        coop_load_tile(a, maps, ring, full, empty, o0, i0, nc, n, c0);
      }
    }
    return;
  }
  if (warp < 4) {  // the epilogue warps: every unit of the block but its last
    const int w = warp - 1;
    if (w >= epilogue_warps) return;
    for (int64_t k = 0; k + 1 < my_units; ++k) {
      const int64_t tile = tile_of(k);
      int64_t o0, i0;
      origin(tile, o0, i0);
      warp_spin_until_at_least(arrived + tile, splits);
      // Warp w's pieces of the band (l2g_piece over its rows).
      auto piece = [&](int p) {
        L2gPiece pc = l2g_piece(epilogue_warps, w, r1 - r0, p);
        pc.r0 += r0;
        return pc;
      };
#pragma unroll 1
      for (int p = 0; p < 2; ++p)
        if (const L2gPiece pc = piece(p); pc.rows > 0)
          split_sum_rows<32>(scratch, first_block_of(k), splits, mine, pc.r0, pc.rows, pc.c0, L2gEpilogueTile::TC,
                             lane);
      __threadfence();
      __syncwarp();  // the warp's sums are stored and its loads of the other slots done
      add_release_if_first(summed + tile, 1, lane);
#pragma unroll 1
      for (int p = 0; p < 2; ++p)
        if (const L2gPiece pc = piece(p); pc.rows > 0)
          coop_update_piece<L2gEpilogueTile, Rule, SF, WS>(s, pv, vec, mine, o0, i0, pc, lane);
      mbar_arrive(g_empty);
    }
    return;
  }

  const int consumer = warp / 4 - 1, cwarp = warp & 3, ctid = threadIdx.x - 128;
  float acc[32][4];
  for (int64_t k = 0; k < my_units; ++k) {
    const int64_t tile = tile_of(k);
    coop_multiply_tile(acc, ring, full, empty, k * nc, nc, a.T - c0 * Cfg::TK, consumer, lane, [](int64_t) {});
    if (k > 0) {  // the slot is free: the previous unit's band updated, its tile's bands summed
      mbar_wait(g_empty, uint32_t(k - 1) & 1u);
      warp_spin_until_at_least(summed + tile_of(k - 1), readers);
    }
    coop_park_rows<L2gLastTile>(mine, acc, consumer, cwarp, lane);
    __threadfence();
    coop_consumers_barrier();
    add_release_if_first(arrived + tile, 1, ctid);
  }
  // The block's last unit: its band reduced and updated by the consumers (256 threads).
  if (my_units > 0) {
    const int64_t tile = tile_of(my_units - 1);
    int64_t o0, i0;
    origin(tile, o0, i0);
    warp_spin_until_at_least(arrived + tile, splits);
    split_sum_rows<256>(scratch, first_block_of(my_units - 1), splits, mine, r0, r1 - r0, 0, Cfg::TC, ctid);
    __threadfence();
    coop_consumers_barrier();  // the band is stored (bar.sync orders the consumers' stores)
    add_release_if_first(summed + tile, epilogue_warps, ctid);
    coop_update_piece<L2gLastTile, Rule, SF, WS>(s, pv, vec, mine, o0, i0, L2gPiece{r0, 0, r1 - r0}, ctid);
  }
}

template <class Rule, StateFormat SF, WeightStore WS>
void launch_fused_coop_split(const WgradTileArgs& a, const typename Rule::Scalars& s, const ParamView& pv,
                             int splits, cudaStream_t stream) {
  if (splits < 2 || splits > kCoopSplitMax)
    throw std::invalid_argument("fused_wgrad_coop_split: splits " + std::to_string(splits) + " outside 2 .. " +
                                std::to_string(kCoopSplitMax));
  const int sms = coop_sm_count();
  const int64_t tiles = coop_tiles(a);
  const bool waves = tiles * splits > sms;
  const int64_t blocks = coop_split_waves_grid(tiles, splits, sms);
  if (blocks < 1)
    throw std::invalid_argument("fused_wgrad_coop_split: " + std::to_string(splits) + " slices need more than the " +
                                std::to_string(sms) + " SMs");
  // The blocks' slots, then two counts a tile: partials parked, bands summed (the waves only).
  float* scratch = coop_l2g_scratch(stream, size_t(blocks) * kL2gScratchFloats + 2 * size_t(tiles));
  int* arrived = reinterpret_cast<int*>(scratch + size_t(blocks) * kL2gScratchFloats);
  int* summed = arrived + tiles;
  cuda_check(cudaMemsetAsync(arrived, 0, 2 * size_t(tiles) * sizeof(int), stream), "fused_wgrad_coop_split: counts");
  const WgradTmaMaps maps = make_wgrad_tma_maps(a);
  const bool vec = SF != StateFormat::int8 && fused_params_vec4<SF>(pv);
  const FusedSchedule fs = fused_schedule();
  if (!waves) {
    auto kernel = fused_wgrad_coop_split_kernel<Rule, SF, WS>;
    static const bool attributes_set =
        set_smem_limit(kernel, CoopL2gCfg::kSmemBytes, "fused_wgrad_coop_split: cudaFuncSetAttribute");
    (void)attributes_set;
    kernel<<<unsigned(blocks), CoopCfg::kThreads, CoopL2gCfg::kSmemBytes, stream>>>(
        a, s, pv, vec, fs.coop_group_rows, splits, scratch, arrived, maps);
  } else {
    auto kernel = fused_wgrad_coop_split_waves_kernel<Rule, SF, WS>;
    static const bool attributes_set =
        set_smem_limit(kernel, CoopL2gCfg::kSmemBytes, "fused_wgrad_coop_split_waves: cudaFuncSetAttribute");
    (void)attributes_set;
    kernel<<<unsigned(blocks), CoopCfg::kThreads, CoopL2gCfg::kSmemBytes, stream>>>(
        a, s, pv, vec, fs.coop_group_rows, splits, fs.coop_l2g_epilogue_warps, scratch, arrived, summed, maps);
  }
  cuda_check(cudaGetLastError(), "fused_wgrad_coop_split: launch");
}

}  // namespace fh::gpu
