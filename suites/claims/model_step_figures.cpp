// model_step_figures: the paper's memory and speed figures judged on the harness's own
// model-shaped step (forge-model-step on the runner, --model-step F.json), side by side with torch
// on the same model in the same runner call (scripts/forge_model_bench.py, --external-model F.json:
// torch_fused and torch_hooks). Per harness run:
//   memory_model_upper_bound   measured pool peak <= the model's sum of terms (Eq. 6 with the
//                              unfused gradients, or the standard path's equation) plus the
//                              measured workspace peak (transients the model has no term for)
//   eq6_within_3pct            fused: measured pool peak within 3% of Eq. 6 as written (2P + kP +
//                              0 + activations the step held + tile), the target this claim sets
//   linear_gradients_zero      fused: no linear weight's G in the pool (Eq. 6's zero term)
//   below_torch_fused_by_gradient_pool  fused: torch fused AdamW's peak minus ours >= 2P (the
//                              bf16 gradients torch holds)
//   below_torch_hooks          fused: below optimizer-in-backward hooks' peak
//   more_than_halves           fused: peak <= half of torch fused AdamW's (the paper's sentence)
//   time_0p8_of_torch          fused: median step time <= 0.8 x torch fused AdamW's (target)
//   speedup_about_1p5          fused: torch's time / ours >= 1.4 ("about 1.5x", read as 1.5 - 0.1)
//   family_speedup_at_least_1p07  fused, the Qwen3 family and GPT-2 124M (issue 33): torch's time /
//                              ours >= 1.07, the low end of the paper's 1.07-1.52x across the family
//   remark1_bitwise            fused: the standard run of the same configuration has the same
//                              digests of every linear's dX (step 1) and of every weight and state
//   tied_gradient_held         tied: the fallback holds the tied weight's whole gradient (P_tied x 4
//                              bytes) at every backward mark (Eq. 6's scope, measured)
// Capacity runs (--capacity): the most layers that fit, per path; fits_only_under_forge: the paper's
// "fits only under FORGE" for the full model, against torch fused AdamW's run of it.
#include <algorithm>
#include <cmath>
#include <map>

#include "inputs/external_bench.h"
#include "suites/claims/claim_entries.h"
#include "suites/claims/external_common.h"

