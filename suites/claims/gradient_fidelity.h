// gradient_fidelity (issue 5): the fused path consumes G in fp32; a bf16-gradient optimizer
// rounds G to bf16 (RNE) first. On the host twin (gradient_fidelity) and on the fused kernel
// (gradient_fidelity_gpu, every step also checked against the twin), over 50 steps (AdamW and
// SGD, 64x128, T=32): the fp32-G two-phase step equals the fused step bitwise (it IS the fused
// path), the bf16 G is within half a bf16 ulp of G per element (exact), and the bf16-G update
// error is measurable (nonzero at every step); the bias and error of the update per step and a
// free-running bf16-G trajectory are reported.
// Producers: the config's FusedStepBackend (step and G), reference/two_phase_host
// (apply_two_phase_update), G rounded to bf16 (reference/fidelity_producers.h). Oracles:
// oracles/fidelity (judge_bf16_gradient_rounding, measure_update_deviation), oracles/bitwise.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/twin/step_backend.h"
#include "oracles/evidence.h"
#include "oracles/fidelity.h"
#include "reports/report.h"
#include "suites/claims/claim_config.h"

namespace fh {

enum class GradFidelityDefect : uint8_t {
  none,
  fp32_path_rounds_to_bf16,  // planted: the "fp32-G" path secretly rounds G to bf16 (RNE)
  bf16_path_truncates,       // planted: the bf16-G path truncates (round toward zero) instead of RNE
  bf16_path_keeps_fp32,      // planted: the bf16-G path does not round at all
};
const char* grad_fidelity_defect_name(GradFidelityDefect d);

struct GradFidelityConfig {
  uint64_t seed = 0x6AD1F1DEULL;
  RuleConfig rule = default_rule_config(RuleId::adamw);
  int64_t out = 64, in = 128, T = 32;
  int64_t tile_rows = 64, tile_cols = 64;
  int steps = 50;
  GradFidelityDefect defect = GradFidelityDefect::none;
  const FusedStepBackend* backend = nullptr;  // null: the host twin
};
struct GradFidelityResult {
  // Per step s (1-based, index s-1). The bf16-G step is re-synchronised: it starts each step
  // from the fp32-G path's weights and state, so each entry is that one step's deviation.
  std::vector<double> update_rms;        // scale: rms of the fp32-G update
  std::vector<double> bias_rel;          // mean(d) / scale, d = W_bf16G - W_fp32G after the step
  std::vector<double> directional_bias;  // mean(d * sign(update)) / scale
  std::vector<double> rms_rel;           // rms(d) / scale
  std::vector<double> max_rel;           // max |d| / scale
  std::vector<double> max_rel_elem;      // max |d_i| / |u_i| over |u_i| >= scale / 16
  std::vector<int64_t> update_differing; // elements whose bf16-G weight differs from the fp32-G one
  std::vector<double> g_max_rel_err, g_max_half_ulp_ratio;  // the rounding of G itself
  // A free-running bf16-G trajectory (never re-synchronised) against the fp32-G one.
  std::vector<double> traj_max_abs_dev, traj_rms_dev;
  // Pooled over all steps and elements: the bias and its standard error (mean of d / scale).
  double pooled_bias_rel = 0, pooled_bias_stderr = 0;
  double mean_rms_rel = 0, max_max_rel = 0, min_rms_rel = 0;
  // Cases: fp32-G path == fused twin bitwise; bf16-G rounding within half an ulp (exact);
  // the bf16-G update error is measurable (min over steps of rms_rel > 0).
  std::vector<ClaimCaseResult> cases;
};
// Each step: G from the twin (twin_wgrad, the fused path's G); the fused twin step; the fp32-G
// two-phase step on that G (must equal the twin bitwise: it IS the fused path); the bf16-G step
// (G rounded RNE, widened) from the fp32-G path's start; and one step of the free bf16-G run.
GradFidelityResult run_gradient_fidelity(const GradFidelityConfig& cfg);

// forge-verify's entry, one per variant (twin, GPU). Honour --seed only (fixed rules adamw and sgd,
// fixed sizes).
void claim_gradient_fidelity(const VerifyConfig& cfg, Report& report, const Progress& progress,
                             const ClaimVariant& variant);

}  // namespace fh
