// forge-verify's entry of each claim, defined in suites/claims/<id>.cpp; the registry's table
// (suites/claims/registry.cpp) is the only caller.
#pragma once
#include "reports/report.h"
#include "suites/claims/claim_config.h"

namespace fh {

#define FH_CLAIM(id) void claim_##id(const VerifyConfig& cfg, Report& report, const Progress& progress)
// A claim with variants (its row makes <id> on the twin and <id>_gpu on the fused kernel) is
// told which one runs.
#define FH_VARIANT_CLAIM(id) \
  void claim_##id(const VerifyConfig& cfg, Report& report, const Progress& progress, const ClaimVariant& variant)
FH_CLAIM(rules_vs_mpfr);
FH_CLAIM(model_step_figures);
FH_CLAIM(two_phase_exact_vs_seq);
FH_CLAIM(int8_codec_bound);
FH_CLAIM(sr_exact_mean);
FH_CLAIM(prop1_twin);
FH_CLAIM(schedule_invariance);
FH_CLAIM(corollary1_cpu);
FH_VARIANT_CLAIM(nonseparable_falsifier);
FH_CLAIM(suite_power_planted_defects);
FH_VARIANT_CLAIM(prop4_int8);
FH_VARIANT_CLAIM(sr_statistics);
FH_VARIANT_CLAIM(stagnation);
FH_VARIANT_CLAIM(gradient_fidelity);
FH_CLAIM(gpu_mma_model);
FH_CLAIM(gpu_fused_vs_order_matched);
FH_CLAIM(gpu_fused_vs_twin);
FH_CLAIM(gpu_cublas_order);
FH_VARIANT_CLAIM(prop2_tp_sharded);
FH_VARIANT_CLAIM(prop2_sp_sharded);
FH_VARIANT_CLAIM(prop2_referee_dataflow);
FH_VARIANT_CLAIM(prop2_token_partial);
FH_VARIANT_CLAIM(prop2_block_stack);
FH_CLAIM(eq6_memory_model);
FH_CLAIM(prop3_gradient_memory);
FH_CLAIM(tied_embedding);
FH_CLAIM(ext_order_probe);
FH_CLAIM(ext_prop1);
FH_CLAIM(ext_variant);
FH_CLAIM(ext_corollary1);
FH_CLAIM(ext_int8);
FH_CLAIM(ext_model_memory);
FH_CLAIM(ext_model_time);
FH_CLAIM(ext_layer_speed);
FH_CLAIM(speed_decomposition);
FH_CLAIM(gpu_order_guard);
FH_CLAIM(mutation_kill_matrix);
FH_CLAIM(convergence_parity);
FH_CLAIM(memory_scaling);
FH_CLAIM(tp_microbatch);
#undef FH_CLAIM
#undef FH_VARIANT_CLAIM

}  // namespace fh
