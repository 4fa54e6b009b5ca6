// Each fp32 rule (Rule::scalars on the host, then Rule::update) against its MPFR twin
// (reference/mpfr_rules.h): |fp32 - exact| <= the running-error bound (oracles/rule_bounds.h),
// decided exactly, for every element of random and adversarial inputs, every rule and several
// hyperparameter sets. Prints per rule the largest error in ulps and the largest error/bound.
// The seed is printed; FH_SEED overrides it. FH_RULES_VERBOSE=1 also prints every flagged element
// and the worst element of each rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "kernels/rules/all_rules.h"
#include "oracles/rule_bounds.h"
#include "reference/case_gen.h"
#include "reference/mpfr_rules.h"
#include "reference/rule_samples.h"

namespace fh {
void PrintTo(RuleId id, std::ostream* os) { *os << rule_name(id); }  // readable gtest parameters
}  // namespace fh

namespace {

using namespace fh;

constexpr uint64_t kDefaultSeed = 0x2606229320260622ull;
uint64_t suite_seed() {
  static const uint64_t seed = [] {
    const uint64_t s = case_seed(kDefaultSeed);
    std::printf("[rules_vs_mpfr] seed = 0x%016" PRIx64 " (set FH_SEED to reproduce)\n", s);
    return s;
  }();
  return seed;
}

// ---- hyperparameter sets (reference/rule_samples.h) ----

using NamedConfig = NamedRuleConfig;
std::vector<NamedConfig> configs_of(RuleId id) { return rule_hyper_sets(id); }

// ---- the fp32 side: the real rule ----

// One step of the fp32 rule for (config, t): Rule::scalars once, Rule::update per element.

// ---- the comparison ----

struct Extremes {
  double max_ulps_p = 0, max_ulps_st = 0, max_ratio_p = 0, max_ratio_st = 0;
  std::vector<double> bound_ulps_p;  // random elements: the bound on p in ulps of the exact p
  std::string worst_p, worst_st;     // the elements with the largest error in ulps
};
struct Stats {
  int64_t elements = 0, judged_outputs = 0, flagged_outputs = 0, flagged_random = 0, nan_allowed_hits = 0;
  int64_t failures = 0;
  Extremes random, adversarial;
  std::vector<std::string> first_failures;
};

std::string describe(const NamedConfig& nc, const RuleSample& e, const float* st_in) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s/%s t=%" PRId64 " p=%a g=%a st={%a,%a,%a}", rule_name(nc.config.id),
                nc.name.c_str(), e.t, e.p, e.g, st_in[0], st_in[1], st_in[2]);
  return buf;
}

void note(Stats& s, bool adversarial, const OutputCheck& o, bool is_p, const std::string& what) {
  if (!o.judged) return;
  ++s.judged_outputs;
  if (o.was_nan) { ++s.nan_allowed_hits; return; }
  if (!std::isfinite(o.err)) return;
  Extremes& x = adversarial ? s.adversarial : s.random;
  double& u = is_p ? x.max_ulps_p : x.max_ulps_st;
  double& r = is_p ? x.max_ratio_p : x.max_ratio_st;
  if (o.err_ulps > u) {
    u = o.err_ulps;
    char buf[160];
    std::snprintf(buf, sizeof buf, " (err %.4g, bound %.4g ulps)", o.err_ulps, o.bound_ulps);
    (is_p ? x.worst_p : x.worst_st) = what + buf;
  }
  r = std::max(r, o.ratio);
  if (is_p && !adversarial) x.bound_ulps_p.push_back(o.bound_ulps);
}

