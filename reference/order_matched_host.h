// Order-matched two-phase step on the host: materialize the full G [out, in] in the order a
// ReductionOrder describes, then apply the rule to the whole tensor at once. It is written
// independently of the twin's tile loop (no tiles, no staging, a plain chain per element) and
// shares with it only the instruction model and the rule code, so that Proposition 1 compares
// two producers, not one producer with itself.
#pragma once
#include <cstdint>
#include <vector>
#include "kernels/formats/host_param.h"
#include "kernels/common/reduction_order.h"

namespace fh {

// G [out, in] = dY^T X in `order`: per element, per split-K slice, one mma_chain_dot over the
// slice's tokens from +0; slices summed ascending with fp32 RNE adds.
std::vector<float> order_matched_wgrad(const bf16* X, const bf16* dY, int64_t T,
                                       int64_t in, int64_t out, const ReductionOrder& order);

// dX [T, in] = dY W with Wb the bf16 weights, each element one chain over `out` from +0.
std::vector<float> order_matched_dgrad(const bf16* dY, const bf16* Wb, int64_t T,
                                       int64_t in, int64_t out, const ReductionOrder& order);

// The two-phase step: dX (if asked) from the weights before the step, then G, then the rule on
// the whole tensor through apply_rule_region.
void order_matched_step(HostParam& w, const bf16* X, const bf16* dY, int64_t T,
                        int64_t step, const ReductionOrder& order, std::vector<float>* dX = nullptr);
// Phase two alone is reference/two_phase_host.h's apply_two_phase_update.

}  // namespace fh
