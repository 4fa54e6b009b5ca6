#include "suites/claims/schedule_invariance.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "oracles/bitwise.h"
#include "oracles/dot_bound.h"
#include "oracles/param_compare.h"
#include "reference/order_matched_host.h"

namespace fh {

namespace {
using Evidence = ParamEvidence;
}  // namespace

std::vector<ClaimCaseResult> run_schedule_invariance_cases(const ScheduleInvarianceConfig& cfg) {
  const TwinShapeCase& shape = cfg.shape;
  const int64_t T = shape.T, in = shape.in, out = shape.out;
  const LayerInputs inp = make_shape_inputs(stream_seed(cfg.seed, "schedule_invariance/inputs"), shape, cfg.steps);
  std::vector<ScheduleInvarianceConfig::Combo> combos = cfg.combos;
  if (combos.empty()) {
    for (StateFormat f : kAllFormats)
      for (WeightStore w : kAllStores) combos.push_back({RuleId::adamw, f, w});
    int k = 0;
    for (RuleId r : kAllRules) {
      if (r == RuleId::adamw) continue;
      combos.push_back({r, kAllFormats[size_t(k % 3)], kAllStores[size_t((k / 3 + k) % 3)]});
      ++k;
    }
  }

  // The baseline: the paper's schedule, 128 x 128 tiles in row-major order, TK = 64.
  TwinSchedule base;
  base.order = fused_kernel_order(64);
  struct Variant { std::string name; TwinSchedule sched; };
  auto variant = [&](std::string name, int64_t tr, int64_t tc, TileVisitOrder v, int64_t tk) {
    TwinSchedule s = base;
    s.tile_rows = tr;
    s.tile_cols = tc;
    s.visit = v;
    s.visit_seed = stream_seed(cfg.seed, "schedule_invariance/visit_order", uint64_t(tr) << 32 | uint64_t(tc));
    s.order.token_chunk = tk;
    s.defects = cfg.defects;
    return Variant{std::move(name), s};
  };
  const std::vector<Variant> variants = {
      variant("visit col_major", 128, 128, TileVisitOrder::col_major, 64),
      variant("visit random", 128, 128, TileVisitOrder::random, 64),
      variant("tile 64x64 random", 64, 64, TileVisitOrder::random, 64),
      variant("tile 32x128 col_major", 32, 128, TileVisitOrder::col_major, 64),
      variant("tile 128x64 random", 128, 64, TileVisitOrder::random, 64),
      variant("TK 16", 128, 128, TileVisitOrder::row_major, 16),
      variant("TK 256", 128, 128, TileVisitOrder::row_major, 256),
  };

  // Per (variant, store): the evidence over every combo with that store.
  std::vector<std::vector<Evidence>> ev(variants.size(), std::vector<Evidence>(kAllStores.size()));
  std::vector<std::vector<std::string>> covered(kAllStores.size());
  for (const auto& cb : combos) {
    const size_t wi = size_t(cb.store);
    covered[wi].push_back(std::string(rule_name(cb.rule)) + "/" + state_format_name(cb.format));
    const RuleConfig rc = default_rule_config(cb.rule);
    const HostParam init = HostParam::make(rc, cb.format, cb.store, out, in, inp.w0,
                                           stream_seed(cfg.seed, "schedule_invariance/sr_key"), 7);
    // Baseline snapshots after every step.
    std::vector<HostParam> base_after;
    std::vector<std::vector<float>> base_dx(size_t(cfg.steps));
    HostParam b = init;
    for (int k = 0; k < cfg.steps; ++k) {
      const auto& s = inp.steps[size_t(k)];
      fused_twin_step(b, s.X.data(), s.dY.data(), T, k + 1, base, &base_dx[size_t(k)]);
      base_after.push_back(b);
    }
    for (size_t vi = 0; vi < variants.size(); ++vi) {
      HostParam v = init;
      std::vector<float> dx;
      const std::string where = combo_name(cb.rule, cb.format, cb.store) + ", " + variants[vi].name +
                                " vs 128x128 row-major TK 64";
      for (int k = 0; k < cfg.steps; ++k) {
        const auto& s = inp.steps[size_t(k)];
        fused_twin_step(v, s.X.data(), s.dY.data(), T, k + 1, variants[vi].sched, &dx);
        compare_params(ev[vi][wi], v, base_after[size_t(k)], k + 1,
                       TileShape{variants[vi].sched.tile_rows, variants[vi].sched.tile_cols}, where);
        compare_dx(ev[vi][wi], dx, base_dx[size_t(k)], T, in, k + 1, where);
      }
    }
  }

  std::vector<ClaimCaseResult> results;
  for (size_t vi = 0; vi < variants.size(); ++vi)
    for (size_t wi = 0; wi < kAllStores.size(); ++wi) {
      if (covered[wi].empty()) continue;
      ClaimCaseResult c;
      c.claim = "schedule_invariance";
      c.case_name = shape.label() + " | " + variants[vi].name + " | " + weight_store_name(kAllStores[wi]);
      judge_bitwise(c, ev[vi][wi]);
      std::string list;
      for (const auto& s : covered[wi]) list += (list.empty() ? "" : ",") + s;
      c.note = "bitwise over " + std::to_string(cfg.steps) + " steps for " + list;
      results.push_back(std::move(c));
    }

  // Changing the ORDER (not the schedule) must change bits on random data, and the verdict then
  // becomes "bounded": |G_variant - G_base| <= B_variant + B_base, each B the order's bound.
  // The order-matched host run with the same changed order still agrees bitwise.
  struct OrderVariant { std::string name; ReductionOrder order; };
  const std::vector<OrderVariant> order_variants = {
      {"k_group 32 (one fused 32-term sum)", with_k_group(fused_kernel_order(64), 32)},
      {"k_group 8", with_k_group(fused_kernel_order(64), 8)},
      {"split_k 2", cublas_wgrad_order(2)},
      {"split_k 3", cublas_wgrad_order(3)},
  };
  const auto& s1 = inp.steps[0];
  const std::vector<float> g_base = twin_wgrad(s1.X.data(), s1.dY.data(), T, in, out, base);
  std::vector<double> b_base(size_t(out * in));
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i)
      b_base[size_t(o * in + i)] = order_dot_bound(s1.X.data(), s1.dY.data(), T, in, out, o, i, base.order);
  for (const auto& ov : order_variants) {
    ClaimCaseResult c;
    c.claim = "schedule_invariance";
    c.case_name = shape.label() + " | order change: " + ov.name + " -> bounded, not bitwise";
    TwinSchedule vs = base;
    vs.order = ov.order;
    const std::vector<float> g_v = twin_wgrad(s1.X.data(), s1.dY.data(), T, in, out, vs);
    const std::vector<float> g_om = order_matched_wgrad(s1.X.data(), s1.dY.data(), T, in, out, ov.order);
    Evidence ev_g, ev_om, ev_w;
    ev_g.add(compare_bitwise(g_v, g_base, out, in, BitwiseContext{"G " + ov.name + " vs k16 chain", {128, 128}, 1}));
    ev_om.add(compare_bitwise(g_v, g_om, out, in, BitwiseContext{"G twin vs order-matched, " + ov.name, {128, 128}, 1}));
    double worst = 0.0;
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i) {
        const size_t e = size_t(o * in + i);
        const double bnd = b_base[e] + order_dot_bound(s1.X.data(), s1.dY.data(), T, in, out, o, i, ov.order);
        const double d = std::fabs(double(g_v[e]) - double(g_base[e]));
        const double ratio = d == 0.0 ? 0.0 : (bnd > 0.0 ? d / bnd : std::numeric_limits<double>::infinity());
        worst = std::max(worst, ratio);
      }
    // One AdamW step from the same weights: the bits of W move too.
    HostParam wa = HostParam::make(default_rule_config(RuleId::adamw), StateFormat::fp32,
                                   WeightStore::fp32_master, out, in, inp.w0);
    HostParam wb = wa;
    fused_twin_step(wa, s1.X.data(), s1.dY.data(), T, 1, base);
    fused_twin_step(wb, s1.X.data(), s1.dY.data(), T, 1, vs);
    compare_params(ev_w, wb, wa, 1, TileShape{128, 128}, "W after one adamw step");
    fill_bitwise(c, ev_g);
    c.metric_name = "max_diff_over_bound";
    // Bounded, and also: G and W change bits, and the order-matched run with this order agrees.
    judge_case(c, worst, 1.0, PassIf::at_most, ev_g.differing > 0 && ev_om.differing == 0 && ev_w.differing > 0);
    c.note = "order [" + ov.order.describe() + "]; G bitwise differs in " +
             std::to_string(ev_g.differing) + " elements, max |dG|/(B_variant+B_base) = " +
             std::to_string(worst) + "; W after one step differs in " + std::to_string(ev_w.differing) +
             "; twin vs order-matched with this order: " +
             (ev_om.differing == 0 ? std::string("bitwise equal") : ev_om.first_diff);
    results.push_back(std::move(c));
  }
  return results;
}

void claim_schedule_invariance(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  ScheduleInvarianceConfig sc;
  sc.seed = cfg.seed;
  const auto results = run_schedule_invariance_cases(sc);
  record_claim_cases(report, results, "schedule_invariance");
  progress.note(std::to_string(results.size()) + " cases");
}

}  // namespace fh
