// The claim registry: the one table of every claim forge-verify judges. A new claim is one file
// suites/claims/<id>.cpp with its claim_<id> function, and one row here (a row with a GPU variant
// makes two claims, <id> and <id>_gpu, placed in the list where each runs); test_claim_registry
// checks that each row has its file, its GoogleTest suite and its README row, and forge-verify
// refuses a dataset that its row does not declare.
#include "suites/claims/registry.h"

#include <sstream>

#include "suites/claims/claim_entries.h"

namespace fh {
namespace {

constexpr uint32_t kOptCombos = kOptRule | kOptHyper | kOptFormat | kOptStore;
constexpr uint32_t kOptLayer = kOptCombos | kOptShape | kOptSteps | kOptSeed;

const std::vector<std::string> kProp4Datasets{"err_over_bound_hist", "max_err_rel_absmax", "max_abs_dev", "rms_dev",
                                              "max_update", "max_update_int8", "zero_v_nonzero_m"};
const std::vector<std::string> kSrStatsDatasets{"class_low16", "observed", "expected", "threshold"};
const std::vector<std::string> kStagnationDatasets{"vanish_frac", "int8_gap", "zero_v_events", "final_loss_fp32_mean_std",
                                                   "gaps", "noise_band_rel", "eval_loss", "unchanged_frac", "final_loss",
                                                   "optimum_loss", "excess_over_optimum", "gaps_vs_optimum"};
const std::vector<std::string> kGradFidelityDatasets{"update_rms", "bias_rel", "directional_bias", "rms_rel", "max_rel",
                                                     "max_rel_elem", "update_differing", "g_max_rel_err",
                                                     "traj_max_abs_dev", "traj_rms_dev"};
const char* kGpuSteps = "kernels/gpu fused_wgrad_update (every step), kernels/twin (tally)";

// A row and the names of its checks that judge a statement of the paper or of the external
// release (DESIGN contract 7: confirmed, refuted or inconclusive); every other check of the
// claim is a harness contract.
ClaimInfo with_findings(ClaimInfo row, std::vector<std::string> findings) {
  row.findings = std::move(findings);
  return row;
}

// A row reading run inputs (RunInput bits): `judged` select it by default when given, `beside`
// are read too when given.
ClaimInfo reading(ClaimInfo row, uint32_t judged, uint32_t beside = 0) {
  row.reads = judged;
  row.reads_beside = beside;
  return row;
}

// A claim with variants: one row, two claims, <id> on the host twin and <id>_gpu on the fused
// kernel, each step checked against the twin. The GPU variant says its own statement, description,
// producers and oracles; it keeps the twin's datasets, options and findings (the same code writes
// them), and needs an sm_90 GPU.
struct GpuVariant {
  std::string statement, what;
  std::vector<std::string> producers, oracles;
};
struct Variants {
  ClaimInfo twin, gpu;
};
using VariantRun = void (*)(const VerifyConfig&, Report&, const Progress&, const ClaimVariant&);
Variants with_gpu_variant(ClaimInfo twin, VariantRun run, GpuVariant v) {
  ClaimInfo gpu = twin;
  gpu.id = twin.id + "_gpu";
  gpu.statement = std::move(v.statement);
  gpu.what = std::move(v.what);
  gpu.producers = std::move(v.producers);
  gpu.oracles = std::move(v.oracles);
  gpu.needs = kNeedsSm90Gpu;
  gpu.variant_of = twin.id;
  auto bind = [run](ClaimVariant variant) -> ClaimRun {
    return [run, variant](const VerifyConfig& cfg, Report& report, const Progress& progress) {
      run(cfg, report, progress, variant);
    };
  };
  twin.run = bind({ClaimBackend::twin, twin.id});
  gpu.run = bind({ClaimBackend::gpu, gpu.id});
  return {std::move(twin), std::move(gpu)};
}

// The claims in the order forge-verify runs them (and the report, the README and --list-claims
// list them).
std::vector<ClaimInfo> make_registry() {
  // The rows with a GPU variant, each one row for two claims; the list below places the two, the
  // GPU variants after the host claims of their group so that a run without a GPU reads its
  // judged claims together.
  const Variants prop2_tp_sharded = with_gpu_variant(
      {"prop2_tp_sharded", "Proposition 2: exact under tensor parallelism",
       "column/row-parallel layer on 2, 4, 8 simulated ranks equals the unsharded fused update, bitwise; INT8 shard edges refused",
       {"reference/sharding (simulated ranks)", "kernels/twin/fused_twin"}, {"oracles/param_compare"}, {},
       kOptRule | kOptHyper | kOptFormat | kOptStore | kOptSteps | kOptSeed, kNeedsNothing},
      claim_prop2_tp_sharded, {"Proposition 2: exact under tensor parallelism, on the fused kernel",
       "prop2_tp_sharded with every rank's fused step on the fused kernel (simulated ranks, one GPU), checked against the twin",
       {"reference/sharding (simulated ranks)", kGpuSteps}, {"oracles/param_compare"}});
  const Variants prop2_sp_sharded = with_gpu_variant(
      {"prop2_sp_sharded", "Proposition 2: exact under sequence parallelism (Megatron's dataflow)",
       "SP with the backward all-gathers in rank order equals the unsharded update and TP-only dX, bitwise",
       {"reference/sharding (simulated ranks)", "kernels/twin/fused_twin"}, {"oracles/param_compare"}, {},
       kOptRule | kOptHyper | kOptFormat | kOptStore | kOptSteps | kOptSeed, kNeedsNothing},
      claim_prop2_sp_sharded, {"Proposition 2: exact under sequence parallelism, on the fused kernel",
       "prop2_sp_sharded with every rank's fused step on the fused kernel (simulated ranks, one GPU), checked against the twin",
       {"reference/sharding (simulated ranks)", kGpuSteps}, {"oracles/param_compare"}});
  const Variants prop2_referee_dataflow = with_gpu_variant(
      {"prop2_referee_dataflow", "Proposition 2: the referee's sequence-parallel objection",
       "dY token-sharded at the weight-gradient point: the per-rank update differs; gathering dY restores it",
       {"reference/sharding (simulated ranks)", "kernels/twin/fused_twin"}, {"oracles/param_compare"}, {},
       kOptHyper | kOptSteps | kOptSeed, kNeedsNothing},
      claim_prop2_referee_dataflow, {"Proposition 2: the referee's objection, on the fused kernel",
       "prop2_referee_dataflow with every rank's fused step on the fused kernel, checked against the twin",
       {"reference/sharding (simulated ranks)", kGpuSteps}, {"oracles/param_compare"}});
  const Variants prop2_token_partial = with_gpu_variant(
      {"prop2_token_partial", "Proposition 2's scope: token-partial parameters",
       "DP weights, SP norm weights and row-parallel bias: fused in place refused and wrong; the ordered fallback exact",
       {"reference/sharding (simulated ranks)", "kernels/twin/fused_twin", "reference/two_phase_host"},
       {"oracles/param_compare"}, {}, kOptHyper | kOptSteps | kOptSeed, kNeedsNothing},
      claim_prop2_token_partial, {"Proposition 2's scope: token-partial parameters, on the fused kernel",
       "prop2_token_partial with every fused step and each rank's G on the fused kernel, checked against the twin",
       {"reference/sharding (simulated ranks)", kGpuSteps, "reference/two_phase_host"}, {"oracles/param_compare"}});
  const Variants prop2_block_stack = with_gpu_variant(
      {"prop2_block_stack", "Proposition 2 over a transformer-block stack (TP and SP)",
       "two blocks on 2, 4, 8 simulated ranks: fused == unfused per dataflow, SP == TP linear weights, bitwise; TP vs unsharded measured",
       {"reference/sharded_stack (simulated ranks)", "kernels/twin/fused_twin", "reference/two_phase_host"},
       {"oracles/param_compare"}, {}, kOptRule | kOptHyper | kOptFormat | kOptStore | kOptSeed, kNeedsNothing},
      claim_prop2_block_stack, {"Proposition 2 over a transformer-block stack, on the fused kernel",
       "prop2_block_stack with every fused step and G on the fused kernel, checked against the twin",
       {"reference/sharded_stack (simulated ranks)", kGpuSteps, "reference/two_phase_host"}, {"oracles/param_compare"}});
  const Variants nonseparable = with_gpu_variant(
      {"nonseparable_falsifier", "Proposition 1's scope: element-wise separable rules only",
       "non-separable optimizers (LAMB, Adam-mini, Adafactor, SM3-I and II, LARS, Muon) must break under naive tiling; "
       "linear-fusion-only and the exact fused schedules match two-phase bitwise; each fp32 step within its bound of an "
       "MPFR step from the paper's algorithm",
       {"kernels/twin/nonseparable", "kernels/twin/nonseparable_rules", "reference/two_phase_host",
        "reference/nonseparable_two_phase (MPFR sums)"},
       {"oracles/bitwise", "oracles/param_compare"}, {"naive_error"}, kOptSeed, kNeedsNothing},
      claim_nonseparable_falsifier, {"Proposition 1's scope, past it on the GPU",
       "each non-separable rule's exact schedule on the GPU (fused and two-phase) equals the twin bitwise; memory "
       "(no G held) and time against the two-phase path at 14336x4096, T = 512 and 8192",
       {"kernels/gpu/nonseparable_gpu", "kernels/gpu/wgrad_materialize", "kernels/twin/nonseparable_rules"},
       {"oracles/param_compare", "kernels/gpu/tagged_pool"}});
  const Variants prop4_int8 = with_gpu_variant(
      {"prop4_int8", "Proposition 4: INT8 block-quantized moments have bounded error",
       "Proposition 4: INT8 moments within the codec bound, fused == two-phase INT8, degenerate blocks, trajectory",
       {"kernels/twin/fused_twin", "kernels/formats/int8_block", "reference/mpfr_rules"}, {"oracles/fidelity", "oracles/param_compare"},
       kProp4Datasets, kOptSeed, kNeedsNothing},
      claim_prop4_int8, {"Proposition 4 on the fused kernel",
       "prop4_int8 with every fused step on the fused kernel, checked against the twin",
       {kGpuSteps}, {"oracles/fidelity", "oracles/param_compare"}});
  const Variants sr_statistics = with_gpu_variant(
      {"sr_statistics", "Stochastic rounding is unbiased (on the kernel's Philox stream)",
       "stochastic rounding on the Philox stream through the fused bf16_sr store: binomial tests (with power), "
       "independence, layout invariance",
       {"kernels/twin/fused_twin", "kernels/common/philox"}, {"oracles/fidelity"}, kSrStatsDatasets, kOptSeed, kNeedsNothing},
      claim_sr_statistics, {"Stochastic rounding is unbiased, on the fused kernel",
       "sr_statistics with every draw a fused kernel's bf16_sr store, checked against the twin",
       {kGpuSteps}, {"oracles/fidelity", "oracles/param_compare"}});
  const Variants stagnation = with_gpu_variant(
      with_findings(
       {"stagnation", "bf16 round-to-nearest loses ~6% against fp32 master; stochastic rounding matches",
       "least squares under fp32 master / bf16 RNE / bf16 SR / INT8 state: curves, vanished updates, gaps",
       {"kernels/twin/fused_twin"}, {"oracles/fidelity"}, kStagnationDatasets, 0, kNeedsNothing},
       {"rne_gap_beyond_noise", "sr_within_noise", "int8_gap_below_rne_gap"}),
      claim_stagnation, {"The stagnation experiment on the fused kernel",
       "stagnation with every fused step on the fused kernel, checked against the twin",
       {kGpuSteps}, {"oracles/fidelity", "oracles/param_compare"}});
  const Variants gradient_fidelity = with_gpu_variant(
      {"gradient_fidelity", "FORGE keeps G in fp32 registers (no bf16 gradient tensor)",
       "fp32 G (the fused path) vs G rounded to bf16: bitwise identity, half-ulp rounding, measured update bias and error",
       {"kernels/twin/fused_twin", "reference/two_phase_host"}, {"oracles/fidelity", "oracles/param_compare"},
       kGradFidelityDatasets, kOptSeed, kNeedsNothing},
      claim_gradient_fidelity, {"Gradient fidelity on the fused kernel",
       "gradient_fidelity with every fused step on the fused kernel, checked against the twin",
       {kGpuSteps}, {"oracles/fidelity", "oracles/param_compare"}});
  return {
      {"rules_vs_mpfr", "Proposition 1 (premise): each fp32 rule as torch.optim documents it",
       "each fp32 rule within its stated bound of its MPFR twin",
       {"kernels/rules", "reference/mpfr_rules", "reference/rule_samples"}, {"oracles/rule_bounds"},
       {"max_err_ulps", "max_err_over_bound", "counts"}, kOptRule | kOptHyper | kOptSeed | kOptSamples, kNeedsNothing,
       claim_rules_vs_mpfr},
       {"two_phase_exact_vs_seq", "Corollary 1 (baseline): the standard two-phase step",
       "two-phase step: exact G vs fp32 sequential G within the dot-product bound",
       {"reference/exact_gradient", "reference/two_phase_host"}, {"oracles/dot_bound", "oracles/bitwise", "oracles/param_compare"},
       {"w_max_dev_ulps_per_step"}, kOptLayer, kNeedsNothing, claim_two_phase_exact_vs_seq},
       {"int8_codec_bound", "Proposition 4 (premise): the INT8 block-64 codec",
       "INT8 block-64 codec error within its derived bound (exact check)",
       {"kernels/formats/int8_block"}, {"MPFR exact error (in the claim)"},
       {"counts", "worst_err_over_half_step"}, kOptSeed, kNeedsNothing, claim_int8_codec_bound},
       {"sr_exact_mean", "Stochastic rounding is unbiased",
       "bf16 stochastic rounding: mean over all 2^16 offsets equals x exactly",
       {"kernels/common/bf16"}, {"exact mean (in the claim)"}, {"counts"}, kOptSeed, kNeedsNothing, claim_sr_exact_mean},
       {"prop1_twin", "Proposition 1: the tiled update equals the standard update",
       "Proposition 1: fused twin equals the order-matched two-phase step, bitwise",
       {"kernels/twin/fused_twin", "reference/order_matched_host", "reference/two_phase_host"},
       {"oracles/bitwise", "oracles/param_compare"}, {}, kOptLayer, kNeedsNothing, claim_prop1_twin},
       {"schedule_invariance", "Proposition 1 / Corollary 1: only the reduction order matters",
       "tile order/shape and TK change no bit; grouping or split-K moves the verdict to bounded",
       {"kernels/twin/fused_twin"}, {"oracles/bitwise", "oracles/param_compare", "oracles/dot_bound"}, {}, kOptSeed,
       kNeedsNothing, claim_schedule_invariance},
      prop2_tp_sharded.twin,
      prop2_sp_sharded.twin,
      prop2_referee_dataflow.twin,
      prop2_token_partial.twin,
      prop2_block_stack.twin,
      with_findings(
      {"eq6_memory_model", "Eq. 6: M_FORGE = 2P + kP + 0 + sum |a_l| + O(TR TC)",
       "Eq. 6 term by term for Llama-3.1-8B and Qwen3-14B (P checked; the measured 8B peak: claim model_step_figures); on the twin a 2-block stack's ledger peaks vs the terms, Remark 1",
       {"reference/memory_model", "reference/sharded_stack (ledger)"}, {"parameter count, peaks vs terms (in the claim)", "oracles/param_compare"},
       {"fused_terms_bytes", "standard_terms_bytes", "timeline_fused_in_use", "timeline_fused_peak",
        "timeline_standard_in_use", "timeline_standard_peak"}, kOptSeed, kNeedsNothing,
       claim_eq6_memory_model},
       {"measured_peak_within_3pct"}),
      {"prop3_gradient_memory", "Proposition 3: O(tile) gradient memory",
       "fused path's gradient storage one G tile at every P (the twin's own accounting); the standard path's 4P beside it",
       {"kernels/twin/fused_twin", "reference/memory_model (ledger)"}, {"bound (in the claim)"}, {}, kOptSeed, kNeedsNothing,
       claim_prop3_gradient_memory},
       {"tied_embedding", "Eq. 6's scope: tied embedding and LM head",
       "naive fusion of a tied weight caught bitwise and refused; the exact route's P_tied gradient bytes measured",
       {"kernels/twin/fused_twin", "reference/two_phase_host", "reference/memory_model"}, {"oracles/param_compare"}, {},
       kOptSeed, kNeedsNothing, claim_tied_embedding},
      prop2_tp_sharded.gpu,
      prop2_sp_sharded.gpu,
      prop2_referee_dataflow.gpu,
      prop2_token_partial.gpu,
      prop2_block_stack.gpu,
       {"corollary1_cpu", "Corollary 1: the only difference from a standard step is the GEMM's reduction order",
       "Corollary 1: twin vs exact-gradient step differs only through G",
       {"kernels/twin/fused_twin", "reference/exact_gradient", "reference/two_phase_host"},
       {"oracles/dot_bound", "oracles/bitwise", "oracles/param_compare"}, {},
       kOptRule | kOptHyper | kOptStore | kOptSeed, kNeedsNothing, claim_corollary1_cpu},
      nonseparable.twin,
      {"suite_power_planted_defects", "The harness's power (no paper statement)",
       "each planted defect makes its claim fail",
       {"kernels/twin/fused_twin (planted defects)"}, {"the claims prop1_twin, schedule_invariance, corollary1_cpu"}, {},
       kOptSeed, kNeedsNothing, claim_suite_power_planted_defects},
      prop4_int8.twin,
      sr_statistics.twin,
      stagnation.twin,
      gradient_fidelity.twin,
      nonseparable.gpu,
      prop4_int8.gpu,
      sr_statistics.gpu,
      stagnation.gpu,
      gradient_fidelity.gpu,
       {"gpu_mma_model", "DESIGN contract 2: the tensor-core instruction model",
       "the CPU instruction model equals the H200's mma.sync and wgmma bit for bit (~10^6 outputs each)",
       {"kernels/gpu/mma_probe", "kernels/twin/mma_model"},
       {"suites/claims/mma_probe_judge", "oracles/param_compare", "oracles/ulp"},
       {"counts", "fp32_fma_loop_miss_fraction"}, kOptSeed, kNeedsSm90Gpu, claim_gpu_mma_model},
       {"gpu_fused_vs_order_matched", "Proposition 1 on the GPU",
       "fused kernel equals materialize + rule kernel, bitwise",
       {"kernels/gpu/fused_wgrad_update", "kernels/gpu/wgrad_materialize", "kernels/gpu/rule_kernel"},
       {"oracles/param_compare"}, {"evidence"}, kOptLayer, kNeedsSm90Gpu, claim_gpu_fused_vs_order_matched},
       {"gpu_fused_vs_twin", "The host twin stands in for the GPU (DESIGN contract 1)",
       "GPU fused kernel equals the host twin, bitwise",
       {"kernels/gpu/fused_wgrad_update", "kernels/twin/fused_twin"}, {"oracles/param_compare"}, {"evidence"}, kOptLayer,
       kNeedsSm90Gpu, claim_gpu_fused_vs_twin},
       {"gpu_cublas_order", "Corollary 1 against cuBLAS",
       "Corollary 1, sharpened: cuBLAS G equals the twin in cuBLAS order; W equals fused where orders match",
       {"kernels/gpu/cublas_wgrad", "kernels/gpu/fused_wgrad_update", "kernels/gpu/rule_kernel", "kernels/twin/fused_twin"},
       {"oracles/bitwise", "oracles/param_compare", "oracles/dot_bound"}, {"w_max_ulp_per_rule", "w_differing_per_rule"},
       kOptRule | kOptHyper | kOptShape | kOptSeed, kNeedsSm90Gpu, claim_gpu_cublas_order},
       {"gpu_order_guard", "DESIGN contract 3: cuBLAS's order is data",
       "FPRev probe: cuBLAS's wgrad summation order still equals its description",
       {"kernels/gpu/cublas_order_probe"}, {"suites/claims/order_probe_judge", "oracles/param_compare"}, {"pair_i", "pair_j", "observed", "predicted", "counts"},
       kOptShape | kOptSeed, kNeedsSm90Gpu, claim_gpu_order_guard},
      reading(with_findings(
      {"ext_order_probe", "Corollary 1 (premise) on an external kernel: its reduction order",
       "FPRev probe through an adapter: the path's G equals its declared order's prediction; the order every element matches",
       {"an external producer (docs/EXTERNAL_PRODUCER.md)", "kernels/gpu/cublas_order_probe (predictions)"},
       {"suites/claims/ext_order_probe", "oracles/param_compare"}, {"elements_differing_per_candidate"}, 0, kNeedsNothing,
       claim_ext_order_probe},
       {"ran", "g_matches_declared_order"}), kInputExternal),
      reading(with_findings(
      {"ext_prop1", "Proposition 1 on an external kernel, in its own terms",
       "an external fused path equals the same producer's two-phase path, bitwise (W and state, every step)",
       {"an external producer's fused and two-phase paths"}, {"oracles/bitwise", "oracles/param_compare"}, {"differing_other_g_order"}, 0, kNeedsNothing,
       claim_ext_prop1},
       {"ran", "fused_equals_two_phase"}), kInputExternal),
      reading(with_findings(
      {"ext_variant", "An external kernel's variant equals the kernel it varies",
       "a path whose /meta variant_of names a base path of the same producer equals it bitwise (W and state, every step); the first step and element where they part",
       {"an external producer's variant and base paths"}, {"oracles/bitwise", "oracles/param_compare"},
       {"differing_per_step", "first_differing_step"}, 0, kNeedsNothing, claim_ext_variant},
       {"ran", "variant_equals_base"}), kInputExternal),
      reading(with_findings(
      {"ext_corollary1", "Corollary 1 as the FORGE README states it: only the summation order differs",
       "external path vs cuBLAS + torch fused AdamW: deviation per step; step 0 split into GEMM-order and arithmetic parts",
       {"an external producer", "its reference (cuBLAS + torch.optim.AdamW(fused=True))", "kernels/rules/adamw_torch_fused (host model)",
        "kernels/rules/adamw_forge_release (host model)"},
       {"oracles/bitwise", "oracles/param_compare"},
       {"w_differing_vs_reference", "w_max_ulp_vs_reference", "m_differing_vs_reference", "v_differing_vs_reference",
        "step0_order_part_differing", "step0_arithmetic_part_differing", "step0_arithmetic_part_by_tensor",
        "step0_w_differing_from_release_model"}, 0, kNeedsNothing, claim_ext_corollary1},
       {"ran", "only_order_differs", "release_model_reproduces_m_v"}), kInputExternal),
      reading(with_findings(
      {"ext_int8", "Proposition 4 on an external kernel's INT8 state",
       "external INT8 state: every code within half a step of the true moment, scales = absmax/127, rounding mode reported",
       {"an external producer's INT8 path", "the twin's G in its declared order"}, {"suites/claims/ext_int8 (bound)"},
       {"err_over_half_step_per_step", "codes_not_nearest"}, 0, kNeedsNothing, claim_ext_int8},
       {"ran", "codes_within_half_step", "scale_is_absmax_over_127"}), kInputExternal),
      reading(with_findings(
      {"ext_model_memory", "The FORGE README's peak memory on Llama-3.1-8B (and the paper's memory saving)",
       "measured peak per configuration against torch fused AdamW and the README's figure",
       {"scripts/forge_model_bench.py on the runner (--external-model)"}, {"suites/claims/ext_model_memory (ratio, tolerance)"},
       {"peak_gib", "peak_gb", "readme_peak", "torch_fused_peak_gib", "nonfinite_losses"}, 0, kNeedsNothing, claim_ext_model_memory},
       {"ran", "losses_finite", "matches_readme_peak", "below_torch_fused"}), kInputModelRuns),
      reading(with_findings(
      {"ext_model_time", "The FORGE README's step time on Llama-3.1-8B",
       "measured median step time per configuration against torch fused AdamW and the README's figure and spread",
       {"scripts/forge_model_bench.py on the runner (--external-model)"}, {"suites/claims/ext_model_time (ratio, spread)"},
       {"median_ms", "step_ms", "readme_step_ms", "torch_fused_median_ms", "nonfinite_losses"}, 0, kNeedsNothing, claim_ext_model_time},
       {"ran", "losses_finite", "matches_readme_step_time", "faster_than_torch_fused"}), kInputModelRuns),
      reading(with_findings(
      {"ext_layer_speed", "The paper's speed claim, per layer",
       "each external path's time per layer against cuBLAS + torch fused AdamW; the harness's kernels beside it",
       {"scripts/forge_adapter.py --timing and forge-bench (--external-timing)"}, {"suites/claims/ext_layer_speed (ratio)"},
       {"median_us", "torch_reference_median_us", "harness_fused_median_us", "harness_cublas_median_us"}, 0, kNeedsNothing,
       claim_ext_layer_speed},
       {"ran", "faster_than_torch_fused"}), kInputTimings),
      reading(with_findings(
      {"speed_decomposition", "The paper's speed figures (about 1.5x at small batch), decomposed",
       "per layer and T: fused, fused with a G round trip, our GEMM + rule kernel, cuBLAS + rule kernel; each step's "
       "part of the gap",
       {"kernels/gpu fused kernel, its G round-trip variant, order-matched and cuBLAS paths (forge-bench, "
        "--external-timing)"},
       {"suites/claims/speed_decomposition (differences, ratio)"},
       {"median_us", "bytes", "parts_us", "share", "gemm_cublas_us"}, 0, kNeedsNothing, claim_speed_decomposition},
       {"roundtrip_costs_time"}), kInputTimings),
      reading(with_findings(
      {"model_step_figures", "Eq. 6, Remark 1 and the paper's memory and speed figures on a model-shaped step",
       "the harness's fused and standard model step (tagged pool) against Eq. 6, each other and torch in the same call",
       {"kernels/gpu/model_step (forge-model-step, --model-step)", "scripts/forge_model_bench.py (--external-model)"},
       {"suites/claims/model_step_figures (tolerance, ratio, digests)"},
       {"peak_bytes", "median_ms", "tag_peak_bytes", "timeline_in_use", "timeline_peak", "timeline_outside_pool",
        "memory_model_bytes", "memory_model_residual_bytes", "eq6_bytes", "torch_fused_peak_bytes", "torch_fused_median_ms",
        "torch_hooks_peak_bytes", "torch_hooks_median_ms", "remark1_digests_differ", "max_layers_fit",
        "tied_gradient_bytes"},
       0, kNeedsNothing, claim_model_step_figures},
       {"more_than_halves", "fits_only_under_forge", "below_torch_fused_by_gradient_pool",
        "below_torch_hooks", "speedup_about_1p5", "time_0p8_of_torch", "eq6_within_3pct", "family_speedup_at_least_1p07"}),
              kInputModelSteps, kInputModelRuns),
      reading({"mutation_kill_matrix", "The harness's power, measured by mutation (no paper statement)",
               "each catalog mutant killed in every rep by some test (equivalents argued); rule mutants by two independent units",
               {"scripts/mutate.py and scripts/mutate_gpu.py (--kill-matrix)", "suites/mutation/*catalog.json"},
               {"suites/claims/mutation_kill_matrix"}, {"kill_units", "per_layer", "mutants"}, 0, kNeedsNothing,
               claim_mutation_kill_matrix}, kInputKillMatrices),
      reading(with_findings(
          {"convergence_parity", "§3.2 and Appendix F: FORGE's loss matches the standard optimizer's within 0.001 nats",
           "training runs on real text: fused == standard bit for bit at every step; the first loss against torch fp32 "
           "from the same weights; fused against torch bf16 within the seed spread and 0.001 nats; that tolerance "
           "against the bf16-fp32 floor; INT8 state against bf16 state",
           {"kernels/gpu/model_step (forge-model-step --train)", "scripts/torch_train_reference.py",
            "scripts/prepare_corpus.py (dict-gcide, the project's BPE)"},
           {"suites/claims/convergence_parity (digests, seed spread, tolerance)"},
           {"train_loss", "eval_loss", "eval_steps", "nonfinite_losses", "final_eval_gap", "final_eval_loss", "seeds",
            "mean_and_spread", "gap_and_spread", "floor_nats", "gap_nats", "first_loss_gap",
            "v_zero_fraction", "grad_rel_err", "first_nonfinite_step", "traced_v_zero_m_nonzero", "traced_v_zero",
            "traced_max_update_int8", "traced_max_update_bf16"},
           0, kNeedsNothing, claim_convergence_parity},
          {"within_seed_spread_of_torch_bf16", "within_0p001_nats_of_torch_bf16", "paper_tolerance_above_precision_floor",
           "int8_within_0p01_nats_of_bf16", "finite_to_the_end", "int8_update_within_10x_bf16"}),
          kInputConvergenceRuns),
      reading(with_findings(
          {"memory_scaling", "The review's reading of the memory saving: largest at small batch and short sequence; fit at 70B and beyond",
           "the memory model (Eq. 6 or the standard step, the step's own activations) over sequence, batch and 1-8 H200s; "
           "validated against a measured step when one is given",
           {"reference/memory_model (step_memory, step_activation_bytes)", "kernels/gpu/model_step (--model-step, beside)"},
           {"suites/claims/memory_scaling (tolerance, monotonicity)"},
           {"predicted_peak_bytes", "measured_peak_bytes", "tokens", "batches", "saving_fraction", "params",
            "per_gpu_bytes_fused", "per_gpu_bytes_standard", "capacity_layers", "llama70b_shaped_layers",
            "llama70b_shaped_params"},
           0, kNeedsNothing, claim_memory_scaling},
          {"saving_largest_at_short_sequence", "saving_largest_at_small_batch", "forge_fits_more_parameters"}),
          0, kInputModelSteps),
      reading(with_findings(
          {"tp_microbatch", "Abstract and §4: in Megatron-LM, FORGE fits 8B training at four times the micro-batch "
                            "a standard optimizer allows, with 20-55% per-rank memory savings",
           "one tensor-parallel rank's shard of the Llama-3.1-8B step (TP 2, 4, 8): its measured peak and collectives "
           "against the per-rank memory model, its measured micro-batch capacity, and the model's largest micro-batch "
           "per H200 for FORGE and a standard optimizer",
           {"reference/memory_model (tp_rank_shape, tp_collective_bytes, step_peak_bytes)",
            "kernels/gpu/model_step (forge-model-step --tp, --tp-rank-run, beside)"},
           {"suites/claims/tp_microbatch (tolerance, capacity)"},
           {"predicted_peak_bytes", "measured_peak_bytes", "collective_bytes", "capacity_batch", "max_microbatch_fused",
            "max_microbatch_standard", "microbatch_ratio", "per_rank_saving", "other_settings_microbatch_ratio",
            "other_settings_saving"},
           0, kNeedsNothing, claim_tp_microbatch},
          {"four_times_microbatch", "saving_20_to_55pct"}),
          0, kInputTpRankRuns),

  };
}

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) { o += ' '; continue; }
    o += c;
  }
  return o + "\"";
}

