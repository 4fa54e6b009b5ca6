// stagnation (issue 5): least squares (W [32, 64] toward a fixed W*, noisy targets, a fresh bf16
// batch per step) trained with the fused AdamW step at a low learning rate under fp32 master
// weights, bf16 round-to-nearest in place, bf16 stochastic rounding in place and INT8 state, for
// three run seeds, on the host twin (stagnation) and on the fused kernel (stagnation_gpu, every
// step also checked against the twin). Reported: eval-loss curves, the fraction of weights a step
// leaves unchanged, each variant's final-loss gap against fp32 master. Verdicts: SR within fp32
// master's run-to-run noise, RNE's gap beyond it; INT8 state beating RNE (its own gap is data).
// Producers: the config's FusedStepBackend, LeastSquaresProblem (reference/fidelity_producers.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/twin/step_backend.h"
#include "oracles/evidence.h"
#include "reports/report.h"
#include "suites/claims/claim_config.h"

namespace fh {

// Planted in the stagnation experiment's bf16_sr run only (default off).
enum class StagnationDefect : uint8_t {
  none,
  sr_is_rne,  // planted: the run labelled bf16_sr stores its weights with round-to-nearest
};
const char* stagnation_defect_name(StagnationDefect d);

struct StagnationConfig {
  uint64_t seed = 0x57A6BA7EULL;
  int64_t out = 32, in = 64, T = 64, eval_T = 256;
  int steps = 400;
  double lr = 5e-4, target_noise = 0.1, w_star_scale = 0.1;
  std::vector<uint64_t> run_seeds = {1, 2, 3};  // data order and SR seed per run
  StagnationDefect defect = StagnationDefect::none;
  std::vector<std::string> labels;  // variants to run (empty: all four; fp32_master always runs)
  const FusedStepBackend* backend = nullptr;  // null: the host twin
};
struct StagnationRun {
  std::string label;  // "fp32_master", "bf16_rne", "bf16_sr", "int8_state"
  uint64_t run_seed = 0;
  std::vector<double> eval_loss;        // per step (after the step), fixed eval batch
  std::vector<double> unchanged_frac;   // per step, weights whose stored bits did not change
  double final_loss = 0;                // mean eval loss over the last 10% of steps
  int64_t zero_v_events = 0;            // int8_state: (step, element) pairs entering with v decoded 0, m not
};
struct StagnationResult {
  std::vector<StagnationRun> runs;
  double fp32_mean = 0, fp32_std = 0;         // final loss over seeds
  double rne_gap = 0, sr_gap = 0, int8_gap = 0;  // relative final-loss gap vs fp32 master, mean over seeds (NaN: not run)
  double sr_abs_diff = 0;                     // |mean SR - mean fp32|
  double rne_vanish_frac = 0;                 // RNE: mean unchanged fraction over the second half
  // The eval loss's exact minimum (LeastSquaresProblem::exact_optimum, Eigen QR in double) and
  // what is measured against it. NaN entries: that variant did not run.
  double opt_loss = 0, wstar_loss = 0, opt_stationarity = 0;
  int64_t opt_rank = 0;
  double min_excess_rel = 0;     // min over every run and step of (eval loss - opt_loss) / opt_loss: >= 0
  double final_mean[4] = {0, 0, 0, 0};  // mean final loss: fp32_master, bf16_rne, bf16_sr, int8_state
  std::vector<ClaimCaseResult> cases;
};
StagnationResult run_stagnation(const StagnationConfig& cfg);

// forge-verify's entry, one per variant (twin, GPU). Honour no option: the suite's fixed problem
// and seeds (its verdicts are calibrated on them).
void claim_stagnation(const VerifyConfig& cfg, Report& report, const Progress& progress,
                      const ClaimVariant& variant);

}  // namespace fh
