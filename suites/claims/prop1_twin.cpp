#include "suites/claims/prop1_twin.h"

#include <string>

#include "oracles/bitwise.h"
#include "oracles/param_compare.h"
#include "reference/order_matched_host.h"
#include "reference/two_phase_host.h"
#include "suites/claims/claim_config.h"

namespace fh {

namespace {
using Evidence = ParamEvidence;
}  // namespace

std::vector<ClaimCaseResult> run_prop1_cases(const Prop1Config& cfg) {
  const auto rules = or_default(cfg.rules, all_rules());
  const auto formats = or_default(cfg.formats, kAllFormats);
  const auto stores = or_default(cfg.stores, kAllStores);
  const auto shapes = cfg.shapes.empty() ? default_prop1_shapes(stream_seed(cfg.seed, "prop1_twin/random_shapes")) : cfg.shapes;
  std::vector<RuleConfig> rule_configs;  // each rule's configured hyperparameters, or defaults
  for (RuleId r : rules) rule_configs.push_back(config_for(r, cfg.rule_configs));
  std::vector<ClaimCaseResult> results;

  for (size_t si = 0; si < shapes.size(); ++si) {
    const TwinShapeCase& shape = shapes[si];
    const LayerInputs inp = make_shape_inputs(stream_seed(cfg.seed, "prop1_twin/inputs", si), shape, cfg.steps);
    const TwinSchedule sched = schedule_for(shape, cfg.visit, stream_seed(cfg.seed, "prop1_twin/visit_order", si), cfg.defects);
    const TileShape tile{shape.tile_rows, shape.tile_cols};
    const int64_t T = shape.T, in = shape.in, out = shape.out;

    if (cfg.cross_check_reference) {
      // Three producers of G in the fused order: the twin's tiles, the order-matched host, and
      // reference/two_phase_host's tensor_core_chain (cuBLAS 13.1's order). All must agree.
      ClaimCaseResult c;
      c.claim = "prop1_twin";
      c.case_name = shape.label() + " | G: twin == order-matched == reference tensor_core_chain";
      Evidence ev;
      for (int k = 0; k < cfg.steps; ++k) {
        const auto& s = inp.steps[size_t(k)];
        const auto g_twin = twin_wgrad(s.X.data(), s.dY.data(), T, in, out, sched);
        const auto g_om = order_matched_wgrad(s.X.data(), s.dY.data(), T, in, out, sched.order);
        const auto g_ref = tensor_core_chain_wgrad(s.X.data(), s.dY.data(), T, in, out);
        BitwiseContext ctx{"G twin vs reference", tile, k + 1};
        ev.add(compare_bitwise(g_twin, g_ref, out, in, ctx));
        ctx.name = "G order-matched vs reference";
        ev.add(compare_bitwise(g_om, g_ref, out, in, ctx));
      }
      judge_bitwise(c, ev);
      c.note = "seed " + std::to_string(inp.seed);
      results.push_back(std::move(c));
    }

    for (const Combo& cb : combos_for(shape, rule_configs, formats, stores, int(si))) {
      ClaimCaseResult c = open_twin_case("prop1_twin", shape.label() + " | " + combo_name(cb.rule.id, cb.format, cb.store),
                                         cb.format, shape);
      if (c.not_run) {
        results.push_back(std::move(c));
        continue;
      }
      const RuleConfig& rc = cb.rule;
      HostParam twin = HostParam::make(rc, cb.format, cb.store, out, in, inp.w0,
                                       stream_seed(cfg.seed, "prop1_twin/sr_key", si), uint32_t(si + 1));
      HostParam two_phase = twin;  // each producer keeps its own W and state from here on
      Evidence ev;
      std::vector<float> dx_twin, dx_two;
      for (int k = 0; k < cfg.steps; ++k) {
        const auto& s = inp.steps[size_t(k)];
        const int64_t step = k + 1;
        fused_twin_step(twin, s.X.data(), s.dY.data(), T, step, sched, &dx_twin);
        order_matched_step(two_phase, s.X.data(), s.dY.data(), T, step, sched.order, &dx_two);
        compare_params(ev, twin, two_phase, step, tile, "twin vs order-matched");
        compare_dx(ev, dx_twin, dx_two, T, in, step, "twin vs order-matched");
      }
      judge_bitwise(c, ev);
      c.note = std::to_string(cfg.steps) + " steps, " + std::to_string(ev.compared) +
               " arrays compared, visit " + tile_visit_order_name(cfg.visit) + ", seed " +
               std::to_string(inp.seed);
      results.push_back(std::move(c));
    }
  }
  return results;
}

void claim_prop1_twin(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  Prop1Config pc;
  pc.seed = cfg.seed;
  pc.steps = int(cfg.steps);
  TwinShapeCase shape;
  shape.out = cfg.out; shape.in = cfg.in; shape.T = cfg.tokens;
  pc.shapes = {shape};
  pc.rules = rule_ids(cfg);
  pc.rule_configs = cfg.rules;
  pc.formats = cfg.formats;
  pc.stores = cfg.stores;
  const auto results = run_prop1_cases(pc);
  record_claim_cases(report, results, "prop1_twin");
  progress.note(std::to_string(results.size()) + " cases, " + std::to_string(cfg.steps) + " steps each, shape " + shape.label());
}

}  // namespace fh
