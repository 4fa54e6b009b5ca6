#include "kernels/twin/twin_claims.h"
#include "oracles/param_compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "kernels/twin/nonseparable.h"
#include "kernels/twin/order_matched_host.h"
#include "oracles/bitwise.h"
#include "oracles/dot_bound.h"
#include "oracles/ulp.h"
#include "reference/exact_gradient.h"
#include "reference/two_phase_host.h"

#include "reference/case_gen.h"

namespace fh {

namespace {

// ---------------------------------------------------------------- inputs


struct StepInputs {
  std::vector<uint16_t> X, dY;  // [T, in], [T, out]
};
struct ShapeInputs {
  std::vector<float> w0;  // [out, in]
  std::vector<StepInputs> steps;
  uint64_t seed = 0;
};

// New X and dY for every step (a training run sees new data each step), one initial weight.
ShapeInputs make_shape_inputs(uint64_t seed, const TwinShapeCase& s, int steps) {
  if (steps < 1) throw std::invalid_argument("twin claims: steps must be >= 1");
  if (s.out <= 0 || s.in <= 0 || s.T < 0 || s.tile_rows < 1 || s.tile_cols < 1)
    throw std::invalid_argument("twin claims: bad shape case " + s.label());
  ShapeInputs in;
  in.seed = seed;
  for (int k = 0; k < steps; ++k) {
    WgradCase c = make_wgrad_case(mix_seed(seed, 1, uint64_t(k)), s.T, s.in, s.out, s.dist,
                                  s.x_params, s.dy_params);
    in.steps.push_back({std::move(c.X), std::move(c.dY)});
  }
  CaseRng rng(mix_seed(seed, 2));
  in.w0 = gen_weights_f32(rng, s.out * s.in, 0.02);  // small enough that every rule moves bf16
  return in;
}

std::string combo_name(RuleId r, StateFormat f, WeightStore w) {
  return std::string(rule_name(r)) + " " + state_format_name(f) + " " + weight_store_name(w);
}

// ---------------------------------------------------------------- evidence

// Bitwise verdicts: metric = differing elements, bound = 0 (bounded cases overwrite both).
void fill(const ParamEvidence& ev, ClaimCaseResult& c) {
  c.metric = double(ev.differing);
  c.bound = 0.0;
  c.differing = ev.differing;
  c.max_ulp = ev.max_ulp;
  c.first_diff = ev.first_diff;
}
using Evidence = ParamEvidence;

void compare_dx(Evidence& ev, const std::vector<float>& a, const std::vector<float>& b, int64_t T,
                int64_t in, int64_t step, const std::string& where) {
  if (T == 0) return;
  BitwiseContext c;
  c.name = "dX [T, in]";
  c.step = step;
  ev.add(compare_bitwise(a, b, T, in, c), where);
}

TwinSchedule schedule_for(const TwinShapeCase& s, TileVisitOrder visit, uint64_t visit_seed,
                          const TwinPlantedDefects& defects) {
  TwinSchedule sch;
  sch.tile_rows = s.tile_rows;
  sch.tile_cols = s.tile_cols;
  sch.visit = visit;
  sch.visit_seed = visit_seed;
  sch.order = fused_kernel_order(64);
  sch.defects = defects;
  return sch;
}

template <class T>
std::vector<T> or_default(const std::vector<T>& v, std::vector<T> d) { return v.empty() ? d : v; }

const std::vector<StateFormat> kAllFormats{StateFormat::fp32, StateFormat::bf16, StateFormat::int8};
const std::vector<WeightStore> kAllStores{WeightStore::fp32_master, WeightStore::bf16_rne,
                                          WeightStore::bf16_sr};
std::vector<RuleId> all_rules() { return std::vector<RuleId>(std::begin(kAllRules), std::end(kAllRules)); }

// ---------------------------------------------------------------- bounds

// Upper bound on |G_hat - S| for one element computed in `order` (S the exact sum): per slice the
// instruction-chain bound of oracles/dot_bound.h; the S - 1 fp32 RNE adds of the slice partials
// add gamma_{S-1} * sum_s (|partial_s| <= abs_s + B_s) (Higham, recursive summation).
double order_dot_bound(const uint16_t* X, const uint16_t* dY, int64_t T, int64_t in, int64_t out,
                       int64_t o, int64_t i, const ReductionOrder& order) {
  const MmaModelParams p = order.model_params();
  if (order.split_k == 1) return tc_chain_dot_bound(dY + o, out, X + i, in, T, 0.0f, p);
  double total = 0.0, partial_mag = 0.0;
  for (int s = 0; s < order.split_k; ++s) {
    int64_t tb, te;
    order.slice_bounds(T, s, tb, te);
    const double b = tc_chain_dot_bound(dY + tb * out + o, out, X + tb * in + i, in, te - tb, 0.0f, p);
    double abs_sum = 0.0;
    for (int64_t t = tb; t < te; ++t)
      abs_sum += std::fabs(double(bf16_to_float(dY[t * out + o])) * double(bf16_to_float(X[t * in + i])));
    total += b;
    partial_mag += abs_sum * (1.0 + 0x1p-40) + b;  // the double sum's own rounding, covered
  }
  return (total + gamma_fp32(order.split_k - 1) * partial_mag) * (1.0 + 0x1p-40);
}

// ---------------------------------------------------------------- runners' pieces

// The configured hyperparameters of a rule, or torch.optim's defaults.
RuleConfig config_for(RuleId id, const std::vector<RuleConfig>& configs) {
  for (const RuleConfig& rc : configs)
    if (rc.id == id) return rc;
  return default_rule_config(id);
}

struct ComboSpec { RuleId rule; StateFormat format; WeightStore store; };

std::vector<ComboSpec> combos_for(const TwinShapeCase& s, const std::vector<RuleId>& rules,
                                  const std::vector<StateFormat>& formats,
                                  const std::vector<WeightStore>& stores, int shape_index) {
  std::vector<ComboSpec> out;
  const size_t off = size_t(shape_index);
  for (size_t r = 0; r < rules.size(); ++r) {
    if (s.coverage == ComboCoverage::rotate_both) {
      out.push_back({rules[r], formats[(r + off) % formats.size()],
                     stores[(r / formats.size() + r + off) % stores.size()]});
      continue;
    }
    for (size_t w = 0; w < stores.size(); ++w) {
      if (s.coverage == ComboCoverage::full) {
        for (StateFormat f : formats) out.push_back({rules[r], f, stores[w]});
      } else {
        out.push_back({rules[r], formats[(r + w + off) % formats.size()], stores[w]});
      }
    }
  }
  return out;
}

bool int8_fits(const TwinShapeCase& s, int64_t tile_cols) {
  return tile_cols % kInt8Block == 0 || tile_cols >= s.in;
}

// An INT8 combination on a tile width that would split INT8 blocks (the twin refuses it): marks
// c not-run and says so.
bool mark_int8_unfit(StateFormat f, const TwinShapeCase& shape, ClaimCaseResult& c) {
  if (f != StateFormat::int8 || int8_fits(shape, shape.tile_cols)) return false;
  c.not_run = true;
  c.note = "not run: int8 needs tile columns a multiple of 64";
  return true;
}

}  // namespace

// ================================================================ public

std::string TwinShapeCase::label() const {
  std::ostringstream os;
  os << out << "x" << in << " T=" << T << " tile " << tile_rows << "x" << tile_cols << " "
     << case_distribution_name(dist);
  return os.str();
}

std::string format_claim_table(const std::vector<ClaimCaseResult>& rs) {
  std::ostringstream os;
  for (const auto& r : rs) {
    os << (r.not_run ? "NOT-RUN " : r.pass ? "PASS " : "FAIL ") << r.claim << " | " << r.case_name << " | differing "
       << r.differing << ", max_ulp " << r.max_ulp;
    if (r.bound != 0) os << ", metric " << r.metric << " <= " << r.bound;
    if (!r.first_diff.empty()) os << " | first: " << r.first_diff;
    if (!r.note.empty()) os << " | " << r.note;
    os << "\n";
  }
  return os.str();
}

std::vector<TwinShapeCase> default_prop1_shapes(uint64_t seed, int n_random) {
  std::vector<TwinShapeCase> v;
  // Ragged everywhere: 72 = 2*32 + 8 rows, 136 = 2*64 + 8 cols, T = 40 = 2*16 + 8.
  v.push_back({72, 136, 40, 32, 64});
  // The example: 200 x 192 with 128 x 128 tiles and T = 100 (each rule once).
  TwinShapeCase big{200, 192, 100, 128, 128};
  big.coverage = ComboCoverage::rotate_both;
  v.push_back(big);
  // Signed zeros (-0 products are not terms) and a ragged int8 end (200 = 3*64 + 8).
  TwinShapeCase sparse{48, 200, 37, 16, 64, CaseDistribution::sparse};
  v.push_back(sparse);
  // Wide exponents: alignment truncation, the -133 clamp and subnormal products.
  TwinShapeCase wide{40, 72, 33, 32, 64, CaseDistribution::wide_exponent};
  wide.x_params.exp_lo = -133;
  wide.x_params.exp_hi = -100;
  wide.dy_params.exp_lo = -30;
  wide.dy_params.exp_hi = 8;
  wide.coverage = ComboCoverage::rotate_format;
  v.push_back(wide);
  TwinShapeCase wide2{40, 72, 50, 16, 64, CaseDistribution::wide_exponent};
  wide2.x_params.exp_lo = -40;
  wide2.x_params.exp_hi = 8;
  wide2.dy_params.exp_lo = -40;
  wide2.dy_params.exp_hi = 8;
  wide2.coverage = ComboCoverage::rotate_format;
  v.push_back(wide2);
  // No tokens at all: G = +0 everywhere.
  v.push_back({24, 64, 0, 16, 64});
  CaseRng rng(mix_seed(seed, 3));
  const int64_t tr_choices[] = {16, 32, 64, 128};
  for (int k = 0; k < n_random; ++k) {
    TwinShapeCase s;
    s.out = rng.range(1, 120);
    s.in = rng.range(1, 160);
    s.T = rng.range(1, 70);
    s.tile_rows = tr_choices[rng.below(4)];
    s.tile_cols = rng.below(2) ? 64 : 128;
    s.coverage = ComboCoverage::rotate_format;
    v.push_back(s);
  }
  return v;
}

std::vector<ClaimCaseResult> run_prop1_cases(const Prop1Config& cfg) {
  const auto rules = or_default(cfg.rules, all_rules());
  const auto formats = or_default(cfg.formats, kAllFormats);
  const auto stores = or_default(cfg.stores, kAllStores);
  const auto shapes = cfg.shapes.empty() ? default_prop1_shapes(cfg.seed) : cfg.shapes;
  std::vector<ClaimCaseResult> results;

  for (size_t si = 0; si < shapes.size(); ++si) {
    const TwinShapeCase& shape = shapes[si];
    const ShapeInputs inp = make_shape_inputs(mix_seed(cfg.seed, 10, si), shape, cfg.steps);
    const TwinSchedule sched = schedule_for(shape, cfg.visit, mix_seed(cfg.seed, 11, si), cfg.defects);
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
      fill(ev, c);
      c.pass = ev.differing == 0;
      c.note = "seed " + std::to_string(inp.seed);
      results.push_back(std::move(c));
    }

    for (const ComboSpec& cb : combos_for(shape, rules, formats, stores, int(si))) {
      ClaimCaseResult c;
      c.claim = "prop1_twin";
      c.case_name = shape.label() + " | " + combo_name(cb.rule, cb.format, cb.store);
      if (mark_int8_unfit(cb.format, shape, c)) {
        results.push_back(std::move(c));
        continue;
      }
      const RuleConfig rc = config_for(cb.rule, cfg.rule_configs);
      HostParam twin = HostParam::make(rc, cb.format, cb.store, out, in, inp.w0,
                                       mix_seed(cfg.seed, 12, si), uint32_t(si + 1));
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
      fill(ev, c);
      c.pass = ev.differing == 0;
      c.note = std::to_string(cfg.steps) + " steps, " + std::to_string(ev.compared) +
               " arrays compared, visit " + tile_visit_order_name(cfg.visit) + ", seed " +
               std::to_string(inp.seed);
      results.push_back(std::move(c));
    }
  }
  return results;
}

