#include "suites/claims/gradient_fidelity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "oracles/bitwise.h"
#include "reference/case_gen.h"
#include "reference/fidelity_producers.h"
#include "reference/two_phase_host.h"
#include "suites/claims/claim_common.h"
#include "suites/claims/fidelity_common.h"

namespace fh {

const char* grad_fidelity_defect_name(GradFidelityDefect d) {
  switch (d) {
    case GradFidelityDefect::none: return "none";
    case GradFidelityDefect::fp32_path_rounds_to_bf16: return "fp32_path_rounds_to_bf16";
    case GradFidelityDefect::bf16_path_truncates: return "bf16_path_truncates";
    case GradFidelityDefect::bf16_path_keeps_fp32: return "bf16_path_keeps_fp32";
  }
  return "?";
}

GradFidelityResult run_gradient_fidelity(const GradFidelityConfig& cfg) {
  if (cfg.steps < 1 || cfg.out < 1 || cfg.in < 1 || cfg.T < 1)
    throw std::invalid_argument("run_gradient_fidelity: steps, out, in, T must be >= 1");
  GradFidelityResult res;
  const std::string tag = std::string(rule_name(cfg.rule.id)) + " " + std::to_string(cfg.out) + "x" +
                          std::to_string(cfg.in) + " T=" + std::to_string(cfg.T) + " " + std::to_string(cfg.steps) +
                          " steps" +
                          (cfg.defect == GradFidelityDefect::none ? "" : std::string(" defect=") + grad_fidelity_defect_name(cfg.defect));
  auto inputs = [&](int64_t s) {
    return make_wgrad_case(stream_seed(cfg.seed, "gradient_fidelity/step_inputs", uint64_t(s)), cfg.T, cfg.in, cfg.out, CaseDistribution::normal);
  };
  TwinSchedule sched;
  sched.tile_rows = cfg.tile_rows;
  sched.tile_cols = cfg.tile_cols;
  const WgradCase c0 = inputs(0);
  HostParam twin = HostParam::make(cfg.rule, StateFormat::fp32, WeightStore::fp32_master, cfg.out, cfg.in, c0.w0);
  HostParam f32g = twin;  // the fp32-G two-phase path
  HostParam free_b = twin;  // the free-running bf16-G path
  std::vector<BitwiseReport> eq_reps;
  ClaimCaseResult half;
  half.claim = "gradient_fidelity";
  half.case_name = tag + " bf16 G within half an ulp of G";
  half.bound = 1.0;
  half.metric_name = "max_err_over_half_ulp";
  double pooled_sum = 0, pooled_sum2 = 0;
  int64_t pooled_n = 0;
  const size_t n = size_t(cfg.out * cfg.in);
  for (int s = 1; s <= cfg.steps; ++s) {
    const WgradCase c = inputs(s);
    const std::vector<float> G = backend_or_twin(cfg.backend).wgrad(c.X.data(), c.dY.data(), cfg.T, cfg.in, cfg.out, sched);
    const std::vector<float> Gf = cfg.defect == GradFidelityDefect::fp32_path_rounds_to_bf16 ? bf16_rne_widened(G) : G;
    const std::vector<float> Gb = cfg.defect == GradFidelityDefect::bf16_path_truncates ? bf16_truncated_widened(G)
                                  : cfg.defect == GradFidelityDefect::bf16_path_keeps_fp32 ? G
                                                                                           : bf16_rne_widened(G);
    const HostParam start = f32g;
    backend_or_twin(cfg.backend).step(twin, c.X.data(), c.dY.data(), cfg.T, s, sched);
    apply_two_phase_update(f32g, Gf, s);
    eq_reps.push_back(compare_bitwise(f32g.master, twin.master, cfg.out, cfg.in, {"W", {cfg.tile_rows, cfg.tile_cols}, s}));
    for (int k = 0; k < kMaxStates; ++k)
      if (twin.decls.slot[k].kept)
        eq_reps.push_back(compare_bitwise(f32g.st_f32[k], twin.st_f32[k], cfg.out, cfg.in,
                                          {twin.decls.slot[k].name, {cfg.tile_rows, cfg.tile_cols}, s}));

    // The rounding of G itself, judged exactly.
    const GradRoundingJudgement gj = judge_bf16_gradient_rounding(G, Gb);
    res.g_max_rel_err.push_back(gj.max_rel_err);
    res.g_max_half_ulp_ratio.push_back(gj.max_half_ulp_ratio);
    half.differing += gj.violations;
    half.metric = std::max(half.metric, gj.max_half_ulp_ratio);
    if (half.first_diff.empty() && !gj.pass()) half.first_diff = "step " + std::to_string(s) + " " + gj.first_violation;

    // One bf16-G step from the fp32-G path's start.
    HostParam resync = start;
    apply_two_phase_update(resync, Gb, s);
    const UpdateDeviation u = measure_update_deviation(start.master, f32g.master, resync.master);
    res.update_rms.push_back(u.scale_rms);
    res.bias_rel.push_back(u.bias_rel);
    res.directional_bias.push_back(u.directional_bias);
    res.rms_rel.push_back(u.rms_rel);
    res.max_rel.push_back(u.max_rel);
    res.max_rel_elem.push_back(u.max_rel_elem);
    res.update_differing.push_back(u.differing);
    pooled_sum += u.sum_d_over_s;
    pooled_sum2 += u.sum_d2_over_s2;
    pooled_n += u.elements;

    apply_two_phase_update(free_b, Gb, s);
    double mx = 0, ss = 0;
    for (size_t i = 0; i < n; ++i) {
      const double d = std::fabs(double(free_b.master[i]) - double(f32g.master[i]));
      mx = std::max(mx, d);
      ss += d * d;
    }
    res.traj_max_abs_dev.push_back(mx);
    res.traj_rms_dev.push_back(std::sqrt(ss / double(n)));
  }
  res.pooled_bias_rel = pooled_sum / double(pooled_n);
  const double var = pooled_sum2 / double(pooled_n) - res.pooled_bias_rel * res.pooled_bias_rel;
  res.pooled_bias_stderr = std::sqrt(std::max(0.0, var) / double(pooled_n));
  res.min_rms_rel = INFINITY;
  for (int s = 0; s < cfg.steps; ++s) {
    res.mean_rms_rel += res.rms_rel[size_t(s)] / cfg.steps;
    res.max_max_rel = std::max(res.max_max_rel, res.max_rel[size_t(s)]);
    res.min_rms_rel = std::min(res.min_rms_rel, res.rms_rel[size_t(s)]);
  }

  res.cases.push_back(fidelity_bitwise_case("gradient_fidelity", tag + " fp32-G step == fused " + backend_or_twin(cfg.backend).name, eq_reps));
  // The oracle judged every element; the metric shows the worst ratio.
  judge_case(half, half.metric, 1.0, PassIf::at_most, half.differing == 0);
  half.note = fidelity_fmt("max |bf16(G) - G| / (ulp/2) %.6g; max relative G error %.6g (RNE: <= 2^-8, u of 8 significant bits)", half.metric,
                           *std::max_element(res.g_max_rel_err.begin(), res.g_max_rel_err.end()));
  res.cases.push_back(half);
  ClaimCaseResult meas;
  meas.claim = "gradient_fidelity";
  meas.case_name = tag + " bf16-G update error is measurable";
  judge_case(meas, res.min_rms_rel, 0, PassIf::above);  // a lower bound: pass when metric > bound
  // Steps whose bf16-G weights equal the fp32-G weights bitwise (so metric != differing: not a
  // bitwise case in the report).
  meas.differing = std::count(res.update_differing.begin(), res.update_differing.end(), int64_t(0));
  if (!meas.pass) meas.first_diff = "some step's bf16-G update equals the fp32-G update bitwise";
  meas.note = fidelity_fmt("pass when min over steps of rms(d)/rms(u) > 0 (a lower bound); mean rms_rel %.4g, max |d|/rms(u) %.4g",
                           res.mean_rms_rel, res.max_max_rel) +
              fidelity_fmt("; pooled bias %.3g +- %.2g (stderr) of rms(u)", res.pooled_bias_rel, res.pooled_bias_stderr);
  res.cases.push_back(meas);
  return res;
}

// ---- forge-verify ----

namespace {

void run_grad_fidelity(const VerifyConfig& cfg, Report& report, const Progress& progress, const Where& at) {
  const auto t0 = std::chrono::steady_clock::now();
  for (RuleId rule : {RuleId::adamw, RuleId::sgd}) {
    progress_set_case(rule_name(rule));
    GradFidelityConfig gc;
    gc.seed = stream_seed(cfg.seed, "gradient_fidelity/run");
    gc.rule = default_rule_config(rule);
    gc.backend = at.be;
    const GradFidelityResult r = run_gradient_fidelity(gc);
    const auto recs = record_claim_cases(report, r.cases, at.group);
    set_attrs(recs, "sizes", "64x128, T=32, 50 steps, tile 64x64 (as the suite)");
    CaseRecord* meas = recs.back();  // "bf16-G update error is measurable"
    meas->set_attr("pooled_bias_rel", num(r.pooled_bias_rel)).set_attr("pooled_bias_stderr", num(r.pooled_bias_stderr));
    meas->add_f64("update_rms", r.update_rms, "per step rms of the fp32-G update (the scale)")
        .add_f64("bias_rel", r.bias_rel, "per step mean(W_bf16G - W_fp32G) / scale")
        .add_f64("directional_bias", r.directional_bias, "per step mean(d * sign(update)) / scale")
        .add_f64("rms_rel", r.rms_rel, "per step rms(d) / scale")
        .add_f64("max_rel", r.max_rel, "per step max |d| / scale")
        .add_f64("max_rel_elem", r.max_rel_elem, "per step max |d_i|/|u_i| over |u_i| >= scale/16")
        .add_i64("update_differing", r.update_differing, "per step elements whose bf16-G weight differs")
        .add_f64("g_max_rel_err", r.g_max_rel_err, "per step max |bf16(G) - G| / |G|")
        .add_f64("traj_max_abs_dev", r.traj_max_abs_dev, "free-running bf16-G run: per step max |W_bf16G - W_fp32G|")
        .add_f64("traj_rms_dev", r.traj_rms_dev, "free-running bf16-G run: per step rms |W_bf16G - W_fp32G|");
  }
  progress.note(at.group + ": " + num(fidelity_seconds_since(t0)) + " s");
}

}  // namespace

void claim_gradient_fidelity(const VerifyConfig& cfg, Report& report, const Progress& progress,
                             const ClaimVariant& variant) {
  run_fidelity(run_grad_fidelity, variant, cfg, report, progress);
}

}  // namespace fh
