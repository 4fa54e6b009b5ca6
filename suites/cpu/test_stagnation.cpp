// The stagnation experiment on the CPU: least squares (W [32, 64] toward a
// fixed W*, noisy targets, a fresh bf16 batch of 64 tokens per step) trained with the twin's
// fused AdamW step at a low learning rate, under fp32 master weights, bf16 round-to-nearest in
// place, bf16 stochastic rounding in place and INT8 state, for 3 run seeds (data order and SR
// seed). Reported: eval-loss curves, the fraction of weights a step leaves unchanged (the updates
// that vanish under RNE), and the final-loss gap of each against fp32 master. Verdicts: SR and
// INT8 within the run-to-run noise of fp32 master; RNE's gap beyond it (compared with the
// paper's ~6%). The report (with the curves) goes to $FH_FIDELITY_REPORT_DIR/fidelity_stagnation.h5.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "reference/case_gen.h"
#include "reports/report.h"
#include "suites/claims/stagnation.h"
#include "suites/claims/twin_cases.h"

namespace {

using namespace fh;

TEST(stagnation, SrMatchesFp32MasterAndRneStagnates) {
  StagnationConfig cfg;
  cfg.seed = case_seed(cfg.seed);
  const auto t0 = std::chrono::steady_clock::now();
  const StagnationResult r = run_stagnation(cfg);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s", format_claim_table(r.cases).c_str());
  for (const auto& run : r.runs)
    std::printf("  %-12s seed %llu: final eval loss %.6g, unchanged weights at the end %.1f%%\n", run.label.c_str(),
                (unsigned long long)run.run_seed, run.final_loss, 100 * run.unchanged_frac.back());
  for (const auto& run : r.runs)
    if (run.label == "int8_state")
      std::printf("  int8_state seed %llu: %lld (step, element) pairs stepped with exp_avg_sq decoded 0 and exp_avg not\n",
                  (unsigned long long)run.run_seed, (long long)run.zero_v_events);
  std::printf("  fp32 %.6g +- %.3g; gaps: RNE %+.2f%%, SR %+.3f%%, INT8 %+.3f%%; RNE vanished %.1f%% [%.1f s]\n",
              r.fp32_mean, r.fp32_std, 100 * r.rne_gap, 100 * r.sr_gap, 100 * r.int8_gap,
              100 * r.rne_vanish_frac, secs);
  // SR and RNE verdicts gate CI. The INT8-state verdict is recorded as measured (it is a finding:
  // see run_int8_trajectory's v-decodes-to-0 events); CI only requires it to beat RNE.
  for (const auto& c : r.cases)
    if (c.case_name.rfind("int8_state", 0) != 0) {
      EXPECT_TRUE(c.pass) << c.case_name << ": " << c.note;
    }
  EXPECT_LT(r.int8_gap, r.rne_gap);
  EXPECT_GT(r.fp32_std, 0.0) << "run seeds must give run-to-run noise";

  Meta m = Meta::unknown();
  m.set("seed", std::to_string(cfg.seed));
  Report rep(m);
  for (const auto& c : r.cases) {
    CaseRecord& cr = rep.add_case(c.claim, c.case_name);
    cr.add_check((c.pass ? Check::passed("verdict", "metric", c.metric, c.bound)
                         : Check::failed("verdict", "metric", c.metric, c.bound, c.note))
                     .passes_if(c.pass_if));
    cr.set_attr("note", c.note);
  }
  for (const auto& run : r.runs) {
    CaseRecord& cr = rep.add_case("stagnation_curves", run.label + " seed " + std::to_string(run.run_seed));
    cr.set_attr("label", run.label).set_attr("run_seed", std::to_string(run.run_seed));
    cr.add_f64("eval_loss", run.eval_loss, "eval loss after each step");
    cr.add_f64("unchanged_frac", run.unchanged_frac, "fraction of stored weights a step left unchanged");
  }
  const char* dir = std::getenv("FH_FIDELITY_REPORT_DIR");
  rep.write(std::string(dir ? dir : ".") + "/fidelity_stagnation.h5");
}

}  // namespace

// ---- planted defect: the run labelled bf16_sr rounds to nearest; the SR verdict must fail ----

TEST(stagnation, RneMislabelledAsSrIsCaught) {
  StagnationConfig cfg;
  cfg.seed = case_seed(cfg.seed);
  cfg.labels = {"bf16_sr"};  // fp32_master always runs: the noise band
  cfg.defect = StagnationDefect::sr_is_rne;
  const StagnationResult r = run_stagnation(cfg);
  std::printf("%s", format_claim_table(r.cases).c_str());
  ASSERT_EQ(r.cases.size(), 1u);
  EXPECT_FALSE(r.cases[0].pass) << "an RNE store labelled SR must leave the noise band: " << r.cases[0].note;
  EXPECT_GT(r.sr_gap, 0.1);
  EXPECT_THROW(run_stagnation([] { StagnationConfig c; c.labels = {"fp16"}; return c; }()), std::invalid_argument);
}