void run_config(const NamedConfig& nc, const std::vector<RuleSample>& elements, Stats& s) {
  const int64_t failures_before = s.failures;
  std::map<int64_t, MpfrStepScalars> ref_scalars;
  std::map<int64_t, Fp32Step> fp32_steps;
  for (const RuleSample& e : elements) {
    if (!ref_scalars.count(e.t)) {
      ref_scalars.emplace(e.t, mpfr_step_scalars(nc.config, e.t));
      fp32_steps.emplace(e.t, fp32_step(nc.config, e.t));
    }
    float p = e.p, st[kMaxStates];
    std::copy(e.st, e.st + kMaxStates, st);
    fp32_steps.at(e.t)(p, e.g, st);
    const RuleRefResult ref = mpfr_rule_step(ref_scalars.at(e.t), e.p, e.g, e.st);
    const RuleCheck chk = check_rule_element(ref, p, st);
    ++s.elements;
    const std::string what = describe(nc, e, e.st);
    note(s, e.adversarial, chk.p, true, what + " p");
    if (!chk.p.judged) { ++s.flagged_outputs; s.flagged_random += !e.adversarial; }
    for (int k = 0; k < kMaxStates; ++k) {
      if (!ref.kept[k]) continue;
      note(s, e.adversarial, chk.st[k], false, what + " st[" + std::to_string(k) + "]");
      if (!chk.st[k].judged) { ++s.flagged_outputs; s.flagged_random += !e.adversarial; }
    }
    if (std::getenv("FH_RULES_VERBOSE") && !ref.in_range)
      std::printf("  flagged: %s p %s st %s %s %s\n", describe(nc, e, e.st).c_str(), ref_status_name(ref.p.status),
                  ref_status_name(ref.st[0].status), ref_status_name(ref.st[1].status), ref_status_name(ref.st[2].status));
    if (!chk.pass) {
      ++s.failures;
      if (s.first_failures.size() < 8) {
        const int k = chk.first_failure == "p" ? -1 : chk.first_failure[3] - '0';
        const OutputCheck& o = k < 0 ? chk.p : chk.st[k];
        const RefOutput& ro = k < 0 ? ref.p : ref.st[k];
        const float got = k < 0 ? p : st[k];
        char buf[400];
        std::snprintf(buf, sizeof buf, " -> %s: fp32 %a, exact %s, |err| %.6g (%.3g ulps), bound %.6g (%.3g ulps)",
                      chk.first_failure.c_str(), got, ro.exact.toString(12).c_str(), o.err, o.err_ulps, o.bound,
                      o.bound_ulps);
        s.first_failures.push_back(describe(nc, e, e.st) + buf);
      }
    }
  }
  // One line per hyperparameter configuration with failures: scripts/mutate.py counts each as an
  // independent kill (a rule defect seen by one configuration only is thinly covered).
  if (s.failures > failures_before)
    std::printf("FH_FAILED_UNIT: %s/%s\n", rule_name(nc.config.id), nc.name.c_str());
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[size_t(q * double(v.size() - 1))];
}

class rules_vs_mpfr : public ::testing::TestWithParam<RuleId> {};

TEST_P(rules_vs_mpfr, EveryRuleSampleWithinItsBound) {
  const RuleId id = GetParam();
  const uint64_t seed = suite_seed();
  Stats s;
  int ci = 0;
  for (const NamedConfig& nc : configs_of(id)) {
    CaseRng rng(stream_seed(seed, "test_rules_vs_mpfr/rule_samples", uint64_t(id) << 32 | uint64_t(ci++)));
    run_config(nc, make_rule_samples(rng, nc.config, 6000), s);
  }
  std::printf("[rules_vs_mpfr] %-12s elements %6" PRId64 ", judged outputs %6" PRId64 ", flagged %4" PRId64
              ", NaN-allowed hits %" PRId64 ", failures %" PRId64 "\n", rule_name(id), s.elements, s.judged_outputs,
              s.flagged_outputs, s.nan_allowed_hits, s.failures);
  std::printf("[rules_vs_mpfr] %-12s   random:      max err p %.3f ulps, states %.3f ulps; max err/bound p %.4f, states %.4f;"
              " bound on p median %.2f ulps, p99 %.2f ulps\n", "", s.random.max_ulps_p, s.random.max_ulps_st,
              s.random.max_ratio_p, s.random.max_ratio_st, quantile(s.random.bound_ulps_p, 0.5),
              quantile(s.random.bound_ulps_p, 0.99));
  std::printf("[rules_vs_mpfr] %-12s   adversarial: max err p %.4g ulps, states %.4g ulps; max err/bound p %.4f, states %.4f\n",
              "", s.adversarial.max_ulps_p, s.adversarial.max_ulps_st, s.adversarial.max_ratio_p, s.adversarial.max_ratio_st);
  if (std::getenv("FH_RULES_VERBOSE"))
    std::printf("  worst random p: %s\n  worst random state: %s\n  worst adversarial p: %s\n  worst adversarial state: %s\n",
                s.random.worst_p.c_str(), s.random.worst_st.c_str(), s.adversarial.worst_p.c_str(),
                s.adversarial.worst_st.c_str());
  for (const std::string& f : s.first_failures) ADD_FAILURE() << f;
  EXPECT_EQ(s.failures, 0) << rule_name(id) << ": elements outside their bound (seed printed above)";
  // Random inputs are chosen inside every rule's fp32 domain: nothing there may be flagged.
  EXPECT_EQ(s.flagged_random, 0) << "random inputs flagged out of range or unbounded";
  // The bound must be worth something: somewhere it is attained within a factor 32.
  EXPECT_GT(s.random.max_ratio_p, 1.0 / 32) << "the bound on p is never approached: it is loose or vacuous";
  EXPECT_GT(s.judged_outputs, 20000);
}