std::string json_list(const std::vector<std::string>& v) {
  std::string o = "[";
  for (size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + json_string(v[i]);
  return o + "]";
}

}  // namespace

const std::vector<ClaimInfo>& claim_registry() {
  static const std::vector<ClaimInfo> registry = make_registry();
  return registry;
}

const ClaimInfo* find_claim(const std::string& id) {
  for (const ClaimInfo& c : claim_registry())
    if (c.id == id) return &c;
  return nullptr;
}

uint32_t inputs_given(const RunInputPaths& paths) {
  return (paths.external_results.empty() ? 0 : kInputExternal) | (paths.external_model.empty() ? 0 : kInputModelRuns) |
         (paths.model_step.empty() ? 0 : kInputModelSteps) | (paths.external_timing.empty() ? 0 : kInputTimings) |
         (paths.kill_matrix.empty() ? 0 : kInputKillMatrices) |
         (paths.convergence_run.empty() ? 0 : kInputConvergenceRuns) | (paths.tp_rank_run.empty() ? 0 : kInputTpRankRuns);
}

std::string unmet_need(const ClaimNeeds& needs, const MachineCaps& caps) {
  auto sm_text = [](int sm) { return std::to_string(sm / 10) + "." + std::to_string(sm % 10); };
  if (caps.gpus < needs.gpus)
    return (needs.gpus == 1 ? std::string("needs a GPU") : "needs " + std::to_string(needs.gpus) + " GPUs") + ", " +
           std::to_string(caps.gpus) + " visible";
  if (needs.gpus > 0 && needs.sm != 0 && caps.sm != needs.sm)
    return "needs a GPU of compute capability " + sm_text(needs.sm) + ", " + (caps.sm ? sm_text(caps.sm) : "unknown") +
           " here";
  return "";
}

