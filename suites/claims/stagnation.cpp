#include "suites/claims/stagnation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <utility>

#include "reference/case_gen.h"
#include "reference/fidelity_producers.h"
#include "suites/claims/claim_common.h"
#include "suites/claims/fidelity_common.h"

namespace fh {

const char* stagnation_defect_name(StagnationDefect d) {
  switch (d) {
    case StagnationDefect::none: return "none";
    case StagnationDefect::sr_is_rne: return "sr_is_rne";
  }
  return "?";
}

namespace {

// The experiment's verdicts are calibrated on its fixed problem and data (a noise band from three
// run seeds is no 1e-9 test: other data can move it), so its draws keep the derivation they were
// calibrated with, stream "stagnation/calibrated_v1": the problem from the config's seed itself,
// run seed rs's data from seed ^ rs * 0x9E3779B97F4A7C15, and rs as its stochastic-rounding key.
uint64_t stagnation_calibrated_v1_seed(uint64_t seed, uint64_t run_seed) {
  return seed ^ (run_seed * 0x9E3779B97F4A7C15ull);
}

}  // namespace

StagnationResult run_stagnation(const StagnationConfig& cfg) {
  StagnationResult res;
  const int64_t O = cfg.out, I = cfg.in, T = cfg.T;
  const LeastSquaresProblem prob =
      LeastSquaresProblem::make(cfg.seed, O, I, cfg.eval_T, cfg.w_star_scale, cfg.target_noise);
  AdamW::Hyper h;
  h.lr = cfg.lr;
  h.weight_decay = 0;
  const RuleConfig rule{RuleId::adamw, h};
  struct Variant { const char* label; StateFormat sf; WeightStore ws; };
  const Variant variants[] = {{"fp32_master", StateFormat::fp32, WeightStore::fp32_master},
                              {"bf16_rne", StateFormat::fp32, WeightStore::bf16_rne},
                              {"bf16_sr", StateFormat::fp32, WeightStore::bf16_sr},
                              {"int8_state", StateFormat::int8, WeightStore::fp32_master}};
  auto wanted = [&](const std::string& label) {
    return label == "fp32_master" || cfg.labels.empty() ||
           std::find(cfg.labels.begin(), cfg.labels.end(), label) != cfg.labels.end();
  };
  for (const auto& l : cfg.labels)
    if (l != "fp32_master" && l != "bf16_rne" && l != "bf16_sr" && l != "int8_state")
      throw std::invalid_argument("run_stagnation: unknown variant label '" + l + "'");
  if (cfg.run_seeds.empty() || cfg.steps < 1) throw std::invalid_argument("run_stagnation: needs run seeds and steps >= 1");
  TwinSchedule sched;
  sched.tile_rows = 32;
  sched.tile_cols = 64;
  const int tail = std::max(1, cfg.steps / 10);
  for (uint64_t rs : cfg.run_seeds)
    for (const Variant& v : variants) {
      if (!wanted(v.label)) continue;
      StagnationRun run;
      run.label = v.label;
      run.run_seed = rs;
      const bool planted_rne = cfg.defect == StagnationDefect::sr_is_rne && v.ws == WeightStore::bf16_sr;
      HostParam w = HostParam::make(rule, v.sf, planted_rne ? WeightStore::bf16_rne : v.ws, O, I, prob.w0, rs, 1);
      CaseRng data(stagnation_calibrated_v1_seed(cfg.seed, rs));  // same data stream for every variant
      for (int s = 1; s <= cfg.steps; ++s) {
        const std::vector<bf16> X = gen_bf16(data, T * I, CaseDistribution::normal);
        const std::vector<double> Y = prob.targets(X, T, data);
        const std::vector<double> P = prob.predict(X, T, w.bf16);
        const std::vector<bf16> dY = LeastSquaresProblem::output_grad_bf16(P, Y, T);
        const std::vector<float> before_m = w.master;
        const std::vector<bf16> before_b = w.bf16;
        if (v.sf == StateFormat::int8)
          for (int64_t i = 0; i < O * I; ++i) run.zero_v_events += w.state(1, i) == 0.0f && w.state(0, i) != 0.0f;
        backend_or_twin(cfg.backend).step(w, X.data(), dY.data(), T, s, sched);
        int64_t same = 0;
        for (size_t i = 0; i < w.bf16.size(); ++i)
          same += v.ws == WeightStore::fp32_master ? f2u(w.master[i]) == f2u(before_m[i]) : w.bf16[i] == before_b[i];
        run.unchanged_frac.push_back(double(same) / double(w.bf16.size()));
        run.eval_loss.push_back(LeastSquaresProblem::loss(prob.predict(prob.Xe, cfg.eval_T, w.bf16), prob.Ye, cfg.eval_T));
      }
      double fl = 0;
      for (int s = cfg.steps - tail; s < cfg.steps; ++s) fl += run.eval_loss[size_t(s)];
      run.final_loss = fl / tail;
      res.runs.push_back(run);
    }
  // Aggregates over run seeds.
  auto finals = [&](const std::string& label) {
    std::vector<double> f;
    for (const auto& r : res.runs) if (r.label == label) f.push_back(r.final_loss);
    return f;
  };
  auto mean = [](const std::vector<double>& v) { double s = 0; for (double x : v) s += x; return s / double(v.size()); };
  const std::vector<double> f32 = finals("fp32_master"), rne = finals("bf16_rne"), sr = finals("bf16_sr"), i8 = finals("int8_state");
  res.fp32_mean = mean(f32);
  double var = 0;
  for (double x : f32) var += (x - res.fp32_mean) * (x - res.fp32_mean);
  res.fp32_std = f32.size() > 1 ? std::sqrt(var / double(f32.size() - 1)) : 0.0;
  res.rne_gap = mean(rne) / res.fp32_mean - 1;
  res.sr_gap = mean(sr) / res.fp32_mean - 1;
  res.int8_gap = mean(i8) / res.fp32_mean - 1;
  res.sr_abs_diff = std::fabs(mean(sr) - res.fp32_mean);
  double vf = 0;
  int nv = 0;
  for (const auto& r : res.runs)
    if (r.label == "bf16_rne")
      for (int s = cfg.steps / 2; s < cfg.steps; ++s) { vf += r.unchanged_frac[size_t(s)]; ++nv; }
  res.rne_vanish_frac = nv ? vf / nv : 0.0;
  const LeastSquaresProblem::Optimum opt = prob.exact_optimum();
  res.opt_loss = opt.loss;
  res.wstar_loss = opt.wstar_loss;
  res.opt_stationarity = opt.stationarity;
  res.opt_rank = opt.rank;
  res.min_excess_rel = std::numeric_limits<double>::infinity();
  for (const auto& r : res.runs)
    for (double l : r.eval_loss) res.min_excess_rel = std::min(res.min_excess_rel, (l - opt.loss) / opt.loss);
  const std::vector<double>* by_label[4] = {&f32, &rne, &sr, &i8};
  for (int k = 0; k < 4; ++k)
    res.final_mean[k] = by_label[k]->empty() ? std::numeric_limits<double>::quiet_NaN() : mean(*by_label[k]);

  const double noise = 2.0 * res.fp32_std;  // run-to-run noise of fp32 master (2 sample std)
  const bool planted = cfg.defect != StagnationDefect::none;
  const std::string dtag = planted ? std::string(" defect=") + stagnation_defect_name(cfg.defect) : "";
  // Cases only for the variants that ran (cfg.labels).
  auto add = [&](std::string name, const char* metric_name, double metric, double bound, PassIf pass_if, std::string note) {
    ClaimCaseResult c;
    c.claim = "stagnation";
    c.case_name = std::move(name);
    c.metric_name = metric_name;
    judge_case(c, metric, bound, pass_if);
    c.note = std::move(note);
    res.cases.push_back(c);
  };
  if (!sr.empty())
    add("bf16_sr final loss within fp32_master run-to-run noise" + dtag, "abs_final_loss_diff", res.sr_abs_diff, noise,
        PassIf::at_most,
        fidelity_fmt("fp32 %.6g +- %.3g (std over seeds); SR gap %+.3f%%", res.fp32_mean, res.fp32_std, 100 * res.sr_gap));
  if (!rne.empty())  // RNE stagnates visibly beyond the noise
    add("bf16_rne gap vs fp32_master (paper: ~6%)", "rel_gap", res.rne_gap, noise / res.fp32_mean, PassIf::above,
        fidelity_fmt("RNE gap %+.2f%%, vanished updates %.1f%% (second half), paper ~6%%", 100 * res.rne_gap,
                     100 * res.rne_vanish_frac));
  if (!i8.empty())
    add("int8_state final loss within fp32_master run-to-run noise", "abs_final_loss_diff", std::fabs(mean(i8) - res.fp32_mean),
        noise, PassIf::at_most, fidelity_fmt("int8 gap %+.3f%%", 100 * res.int8_gap));
  return res;
}

// ---- forge-verify ----

namespace {

void run_stagnation_claim(const VerifyConfig&, Report& report, const Progress& progress, const Where& at) {
  const auto t0 = std::chrono::steady_clock::now();
  StagnationConfig sc;  // the suite's fixed problem and seeds: its verdicts are calibrated on them
  sc.backend = at.be;
  const StagnationResult r = run_stagnation(sc);
  const std::string sizes = "least squares 32x64, T=64, 400 steps, AdamW lr 5e-4, run seeds 1,2,3 (as the suite; "
                            "fixed seed, --seed does not apply)";
  const double noise = 2.0 * r.fp32_std;
  const std::string& claim = at.group;

  // Harness checks: SR within fp32 master's run-to-run noise; RNE's gap beyond it.
  auto add = [&](const std::string& name, const std::string& check, const std::string& metric_name, double metric,
                 double bound, PassIf pass_if, const std::string& note) {
    CaseRecord& cs = report.add_case(claim, name);
    cs.set_attr("sizes", sizes).set_attr("note", note);
    cs.add_check(judge(check, metric_name, metric, bound, pass_if, note));
    return &cs;
  };
  add("bf16_sr vs fp32_master", "sr_within_noise", "abs_final_loss_diff", r.sr_abs_diff, noise, PassIf::at_most,
      "SR gap " + num(100 * r.sr_gap) + "%; noise band = 2 sample std of fp32 master's final loss over seeds");
  CaseRecord* rne = add("bf16_rne vs fp32_master", "rne_gap_beyond_noise", "rel_gap", r.rne_gap, noise / r.fp32_mean,
                        PassIf::above,
                        "RNE gap " + num(100 * r.rne_gap) + "% (paper ~6%); pass when the gap exceeds the noise band");
  rne->add_f64("vanish_frac", {r.rne_vanish_frac}, "RNE: mean fraction of weights a step left unchanged, second half");
  // INT8 state: the gap is a measured finding, not a harness property. Decision: forge-verify
  // gates only what CI gates (INT8 beats RNE); "within the noise band" is reported as data.
  CaseRecord* i8 = add("int8_state vs fp32_master", "int8_gap_below_rne_gap", "rel_gap", r.int8_gap, r.rne_gap, PassIf::below,
                       "INT8 gap " + num(100 * r.int8_gap) + "% against RNE's " + num(100 * r.rne_gap) + "%");
  i8->set_attr("int8_within_noise", r.int8_gap * r.fp32_mean <= noise ? "yes" : "no")
      .set_attr("decision", "the INT8-state gap against fp32 master is a measured result (dataset int8_gap, attribute "
                            "int8_within_noise), not a pass/fail check: the prop4_int8 trajectory attributes it to blocks whose exp_avg_sq decodes "
                            "to 0 (dataset zero_v_nonzero_m; a hypothesis, not proved), a property of the INT8 format, not a "
                            "harness defect; the check gates what CI gates: INT8 state beats bf16 RNE");
  i8->add_f64("int8_gap", {r.int8_gap, noise / r.fp32_mean}, "relative final-loss gap vs fp32 master, and the noise band");
  std::vector<int64_t> zv;
  for (const auto& run : r.runs)
    if (run.label == "int8_state") zv.push_back(run.zero_v_events);
  i8->add_i64("zero_v_events", zv, "per run seed: (step, element) pairs that stepped with exp_avg_sq decoded 0 and exp_avg not");

  // Summary: gaps and the curves as 2-D datasets [run seed, step], one case per variant.
  CaseRecord& sum = report.add_case(claim, "summary");
  sum.set_attr("sizes", sizes);
  sum.add_f64("final_loss_fp32_mean_std", {r.fp32_mean, r.fp32_std}, "fp32 master final eval loss: mean, sample std over seeds")
      .add_f64("gaps", {r.rne_gap, r.sr_gap, r.int8_gap}, "relative final-loss gap vs fp32 master: bf16_rne, bf16_sr, int8_state")
      .add_f64("noise_band_rel", {noise / r.fp32_mean}, "2 sample std of fp32 master / its mean");
  // The noise band must come from real run-to-run variation (pass when the std is > 0).
  sum.add_check(judge("run_to_run_noise_nonzero", "fp32_final_loss_std", r.fp32_std, 0, PassIf::above,
                      "run seeds gave identical fp32 runs: no noise band"));
  sum.set_attr("noise_band", "the curves' band is their spread over the run seeds (cases 'curves <label>', eval_loss "
                             "[run seed, step]); the verdicts' band is 2 sample std of fp32 master's final loss over seeds "
                             "(final_loss_fp32_mean_std, noise_band_rel)");

  // The exact optimum of the eval loss (Eigen QR in double): the floor every curve sits above, and
  // each variant's final loss measured against it.
  CaseRecord& oc = report.add_case(claim, "exact optimum");
  oc.set_attr("sizes", sizes).set_attr("method", "Xe W^T = Ye by Eigen ColPivHouseholderQR in double (Xe 256x64, exact "
                                                 "bf16 values), rank " + std::to_string(r.opt_rank));
  const double* fm = r.final_mean;
  oc.add_f64("optimum_loss", {r.opt_loss, r.wstar_loss}, "eval loss at the exact least-squares optimum, and at W* (>= it)")
      .add_f64("excess_over_optimum", {fm[0] - r.opt_loss, fm[1] - r.opt_loss, fm[2] - r.opt_loss, fm[3] - r.opt_loss},
               "mean final loss - optimum: fp32_master, bf16_rne, bf16_sr, int8_state")
      .add_f64("gaps_vs_optimum",
               {fm[0] / r.opt_loss - 1, fm[1] / r.opt_loss - 1, fm[2] / r.opt_loss - 1, fm[3] / r.opt_loss - 1},
               "mean final loss / optimum - 1: fp32_master, bf16_rne, bf16_sr, int8_state");
  // Sound: the exact minimizer satisfies the normal equations; a double QR of a well-conditioned
  // Xe leaves ~1e-16, a single-precision or wrong solve ~1e-7 or more.
  constexpr double kStationary = 1e-12;
  oc.add_check(judge("optimum_is_stationary", "normal_eq_residual_rel", r.opt_stationarity, kStationary, PassIf::at_most,
                     "the optimum does not solve the normal equations: gaps are not against the minimum"));
  // Sound: no W has an eval loss below the minimum; the tolerance covers the loss's own double
  // rounding (relative ~1e-14 here).
  constexpr double kBelow = -1e-9;
  oc.add_check(judge("no_eval_loss_below_optimum", "min_rel_excess", r.min_excess_rel, kBelow, PassIf::at_least,
                     "an eval loss lies below the exact minimum: the optimum or the loss is wrong"));

  for (const char* label : {"fp32_master", "bf16_rne", "bf16_sr", "int8_state"}) {
    std::vector<double> loss, unchanged, finals;
    uint64_t n_runs = 0, n_steps = 0;
    std::string seeds;
    for (const auto& run : r.runs) {
      if (run.label != label) continue;
      ++n_runs;
      n_steps = run.eval_loss.size();
      loss.insert(loss.end(), run.eval_loss.begin(), run.eval_loss.end());
      unchanged.insert(unchanged.end(), run.unchanged_frac.begin(), run.unchanged_frac.end());
      finals.push_back(run.final_loss);
      seeds += (seeds.empty() ? "" : ",") + std::to_string(run.run_seed);
    }
    CaseRecord& cs = report.add_case(claim, std::string("curves ") + label);
    cs.set_attr("label", label).set_attr("run_seeds", seeds).set_attr("sizes", sizes);
    cs.add_f64_2d("eval_loss", n_runs, n_steps, loss, "eval loss after each step [run seed, step]")
        .add_f64_2d("unchanged_frac", n_runs, n_steps, unchanged, "fraction of stored weights a step left unchanged [run seed, step]")
        .add_f64("final_loss", finals, "mean eval loss over the last 10% of steps, per run seed");
    int64_t bad = n_runs == sc.run_seeds.size() ? 0 : 1;
    for (double x : loss) bad += !std::isfinite(x);
    cs.add_check(judge("curves_complete_and_finite", "bad_entries", double(bad), 0, PassIf::at_most,
                       "missing run or non-finite loss"));
  }
  progress.note(at.group + ": " + num(fidelity_seconds_since(t0)) + " s; gaps RNE " + num(100 * r.rne_gap) + "%, SR " +
                num(100 * r.sr_gap) + "%, INT8 " + num(100 * r.int8_gap) + "%");
}

}  // namespace

void claim_stagnation(const VerifyConfig& cfg, Report& report, const Progress& progress, const ClaimVariant& variant) {
  run_fidelity(run_stagnation_claim, variant, cfg, report, progress);
}

}  // namespace fh