INSTANTIATE_TEST_SUITE_P(AllRules, rules_vs_mpfr, ::testing::ValuesIn(kAllRules),
                         [](const auto& info) { return std::string(rule_name(info.param)); });

// ---- RAdam's branch across rho_t = 5 ----

TEST(RadamBranch, DoubleRhoTMatchesExactAndBranchFlipsOnce) {
  for (double beta2 : {0.999, 0.99, 0.9}) {
    RAdam::Hyper h;
    h.beta2 = beta2;
    int flips = 0;
    bool prev = false;
    for (int64_t t = 1; t <= 10; ++t) {
      const mpreal exact = mpfr_radam_rho_t(h, t);
      const double dbl = RAdam::rho_t(h, t);
      EXPECT_LE(abs(ref_real(dbl) - exact).toDouble(), 1e-9 * std::max(1.0, std::fabs(dbl))) << "t=" << t;
      const auto sc = mpfr_step_scalars(RuleConfig{RuleId::radam, AnyHyper{h}}, t);
      const bool rect = std::get<mpfr_scalars::RAdam>(sc.s).rectified;
      EXPECT_EQ(rect, exact > 5) << "beta2=" << beta2 << " t=" << t;
      EXPECT_EQ(rect, RAdam::scalars(h, t).rectified) << "beta2=" << beta2 << " t=" << t;
      if (t > 1 && rect != prev) ++flips;
      prev = rect;
    }
    // rho_t grows with t: one switch to the rectified branch within t <= 10 for these beta2
    EXPECT_EQ(flips, 1) << "beta2=" << beta2;
  }
}

// ---- the arrangement equals torch's literal formulas ----

TEST(TorchLiteral, ArrangedReferenceEqualsLiteralFormulas) {
  const uint64_t seed = suite_seed();
  for (RuleId id : kAllRules) {
    int ci = 0;
    for (const NamedConfig& nc : configs_of(id)) {
      CaseRng rng(stream_seed(seed, "test_rules_vs_mpfr/torch_literal", uint64_t(id) << 32 | uint64_t(ci++)));
      for (int64_t t : {int64_t(1), int64_t(2), int64_t(3), int64_t(7), int64_t(40)}) {
        std::vector<RuleElement> els(60);
        for (auto& e : els) {
          e.p = rand_float(rng, -14, 3);
          e.g = rand_float(rng, -34, 10);
          random_states(rng, nc.config, t, e.st);
        }
        const auto lit = mpfr_rule_torch_literal(nc.config, t, els);
        const auto sc = mpfr_step_scalars(nc.config, t);
        for (size_t i = 0; i < els.size(); ++i) {
          const RuleRefResult ref = mpfr_rule_step(sc, els[i].p, els[i].g, els[i].st);
          // Both are exact to ~2^-250 of the magnitudes involved, and the bound is at least
          // 2^-24 of them, so 2^-150 * bound separates agreement from a formula difference.
          auto agree = [&](const RefOutput& o, const mpreal& l, const char* what) {
            const mpreal tol = o.bound * ref_pow2(-150) + ref_pow2(-700);
            EXPECT_LE(abs(o.exact - l), tol) << rule_name(id) << "/" << nc.name << " t=" << t << " "
                                            << what << ": arranged " << o.exact.toString(30)
                                            << " literal " << l.toString(30);
          };
          agree(ref.p, lit[i].p, "p");
          for (int k = 0; k < kMaxStates; ++k)
            if (ref.kept[k]) agree(ref.st[k], lit[i].st[k], "state");
        }
      }
    }
  }
}

