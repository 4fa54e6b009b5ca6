// prop2_token_partial (Proposition 2's scope): a parameter whose gradient on each rank covers
// only that rank's tokens must not be updated in place by a fused kernel. Such parameters: every
// weight under data parallelism; under sequence parallelism the norm weights and the
// row-parallel bias, which Megatron-LM all-reduces over the tensor-parallel group after backward
// (finalize_model_grads.py). Cases:
//   refused: ...            check_fusable refuses the fused update with a clear error;
//   naive fused differs     run anyway (what a careless port does), the replicas' W and state
//                           differ from the true update, bit for bit (the harness sees it);
//   fallback replicas agree the exact route (each rank's G materialized, ordered all-reduce,
//                           the standard step) leaves every replica bitwise identical; its extra
//                           memory, one fp32 gradient per rank, is in the note;
//                           against the unsharded fused update it may differ in the last bits
//                           (p partial chains summed vs one chain): measured, in the note.
// The row-parallel bias is a GEMM with X = 1 (its gradient is dY summed over tokens).
#include "oracles/param_compare.h"
#include "suites/claims/prop2_common.h"

namespace fh {

std::vector<ClaimCaseResult> run_prop2_token_partial_cases(const Prop2Config& cfg) {
  const RuleConfig adamw = config_for(RuleId::adamw, cfg.rule_configs);
  const Combo cb{adamw, StateFormat::fp32, WeightStore::fp32_master};
  const std::string claim = "prop2_token_partial";
  struct Param { std::string what; int64_t out, in; bool ones_x; };
  const Param params[] = {Param{"weight under data parallelism", cfg.out, cfg.in, false},
                          Param{"row-parallel bias under sequence parallelism", cfg.out, 1, true}};
  std::vector<ClaimCaseResult> cases = run_prop2_units(cfg, std::size(params), [&](size_t i, const FusedStepBackend& be) {
    const Param& prm = params[i];
    std::vector<ClaimCaseResult> results;
    LayerInputs inp = make_layer_inputs(stream_seed(cfg.seed, "prop2_token_partial/inputs"), prm.out, prm.in, cfg.T, cfg.steps);
    if (prm.ones_x)
      for (auto& s : inp.steps) s.X.assign(s.X.size(), float_to_bf16_rne(1.0f));  // the bias's "input"
    const TwinSchedule sched = prop2_schedule(prm.out, prm.in, cfg.T);
    const UnshardedRun u = run_unsharded(cb, inp, sched, 31, stream_seed(cfg.seed, "prop2_token_partial/sr_key"), &be);
    const Dataflow flow = prm.ones_x ? Dataflow::sp_megatron : Dataflow::dp;
    for (int p : cfg.degrees) {
      const std::string name = prm.what + " p=" + std::to_string(p);
      progress_set_case(name);
      results.push_back(expect_refusal(claim, name + " | refused", [&] {
        if (!cfg.defects.skip_refusal) check_fusable(flow, prm.ones_x, prm.what);  // planted: skipped, so it runs
      }));
      {  // what a careless port does: each replica updated in place with its own tokens' gradient
        const HostParam naive = run_sharded(u.initial, TpKind::column, Dataflow::dp, p, inp, sched, cfg.defects, &be).final_param;
        results.push_back(differs_case(claim, name + " | naive fused differs", naive, u.final_param, cfg.steps,
                                       "each replica updated in place with its own tokens' gradient vs the true update"));
      }
      ShardedLayer layer = ShardedLayer::split(u.initial, TpKind::column, Dataflow::dp, p);
      const SimCollectives coll = prop2_collectives(p, cfg.defects);
      int64_t bytes = 0;
      for (size_t k = 0; k < inp.steps.size(); ++k)
        bytes = token_partial_fallback_step(layer, inp.steps[k].X.data(), inp.steps[k].dY.data(), cfg.T,
                                            int64_t(k) + 1, sched, coll, be);
      ParamEvidence agree;
      for (int r = 1; r < p; ++r)
        compare_params(agree, layer.ranks[size_t(r)], layer.ranks[0], cfg.steps, TileShape{128, 128},
                       "replica " + std::to_string(r) + " vs replica 0");
      ParamEvidence vs_unsharded;
      compare_params(vs_unsharded, layer.ranks[0], u.final_param, cfg.steps, TileShape{128, 128}, "fallback vs unsharded");
      ClaimCaseResult c;
      c.claim = claim;
      c.case_name = name + " | fallback replicas agree";
      judge_bitwise(c, agree);
      c.note = "fallback: G materialized per rank (" + std::to_string(bytes) + " bytes of fp32 gradient per rank), " +
               "all-reduced in rank order, standard step; against the unsharded fused update " +
               std::to_string(vs_unsharded.differing) + " elements differ (measured: p partial chains summed vs one chain)";
      results.push_back(std::move(c));
    }
    return results;
  });
  // Norm weights: their gradient is a per-element sum over tokens, not a GEMM; the refusal is the
  // same route (a planted skip of it must be caught).
  cases.push_back(expect_refusal(claim, "RMSNorm weight under sequence parallelism | refused", [&] {
    if (!cfg.defects.skip_refusal) check_fusable(Dataflow::sp_megatron, true, "RMSNorm weight");
  }));
  return cases;
}

void claim_prop2_token_partial(const VerifyConfig& cfg, Report& report, const Progress& progress,
                               const ClaimVariant& variant) {
  record_prop2_claim(run_prop2_token_partial_cases, variant, cfg, report, progress);
}

}  // namespace fh
