#include "suites/claims/nonseparable_falsifier.h"

#include <stdexcept>

#include "kernels/twin/nonseparable.h"
#include "reference/lamb_two_phase.h"
#include "oracles/bitwise.h"
#include "oracles/param_compare.h"
#include "reference/order_matched_host.h"

namespace fh {

namespace {
using Evidence = ParamEvidence;
}  // namespace

std::vector<ClaimCaseResult> run_nonseparable_cases(const NonseparableConfig& cfg) {
  const TwinShapeCase& shape = cfg.shape;
  const int64_t T = shape.T, in = shape.in, out = shape.out;
  if (shape.tile_rows >= out && shape.tile_cols >= in)
    throw std::invalid_argument("run_nonseparable_cases: the shape must have more than one tile");
  const LayerInputs inp = make_shape_inputs(stream_seed(cfg.seed, "nonseparable_falsifier/inputs"), shape, cfg.steps);
  const TwinSchedule sched = schedule_for(shape, TileVisitOrder::row_major, 0, {});
  TwinSchedule one_tile = sched;
  one_tile.tile_rows = out;
  one_tile.tile_cols = in;
  const TileShape tile{shape.tile_rows, shape.tile_cols};
  const LambHyper h;
  std::vector<ClaimCaseResult> results;

  auto lamb_compare = [&](const TwinSchedule& ts, Evidence& ev) {
    LambParam fused = LambParam::make(out, in, inp.w0), two = fused;
    for (int k = 0; k < cfg.steps; ++k) {
      const auto& s = inp.steps[size_t(k)];
      lamb_fused_twin_step(fused, h, s.X.data(), s.dY.data(), T, k + 1, ts);
      lamb_two_phase_step(two, h, s.X.data(), s.dY.data(), T, k + 1, ts.order);
      ev.add(compare_bitwise(fused.w, two.w, out, in, BitwiseContext{"lamb W", tile, k + 1}));
      ev.add(compare_bitwise(fused.m, two.m, out, in, BitwiseContext{"lamb exp_avg", tile, k + 1}));
      ev.add(compare_bitwise(fused.v, two.v, out, in, BitwiseContext{"lamb exp_avg_sq", tile, k + 1}));
    }
  };
  {
    ClaimCaseResult c;
    c.claim = "nonseparable";
    c.case_name = shape.label() + " | LAMB tile-local trust ratio through the twin MUST differ";
    Evidence ev;
    lamb_compare(sched, ev);
    fill_bitwise(c, ev);
    judge_case(c, double(ev.differing), 0, PassIf::above);  // a falsifier: it must see a difference
    c.note = c.pass ? "differs, as it must: the suite sees a wrong fusion"
                    : "NO difference: the suite cannot see a non-separable fusion";
    results.push_back(std::move(c));
  }
  {
    ClaimCaseResult c;
    c.claim = "nonseparable";
    c.case_name = shape.label() + " | control: LAMB with one tile covering the tensor matches";
    Evidence ev;
    lamb_compare(one_tile, ev);
    judge_bitwise(c, ev);
    c.note = "the difference above comes from the tiling alone";
    results.push_back(std::move(c));
  }
  {
    ClaimCaseResult c;
    c.claim = "nonseparable";
    c.case_name = shape.label() + " | control: separable adamw on the same data matches";
    HostParam fused = HostParam::make(default_rule_config(RuleId::adamw), StateFormat::fp32,
                                      WeightStore::fp32_master, out, in, inp.w0);
    HostParam two = fused;
    Evidence ev;
    for (int k = 0; k < cfg.steps; ++k) {
      const auto& s = inp.steps[size_t(k)];
      fused_twin_step(fused, s.X.data(), s.dY.data(), T, k + 1, sched);
      order_matched_step(two, s.X.data(), s.dY.data(), T, k + 1, sched.order);
      compare_params(ev, fused, two, k + 1, tile, "adamw twin vs order-matched");
    }
    judge_bitwise(c, ev);
    results.push_back(std::move(c));
  }
  return results;
}

void claim_nonseparable_falsifier(const VerifyConfig& cfg, Report& report, const Progress&) {
  NonseparableConfig nc;
  nc.seed = cfg.seed;
  record_claim_cases(report, run_nonseparable_cases(nc), "nonseparable_falsifier");
}

}  // namespace fh
