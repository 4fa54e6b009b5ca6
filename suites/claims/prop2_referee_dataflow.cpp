// prop2_referee_dataflow (Proposition 2, the referee's objection): "under sequence parallelism dY
// is token-sharded at the weight-gradient point, so all-gathering X alone cannot complete the
// contraction". Run as stated: each rank contracts its own T/p tokens (dY token-sharded, X's
// matching tokens) and updates its shard in place. Verdicts, per layer kind and degree:
//   objection_dataflow_differs   the per-rank fused update differs from the true one (the
//                                objection holds for this dataflow); how many elements, max ulp;
//   gathering_dy_restores        the same ranks with dY all-gathered over tokens (Megatron's
//                                dataflow) gather to the unsharded update bit for bit (the
//                                objection does not hold for Megatron's dataflow).
// AdamW, fp32 state and master weights (the clearest case) and bf16 state with bf16 stores.
#include "suites/claims/prop2_common.h"

namespace fh {

std::vector<ClaimCaseResult> run_prop2_referee_cases(const Prop2Config& cfg) {
  const LayerInputs inp = make_layer_inputs(stream_seed(cfg.seed, "prop2_referee_dataflow/inputs"), cfg.out, cfg.in, cfg.T, cfg.steps);
  const TwinSchedule sched = prop2_schedule(cfg.out, cfg.in, cfg.T);
  const RuleConfig adamw = config_for(RuleId::adamw, cfg.rule_configs);
  const Combo combos[] = {Combo{adamw, StateFormat::fp32, WeightStore::fp32_master},
                          Combo{adamw, StateFormat::bf16, WeightStore::bf16_rne}};
  return run_prop2_units(cfg, std::size(combos), [&](size_t i, const FusedStepBackend& be) {
    const Combo& cb = combos[i];
    const UnshardedRun u = run_unsharded(cb, inp, sched, 29, stream_seed(cfg.seed, "prop2_referee_dataflow/sr_key"), &be);
    std::vector<ClaimCaseResult> results;
    for (int p : cfg.degrees)
      for (TpKind kind : {TpKind::column, TpKind::row}) {
        const std::string name = std::string(tp_kind_name(kind)) + " p=" + std::to_string(p) + " | " +
                                 combo_name(cb.rule.id, cb.format, cb.store);
        progress_set_case(name);
        const ShardedRun referee = run_sharded(u.initial, kind, Dataflow::sp_referee, p, inp, sched, cfg.defects, &be);
        results.push_back(differs_case("prop2_referee_dataflow", name + " | objection_dataflow_differs",
                                       referee.final_param, u.final_param, cfg.steps,
                                       "each rank contracting only its own tokens vs the true update"));
        const ShardedRun gathered = run_sharded(u.initial, kind, Dataflow::sp_megatron, p, inp, sched, cfg.defects, &be);
        ClaimCaseResult c = bitwise_case("prop2_referee_dataflow", name + " | gathering_dy_restores",
                                         gathered.final_param, u.final_param, cfg.steps, "dY all-gathered vs unsharded");
        c.note = "the objection holds for the referee's dataflow, not for Megatron's";
        results.push_back(std::move(c));
      }
    return results;
  });
}

void claim_prop2_referee_dataflow(const VerifyConfig& cfg, Report& report, const Progress& progress,
                                  const ClaimVariant& variant) {
  record_prop2_claim(run_prop2_referee_cases, variant, cfg, report, progress);
}

}  // namespace fh
