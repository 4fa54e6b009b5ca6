#include "suites/claims/nonseparable_falsifier.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "kernels/common/bf16.h"
#include "kernels/twin/nonseparable.h"
#include "reference/lamb_two_phase.h"
#include "oracles/bitwise.h"
#include "oracles/param_compare.h"
#include "reference/nonseparable_two_phase.h"
#include "suites/claims/nonseparable_gpu_cases.h"
#include "reference/order_matched_host.h"

namespace fh {

namespace {
using Evidence = ParamEvidence;

// The naive fusion's error size on W against the reference b: the largest elementwise
// |a - b| / |b| (|b| floored at the smallest normal; large where b is near 0), the normwise
// ||a - b|| / ||b||, and the fraction of elements whose bits differ.
struct ErrorSize {
  double max_rel = 0, norm_rel = 0, frac = 0;
};
ErrorSize error_size(const std::vector<float>& a, const std::vector<float>& b) {
  ErrorSize e;
  int64_t n = 0;
  double d2 = 0, b2 = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = double(a[i]) - double(b[i]);
    d2 += d * d;
    b2 += double(b[i]) * double(b[i]);
    if (std::memcmp(&a[i], &b[i], sizeof(float)) == 0) continue;
    ++n;
    const double den = std::max(std::fabs(double(b[i])), double(std::numeric_limits<float>::min()));
    e.max_rel = std::max(e.max_rel, std::fabs(d) / den);
  }
  e.norm_rel = b2 > 0 ? std::sqrt(d2 / b2) : std::sqrt(d2);
  e.frac = a.empty() ? 0.0 : double(n) / double(a.size());
  return e;
}

// ||a - ref|| / (||ref - before|| + 2^-22 ||ref||), in double: an array's error after one step
// against the reference, relative to the step's change plus one fp32 rounding on each side.
double step_error(const std::vector<float>& a, const std::vector<float>& ref, const std::vector<float>& before) {
  double d2 = 0, ch2 = 0, r2 = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    d2 += (double(a[i]) - ref[i]) * (double(a[i]) - ref[i]);
    ch2 += (double(ref[i]) - before[i]) * (double(ref[i]) - before[i]);
    r2 += double(ref[i]) * ref[i];
  }
  const double den = std::sqrt(ch2) + std::ldexp(std::sqrt(r2), -22);
  return den > 0 ? std::sqrt(d2) / den : (d2 > 0 ? std::numeric_limits<double>::infinity() : 0.0);
}

// gamma_k = k u / (1 - k u), u = 2^-24: the relative bound of an fp32 chain of k roundings on
// nonnegative terms (Higham, Accuracy and Stability, Lemma 3.1 and section 4.2).
double gamma_fp32(int64_t k) {
  const double ku = double(k) * std::ldexp(1.0, -24);
  return ku / (1.0 - ku);
}

}  // namespace

// Every array of two parameters of the same rule and shape, bit for bit.
void compare_ns(ParamEvidence& ev, const NsParam& a, const NsParam& b, int64_t step, TileShape tile,
                const std::string& where) {
  auto one = [&](const std::vector<float>& x, const std::vector<float>& y, int64_t rows, int64_t cols,
                 const char* name) {
    if (x.empty() && y.empty()) return;
    ev.add(compare_bitwise(x, y, rows, cols, BitwiseContext{std::string(ns_rule_name(a.rule)) + " " + name, tile, step}),
           where);
  };
  one(a.w, b.w, a.rows, a.cols, "W");
  one(a.m, b.m, a.rows, a.cols, "m");
  one(a.v, b.v, a.rows, a.cols, "v");
  one(a.row_stat, b.row_stat, 1, int64_t(a.row_stat.size()), "row statistic");
  one(a.col_stat, b.col_stat, 1, int64_t(a.col_stat.size()), "column statistic");
}

std::vector<std::pair<std::string, std::string>> ns_map_attrs(NsRule rule, const NsHyper& h) {
  const NsMapRow& row = ns_map_row(rule);
  std::vector<std::pair<std::string, std::string>> attrs{
      {"statistic", row.statistic},
      {"schedule", row.schedule},
      {"passes_over_g", std::to_string(row.passes_over_g)},
      {"extra_gemm_flops", "(passes - 1) * 2 T out in"},
      {"extra_gemm_flops_14336x4096_T512", num(ns_extra_gemm_flops(row, 14336, 4096, 512))},
      {"extra_gemm_flops_14336x4096_T8192", num(ns_extra_gemm_flops(row, 14336, 4096, 8192))},
      {"extra_bytes", std::to_string(row.extra_bytes_per_param) + " P (fp32)"},
      {"extra_other", row.extra_other},
      {"order", ns_order_description(rule)}};
  if (rule == NsRule::muon)
    attrs.push_back({"newton_schulz_flops_14336x4096", num(ns_newton_schulz_flops(14336, 4096, h.ns_steps))});
  return attrs;
}

