#include "oracles/dot_bound.h"

#include "kernels/common/bf16.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace fh {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kFltMax = 0x1.fffffep127;

// The bounds are sums and products of nonnegative doubles: each rounding loses at most 2^-53
// relative, so `ops` of them lose at most about ops * 2^-53; this factor restores an upper bound.
double inflate(double x, int64_t ops) { return x * (1.0 + double(ops + 4) * 0x1p-52); }

// One term of a chained instruction: its magnitude and 2^(alignment exponent); both 0 for a zero.
struct TcTerm {
  double abs = 0.0, align_pow = 0.0;
};

// The chain recursion of the header over K terms supplied by term(k); NaN-free inputs assumed.
template <class TermFn>
double chain_bound(int64_t K, double abs_c0, const MmaModelParams& p, TermFn&& term) {
  mma_check_params(p);
  if (K < 0) throw std::invalid_argument("tc chain bound: negative K");
  if (!(abs_c0 >= 0.0)) throw std::invalid_argument("tc chain bound: |c0| must be >= 0");
  if (std::isinf(abs_c0)) return kInf;
  const bool rz = p.out_round == MmaModelParams::OutRound::toward_zero;
  const double rel = rz ? 0x1p-23 : 0x1p-24;      // output rounding, relative part
  const double sub = rz ? 0x1p-149 : 0x1p-150;    // output rounding below 2^-126
  const double grid = std::ldexp(1.0, -p.align_bits);
  const double clamp_pow = std::ldexp(1.0, p.clamp_exp);
  double abs_prefix = abs_c0;  // >= |S_{j-1}|
  double bound = 0.0;          // B_{j-1}
  int64_t ops = 0;
  for (int64_t k0 = 0; k0 < K; k0 += p.group) {
    const int64_t n = std::min<int64_t>(p.group, K - k0);
    double group_abs = 0.0, pow_max = clamp_pow;
    int64_t m = 0;
    for (int64_t k = k0; k < k0 + n; ++k) {
      const TcTerm t = term(k);
      if (std::isinf(t.abs)) return kInf;
      if (t.abs == 0.0) continue;
      group_abs += t.abs;
      pow_max = std::max(pow_max, t.align_pow);
      ++m;
    }
    const double acc_abs = abs_prefix + bound;  // >= |acc_{j-1}|
    if (acc_abs > 0.0) {
      ++m;  // the accumulator may be a nonzero term
      pow_max = std::max(pow_max, std::max(acc_abs, 0x1p-126));
    }
    const double sigma_abs = acc_abs + group_abs;
    if (!(sigma_abs < 0x1p128)) return kInf;  // the instruction could give inf
    bound += double(m) * pow_max * grid + rel * sigma_abs + sub;
    abs_prefix += group_abs;
    ops += n + 8;
  }
  return inflate(bound, 2 * ops);
}

}  // namespace

double gamma_fp32(int64_t n) {
  if (n < 0) throw std::invalid_argument("gamma_fp32: negative n");
  const double nu = double(n) * kFp32UnitRoundoff;  // exact for n < 2^53
  if (nu >= 1.0) return kInf;
  return inflate(nu / (1.0 - nu), 2);
}

double seq_fp32_dot_bound(int64_t K, double abs_sum, int64_t n_tiny) {
  if (K < 0) throw std::invalid_argument("seq_fp32_dot_bound: negative K");
  if (!(abs_sum >= 0.0)) throw std::invalid_argument("seq_fp32_dot_bound: abs_sum must be >= 0");
  if (n_tiny < -1 || n_tiny > K)
    throw std::invalid_argument("seq_fp32_dot_bound: n_tiny must be in [-1, K], got " +
                                std::to_string(n_tiny));
  if (K == 0) return 0.0;
  const double tiny = double(n_tiny < 0 ? K : n_tiny) * 0x1p-150;
  const double g = gamma_fp32(K - 1);
  const double terms = abs_sum + tiny;
  if (!((1.0 + g) * terms < kFltMax)) return kInf;  // a partial sum could overflow
  return inflate(g * terms + tiny, 4);
}

double tc_chain_dot_bound(const bf16* a, int64_t a_stride, const bf16* b,
                          int64_t b_stride, int64_t K, float c0, const MmaModelParams& params) {
  if (K > 0 && (!a || !b)) throw std::invalid_argument("tc_chain_dot_bound: null input");
  if (std::isnan(c0)) return kInf;
  return chain_bound(K, std::fabs(double(c0)), params, [&](int64_t k) {
    const uint16_t x = a[k * a_stride].bits, y = b[k * b_stride].bits;
    const int ex = (x >> 7) & 0xFF, ey = (y >> 7) & 0xFF;
    if (ex == 0xFF || ey == 0xFF) return TcTerm{kInf, kInf};
    const int sx = ex ? ((x & 0x7F) | 0x80) : (x & 0x7F);
    const int sy = ey ? ((y & 0x7F) | 0x80) : (y & 0x7F);
    if (sx == 0 || sy == 0) return TcTerm{};
    // Alignment exponent as the instruction takes it: subnormals count as exponent -126.
    const int e = (ex ? ex - 127 : -126) + (ey ? ey - 127 : -126);
    return TcTerm{std::ldexp(double(sx * sy), e - 14), std::ldexp(1.0, e)};  // both exact
  });
}

double tc_chain_dot_bound_from_terms(const double* abs_terms, int64_t K, double abs_c0,
                                     const MmaModelParams& params) {
  if (K > 0 && !abs_terms) throw std::invalid_argument("tc_chain_dot_bound_from_terms: null input");
  return chain_bound(K, abs_c0, params, [&](int64_t k) {
    const double v = abs_terms[k];
    if (!(v >= 0.0)) throw std::invalid_argument("tc_chain_dot_bound_from_terms: terms must be >= 0");
    return TcTerm{v, v};  // 2^e <= |p| for normal factors
  });
}

double order_dot_bound(const bf16* X, const bf16* dY, int64_t T, int64_t in, int64_t out,
                       int64_t o, int64_t i, const ReductionOrder& order) {
  const MmaModelParams p = order.model_params();
  if (order.split_k == 1) return tc_chain_dot_bound(dY + o, out, X + i, in, T, 0.0f, p);
  double total = 0.0, partial_mag = 0.0;
  for (int s = 0; s < order.split_k; ++s) {
    int64_t tb, te;
    order.slice_bounds(T, s, tb, te);
    const double b = tc_chain_dot_bound(dY + tb * out + o, out, X + tb * in + i, in, te - tb, 0.0f, p);
    double abs_sum = 0.0;
    for (int64_t t = tb; t < te; ++t)
      abs_sum += std::fabs(double(bf16_to_float(dY[t * out + o])) * double(bf16_to_float(X[t * in + i])));
    total += b;
    partial_mag += abs_sum * (1.0 + 0x1p-40) + b;  // the double sum's own rounding, covered
  }
  return (total + gamma_fp32(order.split_k - 1) * partial_mag) * (1.0 + 0x1p-40);
}

}  // namespace fh
