#include "oracles/fidelity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "kernels/formats/int8_block.h"
#include "oracles/rule_bounds.h"

namespace fh {

namespace {

double up(const mpreal& x) { return mpfr_get_d(x.mpfr_srcptr(), MPFR_RNDU); }

bool same_bits(float a, float b) { return f2u(a) == f2u(b); }

}  // namespace

Int8MomentJudgement judge_int8_moments(const std::vector<float>& decoded,
                                       const std::vector<float>& reference, int64_t rows,
                                       int64_t cols, bool nonnegative) {
  if (rows <= 0 || cols <= 0 || decoded.size() != size_t(rows * cols) || reference.size() != decoded.size())
    throw std::invalid_argument("judge_int8_moments: sizes do not match rows x cols");
  Int8MomentJudgement j;
  const int L = int8_levels(nonnegative);
  j.bound_rel_absmax = 1.0 / (2.0 * L) + 0x1p-22;
  j.ratio_histogram.assign(21, 0);
  auto violate = [&](int64_t r, int64_t c, double bound) {
    if (j.violations++ == 0) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "row %lld col %lld: decoded %.9g reference %.9g bound %.9g",
                    (long long)r, (long long)c, double(decoded[size_t(r * cols + c)]),
                    double(reference[size_t(r * cols + c)]), bound);
      j.first_violation = buf;
    }
  };
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c0 = 0; c0 < cols; c0 += kInt8Block) {
      const int n = int(std::min<int64_t>(kInt8Block, cols - c0));
      const float* ref = reference.data() + r * cols + c0;
      const float* dec = decoded.data() + r * cols + c0;
      const float a = int8_block_absmax(ref, n);  // the block's own absmax, from the reference
      j.elements += n;
      if (fisnan(a) || !fisfinite(a)) {  // INT8_CODEC.md's special blocks
        ++j.special_blocks;
        for (int i = 0; i < n; ++i) {
          float want;
          if (fisnan(a)) want = u2f(kInt8CanonicalNanBits);
          else if (!fisfinite(ref[i]) && !(nonnegative && ref[i] < 0)) want = ref[i];
          else want = 0.0f;
          if (!same_bits(dec[i], want)) violate(r, c0 + i, NAN);
        }
        continue;
      }
      ++j.finite_blocks;
      const double B = int8_codec_bound(a, nonnegative);
      const mpreal Bm = ref_real(B);
      for (int i = 0; i < n; ++i) {
        if (!fisfinite(dec[i])) { violate(r, c0 + i, B); ++j.ratio_histogram[20]; continue; }
        const mpreal err = abs(ref_real(dec[i]) - ref_real(ref[i]));  // exact at 256 bits
        const bool ok = err <= Bm;
        if (!ok) violate(r, c0 + i, B);
        const double ratio = B > 0 ? up(err) / B : (err == 0 ? 0.0 : INFINITY);
        j.max_ratio = std::max(j.max_ratio, ratio);
        if (a > 0) j.max_err_rel_absmax = std::max(j.max_err_rel_absmax, up(err) / double(a));
        j.ratio_histogram[ok ? std::min(19, int(ratio * 20)) : 20]++;
      }
    }
  return j;
}

int64_t count_absmax_mismatches(const std::vector<float>& stored_absmax,
                                const std::vector<float>& reference, int64_t rows, int64_t cols) {
  const int64_t bpr = (cols + kInt8Block - 1) / kInt8Block;
  if (stored_absmax.size() != size_t(rows * bpr) || reference.size() != size_t(rows * cols))
    throw std::invalid_argument("count_absmax_mismatches: sizes do not match");
  int64_t bad = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < bpr; ++b) {
      const int64_t c0 = b * kInt8Block;
      const int n = int(std::min<int64_t>(kInt8Block, cols - c0));
      bad += !same_bits(stored_absmax[size_t(r * bpr + b)],
                        int8_block_absmax(reference.data() + r * cols + c0, n));
    }
  return bad;
}

std::optional<uint32_t> int8_linear_moment_absmax_bits(const std::vector<float>& g) {
  // The class of the element's moment: finite (from the finite start), +inf, -inf or NaN. Only
  // classes are followed: b*m + c*g with b, c > 0 keeps the class of an infinite or NaN operand,
  // and inf + (-inf) is NaN. A finite moment cannot overflow here: the gradients are finite and
  // of a sane size.
  enum Cls { kFinite, kPosInf, kNegInf, kNaN } m = kFinite;
  for (const float x : g) {
    const Cls gc = std::isnan(x) ? kNaN : std::isinf(x) ? (x > 0 ? kPosInf : kNegInf) : kFinite;
    if (m == kNaN || gc == kNaN) m = kNaN;
    else if ((m == kPosInf && gc == kNegInf) || (m == kNegInf && gc == kPosInf)) m = kNaN;
    else if (gc != kFinite) m = gc;
  }
  if (m == kNaN) return kInt8CanonicalNanBits;
  if (m != kFinite) return 0x7f800000u;
  return std::nullopt;
}

