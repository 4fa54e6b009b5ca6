#include "reference/nonseparable_two_phase.h"

#include <stdexcept>

#include "exact/tracked.h"
#include "reference/order_matched_host.h"

namespace fh {

std::vector<float> ns_two_phase_step(NsParam& p, const NsHyper& h, const bf16* X, const bf16* dY,
                                     int64_t T, int64_t step, const ReductionOrder& order, const NsGrid& grid) {
  std::vector<float> G = order_matched_wgrad(X, dY, T, p.cols, p.rows, order);
  ns_step(p, h, step, grid, ns_materialized_source(G, p.rows, p.cols, grid));
  return G;
}

ExactSumOfSquares mpfr_sum_of_squares(const float* x, int64_t ld, int64_t rows, int64_t cols, float add,
                                      float computed) {
  if (x == nullptr || rows < 0 || cols < 0 || ld < cols)
    throw std::invalid_argument("mpfr_sum_of_squares: bad array");
  mpreal s = ref_real(0.0);
  const mpreal a = ref_real(add);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const mpreal v = ref_real(x[i * ld + j]);
      s += v * v + a;
    }
  ExactSumOfSquares r;
  r.exact = s.toDouble();
  r.abs_err = abs(ref_real(computed) - s).toDouble();
  return r;
}

}  // namespace fh
