// suites/claims/prop2_common.h
#include "suites/claims/prop2_common.h"

#include <numeric>

#include "kernels/common/host_parallel.h"

#include "oracles/param_compare.h"
#include "suites/claims/fidelity_common.h"

namespace fh {

Prop2Config prop2_config(const VerifyConfig& cfg) {
  Prop2Config pc;
  pc.seed = cfg.seed;
  pc.steps = int(cfg.steps);
  pc.rules = rule_ids(cfg);
  pc.rule_configs = cfg.rules;
  pc.formats = cfg.formats;
  pc.stores = cfg.stores;
  return pc;
}

std::vector<Combo> prop2_combos(const Prop2Config& cfg, int p, bool full_at_2) {
  std::vector<RuleConfig> rules;
  for (RuleId r : or_default(cfg.rules, all_rules())) rules.push_back(config_for(r, cfg.rule_configs));
  TwinShapeCase s;
  s.out = cfg.out;
  s.in = cfg.in;
  s.T = cfg.T;
  s.coverage = p == 2 && full_at_2 ? ComboCoverage::full : ComboCoverage::rotate_both;
  return combos_for(s, rules, or_default(cfg.formats, kAllFormats), or_default(cfg.stores, kAllStores), p);
}

TwinSchedule prop2_schedule(int64_t out, int64_t in, int64_t T) {
  TwinShapeCase shape;
  shape.out = out, shape.in = in, shape.T = T;
  return schedule_for(shape, TileVisitOrder::row_major, 0, {});
}

UnshardedRun run_unsharded(const Combo& cb, const LayerInputs& inp, const TwinSchedule& sched, uint32_t tensor_id,
                           uint64_t seed, const FusedStepBackend* be) {
  UnshardedRun u;
  u.initial = HostParam::make(cb.rule, cb.format, cb.store, inp.out, inp.in, inp.w0, seed, tensor_id);
  u.final_param = u.initial;
  for (size_t k = 0; k < inp.steps.size(); ++k) {
    u.dX.emplace_back();
    rank_step(backend_or_twin(be), u.final_param, inp.steps[k].X.data(), inp.steps[k].dY.data(), inp.T,
              int64_t(k) + 1, sched, &u.dX.back());
  }
  return u;
}

SimCollectives prop2_collectives(int p, const Prop2Defects& defects) {
  SimCollectives c;
  c.p = p;
  if (defects.gather_permutation) {  // planted: the last two ranks swapped
    c.gather_order.resize(size_t(p));
    std::iota(c.gather_order.begin(), c.gather_order.end(), 0);
    std::swap(c.gather_order[size_t(p - 1)], c.gather_order[size_t(p - 2)]);
  }
  return c;
}

ShardedRun run_sharded(const HostParam& initial, TpKind kind, Dataflow flow, int p, const LayerInputs& inp,
                       const TwinSchedule& sched, const Prop2Defects& defects, const FusedStepBackend* be) {
  ShardedLayer layer = ShardedLayer::split(initial, kind, flow, p);
  if (defects.shard_origin_shift)  // planted: every shard's global origin 64 columns off
    for (HostParam& s : layer.ranks) s.origin_col += kInt8Block, s.origin_global_cols += kInt8Block;
  const SimCollectives coll = prop2_collectives(p, defects);
  ShardedRun run;
  for (size_t k = 0; k < inp.steps.size(); ++k) {
    run.dX.emplace_back();
    sharded_fused_step(layer, inp.steps[k].X.data(), inp.steps[k].dY.data(), inp.T, int64_t(k) + 1, sched, coll,
                       &run.dX.back(), backend_or_twin(be));
  }
  if (defects.shard_origin_shift)
    for (HostParam& s : layer.ranks) s.origin_col -= kInt8Block, s.origin_global_cols -= kInt8Block;
  run.final_param = layer.gathered(initial);
  return run;
}

ClaimCaseResult bitwise_case(const std::string& claim, const std::string& name, const HostParam& a,
                             const HostParam& b, int steps, const std::string& where, const ParamEvidence* extra) {
  ParamEvidence ev;
  compare_params(ev, a, b, steps, TileShape{128, 128}, where);
  if (extra) ev.add(*extra);
  return bitwise_case(claim, name, ev);
}

ClaimCaseResult differs_case(const std::string& claim, const std::string& name, const HostParam& a,
                             const HostParam& b, int steps, const std::string& what) {
  ClaimCaseResult c = bitwise_case(claim, name, a, b, steps, what);
  c.metric_name = "differing";
  judge_case(c, double(c.differing), 1, PassIf::at_least);
  c.note = what + ": " + std::to_string(c.differing) + " elements differ" +
           (c.first_diff.empty() ? "" : " (first: " + c.first_diff + ")");
  c.first_diff.clear();
  return c;
}

std::vector<ClaimCaseResult> run_prop2_units(const Prop2Config& cfg, size_t n, const Prop2Unit& run) {
  std::vector<std::vector<ClaimCaseResult>> parts(n);
  std::vector<TwinTally> tallies(n);
  progress_set_case(std::to_string(n) + " units on the host's cores");
  parallel_for(int64_t(n), [&](int64_t i) {
    const FusedStepBackend be = cfg.make_backend ? cfg.make_backend(&tallies[size_t(i)]) : twin_step_backend();
    parts[size_t(i)] = run(size_t(i), be);
    progress_set_case("");  // a worker's case (the heartbeat's) ends with its unit
  });
  progress_set_case("");
  std::vector<ClaimCaseResult> results;
  for (size_t i = 0; i < n; ++i) {
    for (ClaimCaseResult& c : parts[i]) results.push_back(std::move(c));
    if (cfg.tally) cfg.tally->ev.add(tallies[i].ev), cfg.tally->steps += tallies[i].steps;
  }
  return results;
}

std::vector<DegreeCombo> degree_combos(const Prop2Config& cfg, const std::function<std::vector<Combo>(int p)>& combos_at) {
  std::vector<DegreeCombo> units;
  for (int p : cfg.degrees)
    for (const Combo& cb : combos_at(p)) units.push_back({p, cb});
  return units;
}

void record_prop2_claim(Prop2Runner run, const ClaimVariant& variant, const VerifyConfig& cfg, Report& report,
                        const Progress& progress) {
  const bool on_gpu = variant.backend == ClaimBackend::gpu;
  Prop2Config pc = prop2_config(cfg);
  TwinTally tally;
  if (on_gpu) {
    pc.make_backend = gpu_backend_with_twin_tally;
    pc.tally = &tally;
  }
  const auto results = run(pc);
  record_claim_cases(report, results, variant.group);
  progress.note(variant.group + ": " + std::to_string(results.size()) + " cases");
  if (on_gpu) record_twin_tally_case(report, variant.group, tally, progress);
}

}  // namespace fh
