// The low-precision fidelity claims on the H200: the runners of suites/claims/prop4_int8.h,
// sr_statistics.h, stagnation.h and gradient_fidelity.h (the code the CPU suites run on the host
// twin) with every fused step on the fused kernel (kernels/gpu/gpu_step_backend.h). Each GPU step
// is also run by the twin and compared bit for bit (the tally, suites/claims/twin_tally.h), so
// every verdict here is also a twin == GPU check:
//   - Proposition 4: INT8 moments within the codec bound, next-step weights within the propagated
//     bound, fused (GPU) == two-phase (host) INT8 bitwise, degenerate blocks, a 100-step trajectory;
//   - stochastic rounding: every draw the kernel's bf16_sr store (crafted SGD class steps),
//     binomial tests at alpha = 1e-9, independence, each draw == sr_round's, layout invariance
//     over the kernel's two tile shapes (two launch grids);
//   - the stagnation experiment and gradient fidelity.
// Planted in the INT8 copy on the GPU's G: a block straddling the tile edge, absmax over the tile.
// Defects in the kernel itself (SR with 8 random bits, random bits keyed by the place inside the
// tile) are kernel mutants (suites/mutation/kernel_catalog.json) these tests must kill.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "kernels/gpu/gpu_step_backend.h"
#include "reference/case_gen.h"
#include "suites/claims/fidelity_common.h"
#include "suites/claims/gradient_fidelity.h"
#include "suites/claims/prop4_int8.h"
#include "suites/claims/sr_statistics.h"
#include "suites/claims/stagnation.h"
#include "suites/claims/twin_cases.h"
#include "suites/claims/twin_tally.h"
#include "suites/gpu/gpu_suite_util.h"

