// The fused wgrad-plus-update kernel (FORGE): each block computes one TR x TC tile of
// G = dY^T X with the shared mainloop, parks the fp32 tile in shared memory (no byte of G reaches
// global memory) and applies the rule to it through fh::update_segment, the element-wise driver
// every producer uses. Also the order-matched materializer kernel (same mainloop, stores G).
// Instantiated per rule family in kernels/gpu/rule_family_*.cu.
#pragma once
#include <stdexcept>
#include <string>

#include "kernels/formats/formats.h"
#include "kernels/gpu/gpu_api.h"
#include "kernels/gpu/wgrad_mainloop.cuh"

namespace fh::gpu {

template <class Cfg, class Rule, StateFormat SF, WeightStore WS>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocksPerSm)
    fused_wgrad_update_kernel(WgradTileArgs a, typename Rule::Scalars s, ParamView pv) {
  extern __shared__ __align__(16) unsigned char fused_smem[];
  uint16_t* smem = reinterpret_cast<uint16_t*>(fused_smem);
  const int64_t o0 = int64_t(blockIdx.y) * Cfg::TR, i0 = int64_t(blockIdx.x) * Cfg::TC;
  float acc[Cfg::kMT][Cfg::kNT][4];
  wgrad_mainloop<Cfg>(a, o0, i0, smem, acc);

  // The G tile into shared memory (the operand buffers are free: the mainloop ended on a barrier).
  float* sG = reinterpret_cast<float*>(fused_smem);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
#pragma unroll
  for (int mt = 0; mt < Cfg::kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < Cfg::kNT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const FragCoord c = acc_tile_coord<Cfg>(warp, lane, mt, nt, i);
        sG[c.row * Cfg::kLdG + c.col] = acc[mt][nt][i];
      }
  __syncthreads();

  // The rule, one (row, 64-column block) segment per thread, rows and columns clipped to W.
  for (int seg = tid; seg < Cfg::kSegments; seg += Cfg::kThreads) {
    const FragCoord so = segment_origin<Cfg>(seg);
    const int64_t r = o0 + so.row, c0 = i0 + so.col;
    if (r >= pv.rows || c0 >= pv.cols) continue;
    const int64_t left = pv.cols - c0;
    int n = left < 64 ? int(left) : 64;
    if (a.planted_defect == int(FusedPlantedDefect::edge_mask_short) && left < 64 && n > 1) --n;
    if (a.planted_defect == int(FusedPlantedDefect::state_row_offset) && blockIdx.x == 0 &&
        blockIdx.y == 0 && r + 1 < pv.rows) {
      ParamView q = pv;  // state of the row below: a wrong state tile offset
      constexpr int64_t esz = SF == StateFormat::fp32 ? 4 : SF == StateFormat::bf16 ? 2 : 1;
      for (int k = 0; k < kMaxStates; ++k) {
        if (q.state[k].data) q.state[k].data = static_cast<unsigned char*>(q.state[k].data) + esz * pv.cols;
        if (q.state[k].absmax) q.state[k].absmax += pv.blocks_per_row();
      }
      update_segment<Rule, SF, WS>(s, q, r, c0, n, sG + so.row * Cfg::kLdG + so.col);
      continue;
    }
    update_segment<Rule, SF, WS>(s, pv, r, c0, n, sG + so.row * Cfg::kLdG + so.col);
  }
}

// Order-matched materializer: the same mainloop, fp32 G [out, in] (row-major, ld = in) stored.
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocksPerSm) wgrad_materialize_kernel(WgradTileArgs a, float* g) {
  extern __shared__ __align__(16) unsigned char materialize_smem[];
  uint16_t* smem = reinterpret_cast<uint16_t*>(materialize_smem);
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

// Raises a kernel's dynamic shared-memory limit. Callers keep a function-local static per
// kernel instantiation so that this runs once per process (a failed call is retried next launch).
template <class Kernel>
bool set_smem_limit(Kernel kernel, size_t bytes, const char* what) {
  cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)), what);
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

template <class Rule, StateFormat SF, WeightStore WS>
void launch_fused_tile(const WgradTileArgs& a, const typename Rule::Scalars& s, const ParamView& pv,
                       TileShape tile, cudaStream_t stream) {
  if (tile.rows == 128 && tile.cols == 128)
    return launch_fused_cfg<WgradTileCfg<128, 128>, Rule, SF, WS>(a, s, pv, stream);
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
