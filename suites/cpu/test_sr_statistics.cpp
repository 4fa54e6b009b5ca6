// Stochastic rounding on the real random stream: the Philox bits exactly as
// store_weight draws them (sr_bits keyed by seed, step, tensor id, global element index), judged
// by Hoeffding-bounded tests at a false-alarm rate of 1e-9 with fixed seeds:
//   - per value class (fixed dropped 16 bits), the round-up fraction against its exact
//     probability low16 / 2^16, with the guaranteed power against a 1/256-ulp bias;
//   - independence of round-up indicators between neighbouring elements, the same place in
//     neighbouring tiles and consecutive steps (E[XY] = 1/4 for the p = 1/2 class);
//   - layout invariance: the twin's bf16_sr step gives identical bits for every tile shape and
//     visit order;
//   - the same tests with every draw taken from the fused twin step's bf16_sr store (an SGD step
//     crafted to produce the class values exactly), each draw also equal to sr_round's.
// Planted: SR with 8 random bits (caught by the binomial tests), the same bits in every tile
// (caught by the tile independence test and the layout test).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "reference/case_gen.h"
#include "reports/report.h"
#include "suites/claims/claim_common.h"
#include "suites/claims/sr_statistics.h"
#include "suites/claims/twin_cases.h"

namespace {

using namespace fh;

int64_t count_failing(const std::vector<ClaimCaseResult>& rs, const std::string& claim) {
  int64_t n = 0;
  for (const auto& r : rs) n += !r.pass && r.claim == claim;
  return n;
}
void expect_all_pass(const std::vector<ClaimCaseResult>& rs) {
  for (const auto& r : rs)
    EXPECT_TRUE(r.pass) << r.claim << " | " << r.case_name << "\n  " << r.note << "\n  " << r.first_diff;
}

Report& report() {
  static Report r = [] { return Report(Meta::unknown()); }();
  return r;
}
// One case record per result, as forge-verify records them (suites/claims/claim_common.h).
void record(const std::vector<ClaimCaseResult>& rs) {
  for (const auto& c : rs) record_claim_cases(report(), {c}, c.claim);
}
struct WriteReportAtExit : ::testing::Environment {
  void TearDown() override {
    const char* dir = std::getenv("FH_FIDELITY_REPORT_DIR");
    const std::string path = std::string(dir ? dir : ".") + "/fidelity_sr.h5";
    report().write(path);
    std::printf("report: %s\n", path.c_str());
  }
};
const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new WriteReportAtExit);

SrStatsConfig config(SrVariant v) {
  SrStatsConfig cfg;
  cfg.seed = case_seed(cfg.seed);
  cfg.variant = v;
  return cfg;
}

TEST(sr_statistics, PowerAgainstA1Over256UlpBiasIsGuaranteed) {
  const SrStatsConfig cfg = config(SrVariant::kernel);
  const int64_t n = cfg.rows * cfg.cols * cfg.steps;
  const double d = hoeffding_threshold(n, cfg.alpha);
  const double power = hoeffding_power(n, cfg.alpha, 255.0 / 65536.0);
  std::printf("n = %lld draws per class, threshold %.4g, power against 255/65536 >= %.9f\n", (long long)n, d, power);
  EXPECT_LT(d, 255.0 / 65536.0 / 2);
  EXPECT_GT(power, 1 - 1e-9);
}

TEST(sr_statistics, KernelStreamPassesBinomialAndIndependenceTests) {
  const auto t0 = std::chrono::steady_clock::now();
  const SrStatsResult r = run_sr_statistics(config(SrVariant::kernel));
  std::printf("%s[%.2f s]\n", format_claim_table(r.cases).c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  EXPECT_EQ(r.cases.size(), 11u);
  expect_all_pass(r.cases);
  record(r.cases);
  CaseRecord& cr = report().add_case("sr_binomial", "class table variant=kernel");
  cr.add_f64("class_low16", r.class_low16).add_f64("observed", r.class_observed)
      .add_f64("expected", r.class_expected).add_f64("threshold", r.class_threshold);
  cr.add_check(Check::passed("power_vs_1_256_ulp", "power_lower_bound", r.power_vs_1_256, 1 - 1e-9)
                   .passes_if(fh::PassIf::at_least));
}

TEST(sr_statistics, LayoutInvarianceOnTheTwin) {
  const auto rs = run_sr_layout_invariance(case_seed(0x1A70u), SrVariant::kernel);
  std::printf("%s", format_claim_table(rs).c_str());
  EXPECT_EQ(rs.size(), 10u);
  expect_all_pass(rs);
  record(rs);
}

TEST(sr_statistics, FusedTwinStepDrawsTheStreamAndPassesTheTests) {
  const auto t0 = std::chrono::steady_clock::now();
  SrStatsConfig cfg = config(SrVariant::kernel);
  cfg.through_fused_step = true;
  const SrStatsResult r = run_sr_statistics(cfg);
  std::printf("%s[%.2f s]\n", format_claim_table(r.cases).c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  ASSERT_EQ(r.cases.size(), 12u);
  expect_all_pass(r.cases);
  EXPECT_EQ(r.draws, (8 + 1) * cfg.rows * cfg.cols * cfg.steps);
  // The same draws as sr_round's: the class table equals the copy's.
  const SrStatsResult copy = run_sr_statistics(config(SrVariant::kernel));
  EXPECT_EQ(r.class_observed, copy.class_observed);
  record(r.cases);
  cfg.variant = SrVariant::bits8;
  EXPECT_THROW(run_sr_statistics(cfg), std::invalid_argument);
}

TEST(sr_statistics, EightBitSrIsRejectedByTheBinomialTest) {
  const SrStatsResult r = run_sr_statistics(config(SrVariant::bits8));
  std::printf("%s", format_claim_table(r.cases).c_str());
  // Classes whose low byte is 0xff carry a bias of 255/65536 ulp under 8-bit SR: all rejected.
  EXPECT_GE(count_failing(r.cases, "sr_binomial"), 4);
}

TEST(sr_statistics, SharedTileBitsAreRejectedByTileIndependenceAndLayout) {
  const SrStatsResult r = run_sr_statistics(config(SrVariant::shared_tile_bits));
  std::printf("%s", format_claim_table(r.cases).c_str());
  EXPECT_EQ(count_failing(r.cases, "sr_binomial"), 0) << "the marginals stay exact";
  bool tile_case_failed = false;
  for (const auto& c : r.cases)
    if (c.case_name.find("neighbouring tiles") != std::string::npos) tile_case_failed = !c.pass;
  EXPECT_TRUE(tile_case_failed);
  const auto lay = run_sr_layout_invariance(case_seed(0x1A70u), SrVariant::shared_tile_bits);
  EXPECT_GE(count_failing(lay, "sr_layout_invariance"), 1);
}

}  // namespace
