// The standalone element-wise rule kernel (phase 2 of both two-phase references), with the
// fused epilogue's element mapping over the whole tensor: fp32 / bf16 state, a block of 256
// threads sweeps a 1024-column strip of rows, consecutive lanes on consecutive columns, four
// elements per thread loaded before the first is updated (fh::update_element's pieces); int8
// state, one warp per 64-column block (fh::update_int8_block_warp). Same per-element functions
// as the fused epilogue and the host. Instantiated per rule family (rule_family.h).
#pragma once
#include <stdexcept>

#include "kernels/formats/formats.h"
#include "kernels/gpu/rule_family.h"
#include "kernels/gpu/speculative_update.cuh"

namespace fh::gpu {

constexpr int kRuleThreads = 256;
constexpr int kRuleElementsPerThread = 4;
constexpr int kRuleStripCols = kRuleThreads * kRuleElementsPerThread;
constexpr int64_t kRuleMaxGridY = 65535;
constexpr int64_t kRuleMaxInt8Blocks = int64_t(1) << 20;  // grid-stride beyond this

// fp32 / bf16 state. grid.x: 1024-column strips; grid.y strides over rows.
template <class Rule, StateFormat SF, WeightStore WS>
__global__ void __launch_bounds__(kRuleThreads)
    rule_element_kernel(typename Rule::Scalars s, ParamView pv, const float* g, int64_t ldg) {
  const int64_t c_first = int64_t(blockIdx.x) * kRuleStripCols + threadIdx.x;
#pragma unroll 1
  for (int64_t r = blockIdx.y; r < pv.rows; r += gridDim.y) {
    ElementValues e[kRuleElementsPerThread];
    float gv[kRuleElementsPerThread];
#pragma unroll
    for (int b = 0; b < kRuleElementsPerThread; ++b) {
      const int64_t c = c_first + int64_t(b) * kRuleThreads;
      if (c < pv.cols) {
        e[b] = load_element<SF, WS>(pv, r * pv.cols + c, r * pv.cols + c);
        gv[b] = g[r * ldg + c];
      }
    }
    // Where all four columns are in the row, their updates interleave (speculative_update.cuh).
    const bool whole = c_first + int64_t(kRuleElementsPerThread - 1) * kRuleThreads < pv.cols;
    if (whole)
      update_speculative<Rule, kRuleElementsPerThread>(s, e, gv, [&](ElementValues(&x)[kRuleElementsPerThread]) {
#pragma unroll
        for (int b = 0; b < kRuleElementsPerThread; ++b) {
          const int64_t idx = r * pv.cols + c_first + int64_t(b) * kRuleThreads;
          x[b] = load_element<SF, WS>(pv, idx, idx);
        }
      });
#pragma unroll
    for (int b = 0; b < kRuleElementsPerThread; ++b) {
      const int64_t c = c_first + int64_t(b) * kRuleThreads;
      if (c >= pv.cols) continue;
      if (!whole) Rule::update(s, e[b].p, gv[b], e[b].st);
      const int64_t idx = r * pv.cols + c;
      store_element<SF, WS>(pv, idx, idx, global_element_index(pv, r, c), e[b]);
    }
  }
}

// int8 state: warp w (grid-stride) takes block w of the tensor, row w / blocks_per_row. Five blocks
// an SM (<= 48 registers): v33's branch-free decode took AdamW from 47 to 60 registers, four blocks
// an SM and 214 -> 236 us at 4096^2 (NOTES.md v34); the standalone step is the yardstick, so it
// keeps its occupancy.
template <class Rule, WeightStore WS>
__global__ void __launch_bounds__(kRuleThreads, 5)
    rule_int8_block_kernel(typename Rule::Scalars s, ParamView pv, const float* g, int64_t ldg) {
  const int lane = threadIdx.x & 31;
  const int64_t bpr = pv.blocks_per_row(), nblocks = pv.rows * bpr;
  const int64_t warps_per_block = kRuleThreads / 32;
  const int64_t stride = int64_t(gridDim.x) * warps_per_block;
#pragma unroll 1
  for (int64_t w = int64_t(blockIdx.x) * warps_per_block + (threadIdx.x >> 5); w < nblocks; w += stride) {
    const int64_t r = w / bpr, c0 = (w % bpr) * kInt8Block;
    const int64_t left = pv.cols - c0;
    const int n = left < kInt8Block ? int(left) : kInt8Block;
    const float* grow = g + r * ldg + c0;
    update_int8_block_warp<Rule, WS>(s, pv, r, r, c0, n, [grow](int e) { return grow[e]; }, lane);
  }
}

template <class Rule, StateFormat SF, WeightStore WS>
void launch_rule_cfg(const typename Rule::Scalars& s, const ParamView& pv, const float* g,
                     int64_t ldg, cudaStream_t stream) {
  if constexpr (SF == StateFormat::int8) {
    const int64_t nblocks = pv.rows * pv.blocks_per_row();
    const int64_t per_cta = kRuleThreads / 32;
    int64_t ctas = (nblocks + per_cta - 1) / per_cta;
    if (ctas > kRuleMaxInt8Blocks) ctas = kRuleMaxInt8Blocks;
    rule_int8_block_kernel<Rule, WS><<<unsigned(ctas), kRuleThreads, 0, stream>>>(s, pv, g, ldg);
  } else {
    const int64_t strips = (pv.cols + kRuleStripCols - 1) / kRuleStripCols;
    if (strips > 0x7fffffff) throw std::invalid_argument("rule_apply_device: tensor too wide");
    const int64_t gy = pv.rows < kRuleMaxGridY ? pv.rows : kRuleMaxGridY;
    rule_element_kernel<Rule, SF, WS><<<dim3(unsigned(strips), unsigned(gy), 1), kRuleThreads, 0, stream>>>(s, pv, g, ldg);
  }
  cuda_check(cudaGetLastError(), "rule_apply_device: launch");
}

template <class Rule, StateFormat SF>
void launch_rule_ws(WeightStore ws, const typename Rule::Scalars& s, const ParamView& pv,
                    const float* g, int64_t ldg, cudaStream_t stream) {
  switch (ws) {
    case WeightStore::fp32_master: return launch_rule_cfg<Rule, SF, WeightStore::fp32_master>(s, pv, g, ldg, stream);
    case WeightStore::bf16_rne: return launch_rule_cfg<Rule, SF, WeightStore::bf16_rne>(s, pv, g, ldg, stream);
    case WeightStore::bf16_sr: return launch_rule_cfg<Rule, SF, WeightStore::bf16_sr>(s, pv, g, ldg, stream);
  }
  throw std::invalid_argument("rule_apply_device: unknown weight store");
}

template <class Rule>
void launch_rule_typed(StateFormat sf, WeightStore ws, const typename Rule::Scalars& s,
                       const ParamView& pv, const float* g, int64_t ldg, cudaStream_t stream) {
  switch (sf) {
    case StateFormat::fp32: return launch_rule_ws<Rule, StateFormat::fp32>(ws, s, pv, g, ldg, stream);
    case StateFormat::bf16: return launch_rule_ws<Rule, StateFormat::bf16>(ws, s, pv, g, ldg, stream);
    case StateFormat::int8: return launch_rule_ws<Rule, StateFormat::int8>(ws, s, pv, g, ldg, stream);
  }
  throw std::invalid_argument("rule_apply_device: unknown state format");
}

}  // namespace fh::gpu