// ---- the running-error model itself, on single fp32 operations ----

TEST(TrackedModel, SingleOperationsHoldAndAreTight) {
  CaseRng rng(stream_seed(suite_seed(), "test_rules_vs_mpfr/single_operations"));
  double max_ratio[5] = {};
  for (int i = 0; i < 20000; ++i) {
    const float a = rand_float(rng, -140, 60), b = rand_float(rng, -140, 60);
    const float an = std::fabs(a);
    const TrackedF32 ta = tracked_input(a), tb = tracked_input(b);
    const struct { TrackedF32 t; float f; } ops[5] = {
        {t_add(ta, tb), a + b}, {t_mul(ta, tb), a * b}, {t_div(ta, tb), a / b},
        {t_sqrt(tracked_input(an)), std::sqrt(an)}, {t_fma(ta, tb, ta), std::fmaf(a, b, a)}};
    for (int k = 0; k < 5; ++k) {
      const RefOutput o = ref_output(ops[k].t);
      if (o.status != RefStatus::bounded) continue;  // overflow or a quotient that leaves fp32
      const OutputCheck c = check_output(o, ops[k].f);
      ASSERT_TRUE(c.pass) << "op " << k << " a=" << a << " b=" << b;
      max_ratio[k] = std::max(max_ratio[k], c.ratio);
    }
  }
  // Propagation through a second operation with a computed (rounded) operand.
  for (int i = 0; i < 20000; ++i) {
    const float a = rand_float(rng, -20, 20), b = rand_float(rng, -20, 20), c = rand_float(rng, -20, 20);
    const TrackedF32 t = t_div(t_sub(t_mul(tracked_input(a), tracked_input(b)), tracked_input(c)),
                               t_sqrt(t_add(t_sq(tracked_input(b)), tracked_input(std::fabs(c)))));
    const float fv = (a * b - c) / std::sqrt(b * b + std::fabs(c));
    const OutputCheck chk = check_output(ref_output(t), fv);
    ASSERT_TRUE(chk.pass) << a << " " << b << " " << c;
  }
  for (int k = 0; k < 5; ++k) EXPECT_GT(max_ratio[k], 0.3) << "op " << k << " bound never approached";
  // A value one bound away (plus an ulp) from the exact one must fail the judge.
  const TrackedF32 s = t_add(tracked_input(1.0f), tracked_input(std::ldexp(1.0f, -30)));
  const RefOutput o = ref_output(s);
  EXPECT_TRUE(check_output(o, 1.0f).pass);
  EXPECT_FALSE(check_output(o, std::nextafter(1.0f, 2.0f)).pass);
  EXPECT_FALSE(check_output(o, std::numeric_limits<float>::quiet_NaN()).pass);
}

// ---- outside the fp32 range: flagged, and fp32 gives the IEEE result ----

struct OorCase {
  const char* what;
  RuleConfig config;
  int64_t t;
  float p, g, st[kMaxStates];
  std::function<void(const RuleRefResult&, float p, const float* st)> expect;
};