namespace fh {

namespace {

constexpr const char* kClaim = "model_step_figures";
constexpr double kModelTolerance = 0.03, kTimeTarget = 0.8, kSpeedup = 1.4;
constexpr double kFamilySpeedup = 1.07;  // §3: 1.07-1.52x across the Qwen3 family
// The 14B is named qwen14b in the files (inputs/external_bench.cpp): it belongs to the family too.
bool family_model(const std::string& m) { return m.rfind("qwen3_", 0) == 0 || m == "qwen14b" || m == "gpt2_124m"; }

const ModelBenchResult* torch_run(const std::vector<ModelBenchResult>& runs, const std::string& config,
                                  const ModelStepRun& r) {
  for (const auto& b : runs)
    if (b.config == config && b.model == r.common.model && (b.layers < 0 || b.layers == r.layers)) return &b;
  return nullptr;
}

bool same_setup(const ModelStepRun& a, const ModelStepRun& b) {
  return a.common.model == b.common.model && a.layers == b.layers && a.state == b.state && a.store == b.store &&
         a.tied == b.tied && a.common.seq == b.common.seq && a.common.steps == b.common.steps && !b.capacity();
}

int count_diff(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.size() != b.size()) return -1;
  int n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
  return n;
}

Check ratio_at_most(const std::string& name, double ratio, double limit, const std::string& what) {
  return judge(name, "ratio", ratio, limit, PassIf::at_most, what + " (ratio " + std::to_string(ratio) + ")");
}

void judge_measured(CaseRecord& cs, const ModelStepRun& r, const std::vector<ModelStepRun>& all,
                    const std::vector<ModelBenchResult>& torch) {
  const double peak = r.common.peak_bytes;
  cs.add_f64("peak_bytes", {peak}, "the pool's highest use over all steps (cudaMemPoolAttrUsedMemHigh)");
  cs.add_f64("median_ms", {r.common.median_ms}, "median step time after the warm-up steps (CUDA events)");
  std::vector<int64_t> tag_bytes;
  std::string tag_names;
  for (const auto& [k, v] : r.tag_peaks) {
    tag_bytes.push_back(v);
    tag_names += (tag_names.empty() ? "" : ",") + k;
  }
  cs.add_i64("tag_peak_bytes", tag_bytes, "highest bytes per pool tag in step 1: " + tag_names);
  std::vector<int64_t> in_use, pk, outside, terms;
  std::string phases, term_names;
  for (const auto& ph : r.timeline) {
    in_use.push_back(ph.in_use);
    pk.push_back(ph.peak);
    outside.push_back(ph.outside_pool);
    phases += (phases.empty() ? "" : ",") + ph.name;
  }
  for (const auto& [n, b] : r.model_terms) {
    terms.push_back(b);
    term_names += (term_names.empty() ? "" : ",") + n;
  }
  std::string phases_attr = phases;
  for (char& c : phases_attr)
    if (c == ',') c = ';';
  cs.set_attr("timeline_phases", phases_attr);  // scripts/render_memory_timeline.py reads it
  cs.add_i64("timeline_in_use", in_use, "pool bytes in use at each phase mark of step 1: " + phases);
  cs.add_i64("timeline_peak", pk, "pool high-water mark since the previous mark: " + phases);
  cs.add_i64("timeline_outside_pool", outside, "device memory the pool does not hold (context, cuBLAS, modules)");
  cs.add_i64("memory_model_bytes", terms, "the model's terms: " + term_names);
  // The model adds every term's own peak; the step's peak is the peak of the sum, so the model plus
  // the transients it has no term for (tag workspace: activation gradients, logits, cuBLAS's
  // workspace) is an upper bound (the standard path's gradients peak after the activations are gone;
  // an untied fused path's unfused gradients are made after them).
  const auto ws = r.tag_peaks.find("workspace");
  const double bound = double(r.model_total) + (ws == r.tag_peaks.end() ? 0.0 : double(ws->second));
  cs.add_f64("memory_model_residual_bytes", {peak - double(r.model_total), bound},
             "measured peak minus the model's total; the bound (model + workspace peak)");
  cs.add_check(judge("memory_model_upper_bound", "bytes", peak, bound, PassIf::at_most,
                     "the measured peak exceeds the model's terms plus the workspace peak"));
  if (r.update == "fused") {
    // Eq. 6 as the paper writes it: 2P + kP + 0 + sum |a_l| + O(TR TC), without the gradients of the
    // parameters outside its scope (embedding, norms, a tied weight).
    int64_t eq6 = 0;
    for (const auto& [n, b] : r.model_terms) eq6 += n == "gradients_not_fusable" ? 0 : b;
    const double rel = std::fabs(peak - double(eq6)) / double(eq6);
    cs.add_f64("eq6_bytes", {double(eq6)}, "Eq. 6 as written, with the activations the step held");
    cs.add_check(judge("eq6_within_3pct", "relative_difference", rel, kModelTolerance, PassIf::at_most,
                       "peak " + std::to_string(int64_t(peak)) + " bytes against Eq. 6's " + std::to_string(eq6)));
  }
  if (r.tied) {
    // The referee's scope objection, measured: the tied weight's fallback holds its whole gradient
    // through the backward pass (from the head's backward to the step), on either path.
    int64_t least = -1;
    for (const auto& ph : r.timeline)
      if (ph.name.starts_with("backward.") && ph.name != "backward.embedding")
        least = least < 0 ? ph.gradients_unfused : std::min(least, ph.gradients_unfused);
    cs.add_i64("tied_gradient_bytes", {r.tied_gradient_bytes, least},
               "P_tied x 4; the least unfused-gradient bytes in use at the backward marks");
    cs.add_check(judge("tied_gradient_held", "bytes", double(least), double(r.tied_gradient_bytes), PassIf::at_least,
                       "the tied weight's gradient is not held through backward"));
  }
  if (r.update != "fused") return;

  const auto g = r.tag_peaks.find("gradients");
  const int64_t lin_g = g == r.tag_peaks.end() ? -1 : g->second;
  // -1 (no gradients tag in the file) is not a measured zero.
  cs.add_check(judge_and("linear_gradients_zero", "bytes", double(lin_g), 0, PassIf::at_most, lin_g >= 0,
                         "linear gradients held in the pool on the fused path"));
  const ModelBenchResult* tf = torch_run(torch, "torch_fused", r);
  const ModelBenchResult* th = torch_run(torch, "torch_hooks", r);
  if (!tf || tf->status != "ok") {
    const std::string why = "no finished torch_fused run of model " + r.common.model + " in --external-model";
    for (const char* n : {"below_torch_fused_by_gradient_pool", "more_than_halves", "time_0p8_of_torch", "speedup_about_1p5"})
      cs.add_check(Check::not_run(n, why));
    if (family_model(r.common.model)) cs.add_check(Check::not_run("family_speedup_at_least_1p07", why).as_finding());
  } else {
    cs.add_f64("torch_fused_peak_bytes", {tf->peak_bytes}, "torch.optim.AdamW(fused=True), max_memory_allocated");
    cs.add_f64("torch_fused_median_ms", {tf->median_ms}, "torch.optim.AdamW(fused=True), median step");
    const double pool = 2.0 * double(r.common.params);  // torch's bf16 gradients
    const double saved = tf->peak_bytes - peak;
    cs.add_check(judge("below_torch_fused_by_gradient_pool", "bytes_saved", saved, pool, PassIf::at_least,
                       "saves less than the 2P-byte gradient pool torch holds"));
    cs.add_check(ratio_at_most("more_than_halves", peak / tf->peak_bytes, 0.5,
                               "the peak is not half of torch fused AdamW's or less"));
    cs.add_check(ratio_at_most("time_0p8_of_torch", r.common.median_ms / tf->median_ms, kTimeTarget,
                               "the step takes more than 0.8x torch fused AdamW's"));
    const double speedup = tf->median_ms / r.common.median_ms;
    cs.add_check(judge("speedup_about_1p5", "speedup", speedup, kSpeedup, PassIf::at_least,
                       "not about 1.5x faster than torch fused AdamW"));
    if (family_model(r.common.model))
      cs.add_check(judge("family_speedup_at_least_1p07", "speedup", speedup, kFamilySpeedup, PassIf::at_least,
                         "below the low end of the paper's 1.07-1.52x across the family")
                       .as_finding());
  }
  if (!th || th->status != "ok") {
    cs.add_check(Check::not_run("below_torch_hooks", "no finished torch_hooks run of model " + r.common.model));
  } else {
    cs.add_f64("torch_hooks_peak_bytes", {th->peak_bytes}, "optimizer-in-backward hooks, max_memory_allocated");
    cs.add_f64("torch_hooks_median_ms", {th->median_ms}, "optimizer-in-backward hooks, median step");
    cs.add_check(ratio_at_most("below_torch_hooks", peak / th->peak_bytes, 1.0,
                               "the peak is not below the optimizer-in-backward hooks' peak"));
  }
  const ModelStepRun* std_run = nullptr;
  for (const auto& o : all)
    if (o.update == "standard" && o.common.status == "ok" && same_setup(r, o)) std_run = &o;
  if (!std_run) {
    cs.add_check(Check::not_run("remark1_bitwise", "no finished standard run of the same configuration"));
  } else {
    const int dx = count_diff(r.dx_digests, std_run->dx_digests);
    const int w = count_diff(r.weight_digests, std_run->weight_digests);
    const int s = count_diff(r.state_digests, std_run->state_digests);
    cs.add_i64("remark1_digests_differ", {dx, w, s}, "dX (step 1), weights, state: digests that differ (-1: counts differ)");
    const int bad = (dx != 0) + (w != 0) + (s != 0);
    cs.add_check(judge("remark1_bitwise", "differing", double(bad), 0, PassIf::at_most,
                       "fused and standard differ: dX " + std::to_string(dx) + ", weights " + std::to_string(w) +
                           ", state " + std::to_string(s)));
  }
}

}  // namespace