std::vector<ClaimCaseResult> run_schedule_invariance_cases(const ScheduleInvarianceConfig& cfg) {
  const TwinShapeCase& shape = cfg.shape;
  const int64_t T = shape.T, in = shape.in, out = shape.out;
  const ShapeInputs inp = make_shape_inputs(mix_seed(cfg.seed, 20), shape, cfg.steps);
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
    s.visit_seed = mix_seed(cfg.seed, 21, uint64_t(tr * 1000 + tc));
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
                                           mix_seed(cfg.seed, 22), 7);
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
      fill(ev[vi][wi], c);
      c.pass = ev[vi][wi].differing == 0;
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
    fill(ev_g, c);
    c.metric = worst;
    c.bound = 1.0;
    c.pass = ev_g.differing > 0 && worst <= 1.0 && ev_om.differing == 0 && ev_w.differing > 0;
    c.note = "order [" + ov.order.describe() + "]; G bitwise differs in " +
             std::to_string(ev_g.differing) + " elements, max |dG|/(B_variant+B_base) = " +
             std::to_string(worst) + "; W after one step differs in " + std::to_string(ev_w.differing) +
             "; twin vs order-matched with this order: " +
             (ev_om.differing == 0 ? std::string("bitwise equal") : ev_om.first_diff);
    results.push_back(std::move(c));
  }
  return results;
}