namespace {

// A state input that may be off by `err` from the exact value x (a decoded INT8 moment).
TrackedF32 state_in(float x, double err, bool nonnegative) {
  TrackedF32 t = tracked_input(x);
  if (t.out_of_range || err == 0) return t;
  t.e = ref_real(err);
  const mpreal lo = t.v - t.e;
  if (nonnegative) {  // the unsigned codec decodes to >= 0
    t.nonneg = true;
    t.lo = lo > 0 ? lo : ref_real(0);
  } else {
    t.nonneg = lo >= 0;
    t.lo = t.nonneg ? lo : ref_real(0);
  }
  return t;
}

TrackedF32 adamw_p(const AdamW::Hyper& h, const AdamWBoundScalars& s, float p0, float g0,
                   const TrackedF32& m0, const TrackedF32& v0) {
  TrackedF32 g = tracked_input(g0);
  if (h.maximize) g = t_neg(g);
  const TrackedF32 m = t_add(t_mul(s.beta1, m0), t_mul(s.one_minus_beta1, g));
  const TrackedF32 v = t_add(t_mul(s.beta2, v0), t_mul(s.one_minus_beta2, t_sq(g)));
  const TrackedF32 denom = t_add(t_div(t_sqrt(v), s.sqrt_bc2), s.eps);
  return t_sub(t_mul(tracked_input(p0), s.decay), t_div(t_mul(s.lr_over_bc1, m), denom));
}

TrackedF32 sgdm_p(const SGDMomentum::Hyper& h, const SGDMomentumBoundScalars& s, int64_t t,
                  float p0, float g0, const TrackedF32& b0) {
  TrackedF32 g = tracked_input(g0);
  if (h.maximize) g = t_neg(g);
  const TrackedF32 p = tracked_input(p0);
  g = t_add(g, t_mul(s.wd, p));
  const TrackedF32 b = t == 1 ? g : t_add(t_mul(s.momentum, b0), t_mul(s.one_minus_dampening, g));
  const TrackedF32 dir = h.nesterov ? t_add(g, t_mul(s.momentum, b)) : b;
  return t_sub(p, t_mul(s.lr, dir));
}

}  // namespace

PropagatedWeightBound propagated_weight_bound(const WeightBoundScalars& sc, float p, float g,
                                              const float* st_ref, const double* st_err) {
  const RuleConfig& rule = sc.rule;
  const int64_t step = sc.step;
  PropagatedWeightBound out;
  auto take = [&](const TrackedF32& with, const TrackedF32& without) {
    const RefOutput a = ref_output(with), b = ref_output(without);
    out.status_ok = a.status == RefStatus::bounded && b.status == RefStatus::bounded;
    out.with_state_error = up(a.bound);
    out.without_state_error = up(b.bound);
  };
  if (rule.id == RuleId::adamw) {
    const auto& h = hyper_of<AdamW>(rule);
    const auto& s = std::get<AdamWBoundScalars>(sc.s);
    take(adamw_p(h, s, p, g, state_in(st_ref[0], st_err[0], false), state_in(st_ref[1], st_err[1], true)),
         adamw_p(h, s, p, g, state_in(st_ref[0], 0, false), state_in(st_ref[1], 0, true)));
  } else if (rule.id == RuleId::sgd_momentum) {
    const auto& h = hyper_of<SGDMomentum>(rule);
    const auto& s = std::get<SGDMomentumBoundScalars>(sc.s);
    take(sgdm_p(h, s, step, p, g, state_in(st_ref[0], st_err[0], false)),
         sgdm_p(h, s, step, p, g, state_in(st_ref[0], 0, false)));
  } else {
    throw std::invalid_argument(std::string("propagated_weight_bound: rule ") + rule_name(rule.id) +
                                " is not supported (adamw, sgd_momentum)");
  }
  return out;
}

double hoeffding_threshold(int64_t n, double alpha) {
  if (n <= 0 || !(alpha > 0 && alpha < 1)) throw std::invalid_argument("hoeffding_threshold: need n > 0, 0 < alpha < 1");
  // Rounded up a little so that floating error in log/sqrt can only make the test stricter.
  return std::sqrt(std::log(2.0 / alpha) / (2.0 * double(n))) * (1.0 + 1e-12);
}

double hoeffding_power(int64_t n, double alpha, double bias) {
  const double d = hoeffding_threshold(n, alpha);
  const double gap = std::fabs(bias) - d;
  if (gap <= 0) return 0.0;  // no guarantee
  return 1.0 - std::exp(-2.0 * double(n) * gap * gap);
}

