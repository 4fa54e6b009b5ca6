// prop2_tp_sharded (Proposition 2, tensor parallelism): a column- or row-parallel layer on p = 2,
// 4, 8 simulated ranks, each rank's shard updated by the fused twin, gathers to the unsharded
// fused update bit for bit: W and state, every step, every rule x state format x weight store at
// p = 2 (each rule once at 4 and 8). INT8 blocks and stochastic-rounding bits are the global
// tensor's under every layout (a shard's origin is passed to the rules); a row-parallel split
// whose edge would cut an INT8 block (in / p not a multiple of 64) must be refused.
// What crosses ranks: column-parallel dX is the sum of p partial products dY_r W_r (Megatron's
// all-reduce), so dX gains p - 1 fp32 additions against the unsharded contraction; it is
// measured, not judged. Row-parallel dX is each rank's column slice, compared bitwise.
#include "oracles/param_compare.h"
#include "suites/claims/prop2_common.h"

namespace fh {

std::vector<ClaimCaseResult> run_prop2_tp_cases(const Prop2Config& cfg) {
  const LayerInputs inp = make_layer_inputs(stream_seed(cfg.seed, "prop2_tp_sharded/inputs"), cfg.out, cfg.in, cfg.T, cfg.steps);
  const TwinSchedule sched = prop2_schedule(cfg.out, cfg.in, cfg.T);
  const std::vector<DegreeCombo> units = degree_combos(cfg, [&](int p) { return prop2_combos(cfg, p); });
  return run_prop2_units(cfg, units.size(), [&](size_t i, const FusedStepBackend& be) {
    const auto& [p, cb] = units[i];
    const std::string combo = combo_name(cb.rule.id, cb.format, cb.store);
    const UnshardedRun u = run_unsharded(cb, inp, sched, 17, stream_seed(cfg.seed, "prop2_tp_sharded/sr_key"), &be);
    std::vector<ClaimCaseResult> results;
    for (TpKind kind : {TpKind::column, TpKind::row}) {
      const std::string name = std::string(tp_kind_name(kind)) + " p=" + std::to_string(p) + " | " + combo;
      progress_set_case(name);
      if (cb.format == StateFormat::int8 && kind == TpKind::row && (cfg.in / p) % kInt8Block != 0) {
        results.push_back(expect_refusal("prop2_tp_sharded", name + " | INT8 block across a shard edge", [&] {
          run_sharded(u.initial, kind, Dataflow::tp, p, inp, sched, cfg.defects, &be);
        }));
        continue;
      }
      const ShardedRun s = run_sharded(u.initial, kind, Dataflow::tp, p, inp, sched, cfg.defects, &be);
      ParamEvidence dx;
      for (int k = 0; k < cfg.steps; ++k) compare_dx(dx, s.dX[size_t(k)], u.dX[size_t(k)], cfg.T, cfg.in, k + 1, "dX");
      const bool judge_dx = kind == TpKind::row;
      ClaimCaseResult c = bitwise_case("prop2_tp_sharded", name, s.final_param, u.final_param, cfg.steps,
                                       "sharded vs unsharded", judge_dx ? &dx : nullptr);
      c.note = judge_dx ? "dX compared bitwise (each rank's column slice)"
                        : "dX (not judged): " + std::to_string(dx.differing) + " of " +
                              std::to_string(cfg.T * cfg.in * cfg.steps) +
                              " elements differ from the unsharded contraction: the sum of " + std::to_string(p) +
                              " partial products in rank order (the all-reduce) adds fp32 roundings";
      results.push_back(std::move(c));
    }
    return results;
  });
}

void claim_prop2_tp_sharded(const VerifyConfig& cfg, Report& report, const Progress& progress,
                            const ClaimVariant& variant) {
  record_prop2_claim(run_prop2_tp_cases, variant, cfg, report, progress);
}

}  // namespace fh
