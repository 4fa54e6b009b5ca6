// The two-phase standard step on the host, the baseline FORGE's Proposition 1 is stated against:
// phase 1 materializes the whole weight gradient G = dY^T X ([out, in] fp32) with a chosen
// producer, phase 2 applies the optimizer rule to the whole tensor at once through
// fh::apply_rule_region, the same element-wise driver every other producer uses.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/formats/host_param.h"

namespace fh {

// Which reduction order phase 1 uses (DESIGN contract 3: reduction order is data).
enum class GradProducer : uint8_t {
  exact,              // exact sum rounded once (reference/exact_gradient.h)
  fp32_sequential,    // acc = fl(acc + fl(dy*x)) in token order
  tensor_core_chain,  // one Hopper k16 instruction per 16 tokens, chained from t = 0, c0 = +0
                      // (kernels/twin/mma_model.h, kHopperMma): cuBLAS 13.1's wgrad order
};
inline constexpr GradProducer kAllGradProducers[] = {
    GradProducer::exact, GradProducer::fp32_sequential, GradProducer::tensor_core_chain};
const char* grad_producer_name(GradProducer p);

// G = dY^T X by `which`. X [T, in], dY [T, out] bf16 row-major; G [out, in]. T = 0 gives +0.
std::vector<float> produce_wgrad(GradProducer which, const bf16* X, const bf16* dY,
                                 int64_t T, int64_t in, int64_t out);
// The tensor-core chain producer alone.
std::vector<float> tensor_core_chain_wgrad(const bf16* X, const bf16* dY, int64_t T,
                                           int64_t in, int64_t out);

// Phase 2 alone: the rule of `w` on all of w with gradient G ([w.rows, w.cols]) at `step` (>= 1).
void apply_two_phase_update(HostParam& w, const std::vector<float>& G, int64_t step);

// Both phases. w is [out, in] = [w.rows, w.cols]; X is [T, w.cols], dY is [T, w.rows].
// g_out, when given, receives G. Throws std::invalid_argument on bad shapes or step < 1.
void two_phase_step_host(HostParam& w, const bf16* X, const bf16* dY, int64_t T,
                         int64_t step, GradProducer which, std::vector<float>* g_out = nullptr);

}  // namespace fh