void claim_model_step_figures(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  if (inputs_absent(cfg.model_step, report, kClaim,
                    "no measurements given: run forge-verify --model-step FILE.json (forge-model-step on the runner)"))
    return;
  const std::vector<ModelStepRun>& runs = claim_inputs(cfg).model_steps;
  const std::vector<ModelBenchResult>& torch = claim_inputs(cfg).model_runs;
  for (const ModelStepRun& r : runs) {
    CaseRecord& cs = report.add_case(kClaim, r.common.config + "." + r.common.model + ".L" + std::to_string(r.layers));
    cs.set_attr("file", r.common.path).set_attr("config", r.common.config).set_attr("model", r.common.model)
        .set_attr("update", r.update).set_attr("state", r.state).set_attr("store", r.store)
        .set_attr("tied", r.tied ? "yes" : "no").set_attr("device", r.common.device)
        .set_attr("setting", "batch 1, sequence " + std::to_string(r.common.seq) + ", " + std::to_string(r.layers) + " layers");
    cs.add_check(judge_true("ran", "failed", r.common.status == "ok", "the configuration did not finish: " + r.common.error));
    if (r.common.status != "ok") continue;
    if (r.capacity()) {
      cs.add_i64("max_layers_fit", {r.max_layers_fit, r.capacity_max_tried}, "most layers that fit; the most tried");
      progress.note(r.common.config + ": " + std::to_string(r.max_layers_fit) + " layers fit");
      continue;
    }
    cs.add_check(judge("losses_finite", "nonfinite", double(r.common.nonfinite_losses), 0, PassIf::at_most,
                       "a loss is not finite"));
    judge_measured(cs, r, runs, torch);
    progress.note(r.common.config + ": peak " + std::to_string(r.common.peak_bytes / 1073741824.0) + " GiB, " +
                  std::to_string(r.common.median_ms) + " ms");
  }
  // "Fits only under FORGE": judged per model that has a fused capacity run, against torch fused
  // AdamW's run of the full model.
  std::map<std::string, const ModelStepRun*> fused_capacity;
  for (const auto& r : runs)
    if (r.capacity() && r.update == "fused" && r.common.status == "ok") fused_capacity[r.common.model] = &r;
  for (const auto& [model, r] : fused_capacity) {
    CaseRecord& cs = report.add_case(kClaim, "fits_only_under_forge." + model);
    const ModelBenchResult* tf = torch_run(torch, "torch_fused", *r);
    if (!tf) {
      cs.add_check(Check::not_run("fits_only_under_forge", "no torch_fused run of " + model + " in --external-model"));
      continue;
    }
    cs.set_attr("torch_file", tf->path).set_attr("torch_status", tf->status);
    if (tf->peak_bytes >= 0) cs.add_f64("torch_fused_peak_bytes", {tf->peak_bytes}, "torch fused AdamW's peak on the model");
    cs.add_i64("max_layers_fit", {r->max_layers_fit, tf->layers}, "fused: most layers that fit; the full model's layers");
    // Torch did not fit: then the fused step must hold the full model's layers.
    if (tf->status != "ok" && r->max_layers_fit < tf->layers)
      cs.add_check(judge("fits_only_under_forge", "fused_layers", double(r->max_layers_fit), double(tf->layers),
                         PassIf::at_least,
                         "neither fits: the fused step holds " + std::to_string(r->max_layers_fit) + " layers"));
    else
      cs.add_check(judge_true("fits_only_under_forge", "torch_fits", tf->status != "ok",
                              "torch fused AdamW fits " + model + " (" + std::to_string(tf->layers) + " layers, peak " +
                                  std::to_string(tf->peak_bytes / 1073741824.0) + " GiB): it does not fit only under FORGE"));
  }
}

}  // namespace fh
