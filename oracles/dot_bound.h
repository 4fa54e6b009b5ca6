// Forward-error bounds for a K-term fp32 dot product whose terms are exact (bf16 * bf16
// products), for the two reduction orders the harness meets: sequential recursive summation in
// fp32 (the host reference) and a chain of tensor-core instructions (DESIGN contract 2).
// A bound is an upper bound on |s_hat - s|, s the exact sum, s_hat the computed one; +inf means
// "no finite guarantee" (an intermediate could overflow). The bounds are evaluated in double
// and inflated to cover their own rounding, so they are rigorous as computed.
//
// Sequential fp32 summation, acc = +0; acc = fl(acc + fl(p_k)), k = 1..K.
//   Source: Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed. (SIAM 2002),
//   Lemma 3.1 and §4.2 (recursive summation, eq. (4.4) in its rigorous gamma form): for
//   floating-point x_1..x_n summed left to right, |s_hat - s| <= gamma_{n-1} sum |x_i|,
//   gamma_n = n u / (1 - n u), u = 2^-24 for fp32 (valid while n u < 1).
//   Underflow (Higham §2.1): with gradual underflow an fp32 addition whose result is subnormal
//   is exact, so the model fl(a+b) = (a+b)(1+d), |d| <= u, needs no underflow term. The products
//   are exact in fp32 unless |p_k| < 2^-126 (16 significant bits always fit above 2^-141);
//   a tiny product is rounded to the 2^-149 grid with error <= 2^-150. With n_tiny such products
//   (x_k = fl(p_k), |x_k - p_k| <= 2^-150):
//     |s_hat - s| <= gamma_{K-1} (sum |p_k| + n_tiny 2^-150) + n_tiny 2^-150.
//   No overflow happens when (1 + gamma_{K-1}) (sum |p_k| + n_tiny 2^-150) < FLT_MAX.
//
// Tensor-core chain (the instruction of kernels/twin/mma_model.h): instruction j takes the
// running fp32 accumulator c = acc_{j-1} (acc_0 = c0) and n_j <= G products (G = 16), and
//   (1) takes the alignment exponent E_j = max(clamp, alignment exponents of its nonzero terms)
//       (a product's alignment exponent e = e_a + e_b satisfies 2^e <= |p| when both factors
//       are normal bf16; c's is floor(log2 |c|), or -126 for a subnormal c, so 2^e_c <=
//       max(|c|, 2^-126));
//   (2) truncates each nonzero term toward zero onto the grid 2^(E_j - A) (A = align_bits =
//       25): each loses less than 2^(E_j - A), and there are m_j <= n_j + 1 <= 17 of them;
//   (3) sums the truncated terms exactly into sigma_j, with |sigma_j| <= |c| + sum_j |p|
//       (truncation toward zero never grows a magnitude);
//   (4) rounds sigma_j to fp32 toward zero: |acc_j - sigma_j| < ulp(sigma_j) <= 2^-23 |sigma_j|
//       in the normal range, < 2^-149 below it (nearest-even mode: 2^-24 |sigma| + 2^-150).
// With S_j the exact partial sum and e_j = acc_j - S_j, (2)-(4) give per instruction
//   |e_j| <= |e_{j-1}| + m_j 2^(E_j - A) + 2^-23 (|acc_{j-1}| + sum_j |p|) + 2^-149,
// where the unknown |acc_{j-1}| <= Abs_{j-1} + B_{j-1} (Abs_{j-1} = |c0| + sum of |p| of the
// earlier groups >= |S_{j-1}|, B_{j-1} the bound so far), and
//   2^E_j <= max(2^clamp, max over the group's products of 2^e, max(Abs_{j-1} + B_{j-1}, 2^-126)).
// Chaining over J = ceil(K / G) instructions: B_J = sum_j (those per-instruction terms), B_0 = 0.
// Per instruction that is at most 2^-23 ((17/4) max|term| + sum|terms|) + 2^-149 for normal
// terms: the chain behaves like a recursive sum of J terms with unit 2^-23 (twice fp32's u).
// The bound is +inf as soon as |c| + sum_j |p| could reach 2^128 (the instruction gives inf).
#pragma once
#include <cstdint>

#include "kernels/common/bf16.h"
#include "kernels/common/mma_params.h"
#include "kernels/common/reduction_order.h"

namespace fh {

inline constexpr double kFp32UnitRoundoff = 0x1p-24;

// gamma_n = n u / (1 - n u) with u = 2^-24 (rounded up); +inf when n u >= 1. Throws on n < 0.
double gamma_fp32(int64_t n);

// The sequential bound above. abs_sum: an upper bound on sum |p_k|; n_tiny: how many products
// may be inexact in fp32 (|p_k| < 2^-126), -1 meaning "assume all K".
double seq_fp32_dot_bound(int64_t K, double abs_sum, int64_t n_tiny = -1);

// The tensor-core chain bound above from the bf16 inputs a[k*a_stride], b[k*b_stride] (exact
// alignment exponents, any bf16 including subnormals; inf / NaN inputs give +inf).
double tc_chain_dot_bound(const bf16* a, int64_t a_stride, const bf16* b,
                          int64_t b_stride, int64_t K, float c0 = 0.0f,
                          const MmaModelParams& params = kHopperMma);

// The same bound from the term magnitudes |p_k| alone, taking 2^e <= |p_k| for the alignment
// exponent: valid when every factor is a normal bf16 or zero (a subnormal factor's product can
// be far below its alignment power; use tc_chain_dot_bound for those).
double tc_chain_dot_bound_from_terms(const double* abs_terms, int64_t K, double abs_c0 = 0.0,
                                     const MmaModelParams& params = kHopperMma);

// Upper bound on |G_hat - S| for G[o, i] = sum_t dY[t, o] X[t, i] (bf16 bits, X [T, in], dY
// [T, out]) computed in `order` (S the exact sum): per split-K slice the instruction-chain bound
// above; the split_k - 1 fp32 RNE adds of the slice partials add gamma_{split_k - 1} * sum_s
// (|partial_s| <= abs_s + B_s) (Higham, recursive summation).
double order_dot_bound(const bf16* X, const bf16* dY, int64_t T, int64_t in, int64_t out,
                       int64_t o, int64_t i, const ReductionOrder& order);

}  // namespace fh