TEST(OutOfRange, FlaggedAndFollowIeee) {
  const float kHugeG = 3e19f;  // g*g = 9e38 > FLT_MAX
  const float kNaN = std::numeric_limits<float>::quiet_NaN();
  const float kInf = std::numeric_limits<float>::infinity();
  auto flagged = [](const RefOutput& o) { return o.status == RefStatus::out_of_range; };
  RAdam::Hyper radam;
  SGD::Hyper sgd; sgd.weight_decay = 0.5;
  SGDMomentum::Hyper sgdm; sgdm.weight_decay = 0.5;
  RMSprop::Hyper rms_c; rms_c.centered = true;
  std::vector<OorCase> cases = {
      {"adamw: v overflows to inf, so the update m/inf vanishes: p = p*decay", default_rule_config(RuleId::adamw), 1,
       1.0f, kHugeG, {0, 0, 0}, [](const RuleRefResult& r, float p, const float* st) {
         EXPECT_EQ(st[1], INFINITY);
         EXPECT_EQ(p, 1.0f * AdamW::scalars(AdamW::Hyper{}, 1).decay);
         EXPECT_EQ(r.st[0].status, RefStatus::bounded);  // m = (1-b1) g is in range
         EXPECT_TRUE(check_output(r.st[0], st[0]).pass);
       }},
      {"nadam: v = inf, both addcdiv terms vanish", default_rule_config(RuleId::nadam), 2, 1.0f, kHugeG, {0, 0, 0},
       [](const RuleRefResult&, float p, const float* st) { EXPECT_EQ(st[1], INFINITY); EXPECT_EQ(p, 1.0f); }},
      {"radam rectified: v = inf, the update vanishes", RuleConfig{RuleId::radam, AnyHyper{radam}}, 10000, 1.0f,
       kHugeG, {0, 0, 0}, [](const RuleRefResult&, float p, const float* st) { EXPECT_EQ(st[1], INFINITY); EXPECT_EQ(p, 1.0f); }},
      {"radam unrectified: v = inf but p does not read v, and stays bounded", RuleConfig{RuleId::radam, AnyHyper{radam}},
       1, 1.0f, kHugeG, {0, 0, 0}, [](const RuleRefResult& r, float p, const float* st) {
         EXPECT_EQ(st[1], INFINITY);
         EXPECT_EQ(r.p.status, RefStatus::bounded);
         EXPECT_TRUE(check_output(r.p, p).pass);
       }},
      {"rmsprop: v = inf, g/avg = 0", default_rule_config(RuleId::rmsprop), 1, 1.0f, kHugeG, {0, 0, 0},
       [](const RuleRefResult&, float p, const float* st) { EXPECT_EQ(st[0], INFINITY); EXPECT_EQ(p, 1.0f); }},
      {"rmsprop centered: square_avg = inf and grad_avg^2 = inf give inf - inf = NaN",
       RuleConfig{RuleId::rmsprop, AnyHyper{rms_c}}, 1, 1.0f, 1.0f, {kInf, 0, 1e20f},
       [](const RuleRefResult&, float p, const float*) { EXPECT_TRUE(std::isnan(p)); }},
      {"adagrad: sum = inf, the update vanishes", default_rule_config(RuleId::adagrad), 1, 1.0f, kHugeG, {0, 0, 0},
       [](const RuleRefResult&, float p, const float* st) { EXPECT_EQ(st[0], INFINITY); EXPECT_EQ(p, 1.0f); }},
      {"sgd: g + wd*p overflows, p = -inf", RuleConfig{RuleId::sgd, AnyHyper{sgd}}, 1, FLT_MAX, FLT_MAX, {0, 0, 0},
       [](const RuleRefResult&, float p, const float*) { EXPECT_EQ(p, -INFINITY); }},
      {"sgd_momentum: g + wd*p overflows, buf = inf, p = -inf", RuleConfig{RuleId::sgd_momentum, AnyHyper{sgdm}}, 2,
       FLT_MAX, FLT_MAX, {0, 0, 0}, [](const RuleRefResult&, float p, const float* st) {
         EXPECT_EQ(st[0], INFINITY);
         EXPECT_EQ(p, -INFINITY);
       }},
      {"lion: c may overflow, sign(c) = 1 regardless: p = p*decay - lr, m finite or +inf", default_rule_config(RuleId::lion),
       1, 1.0f, FLT_MAX, {FLT_MAX, 0, 0}, [](const RuleRefResult&, float p, const float* st) {
         const auto s = Lion::scalars(Lion::Hyper{}, 1);
         EXPECT_EQ(p, 1.0f * s.decay - s.lr);
         EXPECT_FALSE(std::isnan(st[0]));
         EXPECT_GT(st[0], 0.0f);
       }},
  };
  // A NaN gradient reaches p in every rule.
  for (RuleId id : kAllRules)
    cases.push_back({"NaN gradient propagates to p", default_rule_config(id), 2, 1.0f, kNaN, {0.5f, 0.5f, 0.5f},
                     [](const RuleRefResult&, float p, const float*) { EXPECT_TRUE(std::isnan(p)); }});
  for (const OorCase& c : cases) {
    SCOPED_TRACE(std::string(rule_name(c.config.id)) + ": " + c.what);
    float p = c.p, st[kMaxStates];
    std::copy(c.st, c.st + kMaxStates, st);
    fp32_step(c.config, c.t)(p, c.g, st);  // must not crash
    const RuleRefResult ref = mpfr_rule_step(c.config, c.t, c.p, c.g, c.st);
    EXPECT_FALSE(ref.in_range);
    // Whatever fp32 gave, the judge does not bound a flagged output.
    const RuleCheck chk = check_rule_element(ref, p, st);
    EXPECT_FALSE(chk.judged);
    EXPECT_TRUE(chk.pass);
    bool any_flagged = flagged(ref.p);
    for (int k = 0; k < kMaxStates; ++k) any_flagged = any_flagged || (ref.kept[k] && flagged(ref.st[k]));
    EXPECT_TRUE(any_flagged);
    c.expect(ref, p, st);
  }
}