std::string ns_gpu_map_case_name(NsRule rule) {
  return std::string(ns_rule_name(rule)) +
         " | map: the exact fused schedule on the GPU kernel, memory and time vs two-phase at 14336x4096, T = 512 and 8192";
}

const std::vector<NsMapRow>& ns_map_rows() {
  static const std::vector<NsMapRow> rows{
      {NsRule::lamb, "||w|| and ||u|| over the layer (u from the current m, v)",
       "pass 1 over G: m, v, u, norm partials; pass 2 element-wise over stored m, v, w", 1, 12,
       "u recomputed in pass 2 (about 7 element ops per parameter)"},
      {NsRule::adam_mini, "mean of g^2 per block (a head of Q/K; one output row of V, O, MLP) across all input columns",
       "pass 1 over G: m, row sums of g^2; pass 2 element-wise over stored m, w", 1, 4,
       "one division per parameter moved to pass 2"},
      {NsRule::adafactor, "row and column sums of g^2 of the current step, ||w||, then RMS of U over the layer",
       "pass 1 over G: row and column sums; pass 2 over G recomputed: ||U||^2; pass 3 over G recomputed: update", 3, 4,
       "U computed twice"},
      {NsRule::sm3_i, "row and column maxima of g^2 of the current step (order-free)",
       "pass 1 over G: maxima; pass 2 over G recomputed: update", 2, 0, "none"},
      {NsRule::sm3_ii, "the previous step's cover maxima; this step's maxima by an order-free max",
       "one pass over G in any tile order (cover maxima double-buffered: (out + in) floats)", 1, 0, "none"},
      {NsRule::lars, "||g|| (before g enters the momentum) and ||w|| over the layer",
       "pass 1 over G: ||g||^2; pass 2 over G recomputed: momentum and update", 2, 4, "none"},
      {NsRule::muon, "none in G: B = mu B + G is element-wise; Newton-Schulz couples B, which is state",
       "one pass over G (momentum); Newton-Schulz as a dense step on B; element-wise update", 1, 0,
       "Newton-Schulz, the same dense work as in the two-phase step, with a working set of P + 2 min(out,in)^2 floats"},
  };
  return rows;
}

const NsMapRow& ns_map_row(NsRule r) {
  for (const auto& row : ns_map_rows())
    if (row.rule == r) return row;
  throw std::invalid_argument("ns_map_row: no row for this rule");
}

double ns_extra_gemm_flops(const NsMapRow& row, int64_t out, int64_t in, int64_t T) {
  return double(row.passes_over_g - 1) * 2.0 * double(T) * double(out) * double(in);
}

double ns_newton_schulz_flops(int64_t out, int64_t in, int steps) {
  const double n = double(std::min(out, in)), k = double(std::max(out, in));
  return double(steps) * (4.0 * n * n * k + 2.0 * n * n * n);
}

