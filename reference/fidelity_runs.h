// Producers and runners of the low-precision fidelity claims (issue 5), on the host twin:
//   prop4_int8        one step from the same decoded state: INT8 moments within the codec bound
//                     of their block's absmax, weights identical, the next step's weight
//                     difference within the propagated bound; fused == two-phase INT8 bitwise;
//                     degenerate blocks stay in their block; a 100+ step trajectory
//   sr_statistics     the Philox stream as the kernel draws it: binomial tests per value class,
//                     independence (neighbours, tiles, steps), layout invariance
//   stagnation        least squares trained with fp32 master / bf16 RNE / bf16 SR / INT8 state
//   gradient_fidelity the fused path's fp32 G against G rounded to bf16 before the optimizer
// Every fused step (and the fused path's G) goes through the config's FusedStepBackend: the host
// twin when it is null (CI), the fused kernel on the GPU runner (kernels/gpu/gpu_step_backend.h).
// Each runner returns ClaimCaseResult cases (kernels/twin/twin_claims.h) plus the curves and
// histograms a report stores. Judging goes through oracles/fidelity.h.
//
// Planted defects live only here, behind explicit switches (default off): an INT8 tile update
// whose blocks straddle the tile edge, one whose absmax is taken over the tile row instead of
// the block, SR with 8 random bits, SR keyed by the position inside the tile (the same bits in
// every tile).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/twin/step_backend.h"
#include "kernels/twin/twin_claims.h"
#include "oracles/fidelity.h"

namespace fh {

// ---- INT8 tile update: a copy of update_segment's INT8 path with planted defects ----

enum class Int8TileDefect : uint8_t {
  none,                // the driver's behaviour: blocks counted from column 0, refused edges
  straddle_tile_edge,  // blocks counted from each tile's first column, tile edge not refused
  absmax_over_tile,    // one absmax over the tile row, stored into each of its blocks
};
const char* int8_tile_defect_name(Int8TileDefect d);

// The rule of w (INT8 state, fp32_master store) on all of w with gradient G [rows, cols], tile
// columns tile_cols at a time. With Int8TileDefect::none it equals apply_rule_region bitwise (a
// test checks it) and refuses (std::invalid_argument) a tile edge that would split a block.
void int8_tiled_update_copy(HostParam& w, const std::vector<float>& G, int64_t step,
                            int64_t tile_cols, Int8TileDefect defect);

// ---- Proposition 4 ----

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

// ---- stochastic rounding on the real random stream ----

enum class SrVariant : uint8_t {
  kernel,            // sr_bits(key, global index) and float_to_bf16_sr: what store_weight does
  bits8,             // planted: only the top 8 of the 16 bits (a bias up to 1/256 ulp)
  shared_tile_bits,  // planted: keyed by the index inside the tile (every tile the same bits)
};
const char* sr_variant_name(SrVariant v);

// One SR decision for element (r, c) of a [rows, cols] tensor at key.step, as the variant draws.
uint16_t sr_round(float x, const sr_key& key, int64_t r, int64_t c, int64_t cols,
                  int64_t tile_rows, int64_t tile_cols, SrVariant v);

struct SrStatsConfig {
  uint64_t seed = 0x5EED0F5Eull;
  int64_t rows = 256, cols = 256;       // one tensor per value class
  int64_t tile_rows = 128, tile_cols = 128;
  int steps = 64;                       // 2^16 elements x 64 steps = 2^22 draws per class
  double alpha = 1e-9;
  SrVariant variant = SrVariant::kernel;
  // Where the draws come from. false: sr_round (the copy that carries the planted variants).
  // true: the fused step itself (backend, null = twin): per class an SGD step (lr 1, T = 2)
  // crafted so that the element's fp32 result is exactly the class value, its bf16_sr store
  // read back; the variant must then be kernel (the GPU plants its defects in the kernel).
  bool through_fused_step = false;
  const FusedStepBackend* backend = nullptr;
};
struct SrStatsResult {
  std::vector<ClaimCaseResult> cases;
  std::vector<double> class_low16, class_observed, class_expected, class_threshold;
  // through_fused_step: draws whose stored bf16 is neither of the class value's two neighbours
  // (the crafted step failed), and draws that differ from sr_round's (the kernel's stream).
  int64_t off_lattice = 0, differ_from_stream = 0, draws = 0;
  double power_vs_1_256 = 0;  // guaranteed power against a bias of 255/65536 (~1/256 ulp)
};
// Binomial test per value class (dropped 16 bits fixed per class) and the independence tests.
SrStatsResult run_sr_statistics(const SrStatsConfig& cfg);

// The fused bf16_sr step under several tile shapes and visit orders gives identical bits (the
// backend's: the GPU has two tile shapes, i.e. two launch grids); with a variant other than
// kernel, the copy sr_round is compared across tile shapes instead.
std::vector<ClaimCaseResult> run_sr_layout_invariance(uint64_t seed, SrVariant variant,
                                                      const FusedStepBackend* backend = nullptr);

// ---- the stagnation experiment ----

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
  std::vector<ClaimCaseResult> cases;
};
StagnationResult run_stagnation(const StagnationConfig& cfg);

// ---- gradient fidelity ----

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

}  // namespace fh
