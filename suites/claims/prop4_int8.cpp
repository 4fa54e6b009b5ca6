#include "suites/claims/prop4_int8.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <variant>

#include "kernels/formats/int8_block.h"
#include "oracles/bitwise.h"
#include "reference/case_gen.h"
#include "reference/mpfr_rules.h"
#include "reference/two_phase_host.h"
#include "suites/claims/claim_common.h"
#include "suites/claims/fidelity_common.h"

namespace fh {

namespace {


// The twin's schedule. Its INT8 tiles must be block aligned; a planted straddling tile width is
// only for the defective copy, so the twin then takes whole rows.
TwinSchedule schedule_of(const Prop4Config& cfg) {
  TwinSchedule sched;
  sched.tile_rows = cfg.tile_rows;
  sched.tile_cols = cfg.tile_cols % kInt8Block == 0 ? cfg.tile_cols : cfg.in;
  return sched;
}

// A fused step of the config's backend (the twin when it has none).
void fused_step(HostParam& w, const WgradCase& c, int64_t step, const Prop4Config& cfg) {
  backend_or_twin(cfg.backend).step(w, c.X.data(), c.dY.data(), c.T, step, schedule_of(cfg));
}

// The INT8 path of a judged step: the fused step, or the defective copy on the fused path's G.
void int8_step(HostParam& w, const WgradCase& c, int64_t step, const Prop4Config& cfg) {
  const TwinSchedule sched = schedule_of(cfg);
  if (cfg.defect == Int8TileDefect::none) {
    fused_step(w, c, step, cfg);
  } else {
    const std::vector<float> G = backend_or_twin(cfg.backend).wgrad(c.X.data(), c.dY.data(), c.T, c.in, c.out, sched);
    int8_tiled_update_copy(w, G, step, cfg.tile_cols, cfg.defect);
  }
}

std::vector<float> decoded_state(const HostParam& w, int k) {
  std::vector<float> v(size_t(w.rows * w.cols));
  for (int64_t i = 0; i < w.rows * w.cols; ++i) v[size_t(i)] = w.state(k, i);
  return v;
}

// An fp32-state copy of w (INT8) holding w's decoded state and the same weights.
HostParam fp32_twin_of(const HostParam& w8) {
  HostParam wf = HostParam::make(w8.rule, StateFormat::fp32, WeightStore::fp32_master, w8.rows,
                                 w8.cols, w8.master);
  for (int k = 0; k < kMaxStates; ++k)
    if (wf.decls.slot[k].kept) wf.st_f32[k] = decoded_state(w8, k);
  wf.bf16 = w8.bf16;
  return wf;
}

double block_bound_of(const std::vector<float>& ref, int64_t cols, int64_t r, int64_t c, bool nn) {
  const int64_t c0 = c / kInt8Block * kInt8Block;
  const int n = int(std::min<int64_t>(kInt8Block, cols - c0));
  return int8_codec_bound(int8_block_absmax(ref.data() + r * cols + c0, n), nn);
}

// The step's exact scalars (reference/mpfr_rules.h) as the weight-bound oracle takes them: the
// same TrackedF32 values, copied (oracles/fidelity.h). Rules the bound does not support get none
// (the oracle refuses them).
WeightBoundScalars weight_bound_scalars(const MpfrStepScalars& sc) {
  WeightBoundScalars out;
  out.rule = sc.config;
  out.step = sc.t;
  if (const auto* a = std::get_if<mpfr_scalars::AdamW>(&sc.s))
    out.s = AdamWBoundScalars{a->decay, a->beta1, a->one_minus_beta1, a->beta2, a->one_minus_beta2,
                              a->lr_over_bc1, a->sqrt_bc2, a->eps};
  else if (const auto* m = std::get_if<mpfr_scalars::SGDMomentum>(&sc.s))
    out.s = SGDMomentumBoundScalars{m->lr, m->wd, m->momentum, m->one_minus_dampening};
  return out;
}

}  // namespace

Prop4OneStepResult run_prop4_one_step(const Prop4Config& cfg) {
  const std::string claim = "prop4_int8";
  const std::string tag = std::string(rule_name(cfg.rule.id)) + " " + std::to_string(cfg.out) + "x" +
                          std::to_string(cfg.in) + " T=" + std::to_string(cfg.T) +
                          (cfg.defect == Int8TileDefect::none ? "" : std::string(" defect=") + int8_tile_defect_name(cfg.defect));
  Prop4OneStepResult res;
  const WgradCase c0 = prop4_step_inputs(cfg, 0);
  HostParam w8 = HostParam::make(cfg.rule, StateFormat::int8, WeightStore::fp32_master, cfg.out, cfg.in, c0.w0);
  for (int s = 1; s <= cfg.warmup_steps; ++s) {
    const WgradCase c = prop4_step_inputs(cfg, s);
    fused_step(w8, c, s, cfg);
  }
  HostParam wf = fp32_twin_of(w8);

  // Step A: same decoded start, one step each.
  const int64_t sA = cfg.warmup_steps + 1;
  const WgradCase cA = prop4_step_inputs(cfg, sA);
  int8_step(w8, cA, sA, cfg);
  fused_step(wf, cA, sA, cfg);

  for (int k = 0; k < kMaxStates; ++k) {
    if (!w8.decls.slot[k].kept) continue;
    res.kept[k] = true;
    const bool nn = w8.decls.slot[k].nonnegative;
    const Int8MomentJudgement j = judge_int8_moments(decoded_state(w8, k), wf.st_f32[k], cfg.out, cfg.in, nn);
    res.moments[k] = j;
    ClaimCaseResult m;
    m.claim = claim;
    m.case_name = tag + " " + w8.decls.slot[k].name + " within codec bound";
    m.metric_name = "max_err_over_bound";
    m.differing = j.violations;
    m.first_diff = j.first_violation;
    // The oracle judged every element (and all of them): the metric shows the worst ratio.
    judge_case(m, j.max_ratio, 1.0, PassIf::at_most, j.pass() && j.elements == cfg.out * cfg.in);
    m.note = fidelity_fmt("max |err|/absmax %.6g vs bound/absmax %.6g (1/(2L) + 4u); ", j.max_err_rel_absmax, j.bound_rel_absmax) +
             std::to_string(j.violations) + " violations";
    res.cases.push_back(m);
    const int64_t bad_amax = count_absmax_mismatches(w8.st_absmax[k], wf.st_f32[k], cfg.out, cfg.in);
    ClaimCaseResult a;
    a.claim = claim;
    a.case_name = tag + " " + w8.decls.slot[k].name + " absmax is the block's";
    a.differing = bad_amax;
    judge_case(a, double(bad_amax), 0, PassIf::at_most);
    res.cases.push_back(a);
  }
  // The weight update reads the moments before they are encoded, so step A's weights agree.
  res.cases.push_back(fidelity_bitwise_case(claim, tag + " step A weights identical",
                                            {compare_bitwise(w8.master, wf.master, cfg.out, cfg.in, {"W step A"})}));

  // Step B: the INT8 path starts from moments within B of the fp32 path's.
  const int64_t sB = sA + 1;
  const WgradCase cB = prop4_step_inputs(cfg, sB);
  const std::vector<float> GB = backend_or_twin(cfg.backend).wgrad(cB.X.data(), cB.dY.data(), cfg.T, cfg.in, cfg.out, schedule_of(cfg));
  const WeightBoundScalars sc = weight_bound_scalars(mpfr_step_scalars(cfg.rule, sB));
  std::vector<double> bound(size_t(cfg.out * cfg.in));
  bool all_bounded = true;
  for (int64_t r = 0; r < cfg.out; ++r)
    for (int64_t c = 0; c < cfg.in; ++c) {
      const int64_t i = r * cfg.in + c;
      float st_ref[kMaxStates] = {};
      double st_err[kMaxStates] = {};
      for (int k = 0; k < kMaxStates; ++k) {
        if (!res.kept[k]) continue;
        st_ref[k] = wf.st_f32[k][size_t(i)];
        st_err[k] = block_bound_of(wf.st_f32[k], cfg.in, r, c, w8.decls.slot[k].nonnegative);
      }
      const PropagatedWeightBound b = propagated_weight_bound(sc, wf.master[size_t(i)], GB[size_t(i)], st_ref, st_err);
      all_bounded = all_bounded && b.status_ok;
      bound[size_t(i)] = b.total();
    }
  int8_step(w8, cB, sB, cfg);
  fused_step(wf, cB, sB, cfg);
  ClaimCaseResult wb;
  wb.claim = claim;
  wb.case_name = tag + " step B weights within propagated bound";
  wb.metric_name = "max_err_over_bound";
  for (size_t i = 0; i < bound.size(); ++i) {
    const mpreal d = abs(ref_real(w8.master[i]) - ref_real(wf.master[i]));
    const double dd = mpfr_get_d(d.mpfr_srcptr(), MPFR_RNDU);
    res.next_step_max_diff = std::max(res.next_step_max_diff, dd);
    const double ratio = bound[i] > 0 ? dd / bound[i] : (dd == 0 ? 0.0 : INFINITY);
    if (!(d <= ref_real(bound[i])) || std::isnan(w8.master[i])) {
      if (wb.differing++ == 0) wb.first_diff = "element " + std::to_string(i) + fidelity_fmt(": |dW| %.6g bound %.6g", dd, bound[i]);
    }
    res.next_step_max_ratio = std::max(res.next_step_max_ratio, ratio);
  }
  // Elements judged exactly (differing counts those outside), every bound in range; the metric
  // shows the worst rounded ratio.
  judge_case(wb, res.next_step_max_ratio, 1.0, PassIf::at_most, wb.differing == 0 && all_bounded);
  wb.note = fidelity_fmt("max |dW| %.6g, max |dW|/bound %.6g (running error analysis, oracles/rule_bounds.h)",
                         res.next_step_max_diff, res.next_step_max_ratio);
  if (!all_bounded) wb.note += "; some element's bound is out of range/unbounded";
  res.cases.push_back(wb);
  return res;
}

ClaimCaseResult run_prop1_int8(const Prop4Config& cfg, int steps) {
  const WgradCase c0 = prop4_step_inputs(cfg, 0);
  HostParam wt = HostParam::make(cfg.rule, StateFormat::int8, WeightStore::fp32_master, cfg.out, cfg.in, c0.w0);
  HostParam wp = wt;
  std::vector<BitwiseReport> reps;
  for (int s = 1; s <= steps; ++s) {
    const WgradCase c = prop4_step_inputs(cfg, s);
    int8_step(wt, c, s, cfg);
    two_phase_step_host(wp, c.X.data(), c.dY.data(), cfg.T, s, GradProducer::tensor_core_chain);
    BitwiseContext ctx{"W", {cfg.tile_rows, cfg.tile_cols}, s};
    reps.push_back(compare_bitwise(wt.master, wp.master, cfg.out, cfg.in, ctx));
    for (int k = 0; k < kMaxStates; ++k) {
      if (!wt.decls.slot[k].kept) continue;
      reps.push_back(compare_bitwise_u8(wt.st_i8[k].data(), wp.st_i8[k].data(), cfg.out, cfg.in,
                                        {std::string(wt.decls.slot[k].name) + " bytes", {}, s, !wt.decls.slot[k].nonnegative}));
      reps.push_back(compare_bitwise(wt.st_absmax[k], wp.st_absmax[k], cfg.out, wt.blocks_per_row(),
                                     {std::string(wt.decls.slot[k].name) + " absmax", {}, s}));
    }
  }
  return fidelity_bitwise_case("prop1_int8", std::string(rule_name(cfg.rule.id)) + " fused " + backend_or_twin(cfg.backend).name +
                                                 " == two-phase, int8 state, " +
                                                 std::to_string(steps) + " steps" +
                                                 (cfg.defect == Int8TileDefect::none ? "" : std::string(" defect=") + int8_tile_defect_name(cfg.defect)),
                               reps);
}

std::vector<ClaimCaseResult> run_int8_degenerate_blocks(const Prop4Config& cfg_in) {
  Prop4Config cfg = cfg_in;
  if (cfg.in < 4 * kInt8Block) throw std::invalid_argument("run_int8_degenerate_blocks: needs in >= 256");
  struct Poison { const char* name; int64_t c0, c1; };  // poisoned X columns [c0, c1)
  const Poison kinds[] = {{"nan", 70, 71}, {"inf", 70, 71}, {"huge_outlier", 70, 71},
                          {"subnormal_absmax", 128, 192}, {"all_zero", 128, 192}};
  std::vector<ClaimCaseResult> out;
  const WgradCase c0 = prop4_step_inputs(cfg, 0);
  for (const Poison& pk : kinds) {
    const std::string kind = pk.name;
    auto poison = [&](WgradCase c) {
      for (int64_t t = 0; t < c.T; ++t)
        for (int64_t j = pk.c0; j < pk.c1; ++j) {
          bf16& x = c.X[size_t(t * c.in + j)];
          if (kind == "nan") x = t == 0 ? bf16::from_bits(0x7fc1) : x;
          else if (kind == "inf") x = t == 0 ? bf16::from_bits(0x7f80) : x;
          else if (kind == "huge_outlier") x = t == 0 ? bf16::from_bits(0x5380) : x;  // 2^40
          else if (kind == "subnormal_absmax") x = bf16::from_bits(uint16_t((x.bits & 0x8000) | (1 + (t + j) % 7)));  // bf16 subnormals
          else x = bf16::from_bits(0);
        }
      return c;
    };
    HostParam clean = HostParam::make(cfg.rule, StateFormat::int8, WeightStore::fp32_master, cfg.out, cfg.in, c0.w0);
    HostParam bad = clean;
    HostParam ref = fp32_twin_of(bad);
    ClaimCaseResult res;
    res.claim = "prop4_int8_degenerate";
    res.case_name = std::string(rule_name(cfg.rule.id)) + " " + kind +
                    (cfg.defect == Int8TileDefect::none ? "" : std::string(" defect=") + int8_tile_defect_name(cfg.defect));
    bool ok = true;  // every check below holds
    const int64_t bpr = clean.blocks_per_row();
    const int64_t pblk0 = pk.c0 / kInt8Block, pblk1 = (pk.c1 - 1) / kInt8Block;
    // The gradient at (row 0, column pk.c0) of each poisoned step, from the twin (the GPU's G is
    // the twin's bit for bit, tallied elsewhere; asking the twin keeps the tally's counts as they were).
    std::vector<float> g_poisoned;
    for (int s = 1; s <= 2; ++s) {
      const WgradCase c = prop4_step_inputs(cfg, s);
      const WgradCase cp = poison(c);
      g_poisoned.push_back(
          twin_step_backend().wgrad(cp.X.data(), cp.dY.data(), cp.T, cp.in, cp.out, schedule_of(cfg))[size_t(pk.c0)]);
      int8_step(clean, c, s, cfg);
      int8_step(bad, cp, s, cfg);
      if (s == 1) {
        fused_step(ref, cp, s, cfg);
        for (int k = 0; k < kMaxStates; ++k) {
          if (!bad.decls.slot[k].kept) continue;
          const Int8MomentJudgement j = judge_int8_moments(decoded_state(bad, k), ref.st_f32[k], cfg.out, cfg.in,
                                                           bad.decls.slot[k].nonnegative);
          if (!j.pass()) {
            ok = false;
            res.differing += j.violations;
            if (res.first_diff.empty()) res.first_diff = std::string("poisoned step 1 ") + bad.decls.slot[k].name + ": " + j.first_violation;
          }
          res.metric = std::max(res.metric, j.max_ratio);
        }
      }
      // Every block outside the poisoned one: bytes, absmax and weights as in the clean run.
      for (int64_t r = 0; r < cfg.out; ++r)
        for (int64_t b = 0; b < bpr; ++b) {
          if (b >= pblk0 && b <= pblk1) continue;
          bool same = true;
          for (int64_t cc = b * kInt8Block; cc < std::min(cfg.in, (b + 1) * kInt8Block); ++cc) {
            const size_t i = size_t(r * cfg.in + cc);
            same = same && f2u(clean.master[i]) == f2u(bad.master[i]);
            for (int k = 0; k < kMaxStates; ++k)
              if (clean.decls.slot[k].kept) same = same && clean.st_i8[k][i] == bad.st_i8[k][i];
          }
          for (int k = 0; k < kMaxStates; ++k)
            if (clean.decls.slot[k].kept)
              same = same && f2u(clean.st_absmax[k][size_t(r * bpr + b)]) == f2u(bad.st_absmax[k][size_t(r * bpr + b)]);
          if (!same) {
            ok = false;
            if (res.differing++ == 0 || res.first_diff.empty())
              res.first_diff = "neighbour block corrupted: step " + std::to_string(s) + " row " + std::to_string(r) +
                               " block " + std::to_string(b);
          }
        }
    }
    // The poisoned block's stored absmax after step 2 follows INT8_CODEC.md (slot 0):
    // NaN -> the canonical NaN; inf -> +inf while m holds one infinity, the canonical NaN once
    // step 2's gradient is the opposite infinity (b1*(+-inf) + (1-b1)*(-+inf) = NaN: the data
    // decides, "A non-finite gradient over several steps"); huge outlier -> finite;
    // subnormal -> 0 < a < 2^-126; all zero -> +0.
    const float a_m = bad.st_absmax[0][size_t(pblk0)];
    const uint32_t ab = f2u(a_m);
    bool documented = true;
    if (kind == "nan") documented = ab == kInt8CanonicalNanBits;
    else if (kind == "inf") documented = int8_linear_moment_absmax_bits(g_poisoned) == std::optional<uint32_t>(ab);
    else if (kind == "huge_outlier") documented = fisfinite(a_m) && a_m > 1e6f;
    else if (kind == "subnormal_absmax") documented = a_m > 0.0f && a_m < 0x1p-126f;
    else documented = ab == 0u;
    if (!documented) {
      ok = false;
      res.first_diff += " poisoned block absmax not as documented";
    }
    char buf[160];
    std::snprintf(buf, sizeof buf, "poisoned block (row 0, slot 0) absmax after step 2: bits 0x%08x (%g)", ab, double(a_m));
    res.note = std::string(buf) + "; neighbours compared bitwise against the clean run after steps 1 and 2";
    res.metric_name = "max_err_over_bound";
    judge_case(res, res.metric, 1.0, PassIf::at_most, ok);
    out.push_back(res);
  }
  return out;
}

TrajectoryResult run_int8_trajectory(const Prop4Config& cfg, int steps) {
  TrajectoryResult tr;
  const WgradCase c0 = prop4_step_inputs(cfg, 0);
  HostParam w8 = HostParam::make(cfg.rule, StateFormat::int8, WeightStore::fp32_master, cfg.out, cfg.in, c0.w0);
  HostParam wf = HostParam::make(cfg.rule, StateFormat::fp32, WeightStore::fp32_master, cfg.out, cfg.in, c0.w0);
  double envelope = 0;
  bool ok = true;
  const size_t n = size_t(cfg.out * cfg.in);
  std::vector<uint8_t> had_zero_v(n, 0);
  for (int s = 1; s <= steps; ++s) {
    const WgradCase c = prop4_step_inputs(cfg, s);
    const std::vector<float> p8 = w8.master, pf = wf.master;
    int64_t zero_v = 0;  // AdamW: second moment decodes to 0 while the first does not
    if (cfg.rule.id == RuleId::adamw)
      for (size_t i = 0; i < n; ++i)
        if (w8.state(1, int64_t(i)) == 0.0f && w8.state(0, int64_t(i)) != 0.0f) {
          ++zero_v;
          had_zero_v[i] = 1;
        }
    tr.zero_v_nonzero_m.push_back(zero_v);
    int8_step(w8, c, s, cfg);
    fused_step(wf, c, s, cfg);
    double mx = 0, ss = 0, up8 = 0, upf = 0;
    for (size_t i = 0; i < n; ++i) {
      const double d = std::fabs(double(w8.master[i]) - double(wf.master[i]));
      if (!std::isfinite(d)) ok = false;
      mx = std::max(mx, d);
      ss += d * d;
      up8 = std::max(up8, std::fabs(double(w8.master[i]) - double(p8[i])));
      upf = std::max(upf, std::fabs(double(wf.master[i]) - double(pf[i])));
    }
    envelope += up8 + upf;  // triangle inequality: |dW(t)| <= sum of both paths' step sizes
    if (mx > envelope) ok = false;
    tr.max_abs_dev.push_back(mx);
    tr.rms_dev.push_back(std::sqrt(ss / double(n)));
    tr.max_update.push_back(upf);
    tr.max_update_int8.push_back(up8);
  }
  // Attribution: how much of the final deviation sits on elements that ever stepped with v = 0.
  std::vector<double> d(n);
  double ss_all = 0, ss_event = 0;
  for (size_t i = 0; i < n; ++i) {
    d[i] = std::fabs(double(w8.master[i]) - double(wf.master[i]));
    ss_all += d[i] * d[i];
    if (had_zero_v[i]) {
      ss_event += d[i] * d[i];
      ++tr.zero_v_elements;
    }
  }
  tr.dev_share_zero_v = ss_all > 0 ? ss_event / ss_all : 0.0;
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  const size_t top = std::max<size_t>(1, n / 100);
  std::partial_sort(order.begin(), order.begin() + long(top), order.end(), [&](size_t a, size_t b) { return d[a] > d[b]; });
  int64_t top_event = 0;
  for (size_t k = 0; k < top; ++k) top_event += had_zero_v[order[k]];
  tr.top1pct_zero_v_frac = double(top_event) / double(top);
  // Growth: slope of log(dev) against log(step) over the steps with dev > 0.
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  int m = 0;
  for (int s = 0; s < steps; ++s)
    if (tr.max_abs_dev[size_t(s)] > 0) {
      const double x = std::log(double(s + 1)), y = std::log(tr.max_abs_dev[size_t(s)]);
      sx += x; sy += y; sxx += x * x; sxy += x * y; ++m;
    }
  tr.growth_exponent = m > 1 ? (m * sxy - sx * sy) / (m * sxx - sx * sx) : 0.0;
  tr.verdict.claim = "prop4_int8_trajectory";
  tr.verdict.case_name = std::string(rule_name(cfg.rule.id)) + " " + std::to_string(cfg.out) + "x" +
                         std::to_string(cfg.in) + " T=" + std::to_string(cfg.T) + " " + std::to_string(steps) + " steps";
  tr.verdict.metric_name = "max_abs_dev";
  // ok: every step finite and within its envelope; the metric is the last step's.
  judge_case(tr.verdict, tr.max_abs_dev.back(), envelope, PassIf::at_most, ok);
  tr.verdict.note = fidelity_fmt("final max |W_int8 - W_fp32| %.4g, rms %.4g, growth ~ t^%.3f", tr.max_abs_dev.back(),
                                 tr.rms_dev.back(), tr.growth_exponent) +
                    fidelity_fmt("; elements that ever stepped with v decoded 0: %.0f, carrying %.3g of the final sum |dW|^2 "
                                 "and %.3g of the largest 1%%",
                                 double(tr.zero_v_elements), tr.dev_share_zero_v, tr.top1pct_zero_v_frac);
  return tr;
}

// ---- forge-verify ----

namespace {

void run_prop4(const VerifyConfig& cfg, Report& report, const Progress& progress, const Where& at) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string sizes = "one step and fused==two-phase (4 steps) on 64x128 T=32, degenerate blocks on 16x256, "
                            "trajectory 100 steps (as the suite)";
  for (RuleId rule : {RuleId::adamw, RuleId::sgd_momentum}) {
    progress_set_case(rule_name(rule));
    Prop4Config pc;
    pc.seed = stream_seed(cfg.seed, "prop4_int8/one_step");
    pc.rule = default_rule_config(rule);
    pc.backend = at.be;
    const Prop4OneStepResult r = run_prop4_one_step(pc);
    const auto recs = record_claim_cases(report, r.cases, at.group);
    set_attrs(recs, "sizes", sizes);
    // The |err| / B histogram of each moment goes beside its "within codec bound" case.
    int slot_case = 0;
    for (int k = 0; k < kMaxStates; ++k) {
      if (!r.kept[k]) continue;
      CaseRecord* rec = recs[size_t(2 * slot_case++)];  // per slot: bound case, then absmax case
      rec->add_i64("err_over_bound_hist", r.moments[k].ratio_histogram,
                   "counts of |err|/B(absmax) in 20 bins over [0,1]; bin 20: violations");
      rec->add_f64("max_err_rel_absmax", {r.moments[k].max_err_rel_absmax, r.moments[k].bound_rel_absmax},
                   "max |err|/absmax measured, and the bound 1/(2L) + 4u it is judged against");
    }
    const ClaimCaseResult eq = run_prop1_int8(pc, 4);
    set_attrs(record_claim_cases(report, {eq}, at.group), "sizes", sizes);
  }
  Prop4Config dc = int8_degenerate_blocks_config(cfg.seed);
  dc.backend = at.be;
  set_attrs(record_claim_cases(report, run_int8_degenerate_blocks(dc), at.group), "sizes", sizes);

