#include "reference/lamb_two_phase.h"

#include <vector>

#include "reference/order_matched_host.h"

namespace fh {

void lamb_two_phase_step(LambParam& p, const LambHyper& h, const bf16* X, const bf16* dY,
                         int64_t T, int64_t step, const ReductionOrder& order) {
  const std::vector<float> G = order_matched_wgrad(X, dY, T, p.cols, p.rows, order);
  lamb_update_region(p, h, step, G.data(), p.cols, 0, p.rows, 0, p.cols);
}

}  // namespace fh
