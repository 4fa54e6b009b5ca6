// ext_model_memory: each configuration's measured peak memory against torch fused AdamW's and the
// README's (the README figures and decisions: suites/claims/ext_model_common.h).
#include <cmath>

#include "suites/claims/ext_model_common.h"

namespace fh {

void claim_ext_model_memory(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  if (measurements_absent(cfg.external_model, report, "ext_model_memory", "--external-model")) return;
  const std::vector<ModelBenchResult>& runs = claim_inputs(cfg).model_runs;
  for (const ModelBenchResult& r : runs) {
    CaseRecord& cs = model_case(report, "ext_model_memory", r);
    if (record_failed_run(cs, r)) continue;
    const double gib = r.peak_bytes / kGiB;
    cs.add_f64("peak_gib", {gib}, "torch.cuda.max_memory_allocated over all steps, GiB");
    cs.add_f64("peak_gb", {r.peak_bytes / 1e9}, "the same peak in 10^9 bytes");
    if (const auto row = readme_row(r.config)) {
      cs.set_attr("readme_row", row->row);
      cs.add_f64("readme_peak", {row->peak_gib}, "the README's peak for this row (read as GiB)");
      const double rel = std::fabs(gib - row->peak_gib) / row->peak_gib;
      cs.add_check(judge("matches_readme_peak", "relative_difference", rel, kPeakTolerance, PassIf::at_most,
                         "peak " + std::to_string(gib) + " GiB against the README's " + std::to_string(row->peak_gib)));
    } else {
      cs.add_check(Check::not_run("matches_readme_peak", "the README has no row for configuration " + r.config));
    }
    if (r.config == "torch_fused") continue;
    const ModelBenchResult* b = torch_fused_baseline(runs, r);
    if (!b) {
      cs.add_check(Check::not_run("below_torch_fused", "no finished torch_fused run of model " + r.model));
      continue;
    }
    cs.add_f64("torch_fused_peak_gib", {b->peak_bytes / kGiB}, "the baseline's peak, GiB");
    cs.add_check(ratio_below_one("below_torch_fused", r.peak_bytes / b->peak_bytes,
                                 "the peak is not below torch.optim.AdamW(fused=True)'s"));
    progress.note(r.config + ": peak " + std::to_string(gib) + " GiB");
  }
}

}  // namespace fh