// ---- centered RMSprop at the edge of its domain: square_avg = grad_avg^2 and g = grad_avg ----

TEST(CenteredRmsprop, DomainEdgeIsBoundedOrNaN) {
  // The exact v - ga^2 is 0 there; the fp32 one may round to a tiny negative number, whose sqrt
  // is NaN. The reference marks the output NaN-allowed; otherwise the bound applies.
  RMSprop::Hyper h;
  h.centered = true;
  const RuleConfig c{RuleId::rmsprop, AnyHyper{h}};
  CaseRng rng(stream_seed(suite_seed(), "test_rules_vs_mpfr/centered_rmsprop"));
  int nan_count = 0, nan_allowed = 0;
  for (int i = 0; i < 2000; ++i) {
    // 12 significant bits, so that grad_avg^2 is an fp32 number
    const float ga = float(std::ldexp(1.0 + double(rng.below(2048)) / 2048.0, int(rng.range(-20, 10))));
    const double sq = double(ga) * double(ga);
    ASSERT_EQ(double(float(sq)), sq);
    const float st_in[kMaxStates] = {float(sq), 0.0f, ga};
    float p = 1.0f, st[kMaxStates] = {st_in[0], st_in[1], st_in[2]};
    fp32_step(c, 1)(p, ga, st);
    const RuleRefResult ref = mpfr_rule_step(c, 1, 1.0f, ga, st_in);
    nan_allowed += ref.p.nan_allowed;
    nan_count += std::isnan(p);
    const RuleCheck chk = check_rule_element(ref, p, st);
    ASSERT_TRUE(chk.pass) << "ga=" << ga << " fp32 p=" << p;
    EXPECT_TRUE(chk.judged);
  }
  std::printf("[rules_vs_mpfr] centered rmsprop at the domain edge: %d NaN-allowed, %d NaN from fp32\n",
              nan_allowed, nan_count);
  EXPECT_GT(nan_allowed, 0);
}

// ---- bad input ----

TEST(BadInput, RefusedWithAClearError) {
  EXPECT_THROW(mpfr_step_scalars(default_rule_config(RuleId::adamw), 0), std::invalid_argument);
  AdamW::Hyper h;
  h.beta1 = 1.0;
  EXPECT_THROW(mpfr_step_scalars(RuleConfig{RuleId::adamw, AnyHyper{h}}, 1), std::invalid_argument);
  std::vector<RuleElement> els(1);
  els[0].g = std::numeric_limits<float>::infinity();
  EXPECT_THROW(mpfr_rule_torch_literal(default_rule_config(RuleId::sgd), 1, els), std::invalid_argument);
  RuleConfig mismatched{RuleId::nadam, AnyHyper{AdamW::Hyper{}}};
  EXPECT_THROW(mpfr_step_scalars(mismatched, 1), std::bad_variant_access);
}

}  // namespace
