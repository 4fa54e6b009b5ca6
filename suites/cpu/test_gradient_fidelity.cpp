// Gradient fidelity on the CPU: the fused path consumes G in fp32 (the twin's
// G); a bf16-gradient optimizer rounds G to bf16 (RNE) first. Over 50 steps (AdamW and SGD,
// 64x128, T=32) the runner checks that the fp32-G two-phase step equals the fused twin bitwise
// (it IS the fused path), that the bf16 G is within half a bf16 ulp of G per element (exact),
// and that the bf16-G update error is measurable (nonzero at every step); it reports the bias
// and the error of the update (per-step vectors) and a free-running bf16-G trajectory. Planted
// defects (the "fp32" path rounding G, the bf16 path truncating, the bf16 path not rounding)
// must each fail a check. Report: $FH_FIDELITY_REPORT_DIR/fidelity_gradient.h5.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "reference/case_gen.h"
#include "reports/report.h"
#include "suites/claims/gradient_fidelity.h"
#include "suites/claims/twin_cases.h"

namespace {

using namespace fh;

GradFidelityConfig config(RuleId rule, GradFidelityDefect d = GradFidelityDefect::none) {
  GradFidelityConfig cfg;
  cfg.seed = case_seed(cfg.seed);
  cfg.rule = default_rule_config(rule);
  cfg.defect = d;
  return cfg;
}

const ClaimCaseResult& case_ending(const GradFidelityResult& r, const std::string& suffix) {
  for (const auto& c : r.cases)
    if (c.case_name.size() >= suffix.size() && c.case_name.compare(c.case_name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return c;
  throw std::runtime_error("no case ending in '" + suffix + "'");
}
const char* kEqual = "fp32-G step == fused twin";
const char* kHalfUlp = "bf16 G within half an ulp of G";
const char* kMeasurable = "bf16-G update error is measurable";

Report& report() {
  static Report r = [] {
    Meta m = Meta::unknown();
    m.set("seed", std::to_string(case_seed(GradFidelityConfig{}.seed)));
    return Report(m);
  }();
  return r;
}
struct WriteReportAtExit : ::testing::Environment {
  void TearDown() override {
    const char* dir = std::getenv("FH_FIDELITY_REPORT_DIR");
    const std::string path = std::string(dir ? dir : ".") + "/fidelity_gradient.h5";
    report().write(path);
    std::printf("report: %s\n", path.c_str());
  }
};
const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new WriteReportAtExit);

TEST(gradient_fidelity, Fp32GIsTheFusedPathAndBf16GErrorIsMeasured) {
  for (RuleId rule : {RuleId::adamw, RuleId::sgd}) {
    const auto t0 = std::chrono::steady_clock::now();
    const GradFidelityResult r = run_gradient_fidelity(config(rule));
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s", format_claim_table(r.cases).c_str());
    std::printf("  %s: update error rms_rel mean %.4g (min %.4g), max |d|/rms(u) %.4g; pooled bias %.3g +- %.2g; "
                "free-run max |dW| after %zu steps %.3g (update rms %.3g) [%.2f s]\n",
                rule_name(rule), r.mean_rms_rel, r.min_rms_rel, r.max_max_rel, r.pooled_bias_rel, r.pooled_bias_stderr,
                r.traj_max_abs_dev.size(), r.traj_max_abs_dev.back(), r.update_rms.back(), secs);
    ASSERT_EQ(r.cases.size(), 3u);
    for (const auto& c : r.cases)
      EXPECT_TRUE(c.pass) << c.case_name << "\n  metric " << c.metric << " bound " << c.bound << "\n  " << c.first_diff
                          << "\n  " << c.note;
    ASSERT_EQ(r.rms_rel.size(), 50u);
    // RNE to bf16 keeps 8 significant bits: relative G error at most u = 2^-8, and half an ulp
    // is reached.
    for (double e : r.g_max_rel_err) EXPECT_LE(e, 0x1p-8);
    EXPECT_GT(r.g_max_half_ulp_ratio[0], 0.9);

    for (const auto& c : r.cases) {
      CaseRecord& cr = report().add_case(c.claim, c.case_name);
      Check k = c.pass ? Check::passed("verdict", "metric", c.metric, c.bound)
                       : Check::failed("verdict", "metric", c.metric, c.bound, c.first_diff);
      k.passes_if(c.pass_if);
      if (c.bound == 0 && c.metric == double(c.differing)) k.bitwise(c.differing, c.max_ulp, c.first_diff);
      cr.add_check(k);
      if (!c.note.empty()) cr.set_attr("note", c.note);
    }
    CaseRecord& cr = report().add_case("gradient_fidelity_curves", rule_name(rule));
    cr.add_f64("update_rms", r.update_rms, "per step rms of the fp32-G update (the scale)")
        .add_f64("bias_rel", r.bias_rel, "per step mean(W_bf16G - W_fp32G) / scale")
        .add_f64("directional_bias", r.directional_bias, "per step mean(d * sign(update)) / scale")
        .add_f64("rms_rel", r.rms_rel, "per step rms(d) / scale")
        .add_f64("max_rel", r.max_rel, "per step max |d| / scale")
        .add_f64("traj_max_abs_dev", r.traj_max_abs_dev, "free-running bf16-G run: max |W_bf16G - W_fp32G|");
  }
}

// ---- planted defects ----

TEST(gradient_fidelity, Fp32PathThatRoundsGIsCaught) {
  GradFidelityConfig cfg = config(RuleId::adamw, GradFidelityDefect::fp32_path_rounds_to_bf16);
  cfg.steps = 5;
  const GradFidelityResult r = run_gradient_fidelity(cfg);
  std::printf("%s", format_claim_table(r.cases).c_str());
  EXPECT_FALSE(case_ending(r, kEqual).pass);
  EXPECT_GT(case_ending(r, kEqual).differing, 0);
  EXPECT_FALSE(case_ending(r, kMeasurable).pass) << "both paths round: nothing left to measure";
}

TEST(gradient_fidelity, TruncatingBf16PathIsCaughtByTheHalfUlpCheck) {
  GradFidelityConfig cfg = config(RuleId::sgd, GradFidelityDefect::bf16_path_truncates);
  cfg.steps = 5;
  const GradFidelityResult r = run_gradient_fidelity(cfg);
  std::printf("%s", format_claim_table(r.cases).c_str());
  EXPECT_TRUE(case_ending(r, kEqual).pass);
  EXPECT_FALSE(case_ending(r, kHalfUlp).pass);
  EXPECT_GT(case_ending(r, kHalfUlp).metric, 1.0);
}

TEST(gradient_fidelity, UnroundedBf16PathIsCaughtByTheMeasurableCheck) {
  GradFidelityConfig cfg = config(RuleId::sgd, GradFidelityDefect::bf16_path_keeps_fp32);
  cfg.steps = 5;
  const GradFidelityResult r = run_gradient_fidelity(cfg);
  std::printf("%s", format_claim_table(r.cases).c_str());
  EXPECT_FALSE(case_ending(r, kMeasurable).pass);
  EXPECT_EQ(r.mean_rms_rel, 0.0);
}

TEST(gradient_fidelity, BadInputIsRefused) {
  GradFidelityConfig cfg = config(RuleId::sgd);
  cfg.steps = 0;
  EXPECT_THROW(run_gradient_fidelity(cfg), std::invalid_argument);
  EXPECT_THROW(judge_bf16_gradient_rounding({1.0f}, {}), std::invalid_argument);
  EXPECT_THROW(measure_update_deviation({1.0f}, {1.0f}, {1.0f}), std::invalid_argument);  // zero update
}

}  // namespace