std::string option_flags(uint32_t options) {
  std::string o;
  for (const auto& n : kClaimOptionNames)
    if (options & n.bit) o += (o.empty() ? "" : " ") + std::string(n.flag);
  return o.empty() ? "-" : o;
}

std::string registry_markdown() {
  std::ostringstream o;
  o << "| claim | GPU | paper statement | what it judges | options honoured |\n"
    << "| --- | --- | --- | --- | --- |\n";
  for (const ClaimInfo& c : claim_registry())
    o << "| `" << c.id << "` | " << (c.needs_gpu() ? "yes" : "no") << " | " << c.statement << " | " << c.what << " | "
      << option_flags(c.options) << " |\n";
  return o.str();
}

std::string registry_json() {
  std::ostringstream o;
  o << "{\"claims\": [\n";
  const auto& reg = claim_registry();
  for (size_t i = 0; i < reg.size(); ++i) {
    const ClaimInfo& c = reg[i];
    std::vector<std::string> opts;
    for (const auto& n : kClaimOptionNames)
      if (c.options & n.bit) opts.push_back(n.flag);
    o << "  {\"id\": " << json_string(c.id) << ", \"statement\": " << json_string(c.statement)
      << ", \"what\": " << json_string(c.what) << ", \"needs_gpu\": " << (c.needs_gpu() ? "true" : "false")
      << ", \"producers\": " << json_list(c.producers) << ", \"oracles\": " << json_list(c.oracles)
      << ", \"datasets\": " << json_list(c.datasets) << ", \"findings\": " << json_list(c.findings)
      << ", \"options\": " << json_list(opts) << "}"
      << (i + 1 < reg.size() ? ",\n" : "\n");
  }
  o << "]}\n";
  return o.str();
}

}  // namespace fh