std::vector<ClaimCaseResult> run_corollary1_cases(const Corollary1Config& cfg) {
  std::vector<TwinShapeCase> shapes = cfg.shapes;
  if (shapes.empty()) {
    shapes.push_back({96, 128, 80, 64, 64});
    shapes.push_back({130, 192, 100, 128, 128});
  }
  const auto rules = or_default(cfg.rules, all_rules());
  const auto stores = or_default(cfg.stores, kAllStores);
  std::vector<ClaimCaseResult> results;

  for (size_t si = 0; si < shapes.size(); ++si) {
    const TwinShapeCase& shape = shapes[si];
    const int64_t T = shape.T, in = shape.in, out = shape.out;
    const ShapeInputs inp = make_shape_inputs(mix_seed(cfg.seed, 30, si), shape, cfg.steps);
    const TwinSchedule sched = schedule_for(shape, TileVisitOrder::row_major, 0, cfg.defects);
    const TileShape tile{shape.tile_rows, shape.tile_cols};

    // G: the twin's (in its order) and the exact one, per step; they do not depend on W.
    std::vector<std::vector<float>> g_twin, g_exact;
    ClaimCaseResult cg;
    cg.claim = "corollary1";
    cg.case_name = shape.label() + " | |G_twin - G_exact_sum| <= chain bound";
    Evidence ev_g;
    double worst = 0.0, worst_abs = 0.0;
    std::string worst_at;
    for (int k = 0; k < cfg.steps; ++k) {
      const auto& s = inp.steps[size_t(k)];
      g_twin.push_back(twin_wgrad(s.X.data(), s.dY.data(), T, in, out, sched));
      g_exact.push_back(exact_wgrad(s.X.data(), s.dY.data(), T, in, out));
      ev_g.add(compare_bitwise(g_twin.back(), g_exact.back(), out, in,
                               BitwiseContext{"G twin vs G exact (informational)", tile, k + 1}));
      for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i) {
          // The deviation from the exact sum, computed exactly and rounded once to double.
          ExactDot ed = exact_wgrad_element(s.X.data(), s.dY.data(), T, in, out, o, i);
          ed.sum.negate();
          ed.sum.add_float(g_twin.back()[size_t(o * in + i)]);
          const double dev = std::fabs(ed.sum.to_double_rne());
          const double bnd = tc_chain_dot_bound(s.dY.data() + o, out, s.X.data() + i, in, T, 0.0f,
                                                sched.order.model_params());
          const double ratio = dev == 0.0 ? 0.0 : (bnd > 0.0 ? dev / bnd : std::numeric_limits<double>::infinity());
          if (ratio > worst) {
            worst = ratio;
            worst_abs = dev;
            worst_at = "step " + std::to_string(k + 1) + " (" + std::to_string(o) + ", " + std::to_string(i) + ")";
          }
        }
    }
    fill(ev_g, cg);
    cg.metric = worst;
    cg.bound = 1.0;
    cg.pass = worst <= 1.0;
    cg.note = "max dev/bound " + std::to_string(worst) + " at " + (worst_at.empty() ? "-" : worst_at) +
              " (dev " + std::to_string(worst_abs) + "); G differs from the exactly rounded G in " +
              std::to_string(ev_g.differing) + " elements (expected: a different order)";
    results.push_back(std::move(cg));

    std::vector<ComboSpec> combos;
    for (RuleId r : rules)
      for (WeightStore w : stores) {
        std::vector<StateFormat> fs = cfg.formats;
        if (fs.empty()) {
          fs = {StateFormat::fp32};
          if (r == RuleId::adamw) fs = kAllFormats;
        }
        for (StateFormat f : fs) combos.push_back({r, f, w});
      }
    for (const ComboSpec& cb : combos) {
      ClaimCaseResult c;
      c.claim = "corollary1";
      c.case_name = shape.label() + " | W explained by G | " + combo_name(cb.rule, cb.format, cb.store);
      if (mark_int8_unfit(cb.format, shape, c)) {
        results.push_back(std::move(c));
        continue;
      }
      const RuleConfig rc = config_for(cb.rule, cfg.rule_configs);
      HostParam twin = HostParam::make(rc, cb.format, cb.store, out, in, inp.w0,
                                       mix_seed(cfg.seed, 31, si), uint32_t(si + 1));
      HostParam ref = twin;
      Evidence ev_twin, ev_ref, ev_dev;
      for (int k = 0; k < cfg.steps; ++k) {
        const auto& s = inp.steps[size_t(k)];
        const int64_t step = k + 1;
        HostParam twin_explained = twin, ref_explained = ref;
        fused_twin_step(twin, s.X.data(), s.dY.data(), T, step, sched);
        two_phase_step_host(ref, s.X.data(), s.dY.data(), T, step, GradProducer::exact);
        // The rule (phase two alone) on each producer's own G reproduces its W and state.
        apply_two_phase_update(twin_explained, g_twin[size_t(k)], step);
        apply_two_phase_update(ref_explained, g_exact[size_t(k)], step);
        compare_params(ev_twin, twin, twin_explained, step, tile, "twin vs rule(G_twin)");
        compare_params(ev_ref, ref, ref_explained, step, tile, "exact-G standard step vs rule(G_exact)");
        compare_params(ev_dev, twin, ref, step, tile, "twin vs exact-G standard step (informational)");
      }
      Evidence both = ev_twin;
      both.add(ev_ref);
      fill(both, c);
      c.pass = both.differing == 0;
      c.note = "W/state twin vs exact-G step differ in " + std::to_string(ev_dev.differing) +
               " (max " + std::to_string(ev_dev.max_ulp) + " ulp), all explained by G";
      results.push_back(std::move(c));
    }

    // dX: the standard step computes dY * W with W before the step; the twin's dX must be within
    // the dgrad chain's bound of that exact product (Remark 1: no tile of W is updated first).
    {
      ClaimCaseResult c;
      c.claim = "corollary1";
      c.case_name = shape.label() + " | |dX_twin - dY W_before| <= chain bound | adamw fp32 fp32_master";
      HostParam twin = HostParam::make(default_rule_config(RuleId::adamw), StateFormat::fp32,
                                       WeightStore::fp32_master, out, in, inp.w0);
      double worst_dx = 0.0;
      std::string at;
      std::vector<float> dx;
      for (int k = 0; k < cfg.steps; ++k) {
        const auto& s = inp.steps[size_t(k)];
        const std::vector<uint16_t> w_before = twin.bf16;  // what the backward pass reads
        fused_twin_step(twin, s.X.data(), s.dY.data(), T, k + 1, sched, &dx);
        for (int64_t t = 0; t < T; ++t)
          for (int64_t i = 0; i < in; ++i) {
            ExactDot ed = exact_dot_bf16(s.dY.data() + t * out, 1, w_before.data() + i, in, out);
            ed.sum.negate();
            ed.sum.add_float(dx[size_t(t * in + i)]);
            const double dev = std::fabs(ed.sum.to_double_rne());
            const double bnd = tc_chain_dot_bound(s.dY.data() + t * out, 1, w_before.data() + i, in,
                                                  out, 0.0f, sched.order.model_params());
            const double ratio = dev == 0.0 ? 0.0 : (bnd > 0.0 ? dev / bnd : std::numeric_limits<double>::infinity());
            if (ratio > worst_dx) {
              worst_dx = ratio;
              at = "step " + std::to_string(k + 1) + " (t " + std::to_string(t) + ", i " + std::to_string(i) + ")";
            }
          }
      }
      c.metric = worst_dx;
      c.bound = 1.0;
      c.pass = worst_dx <= 1.0;
      c.note = "max dev/bound " + std::to_string(worst_dx) + (at.empty() ? "" : " at " + at);
      results.push_back(std::move(c));
    }

    // The cuBLAS-order standard step (reference tensor_core_chain G) is order-matched with the
    // twin: bitwise, not bounded.
    for (WeightStore w : stores) {
      ClaimCaseResult c;
      c.claim = "corollary1";
      c.case_name = shape.label() + " | twin == standard step with cuBLAS-order G | adamw fp32 " +
                    weight_store_name(w);
      HostParam twin = HostParam::make(default_rule_config(RuleId::adamw), StateFormat::fp32, w, out,
                                       in, inp.w0, mix_seed(cfg.seed, 32, si), 3);
      HostParam ref = twin;
      Evidence ev;
      for (int k = 0; k < cfg.steps; ++k) {
        const auto& s = inp.steps[size_t(k)];
        fused_twin_step(twin, s.X.data(), s.dY.data(), T, k + 1, sched);
        two_phase_step_host(ref, s.X.data(), s.dY.data(), T, k + 1, GradProducer::tensor_core_chain);
        compare_params(ev, twin, ref, k + 1, tile, "twin vs tensor_core_chain standard step");
      }
      fill(ev, c);
      c.pass = ev.differing == 0;
      results.push_back(std::move(c));
    }
  }
  return results;
}

