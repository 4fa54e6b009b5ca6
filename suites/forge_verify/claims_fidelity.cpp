// Low-precision fidelity claims (issue 5, no GPU), on the host twin: Proposition 4's INT8 state,
// stochastic rounding on the real Philox stream, the stagnation experiment, gradient fidelity.
// The runners live in reference/fidelity_runs.h (the CPU suites run the same ones at their own
// sizes); this file picks forge-verify's sizes, maps the results into the report through
// record_claim_cases and attaches the runners' datasets. These claims use their own fixed
// problems (rules, shapes, steps), not --rule/--shape: each case says so in its attributes.
// Each claim runs twice: on the host twin (prop4_int8, ...) and, on a GPU machine, with every
// fused step on the fused kernel (prop4_int8_gpu, ...), where each GPU step is also checked
// bitwise against the twin (kernels/gpu/gpu_step_backend.h) and that tally is one more case.
#include <chrono>
#include <cmath>
#include <cstdio>

#include "kernels/gpu/gpu_step_backend.h"
#include "reference/fidelity_runs.h"
#include "reports/claim_record.h"
#include "suites/forge_verify/verify_config.h"

namespace fh {
namespace {

std::string num(double x) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void set_attrs(const std::vector<CaseRecord*>& recs, const std::string& key, const std::string& value) {
  for (CaseRecord* r : recs) r->set_attr(key, value);
}

// ---- prop4_int8 ----

// Where a claim runs: its report group and its fused-step backend (null: the twin).
struct Where {
  std::string group;
  const FusedStepBackend* be = nullptr;
};

void run_prop4(const VerifyConfig& cfg, Report& report, const Progress& progress, const Where& at) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string sizes = "one step and fused==two-phase (4 steps) on 64x128 T=32, degenerate blocks on 16x256, "
                            "trajectory 100 steps (as the suite)";
  for (RuleId rule : {RuleId::adamw, RuleId::sgd_momentum}) {
    Prop4Config pc;
    pc.seed = cfg.seed ^ 0x1A78B10CULL;
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
  Prop4Config dc;
  dc.seed = cfg.seed ^ 0xDE6E7ULL;
  dc.in = 256;
  dc.out = 16;
  dc.backend = at.be;
  set_attrs(record_claim_cases(report, run_int8_degenerate_blocks(dc), at.group), "sizes", sizes);

  Prop4Config tc;
  tc.seed = cfg.seed ^ 0x7A7EC7ULL;
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
  progress.note(at.group + ": " + num(seconds_since(t0)) + " s");
}

// ---- sr_statistics ----

void run_sr_stats(const VerifyConfig& cfg, Report& report, const Progress& progress, const Where& at) {
  const auto t0 = std::chrono::steady_clock::now();
  SrStatsConfig sc;
  sc.seed = cfg.seed ^ 0x5EED0F5Eull;
  sc.through_fused_step = true;  // every draw is a fused step's bf16_sr store
  sc.backend = at.be;
  const SrStatsResult r = run_sr_statistics(sc);
  const std::string sizes = "256x256 elements x 64 steps = 2^22 draws per value class, each a fused SGD step's "
                            "bf16_sr store (as the suite)";
  const auto recs = record_claim_cases(report, r.cases, at.group);
  set_attrs(recs, "sizes", sizes);
  set_attrs(recs, "alpha", num(sc.alpha));
  // The class table, and the binomial tests' power, as its own case.
  CaseRecord& table = report.add_case(at.group, "class table and power");
  table.set_attr("sizes", sizes);
  table.add_f64("class_low16", r.class_low16, "dropped 16 bits of the class")
      .add_f64("observed", r.class_observed, "observed round-up fraction")
      .add_f64("expected", r.class_expected, "exact round-up probability low16 / 2^16")
      .add_f64("threshold", r.class_threshold, "Hoeffding threshold at alpha");
  // Power must be near certain against a 1/256-ulp bias (8-bit SR), at alpha = 1e-9.
  const double want = 1 - 1e-9;
  table.add_check(r.power_vs_1_256 >= want
                      ? Check::passed("power_vs_1_256_ulp", "power_lower_bound", r.power_vs_1_256, want)
                      : Check::failed("power_vs_1_256_ulp", "power_lower_bound", r.power_vs_1_256, want,
                                      "too few draws to see an 8-bit SR bias"));
  // Planted: 8-bit SR must be rejected by the binomial tests (the suite's power, shown). On the
  // twin it is the copy sr_round's variant; on the GPU the kernel's own planted store.
  SrStatsConfig pc = sc;
  const FusedStepBackend untallied = gpu::make_gpu_step_backend();  // the planted run is not a twin comparison
  if (at.be) {
    pc.backend = &untallied;
    gpu::set_fused_planted_defect(gpu::FusedPlantedDefect::sr_bits8);
  } else {
    pc.through_fused_step = false;
    pc.variant = SrVariant::bits8;
  }
  int64_t rejected = 0;
  try {
    for (const auto& c : run_sr_statistics(pc).cases) rejected += c.claim == "sr_binomial" && !c.pass;
  } catch (...) {
    gpu::set_fused_planted_defect(gpu::FusedPlantedDefect::none);
    throw;
  }
  gpu::set_fused_planted_defect(gpu::FusedPlantedDefect::none);
  CaseRecord& planted = report.add_case(at.group, at.be ? "planted 8-bit SR in the kernel is rejected" : "planted 8-bit SR is rejected");
  planted.set_attr("sizes", sizes).set_attr("note", "classes with low byte 0xff carry a 255/65536-ulp bias under 8-bit SR");
  planted.add_check(rejected >= 4 ? Check::passed("bits8_rejected", "classes_rejected", double(rejected), 4)
                                  : Check::failed("bits8_rejected", "classes_rejected", double(rejected), 4,
                                                  "the binomial tests miss a 1/256-ulp bias"));
  set_attrs(record_claim_cases(report, run_sr_layout_invariance(cfg.seed ^ 0x1A70u, SrVariant::kernel, at.be), at.group),
            "sizes", at.be ? "96x160, the kernel's 2 tile shapes (grids 2x1, 3x2), 2 steps"
                           : "96x160, 6 tile shapes and visit orders, 2 steps");
  progress.note(at.group + ": " + num(seconds_since(t0)) + " s");
}

// ---- stagnation ----

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
  auto add = [&](const std::string& name, const std::string& check, bool pass, const std::string& metric_name,
                 double metric, double bound, const std::string& note) {
    CaseRecord& cs = report.add_case(claim, name);
    cs.set_attr("sizes", sizes).set_attr("note", note);
    cs.add_check(pass ? Check::passed(check, metric_name, metric, bound)
                      : Check::failed(check, metric_name, metric, bound, note));
    return &cs;
  };
  add("bf16_sr vs fp32_master", "sr_within_noise", r.sr_abs_diff <= noise, "abs_final_loss_diff", r.sr_abs_diff, noise,
      "SR gap " + num(100 * r.sr_gap) + "%; noise band = 2 sample std of fp32 master's final loss over seeds");
  CaseRecord* rne = add("bf16_rne vs fp32_master", "rne_gap_beyond_noise", r.rne_gap > noise / r.fp32_mean, "rel_gap",
                        r.rne_gap, noise / r.fp32_mean,
                        "RNE gap " + num(100 * r.rne_gap) + "% (paper ~6%); pass when the gap exceeds the noise band");
  rne->add_f64("vanish_frac", {r.rne_vanish_frac}, "RNE: mean fraction of weights a step left unchanged, second half");
  // INT8 state: the gap is a measured finding, not a harness property. Decision: forge-verify
  // gates only what CI gates (INT8 beats RNE); "within the noise band" is reported as data.
  CaseRecord* i8 = add("int8_state vs fp32_master", "int8_gap_below_rne_gap", r.int8_gap < r.rne_gap, "rel_gap",
                       r.int8_gap, r.rne_gap,
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
  sum.add_check(r.fp32_std > 0 ? Check::passed("run_to_run_noise_nonzero", "fp32_final_loss_std", r.fp32_std, 0)
                               : Check::failed("run_to_run_noise_nonzero", "fp32_final_loss_std", r.fp32_std, 0,
                                               "run seeds gave identical fp32 runs: no noise band"));
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
    cs.add_check(bad == 0 ? Check::passed("curves_complete_and_finite", "bad_entries", 0, 0)
                          : Check::failed("curves_complete_and_finite", "bad_entries", double(bad), 0,
                                          "missing run or non-finite loss"));
  }
  progress.note(at.group + ": " + num(seconds_since(t0)) + " s; gaps RNE " + num(100 * r.rne_gap) + "%, SR " +
                num(100 * r.sr_gap) + "%, INT8 " + num(100 * r.int8_gap) + "%");
}

// ---- gradient_fidelity ----

void run_grad_fidelity(const VerifyConfig& cfg, Report& report, const Progress& progress, const Where& at) {
  const auto t0 = std::chrono::steady_clock::now();
  for (RuleId rule : {RuleId::adamw, RuleId::sgd}) {
    GradFidelityConfig gc;
    gc.seed = cfg.seed ^ 0x6AD1F1DEULL;
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
  progress.note(at.group + ": " + num(seconds_since(t0)) + " s");
}

using ClaimBody = void (*)(const VerifyConfig&, Report&, const Progress&, const Where&);

// The claim on the twin.
std::function<void(const VerifyConfig&, Report&, const Progress&)> on_twin(ClaimBody body, const std::string& group) {
  return [body, group](const VerifyConfig& cfg, Report& report, const Progress& progress) {
    body(cfg, report, progress, Where{group, nullptr});
  };
}

// The claim with the fused kernel doing every step, each step checked against the twin; the
// tally is its own case ("fused kernel == host twin on every step").
std::function<void(const VerifyConfig&, Report&, const Progress&)> on_gpu(ClaimBody body, const std::string& group) {
  return [body, group](const VerifyConfig& cfg, Report& report, const Progress& progress) {
    gpu::TwinTally tally;
    const FusedStepBackend be = gpu::make_gpu_step_backend(&tally);
    body(cfg, report, progress, Where{group, &be});
    CaseRecord& cs = report.add_case(group, "fused kernel == host twin on every step");
    cs.set_attr("steps", std::to_string(tally.steps)).set_attr("values_compared", std::to_string(tally.ev.values));
    const double diff = double(tally.ev.differing);
    cs.add_check(tally.clean() ? Check::passed("gpu_equals_twin", "differing", diff, 0)
                               : Check::failed("gpu_equals_twin", "differing", diff, 0,
                                               tally.steps ? tally.ev.first_diff : "no step compared"));
    progress.note(group + ": " + std::to_string(tally.steps) + " GPU steps, " + std::to_string(tally.ev.values) +
                  " values compared with the twin, " + std::to_string(tally.ev.differing) + " differ");
  };
}

}  // namespace

void add_fidelity_claims(std::vector<ClaimSpec>& out) {
  struct Family { const char* name; const char* what; ClaimBody body; };
  const Family families[] = {
      {"prop4_int8", "Proposition 4: INT8 moments within the codec bound, fused == two-phase INT8, degenerate blocks, trajectory", run_prop4},
      {"sr_statistics", "stochastic rounding on the Philox stream through the fused bf16_sr store: binomial tests (with power), independence, layout invariance", run_sr_stats},
      {"stagnation", "least squares under fp32 master / bf16 RNE / bf16 SR / INT8 state: curves, vanished updates, gaps", run_stagnation_claim},
      {"gradient_fidelity", "fp32 G (the fused path) vs G rounded to bf16: bitwise identity, half-ulp rounding, measured update bias and error", run_grad_fidelity}};
  for (const Family& f : families) out.push_back({f.name, f.what, false, on_twin(f.body, f.name)});
  for (const Family& f : families)
    out.push_back({std::string(f.name) + "_gpu", std::string(f.what) + "; every step on the fused kernel, checked against the twin",
                   true, on_gpu(f.body, std::string(f.name) + "_gpu")});
}

}  // namespace fh