namespace {

using namespace fh;

void expect_all_pass(const std::vector<ClaimCaseResult>& rs) {
  for (const auto& r : rs)
    EXPECT_TRUE(r.pass && !r.not_run) << r.claim << " | " << r.case_name << "\n  metric " << r.metric
                                      << " bound " << r.bound << " differing " << r.differing
                                      << "\n  first: " << r.first_diff << "\n  note: " << r.note;
}
int64_t count_failing(const std::vector<ClaimCaseResult>& rs, const std::string& claim = {}) {
  int64_t n = 0;
  for (const auto& r : rs) n += !r.pass && (claim.empty() || r.claim == claim);
  return n;
}
void print_tally(const char* what, const TwinTally& t) {
  std::printf("[fidelity %s] GPU == twin: %lld steps, %lld stored values compared, %lld differ %s\n", what,
              (long long)t.steps, (long long)t.ev.values, (long long)t.ev.differing, t.ev.first_diff.c_str());
}

Prop4Config prop4_config(RuleId rule, const FusedStepBackend* be) {
  Prop4Config cfg;
  cfg.seed = case_seed(cfg.seed);
  cfg.rule = default_rule_config(rule);
  cfg.backend = be;
  return cfg;
}

SrStatsConfig sr_config(const FusedStepBackend* be) {
  SrStatsConfig cfg;
  cfg.seed = case_seed(cfg.seed);
  cfg.through_fused_step = true;
  cfg.backend = be;
  return cfg;
}

TEST(prop4_int8_gpu, Prop4Int8OnTheFusedKernel) {
  FH_REQUIRE_GPU();
  TwinTally tally;
  const FusedStepBackend be = gpu_backend_with_twin_tally(&tally);
  for (RuleId rule : {RuleId::adamw, RuleId::sgd_momentum}) {
    const Prop4Config cfg = prop4_config(rule, &be);
    const Prop4OneStepResult r = run_prop4_one_step(cfg);
    std::printf("%s", format_claim_table(r.cases).c_str());
    expect_all_pass(r.cases);
    for (int k = 0; k < kMaxStates; ++k)
      if (r.kept[k]) {
        EXPECT_GT(r.moments[k].max_ratio, 0.5) << "the bound must be nearly reached (slot " << k << ")";
      }
    const ClaimCaseResult eq = run_prop1_int8(cfg, 4);
    std::printf("%s", format_claim_table({eq}).c_str());
    EXPECT_TRUE(eq.pass) << eq.first_diff;
  }
  Prop4Config dc = prop4_config(RuleId::adamw, &be);
  dc.in = 256;
  dc.out = 16;
  const auto deg = run_int8_degenerate_blocks(dc);
  std::printf("%s", format_claim_table(deg).c_str());
  EXPECT_EQ(deg.size(), 5u);
  expect_all_pass(deg);
  const TrajectoryResult tr = run_int8_trajectory(prop4_config(RuleId::adamw, &be), 100);
  std::printf("%s  growth ~ t^%.3f, final max dev %.4g\n", format_claim_table({tr.verdict}).c_str(),
              tr.growth_exponent, tr.max_abs_dev.back());
  EXPECT_TRUE(tr.verdict.pass) << tr.verdict.note;
  print_tally("prop4", tally);
  EXPECT_TRUE(tally.clean()) << tally.ev.first_diff;
}

TEST(sr_statistics_gpu, StochasticRoundingOnTheKernelsStream) {
  FH_REQUIRE_GPU();
  TwinTally tally;
  const FusedStepBackend be = gpu_backend_with_twin_tally(&tally);
  const auto t0 = std::chrono::steady_clock::now();
  const SrStatsResult r = run_sr_statistics(sr_config(&be));
  std::printf("%s[%.2f s]\n", format_claim_table(r.cases).c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  ASSERT_EQ(r.cases.size(), 12u);
  expect_all_pass(r.cases);
  std::printf("power of each binomial test against a 1/256-ulp bias >= %.12f\n", r.power_vs_1_256);
  // The same draws as the host's stream description.
  SrStatsConfig copy = sr_config(nullptr);
  copy.through_fused_step = false;
  EXPECT_EQ(r.class_observed, run_sr_statistics(copy).class_observed);
  const auto lay = run_sr_layout_invariance(case_seed(0x1A70u), SrVariant::kernel, &be);
  std::printf("%s", format_claim_table(lay).c_str());
  EXPECT_EQ(lay.size(), 6u);
  expect_all_pass(lay);
  print_tally("sr", tally);
  EXPECT_TRUE(tally.clean()) << tally.ev.first_diff;
}

TEST(stagnation_gpu, StagnationOnTheFusedKernel) {
  FH_REQUIRE_GPU();
  TwinTally tally;
  const FusedStepBackend be = gpu_backend_with_twin_tally(&tally);
  StagnationConfig sc;
  sc.seed = case_seed(sc.seed);
  sc.backend = &be;
  const StagnationResult s = run_stagnation(sc);
  std::printf("%s", format_claim_table(s.cases).c_str());
  std::printf("  fp32 %.6g +- %.3g; gaps: RNE %+.2f%%, SR %+.3f%%, INT8 %+.3f%%; RNE vanished %.1f%%\n", s.fp32_mean,
              s.fp32_std, 100 * s.rne_gap, 100 * s.sr_gap, 100 * s.int8_gap, 100 * s.rne_vanish_frac);
  for (const auto& c : s.cases)
    if (c.case_name.rfind("int8_state", 0) != 0) {
      EXPECT_TRUE(c.pass) << c.case_name << ": " << c.note;
    }
  EXPECT_LT(s.int8_gap, s.rne_gap);
  print_tally("stagnation", tally);
  EXPECT_TRUE(tally.clean()) << tally.ev.first_diff;
}

TEST(gradient_fidelity_gpu, GradientFidelityOnTheFusedKernel) {
  FH_REQUIRE_GPU();
  TwinTally tally;
  const FusedStepBackend be = gpu_backend_with_twin_tally(&tally);
  for (RuleId rule : {RuleId::adamw, RuleId::sgd}) {
    GradFidelityConfig gc;
    gc.seed = case_seed(gc.seed);
    gc.rule = default_rule_config(rule);
    gc.backend = &be;
    const GradFidelityResult g = run_gradient_fidelity(gc);
    std::printf("%s  pooled bias %.3g +- %.2g, mean rms_rel %.4g\n", format_claim_table(g.cases).c_str(),
                g.pooled_bias_rel, g.pooled_bias_stderr, g.mean_rms_rel);
    EXPECT_EQ(g.cases.size(), 3u);
    expect_all_pass(g.cases);
  }
  print_tally("gradient fidelity", tally);
  EXPECT_TRUE(tally.clean()) << tally.ev.first_diff;
}

// ---- planted defects: each must make a check above fail ----

TEST(GpuFidelityPlantedDefects, Int8CopyDefectsOnTheGpusGradientAreCaught) {
  FH_REQUIRE_GPU();
  const FusedStepBackend be = gpu::make_gpu_step_backend();
  Prop4Config cfg = prop4_config(RuleId::adamw, &be);
  cfg.in = 192;
  cfg.tile_cols = 96;  // every second tile starts mid-block
  cfg.defect = Int8TileDefect::straddle_tile_edge;
  const Prop4OneStepResult s = run_prop4_one_step(cfg);
  EXPECT_GT(s.moments[0].violations + s.moments[1].violations, 0);
  cfg = prop4_config(RuleId::adamw, &be);
  cfg.defect = Int8TileDefect::absmax_over_tile;
  const Prop4OneStepResult a = run_prop4_one_step(cfg);
  EXPECT_GT(a.moments[0].violations, 0);
  EXPECT_GE(count_failing(a.cases), 2);
  EXPECT_FALSE(run_prop1_int8(cfg, 2).pass);
}

TEST(GpuFidelityPlantedDefects, RneLabelledSrOnTheKernelIsCaught) {
  FH_REQUIRE_GPU();
  const FusedStepBackend be = gpu::make_gpu_step_backend();
  StagnationConfig sc;
  sc.seed = case_seed(sc.seed);
  sc.backend = &be;
  sc.labels = {"bf16_sr"};
  sc.defect = StagnationDefect::sr_is_rne;
  const StagnationResult r = run_stagnation(sc);
  ASSERT_EQ(r.cases.size(), 1u);
  EXPECT_FALSE(r.cases[0].pass) << r.cases[0].note;
}

}  // namespace
