// The references of the non-separable optimizers (kernels/twin/nonseparable_rules.h):
//   - the two-phase step: the order-matched G materialized, then the standard step over it, with
//     every cross-tile statistic in the grid's fixed order (the order the exact fused schedule
//     describes);
//   - the exact value of a sum of squares, in MPFR, to bound the fp32 statistic against.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/common/reduction_order.h"
#include "kernels/twin/nonseparable_rules.h"

namespace fh {

// One two-phase step; returns the order-matched G it used ([rows, cols]).
std::vector<float> ns_two_phase_step(NsParam& p, const NsHyper& h, const bf16* X, const bf16* dY,
                                     int64_t T, int64_t step, const ReductionOrder& order, const NsGrid& grid);

// sum over the [rows, cols] array x (leading dimension ld) of x^2 + add, exactly (MPFR at
// kRefPrec), and |computed - that sum|, also in MPFR, each rounded once to double.
struct ExactSumOfSquares {
  double exact = 0, abs_err = 0;
};
ExactSumOfSquares mpfr_sum_of_squares(const float* x, int64_t ld, int64_t rows, int64_t cols, float add,
                                      float computed);

// One step of p's rule in MPFR (kRefPrec), written from the paper's algorithm, not from the twin's
// code: the state, the weights and G [rows, cols] read exactly, the hyperparameters as doubles,
// every statistic a sum or max over the whole tensor, every operation and scalar in MPFR, each
// array rounded to fp32 once at the end (nonseparable_rules.cpp's comments cite each algorithm).
NsParam ns_mpfr_step(const NsParam& p, const NsHyper& h, int64_t step, const std::vector<float>& G);

}  // namespace fh