std::vector<ClaimCaseResult> run_nonseparable_cases(const NonseparableConfig& cfg) {
  const TwinShapeCase& shape = cfg.shape;
  const int64_t T = shape.T, in = shape.in, out = shape.out;
  if (shape.tile_rows >= out && shape.tile_cols >= in)
    throw std::invalid_argument("run_nonseparable_cases: the shape must have more than one tile");
  const ShapeInputs inp = make_shape_inputs(mix_seed(cfg.seed, 40), shape, cfg.steps);
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
    fill(ev, c);
    c.pass = ev.differing > 0;
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
    fill(ev, c);
    c.pass = ev.differing == 0;
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
    fill(ev, c);
    c.pass = ev.differing == 0;
    results.push_back(std::move(c));
  }
  return results;
}

std::vector<ClaimCaseResult> run_planted_defect_cases(const std::string& claim, uint64_t seed) {
  if (!claim.empty() && claim != "prop1_twin" && claim != "schedule_invariance" && claim != "corollary1")
    throw std::invalid_argument("run_planted_defect_cases: unknown claim '" + claim + "'");
  struct Planted { std::string name; TwinPlantedDefects d; };
  std::vector<Planted> planted(3);
  planted[0].name = "align_bits 24 in the twin's instruction model";
  planted[0].d.align_bits = 24;
  planted[1].name = "tile 0's state pointer one row off";
  planted[1].d.state_row_offset_tile = 0;
  planted[2].name = "dX computed from W after the update";
  planted[2].d.dx_after_update = true;

  // The defect is seen when the claim's verdict is FAIL: some case fails.
  auto judge = [](const std::string& case_name, const std::vector<ClaimCaseResult>& rs) {
    ClaimCaseResult r;
    r.claim = "planted_defects";
    r.case_name = case_name;
    int64_t failed = 0;
    for (const auto& c : rs)
      if (!c.pass && !c.not_run) {
        if (failed++ == 0) {
          r.first_diff = c.case_name + ": " + (c.first_diff.empty() ? c.note : c.first_diff);
          r.max_ulp = c.max_ulp;
        }
        r.differing += c.differing;
      }
    r.metric = double(failed);  // failing cases: > 0 is the verdict (the defect is seen)
    r.pass = failed > 0;
    r.note = std::to_string(failed) + " of " + std::to_string(rs.size()) + " cases fail" +
             (failed > 0 ? " (defect seen)" : " (defect NOT seen)");
    return r;
  };
  std::vector<ClaimCaseResult> results;
  for (const auto& p : planted) {
    if (claim.empty() || claim == "prop1_twin") {
      Prop1Config c;
      c.seed = seed;
      c.steps = 2;
      c.shapes = {{72, 136, 40, 32, 64}};
      c.rules = {RuleId::adamw};
      c.formats = {StateFormat::fp32};
      c.stores = {WeightStore::fp32_master};
      c.defects = p.d;
      c.cross_check_reference = false;
      results.push_back(judge(p.name + " | seen by prop1_twin", run_prop1_cases(c)));
    }
    if (claim.empty() || claim == "schedule_invariance") {
      ScheduleInvarianceConfig c;
      c.seed = seed;
      c.steps = 2;
      c.combos = {{RuleId::adamw, StateFormat::fp32, WeightStore::fp32_master}};
      c.defects = p.d;
      results.push_back(judge(p.name + " | seen by schedule_invariance", run_schedule_invariance_cases(c)));
    }
    if (claim.empty() || claim == "corollary1") {
      Corollary1Config c;
      c.seed = seed;
      c.steps = 2;
      c.shapes = {{96, 128, 80, 64, 64}};
      c.rules = {RuleId::adamw};
      c.stores = {WeightStore::fp32_master};
      c.formats = {StateFormat::fp32};
      c.defects = p.d;
      results.push_back(judge(p.name + " | seen by corollary1", run_corollary1_cases(c)));
    }
  }
  return results;
}

}  // namespace fh
