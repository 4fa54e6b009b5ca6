// Judges of the low-precision fidelity claims: Proposition 4's INT8 moment bound,
// the weight bound that follows from it, and the statistical tests of stochastic rounding.
// These judge values the claims' producers computed (suites/claims/prop4_int8.h, sr_statistics.h,
// gradient_fidelity.h); they never produce them, and they call no producer: what the MPFR
// reference computes (the step's exact scalars) comes in as values.
//
// Statistical tests use Hoeffding's inequality for the mean of n independent [0, 1] variables,
// P(|mean - mu| >= d) <= 2 exp(-2 n d^2), so a test that rejects when |mean - mu| > d(alpha) with
// d(alpha) = sqrt(ln(2/alpha) / (2n)) has false-alarm rate <= alpha whatever mu is (rigorous,
// no normal approximation). Its power against a true mean mu' with |mu' - mu| = b > d is at
// least 1 - exp(-2 n (b - d)^2) (the one-sided Hoeffding bound on the miss).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "exact/tracked.h"
#include "kernels/rules/all_rules.h"

namespace fh {

// ---- Proposition 4: INT8 moments against the fp32 moments of the same step ----

// decoded[i] is the INT8 path's state after the step, decoded; reference[i] the fp32-state path's
// state after the same step from the same (decoded) start, i.e. the value the INT8 path encoded.
// The block absmax is taken from the reference (max |reference| over the block, never from the
// stored absmax: a producer that stores a wrong absmax must not set its own bound).
// Checks, per element with a finite block: |decoded - reference| <= int8_codec_bound(a_block),
// decided exactly (MPFR). Non-finite blocks are judged against INT8_CODEC.md's table instead:
// a NaN block decodes to the canonical NaN everywhere, an inf block keeps +-inf where the
// reference is +-inf and +0 elsewhere.
struct Int8MomentJudgement {
  int64_t elements = 0, finite_blocks = 0, special_blocks = 0;
  int64_t violations = 0;         // elements outside the bound (or the special-block table)
  double max_ratio = 0;           // max |err| / B(a) over finite blocks
  double max_err_rel_absmax = 0;  // max |err| / a (the bound relative to a: 1/(2L) + 4u + ...)
  double bound_rel_absmax = 0;    // 1/(2L) + 4u (the a-relative bound without the subnormal term)
  std::vector<int64_t> ratio_histogram;  // err / B in 20 bins over [0, 1], violations in bin 20
  std::string first_violation;    // "row r col c: decoded .. reference .. bound .."
  bool pass() const { return violations == 0; }
};
Int8MomentJudgement judge_int8_moments(const std::vector<float>& decoded,
                                       const std::vector<float>& reference, int64_t rows,
                                       int64_t cols, bool nonnegative);

// Stored absmax (INT8 path) against max |reference| over each block, bitwise (NaN canonical).
int64_t count_absmax_mismatches(const std::vector<float>& stored_absmax,
                                const std::vector<float>& reference, int64_t rows, int64_t cols);

// INT8_CODEC.md, "A non-finite gradient over several steps". Consider a block that holds a linear
// moment m <- b*m + c*g with b, c > 0 (AdamW's exp_avg, SGD momentum's buffer, Lion's exp_avg).
// The block starts finite. Over the steps, one element receives the gradients g[0..n), and every
// other element stays finite. Returns the stored absmax bits of the block after those steps:
//   kInt8CanonicalNanBits  once a NaN gradient has arrived, or a held +-inf has met the opposite
//                          infinity (b*(+-inf) + c*(-+inf) = NaN; the block stays NaN after that);
//   0x7f800000 (+inf)      while the element holds an infinity that no opposite one has met;
//   std::nullopt           when every g was finite (a regular block, judged by the bound instead).
// This depends on the signs of the gradients, that is on the data, so a check must take its
// expectation from here and not hard-code +inf.
std::optional<uint32_t> int8_linear_moment_absmax_bits(const std::vector<float>& g);

// The weight bound that follows from a bounded state error, by running error analysis
// (oracles/rule_bounds.h): the rule's formula on Tracked values where state slot k enters with
// exact value st_ref[k] and error st_err[k] (the codec bound of the previous step's moment),
// every operation one fp32 rounding. Returned: a bound on |p_computed - p_exact| for a computed
// p from any state within st_err of st_ref (the INT8 path), and the same bound with st_err = 0
// (the fp32 path). |p_int8 - p_fp32| <= sum of the two. status_ok false: out of range / unbounded.
// Supported: adamw, sgd_momentum (throws std::invalid_argument for other rules).
struct PropagatedWeightBound {
  double with_state_error = 0, without_state_error = 0;
  bool status_ok = true;
  double total() const { return with_state_error + without_state_error; }
};
// The step's scalars come in as values: each one's exact value and the bound on its fp32 value
// (TrackedF32, exact/tracked.h), as the MPFR reference computes them once per step
// (reference/mpfr_rules.h, mpfr_step_scalars; the caller copies the fields, see
// suites/claims/prop4_int8.cpp: an oracle calls no producer). `rule` gives the hyperparameters
// the formula reads (maximize, nesterov), `step` the 1-based step, `s` the scalars of that rule
// (monostate: none, for a rule the bound does not support).
struct AdamWBoundScalars {
  TrackedF32 decay, beta1, one_minus_beta1, beta2, one_minus_beta2, lr_over_bc1, sqrt_bc2, eps;
};
struct SGDMomentumBoundScalars {
  TrackedF32 lr, wd, momentum, one_minus_dampening;
};
struct WeightBoundScalars {
  RuleConfig rule;
  int64_t step = 1;
  std::variant<std::monostate, AdamWBoundScalars, SGDMomentumBoundScalars> s;
};
PropagatedWeightBound propagated_weight_bound(const WeightBoundScalars& scalars, float p, float g,
                                              const float* st_ref, const double* st_err);

// ---- statistical tests (Hoeffding, two-sided) ----

double hoeffding_threshold(int64_t n, double alpha);  // d(alpha) above
// Lower bound on the probability that the test rejects when the true mean is off by `bias`.
double hoeffding_power(int64_t n, double alpha, double bias);

struct MeanTest {
  int64_t n = 0;
  double observed = 0, expected = 0;  // mean of the indicators, and mu
  double threshold = 0;               // d(alpha)
  double alpha = 0;
  bool reject = false;                // |observed - expected| > threshold
  std::string to_string() const;
};
// n indicators with k successes against an exact success probability p.
MeanTest binomial_mean_test(int64_t n, int64_t k, double p, double alpha);

// ---- gradient fidelity: G rounded to bf16 before the optimizer, against G in fp32 ----

// g_rounded[i] should be g[i] rounded to bf16 (RNE), widened. Checks per element, exactly (both
// are floats, so |g_rounded - g| and the half ulp, a power of two, are exact in double):
// |g_rounded - g| <= half a bf16 ulp of g (the ulp of the bf16 binade holding |g|; 2^-133 below
// the normal range). A non-finite g must come back as itself (NaN as any NaN).
struct GradRoundingJudgement {
  int64_t elements = 0, violations = 0;
  int64_t changed = 0;             // elements where g_rounded != g (the rounding did something)
  double max_half_ulp_ratio = 0;   // max |g_rounded - g| / (ulp/2), <= 1 when it passes
  double max_rel_err = 0;          // max |g_rounded - g| / |g| over g != 0 (<= 2^-8 for RNE)
  double rms_rel_err = 0;          // rms of the same
  std::string first_violation;     // "element i: g .. rounded .. half ulp .."
  bool pass() const { return violations == 0; }
};
GradRoundingJudgement judge_bf16_gradient_rounding(const std::vector<float>& g,
                                                   const std::vector<float>& g_rounded);

// One optimizer step's weights from the same start `before`, taken once with the reference path
// (after_ref) and once with the tested path (after_test); update u = after_ref - before and
// deviation d = after_test - after_ref, in double. Relative to the update's scale s = rms(u):
//   bias_rel          mean(d) / s                  (a systematic push in weight space)
//   directional_bias  mean(d * sign(u)) / s        (> 0: the tested path overshoots the update)
//   rms_rel           rms(d) / s
//   max_rel           max |d| / s                  (relative to the scale, not per element: an
//                                                   element whose update is ~0 would divide by ~0)
//   max_rel_elem      max |d_i| / |u_i| over the elements with |u_i| >= s / 16
struct UpdateDeviation {
  int64_t elements = 0, differing = 0;  // differing: elements with after_test != after_ref (bits)
  double scale_rms = 0;
  double bias_rel = 0, directional_bias = 0, rms_rel = 0, max_rel = 0, max_rel_elem = 0;
  double sum_d_over_s = 0, sum_d2_over_s2 = 0;  // for pooling over steps (bias and its spread)
};
UpdateDeviation measure_update_deviation(const std::vector<float>& before,
                                         const std::vector<float>& after_ref,
                                         const std::vector<float>& after_test);

}  // namespace fh
