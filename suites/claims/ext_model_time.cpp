// ext_model_time: each configuration's median step time against torch fused AdamW's and the
// README's figure and spread (the README figures and decisions: suites/claims/ext_model_common.h).
#include <cmath>

#include "suites/claims/ext_model_common.h"

namespace fh {

void claim_ext_model_time(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  if (measurements_absent(cfg.external_model, report, "ext_model_time", "--external-model")) return;
  const std::vector<ModelBenchResult>& runs = claim_inputs(cfg).model_runs;
  for (const ModelBenchResult& r : runs) {
    CaseRecord& cs = model_case(report, "ext_model_time", r);
    if (record_failed_run(cs, r)) continue;
    cs.add_f64("median_ms", {r.median_ms}, "median step time after the warm-up steps, ms");
    cs.add_f64("step_ms", r.step_ms, "every step's time, ms (warm-up first)");
    cs.set_attr("timed_steps", std::to_string(r.steps - r.warmup_steps));
    if (const auto row = readme_row(r.config)) {
      cs.set_attr("readme_row", row->row);
      cs.add_f64("readme_step_ms", {row->step_ms, row->step_spread_ms}, "the README's step time and its +- spread");
      const double off = std::fabs(r.median_ms - row->step_ms);
      cs.add_check(judge("matches_readme_step_time", "abs_difference_ms", off, row->step_spread_ms, PassIf::at_most,
                         "median " + std::to_string(r.median_ms) + " ms, outside the README's " +
                             std::to_string(row->step_ms) + " +- " + std::to_string(row->step_spread_ms)));
    } else {
      cs.add_check(Check::not_run("matches_readme_step_time", "the README has no row for configuration " + r.config));
    }
    if (r.config == "torch_fused") continue;
    const ModelBenchResult* b = torch_fused_baseline(runs, r);
    if (!b) {
      cs.add_check(Check::not_run("faster_than_torch_fused", "no finished torch_fused run of model " + r.model));
      continue;
    }
    cs.add_f64("torch_fused_median_ms", {b->median_ms}, "the baseline's median step time, ms");
    cs.add_check(ratio_below_one("faster_than_torch_fused", r.median_ms / b->median_ms,
                                 "the step is not faster than under torch.optim.AdamW(fused=True)"));
    progress.note(r.config + ": median " + std::to_string(r.median_ms) + " ms");
  }
}

}  // namespace fh
