// prop4_int8 (Proposition 4, issue 5): INT8 block-64 state, on the host twin (prop4_int8) and on
// the fused kernel (prop4_int8_gpu, every step also checked against the twin):
//   - one step from the same decoded state: INT8 moments within the codec bound of their block's
//     absmax, the stored absmax the block's, weights identical, the next step's weight difference
//     within the propagated bound;
//   - fused == two-phase INT8 bitwise (claim field prop1_int8);
//   - degenerate blocks stay in their block (prop4_int8_degenerate);
//   - a 100-step trajectory, its deviation within the envelope (prop4_int8_trajectory).
// Producers: the config's FusedStepBackend (kernels/twin/step_backend.h: the twin, or the kernel
// through kernels/gpu/gpu_step_backend.h), reference/two_phase_host, reference/mpfr_rules (the
// step's exact scalars), the planted INT8 tile copy (reference/fidelity_producers.h). Oracles:
// oracles/fidelity (judge_int8_moments, count_absmax_mismatches, propagated_weight_bound),
// oracles/bitwise.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/twin/step_backend.h"
#include "oracles/evidence.h"
#include "oracles/fidelity.h"
#include "reference/case_gen.h"
#include "reference/fidelity_producers.h"
#include "reports/report.h"
#include "suites/claims/claim_config.h"

namespace fh {

struct Prop4Config {
  uint64_t seed = 0x1A78B10CULL;
  RuleConfig rule = default_rule_config(RuleId::adamw);
  int64_t out = 64, in = 128, T = 32;
  int64_t tile_rows = 64, tile_cols = 128;
  int warmup_steps = 4;  // INT8 steps before the judged step, so that the state is not zero
  Int8TileDefect defect = Int8TileDefect::none;  // planted in the INT8 path of the judged steps
  const FusedStepBackend* backend = nullptr;     // null: the host twin
};
struct Prop4OneStepResult {
  std::vector<ClaimCaseResult> cases;
  Int8MomentJudgement moments[kMaxStates];
  bool kept[kMaxStates] = {};
  double next_step_max_diff = 0, next_step_max_ratio = 0;  // |dW| and |dW| / bound, step B
};
// Step A (warmup + 1): INT8 and fp32 state from the same decoded state, one fused twin step each.
// Step B (warmup + 2): one more step each; |W_int8 - W_fp32| <= the propagated bound per element.
Prop4OneStepResult run_prop4_one_step(const Prop4Config& cfg);

// Fused twin INT8 steps == two-phase INT8 steps (tensor-core chain G, same 64-blocks), bitwise on
// weights, bytes and absmax, over `steps` steps.
ClaimCaseResult run_prop1_int8(const Prop4Config& cfg, int steps = 4);

// Degenerate blocks: a clean run against runs where one block's gradient column is poisoned
// (NaN, +inf, a huge outlier, subnormal, all zero). Each case passes when every other block's
// bytes, absmax and weights equal the clean run bitwise after each of two steps, and the poisoned
// block follows INT8_CODEC.md (judge_int8_moments against the fp32-state moments of step 1).
std::vector<ClaimCaseResult> run_int8_degenerate_blocks(const Prop4Config& cfg);
// The degenerate blocks' configuration as forge-verify's prop4_int8 claim builds it from the run
// seed (16x256, stream "prop4_int8/degenerate_blocks").
Prop4Config int8_degenerate_blocks_config(uint64_t run_seed);
// The inputs of step s of a Prop4Config's problem: X and dY from stream "prop4_int8/step_inputs"
// (index s) of cfg.seed; w0 is step 0's.
WgradCase prop4_step_inputs(const Prop4Config& cfg, int64_t s);

struct TrajectoryResult {
  std::vector<double> max_abs_dev;  // per step, max |W_int8 - W_fp32|
  std::vector<double> rms_dev;      // per step, rms of the same
  std::vector<double> max_update;   // per step, max |W_fp32(t) - W_fp32(t-1)| (scale)
  std::vector<double> max_update_int8;  // the same for the INT8 path
  // AdamW: elements entering the step with exp_avg_sq decoded to 0 and exp_avg not (the update
  // is then step_size * m / eps: the INT8 path's large steps come from here).
  std::vector<int64_t> zero_v_nonzero_m;
  // Attribution of the final deviation (AdamW): elements that entered some step with exp_avg_sq
  // decoded 0 and exp_avg not, their share of the final sum of |W_int8 - W_fp32|^2, and the
  // fraction of the 1% largest deviations that are such elements.
  int64_t zero_v_elements = 0;
  double dev_share_zero_v = 0, top1pct_zero_v_frac = 0;
  ClaimCaseResult verdict;          // max_abs_dev <= sum of both paths' step sizes (envelope)
  double growth_exponent = 0;       // least-squares slope of log(max_abs_dev) vs log(step)
};
TrajectoryResult run_int8_trajectory(const Prop4Config& cfg, int steps = 100);

// forge-verify's entry, one per variant (twin, GPU). Honour --seed only (fixed rules adamw and
// sgd_momentum, fixed sizes).
void claim_prop4_int8(const VerifyConfig& cfg, Report& report, const Progress& progress,
                      const ClaimVariant& variant);

}  // namespace fh