  Prop4Config tc;
  tc.seed = stream_seed(cfg.seed, "prop4_int8/trajectory");
  tc.backend = at.be;
  const TrajectoryResult tr = run_int8_trajectory(tc, 100);
  CaseRecord* rec = record_claim_cases(report, {tr.verdict}, at.group)[0];
  rec->set_attr("sizes", sizes).set_attr("growth_exponent", num(tr.growth_exponent));
  rec->set_attr("zero_v_elements", std::to_string(tr.zero_v_elements))
      .set_attr("dev_share_zero_v", num(tr.dev_share_zero_v))
      .set_attr("top1pct_zero_v_frac", num(tr.top1pct_zero_v_frac))
      .set_attr("attribution", "elements that ever stepped with exp_avg_sq decoded 0 (and exp_avg not): their count, "
                               "their share of the final sum |W_int8 - W_fp32|^2, and their fraction of the 1% largest deviations");
  rec->add_f64("max_abs_dev", tr.max_abs_dev, "per step max |W_int8 - W_fp32|")
      .add_f64("rms_dev", tr.rms_dev, "per step rms |W_int8 - W_fp32|")
      .add_f64("max_update", tr.max_update, "per step max |W_fp32(t) - W_fp32(t-1)|")
      .add_f64("max_update_int8", tr.max_update_int8, "per step max |W_int8(t) - W_int8(t-1)|")
      .add_i64("zero_v_nonzero_m", tr.zero_v_nonzero_m, "elements entering the step with v decoded 0 and m != 0");
  progress.note(at.group + ": " + num(fidelity_seconds_since(t0)) + " s");
}

}  // namespace

void claim_prop4_int8(const VerifyConfig& cfg, Report& report, const Progress& progress, const ClaimVariant& variant) {
  run_fidelity(run_prop4, variant, cfg, report, progress);
}

WgradCase prop4_step_inputs(const Prop4Config& cfg, int64_t s) {
  return make_wgrad_case(stream_seed(cfg.seed, "prop4_int8/step_inputs", uint64_t(s)), cfg.T, cfg.in, cfg.out,
                         CaseDistribution::normal);
}

Prop4Config int8_degenerate_blocks_config(uint64_t run_seed) {
  Prop4Config dc;
  dc.seed = stream_seed(run_seed, "prop4_int8/degenerate_blocks");
  dc.in = 256;
  dc.out = 16;
  return dc;
}

}  // namespace fh
