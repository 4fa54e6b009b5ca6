// The standalone element-wise rule kernel (phase 2 of both two-phase references): one thread per
// (row, 64-column block) segment of the whole tensor, each calling fh::update_segment, the same
// driver as the fused epilogue and the host. Instantiated per rule family (rule_family.h).
#pragma once
#include <stdexcept>

#include "kernels/formats/formats.h"
#include "kernels/gpu/rule_family.h"

namespace fh::gpu {

template <class Rule, StateFormat SF, WeightStore WS>
__global__ void __launch_bounds__(256)
    rule_segment_kernel(typename Rule::Scalars s, ParamView pv, const float* g, int64_t ldg) {
  const int64_t bpr = pv.blocks_per_row();
  const int64_t seg = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (seg >= pv.rows * bpr) return;
  const int64_t r = seg / bpr, c0 = (seg % bpr) * kInt8Block;
  const int64_t left = pv.cols - c0;
  const int n = left < kInt8Block ? int(left) : kInt8Block;
  update_segment<Rule, SF, WS>(s, pv, r, c0, n, g + r * ldg + c0);
}

template <class Rule, StateFormat SF, WeightStore WS>
void launch_rule_cfg(const typename Rule::Scalars& s, const ParamView& pv, const float* g,
                     int64_t ldg, cudaStream_t stream) {
  const int64_t nseg = pv.rows * pv.blocks_per_row();
  const int64_t blocks = (nseg + 255) / 256;
  if (blocks > 0x7fffffff) throw std::invalid_argument("rule_apply_device: tensor too large");
  rule_segment_kernel<Rule, SF, WS><<<unsigned(blocks), 256, 0, stream>>>(s, pv, g, ldg);
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
