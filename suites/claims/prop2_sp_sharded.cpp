// prop2_sp_sharded (Proposition 2, sequence parallelism with Megatron-LM's dataflow): activations
// token-sharded between layers; a column-parallel layer all-gathers X over tokens again in its
// backward, a row-parallel layer all-gathers dY (the backward of its reduce-scatter), both in rank
// order. Every rank's contraction then runs over all T tokens in the original token order, so the
// update gathers to the unsharded fused update bit for bit (W, state) and dX equals the TP-only
// run's bit for bit. Each rule once (format and store rotating), p = 2, 4, 8. A permuted gather
// (planted) changes the token order inside the contraction and must be caught.
#include "oracles/param_compare.h"
#include "suites/claims/prop2_common.h"

namespace fh {

std::vector<ClaimCaseResult> run_prop2_sp_cases(const Prop2Config& cfg) {
  const LayerInputs inp = make_layer_inputs(stream_seed(cfg.seed, "prop2_sp_sharded/inputs"), cfg.out, cfg.in, cfg.T, cfg.steps);
  const TwinSchedule sched = prop2_schedule(cfg.out, cfg.in, cfg.T);
  // each rule once at every degree
  const std::vector<DegreeCombo> units = degree_combos(cfg, [&](int) { return prop2_combos(cfg, 4); });
  return run_prop2_units(cfg, units.size(), [&](size_t i, const FusedStepBackend& be) {
    const auto& [p, cb] = units[i];
    const UnshardedRun u = run_unsharded(cb, inp, sched, 23, stream_seed(cfg.seed, "prop2_sp_sharded/sr_key"), &be);
    std::vector<ClaimCaseResult> results;
    for (TpKind kind : {TpKind::column, TpKind::row}) {
      const std::string name = std::string(tp_kind_name(kind)) + " p=" + std::to_string(p) + " | " +
                               combo_name(cb.rule.id, cb.format, cb.store);
      progress_set_case(name);
      if (cb.format == StateFormat::int8 && kind == TpKind::row && (cfg.in / p) % kInt8Block != 0) {
        results.push_back(expect_refusal("prop2_sp_sharded", name + " | INT8 block across a shard edge", [&] {
          run_sharded(u.initial, kind, Dataflow::sp_megatron, p, inp, sched, cfg.defects, &be);
        }));
        continue;
      }
      const ShardedRun sp = run_sharded(u.initial, kind, Dataflow::sp_megatron, p, inp, sched, cfg.defects, &be);
      const ShardedRun tp = run_sharded(u.initial, kind, Dataflow::tp, p, inp, sched, {}, &be);
      ParamEvidence dx;
      for (int k = 0; k < cfg.steps; ++k) compare_dx(dx, sp.dX[size_t(k)], tp.dX[size_t(k)], cfg.T, cfg.in, k + 1, "dX SP vs TP");
      ClaimCaseResult c = bitwise_case("prop2_sp_sharded", name, sp.final_param, u.final_param, cfg.steps,
                                       "SP (Megatron) vs unsharded", &dx);
      c.note = std::string(kind == TpKind::column ? "X" : "dY") + " all-gathered over tokens in rank order; dX vs TP-only";
      results.push_back(std::move(c));
    }
    return results;
  });
}

void claim_prop2_sp_sharded(const VerifyConfig& cfg, Report& report, const Progress& progress,
                            const ClaimVariant& variant) {
  record_prop2_claim(run_prop2_sp_cases, variant, cfg, report, progress);
}

}  // namespace fh
