// The falsifier's two-phase reference (kernels/twin/nonseparable.h): LAMB with the order-matched
// G and one trust ratio for the whole tensor.
#pragma once
#include <cstdint>

#include "kernels/common/reduction_order.h"
#include "kernels/twin/nonseparable.h"

namespace fh {

// Two-phase with the order-matched G: one trust ratio for the tensor.
void lamb_two_phase_step(LambParam& p, const LambHyper& h, const bf16* X, const bf16* dY,
                         int64_t T, int64_t step, const ReductionOrder& order);

}  // namespace fh
