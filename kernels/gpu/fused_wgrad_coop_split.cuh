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
  auto slot_of = [&](int64_t b) { return scratch + size_t(b) * kL2gScratchFloats; };
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
  float* mine = slot_of(blockIdx.x);
  coop_park_rows<Tile>(mine, acc, consumer, cwarp, lane);
  __threadfence();
  coop_consumers_barrier();
  if (ctid == 0) {  // publish the partial; wait for the tile's other slices
    atomicAdd(arrived + tile, 1);
    spin_until_at_least(arrived + tile, splits);
    __threadfence();
  }
  coop_consumers_barrier();
  // This split's band: the S partials summed in ascending slice order (the plant: descending), into
  // this block's slot (no other split reads this band of it); two float4 a thread at a time, each
  // with its S loads issued before its adds.
  const bool descending = a.planted_defect == int(FusedPlantedDefect::split_descending);
  const int64_t first_block = tile * splits;
  const int n4 = (r1 - r0) * (Cfg::TC / 4);  // float4 of the band (a multiple of 512)
  for (int e0 = ctid; e0 < n4; e0 += 512) {
    float4 g[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const size_t off = size_t(r0) * Cfg::TC + size_t(e0 + 256 * h) * 4;
      for (int j0 = 0; j0 < splits; j0 += 4) {  // four partials in flight, then their adds in order
        float4 p[4];
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (j0 + j < splits)
            p[j] = __ldcg(reinterpret_cast<const float4*>(
                slot_of(first_block + (descending ? splits - 1 - (j0 + j) : j0 + j)) + off));
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (j0 + j < splits)
            g[h] = j0 + j == 0 ? p[j]
                               : make_float4(__fadd_rn(g[h].x, p[j].x), __fadd_rn(g[h].y, p[j].y),
                                             __fadd_rn(g[h].z, p[j].z), __fadd_rn(g[h].w, p[j].w));
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h)
      *reinterpret_cast<float4*>(mine + size_t(r0) * Cfg::TC + size_t(e0 + 256 * h) * 4) = g[h];
  }
  coop_consumers_barrier();  // the band is stored (bar.sync orders the consumers' stores)
  coop_update_piece<Tile, Rule, SF, WS>(a, s, pv, vec, mine, o0, i0, L2gPiece{r0, 0, r1 - r0}, ctid);
}

template <class Rule, StateFormat SF, WeightStore WS>
void launch_fused_coop_split(const WgradTileArgs& a, const typename Rule::Scalars& s, const ParamView& pv,
                             int splits, cudaStream_t stream) {
  if (splits < 2 || splits > kCoopSplitMax)
    throw std::invalid_argument("fused_wgrad_coop_split: splits " + std::to_string(splits) + " outside 2 .. " +
                                std::to_string(kCoopSplitMax));
  auto kernel = fused_wgrad_coop_split_kernel<Rule, SF, WS>;
  static const bool attributes_set =
      set_smem_limit(kernel, CoopL2gCfg::kSmemBytes, "fused_wgrad_coop_split: cudaFuncSetAttribute");
  (void)attributes_set;
  const int sms = coop_sm_count();
  const int64_t tiles = coop_tiles(a), blocks = tiles * splits;
  if (blocks > sms)
    throw std::invalid_argument("fused_wgrad_coop_split: " + std::to_string(tiles) + " tiles x " +
                                std::to_string(splits) + " slices need more blocks than the " + std::to_string(sms) +
                                " SMs hold at once");
  float* scratch = coop_l2g_scratch(stream, size_t(blocks) * kL2gScratchFloats + size_t(tiles));
  int* arrived = reinterpret_cast<int*>(scratch + size_t(blocks) * kL2gScratchFloats);
  cuda_check(cudaMemsetAsync(arrived, 0, size_t(tiles) * sizeof(int), stream), "fused_wgrad_coop_split: counts");
  const WgradTmaMaps maps = make_wgrad_tma_maps(a);
  const bool vec = SF != StateFormat::int8 && fused_params_vec4<SF>(pv);
  kernel<<<unsigned(blocks), CoopCfg::kThreads, CoopL2gCfg::kSmemBytes, stream>>>(
      a, s, pv, vec, fused_schedule().coop_group_rows, splits, scratch, arrived, maps);
  cuda_check(cudaGetLastError(), "fused_wgrad_coop_split: launch");
}

}  // namespace fh::gpu