MeanTest binomial_mean_test(int64_t n, int64_t k, double p, double alpha) {
  if (k < 0 || k > n || !(p >= 0 && p <= 1)) throw std::invalid_argument("binomial_mean_test: bad counts or p");
  MeanTest t;
  t.n = n;
  t.alpha = alpha;
  t.expected = p;
  t.observed = double(k) / double(n);
  t.threshold = hoeffding_threshold(n, alpha);
  t.reject = std::fabs(t.observed - t.expected) > t.threshold;
  return t;
}

std::string MeanTest::to_string() const {
  char buf[200];
  std::snprintf(buf, sizeof buf, "n=%lld observed=%.6f expected=%.6f |diff|=%.3g threshold=%.3g (alpha=%g) %s",
                (long long)n, observed, expected, std::fabs(observed - expected), threshold, alpha,
                reject ? "REJECT" : "accept");
  return buf;
}

GradRoundingJudgement judge_bf16_gradient_rounding(const std::vector<float>& g,
                                                   const std::vector<float>& g_rounded) {
  if (g.size() != g_rounded.size() || g.empty())
    throw std::invalid_argument("judge_bf16_gradient_rounding: g and g_rounded must have the same, non-zero size");
  GradRoundingJudgement j;
  double sum_rel2 = 0;
  int64_t n_rel = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    ++j.elements;
    const float x = g[i], y = g_rounded[i];
    j.changed += f2u(x) != f2u(y);
    if (!fisfinite(x)) {
      const bool ok = fisnan(x) ? fisnan(y) : f2u(x) == f2u(y);
      if (!ok && j.violations++ == 0) j.first_violation = "element " + std::to_string(i) + ": non-finite g not kept";
      continue;
    }
    const int biased = int((f2u(x) >> 23) & 0xff);
    const double half_ulp = std::ldexp(1.0, (biased == 0 ? -126 : biased - 127) - 8);  // ulp = 2^(e-7)
    const double err = std::fabs(double(y) - double(x));  // exact: both are floats near each other
    const double ratio = err / half_ulp;
    if (!(err <= half_ulp)) {
      if (j.violations++ == 0) {
        char buf[200];
        std::snprintf(buf, sizeof buf, "element %zu: g %.9g rounded %.9g half ulp %.3g", i, double(x), double(y), half_ulp);
        j.first_violation = buf;
      }
    }
    if (std::isfinite(ratio)) j.max_half_ulp_ratio = std::max(j.max_half_ulp_ratio, ratio);
    else j.max_half_ulp_ratio = INFINITY;
    if (x != 0.0f) {
      const double rel = err / std::fabs(double(x));
      j.max_rel_err = std::max(j.max_rel_err, rel);
      sum_rel2 += rel * rel;
      ++n_rel;
    }
  }
  j.rms_rel_err = n_rel ? std::sqrt(sum_rel2 / double(n_rel)) : 0.0;
  return j;
}

UpdateDeviation measure_update_deviation(const std::vector<float>& before,
                                         const std::vector<float>& after_ref,
                                         const std::vector<float>& after_test) {
  if (before.empty() || before.size() != after_ref.size() || before.size() != after_test.size())
    throw std::invalid_argument("measure_update_deviation: before, after_ref, after_test must have the same, non-zero size");
  UpdateDeviation u;
  const size_t n = before.size();
  u.elements = int64_t(n);
  double su2 = 0;
  for (size_t i = 0; i < n; ++i) {
    const double du = double(after_ref[i]) - double(before[i]);
    if (!std::isfinite(du)) throw std::invalid_argument("measure_update_deviation: non-finite update at element " + std::to_string(i));
    su2 += du * du;
    u.differing += f2u(after_ref[i]) != f2u(after_test[i]);
  }
  u.scale_rms = std::sqrt(su2 / double(n));
  if (u.scale_rms == 0) throw std::invalid_argument("measure_update_deviation: the reference update is zero everywhere");
  const double s = u.scale_rms;
  double sd = 0, sdir = 0, sd2 = 0;
  for (size_t i = 0; i < n; ++i) {
    const double du = double(after_ref[i]) - double(before[i]);
    const double d = double(after_test[i]) - double(after_ref[i]);
    sd += d / s;
    sdir += (du > 0 ? d : du < 0 ? -d : 0.0) / s;
    sd2 += (d / s) * (d / s);
    u.max_rel = std::max(u.max_rel, std::fabs(d) / s);
    if (std::fabs(du) >= s / 16) u.max_rel_elem = std::max(u.max_rel_elem, std::fabs(d) / std::fabs(du));
  }
  u.sum_d_over_s = sd;
  u.sum_d2_over_s2 = sd2;
  u.bias_rel = sd / double(n);
  u.directional_bias = sdir / double(n);
  u.rms_rel = std::sqrt(sd2 / double(n));
  return u;
}

}  // namespace fh