std::vector<NsMapCase> run_nonseparable_map_cases(const NonseparableMapConfig& cfg) {
  if (cfg.steps < 2) throw std::invalid_argument("run_nonseparable_map_cases: steps must be >= 2 (a stale statistic needs one)");
  cfg.hyper.validate();
  if (cfg.twin_defects.dx_after_update)
    throw std::invalid_argument("run_nonseparable_map_cases: the map computes no dX (dx_after_update does not apply)");
  std::vector<NsMapCase> out;
  auto add = [&](ClaimCaseResult c, std::vector<std::pair<std::string, std::string>> attrs = {},
                 std::vector<double> naive_error = {}) {
    c.claim = "nonseparable";
    out.push_back({std::move(c), std::move(attrs), std::move(naive_error)});
  };
  for (size_t si = 0; si < cfg.shapes.size(); ++si) {
    const TwinShapeCase& shape = cfg.shapes[si];
    if (shape.tile_rows >= shape.out && shape.tile_cols >= shape.in)
      throw std::invalid_argument("run_nonseparable_map_cases: each shape must have more than one tile");
    const LayerInputs inp = make_shape_inputs(stream_seed(cfg.seed, "nonseparable_falsifier/map_inputs", si), shape, cfg.steps);
    const TwinSchedule sched = schedule_for(shape, TileVisitOrder::row_major, 0, cfg.twin_defects);
    const TwinSchedule shuffled = schedule_for(shape, TileVisitOrder::random,
                                                 stream_seed(cfg.seed, "nonseparable_falsifier/map_tile_order", si), cfg.twin_defects);
    const NsGrid grid = NsGrid::whole(shape.out, shape.in, shape.tile_rows, shape.tile_cols);
    const TileShape tile{shape.tile_rows, shape.tile_cols};
    const int64_t T = shape.T;
    // G of every step, once: the order-matched (two-phase) and the twin's, materialized.
    std::vector<std::vector<float>> g_two_phase, g_twin;
    for (const auto& s : inp.steps) {
      g_two_phase.push_back(order_matched_wgrad(s.X.data(), s.dY.data(), T, shape.in, shape.out, sched.order));
      g_twin.push_back(twin_wgrad(s.X.data(), s.dY.data(), T, shape.in, shape.out, sched));
    }
    for (NsRule rule : cfg.rules) {
      const std::string name = shape.label() + " | " + ns_rule_name(rule);
      NsParam ref = NsParam::make(rule, shape.out, shape.in, inp.w0, cfg.hyper);
      NsParam linear = ref, fused = ref, naive = ref, before_last = ref;
      Evidence ev_linear, ev_fused, ev_naive;
      int passes = 0;
      for (int k = 0; k < cfg.steps; ++k) {
        const auto& s = inp.steps[size_t(k)];
        if (k == cfg.steps - 1) before_last = ref;
        ns_step(ref, cfg.hyper, k + 1, grid, ns_materialized_source(g_two_phase[size_t(k)], shape.out, shape.in, grid));
        ns_step(linear, cfg.hyper, k + 1, grid, ns_materialized_source(g_twin[size_t(k)], shape.out, shape.in, grid));
        passes = ns_step(fused, cfg.hyper, k + 1, grid,
                         ns_twin_source(s.X.data(), s.dY.data(), T, shape.out, shape.in, shuffled), cfg.plants);
        ns_naive_fused_step(naive, cfg.hyper, s.X.data(), s.dY.data(), T, k + 1, sched);
        compare_ns(ev_linear, linear, ref, k + 1, tile, "linear-fusion-only vs two-phase");
        compare_ns(ev_fused, fused, ref, k + 1, tile, "exact fused vs two-phase");
        compare_ns(ev_naive, naive, ref, k + 1, tile, "naive fused vs two-phase");
      }
      const NsMapRow& row = ns_map_row(rule);
      {
        ClaimCaseResult c;
        c.case_name = name + " | linear-fusion-only (the twin's G materialized, standard step) == two-phase";
        judge_bitwise(c, ev_linear);
        add(std::move(c));
      }
      {
        ClaimCaseResult c;
        c.case_name = name + " | exact fused schedule (G recomputed per pass, random tile order) == two-phase, same order";
        judge_bitwise(c, ev_fused);
        if (passes != row.passes_over_g) {
          c.pass = false;
          c.note = "the twin made " + std::to_string(passes) + " passes over G, the map says " +
                   std::to_string(row.passes_over_g);
        }
        add(std::move(c), {{"passes_over_g", std::to_string(passes)}, {"order", ns_order_description(rule)}});
      }
      {
        // The last step against MPFR from the paper's algorithm (same state, weights and G): the
        // element code and the schedule share no line with ns_mpfr_step, so a wrong rule shows.
        NsHyper mp_hyper = cfg.hyper;
        if (cfg.plant_mpfr_lr_off) mp_hyper.lr *= 1.001;
        const NsParam mp = ns_mpfr_step(before_last, mp_hyper, cfg.steps, g_two_phase.back());
        double worst = 0;
        std::string worst_array = "W";
        auto judge_array = [&](const std::vector<float>& a, const std::vector<float>& r, const std::vector<float>& b,
                               const char* what) {
          if (a.empty()) return;
          const double e = step_error(a, r, b);
          if (!(e <= worst)) {
            worst = e;
            worst_array = what;
          }
        };
        judge_array(ref.w, mp.w, before_last.w, "W");
        judge_array(ref.m, mp.m, before_last.m, "m");
        judge_array(ref.v, mp.v, before_last.v, "v");
        judge_array(ref.row_stat, mp.row_stat, before_last.row_stat, "row statistic");
        judge_array(ref.col_stat, mp.col_stat, before_last.col_stat, "column statistic");
        ClaimCaseResult c;
        c.case_name = name + " | fp32 step within its bound of the MPFR step (the paper's algorithm)";
        c.metric_name = "||fp32 - MPFR|| / (||MPFR step's change|| + 2^-22 ||MPFR||), worst array";
        judge_case(c, worst, kNsMpfrStepTolerance, PassIf::at_most);
        c.note = "step " + std::to_string(cfg.steps) + ", worst array " + worst_array + ": " + num(worst);
        add(std::move(c));
      }
      {
        ClaimCaseResult c;
        c.case_name = name + " | naive tile fusion (tile-local statistics) MUST differ";
        fill_bitwise(c, ev_naive);
        judge_case(c, double(ev_naive.differing), 0, PassIf::above);  // a falsifier: it must see a difference
        const ErrorSize e = error_size(naive.w, ref.w);
        c.note = (c.pass ? "differs, as it must" : "NO difference: the suite cannot see this non-separable fusion") +
                 std::string("; W after step ") + std::to_string(cfg.steps) + ": max rel err " + num(e.max_rel) +
                 ", normwise rel err " + num(e.norm_rel) + ", fraction differing " + num(e.frac);
        add(std::move(c), {{"tile", std::to_string(shape.tile_rows) + "x" + std::to_string(shape.tile_cols)}},
            {e.max_rel, e.norm_rel, e.frac});
      }
    }
    {
      // The fixed-order fp32 statistics against MPFR: ||w0||^2 (LAMB, LARS, Adafactor) and
      // Adafactor's row sums of G^2 + eps1 (step 1). A term passes at most tile_cols adds along its
      // row, tile_rows adds of the tile's row sums and n adds of the partials, plus 2 roundings
      // of its own (square, + eps1): gamma_(tile_cols + tile_rows + n + 2).
      ClaimCaseResult c;
      c.case_name = shape.label() + " | fixed-order fp32 norm and row-sum statistics within gamma bound of MPFR";
      const int64_t depth_all = shape.tile_rows + shape.tile_cols + grid.n_tile_rows() * grid.n_tile_cols() + 2;
      const int64_t depth_row = shape.tile_cols + grid.n_tile_cols() + 2;
      auto judged = [&](float x) { return cfg.plant_statistic_in_bf16 ? bf16_to_float(float_to_bf16_rne(x)) : x; };
      const float w_sq = judged(ns_tiled_sum_of_squares(inp.w0.data(), shape.in, grid));
      const ExactSumOfSquares ew = mpfr_sum_of_squares(inp.w0.data(), shape.in, shape.out, shape.in, 0.0f, w_sq);
      double worst = ew.abs_err / (gamma_fp32(depth_all) * ew.exact);
      const float eps1 = round_scalar(cfg.hyper.eps1);
      const std::vector<float>& G = g_two_phase[0];
      const std::vector<float> rs = ns_tiled_row_sums_of_squares(G.data(), shape.in, grid, eps1);
      for (int64_t r = 0; r < shape.out; ++r) {
        const ExactSumOfSquares e =
            mpfr_sum_of_squares(&G[size_t(r * shape.in)], shape.in, 1, shape.in, eps1, judged(rs[size_t(r)]));
        if (e.exact > 0) worst = std::max(worst, e.abs_err / (gamma_fp32(depth_row) * e.exact));
      }
      c.metric_name = "max |fp32 - exact| / (gamma bound)";
      judge_case(c, worst, 1.0, PassIf::at_most);
      c.note = "bound gamma_k * exact, k = tile rows + tile columns + partials + 2";
      add(std::move(c));
    }
  }
  return out;
}

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

namespace {
void record_map(Report& report, const std::string& group, const std::vector<ClaimCaseResult>& head,
                const std::vector<NsMapCase>& map) {
  std::vector<ClaimCaseResult> results = head;
  for (const auto& m : map) results.push_back(m.result);
  const std::vector<CaseRecord*> recs = record_claim_cases(report, results, group);
  for (size_t i = 0; i < map.size(); ++i) {
    for (const auto& [key, value] : map[i].attrs) recs[head.size() + i]->set_attr(key, value);
    if (!map[i].naive_error.empty())
      recs[head.size() + i]->add_f64(kNaiveErrorDataset, map[i].naive_error,
                                     "W after the last step: max elementwise rel err, normwise rel err, fraction differing");
  }
}
}  // namespace

void claim_nonseparable_falsifier(const VerifyConfig& cfg, Report& report, const Progress&, const ClaimVariant& variant) {
  if (variant.backend == ClaimBackend::gpu) {
    NonseparableGpuConfig gc;
    gc.seed = cfg.seed;
    return record_map(report, variant.group, {}, run_nonseparable_gpu_cases(gc));
  }
  NonseparableConfig nc;
  nc.seed = cfg.seed;
  NonseparableMapConfig mc;
  mc.seed = cfg.seed;
  record_map(report, variant.group, run_nonseparable_cases(nc), run_nonseparable_map_cases(mc));
}

}  // namespace fh
