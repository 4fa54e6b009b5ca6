// suites/claims/ext_model_common.h
#include "suites/claims/ext_model_common.h"

#include "suites/claims/external_common.h"

namespace fh {

std::optional<ReadmeRow> readme_row(const std::string& config) {
  if (config == "torch_fused") return ReadmeRow{"fused AdamW", 60.08, 134.3, 14.1};
  if (config == "forge" || config == "forge_tma_ws") return ReadmeRow{"FORGE", 48.36, 110.2, 8.7};
  if (config == "forge_int8") return ReadmeRow{"FORGE (int8)", 35.32, 155.0, 4.4};
  return std::nullopt;
}

bool measurements_absent(const std::vector<std::string>& files, Report& report, const std::string& claim,
                         const std::string& option) {
  return inputs_absent(files, report, claim,
                       "no measurements given: run forge-verify " + option + " FILE.json (scripts/forge_audit.sh)");
}

CaseRecord& model_case(Report& report, const std::string& claim, const ModelBenchResult& r) {
  CaseRecord& cs = report.add_case(claim, r.config + "." + r.model);
  cs.set_attr("file", r.path).set_attr("config", r.config).set_attr("model", r.model).set_attr("status", r.status)
      .set_attr("setting", "batch " + std::to_string(r.batch) + ", sequence " + std::to_string(r.seq) + ", " + r.dtype)
      .set_attr("device", r.device).set_attr("torch", r.torch).set_attr("triton", r.triton)
      .set_attr("transformers", r.transformers);
  if (!r.forge_commit.empty()) cs.set_attr("forge_commit", r.forge_commit).set_attr("switches", r.switches);
  if (!r.state_mode.empty()) cs.set_attr("state_mode", r.state_mode);
  return cs;
}

// A configuration that did not finish is a verdict: failed, with its error. One that finished
// but trained to NaN fails losses_finite: its memory and time are not those of a working step.
bool record_failed_run(CaseRecord& cs, const ModelBenchResult& r) {
  cs.add_check(judge_true("ran", "failed", r.status == "ok", "the configuration did not finish: " + r.error));
  if (r.status != "ok") return true;
  cs.add_i64("nonfinite_losses", {r.nonfinite_losses, r.losses}, "training losses that were not finite, of all recorded");
  if (r.losses == 0) cs.add_check(Check::not_run("losses_finite", "the file records no losses"));
  else
    cs.add_check(judge("losses_finite", "nonfinite", double(r.nonfinite_losses), 0, PassIf::at_most,
                       std::to_string(r.nonfinite_losses) + " of " + std::to_string(r.losses) +
                           " training losses are NaN or infinite: the run does not train"));
  return false;
}

const ModelBenchResult* torch_fused_baseline(const std::vector<ModelBenchResult>& runs, const ModelBenchResult& r) {
  for (const auto& b : runs)
    if (b.config == "torch_fused" && b.model == r.model && b.status == "ok") return &b;
  return nullptr;
}

Check ratio_below_one(const std::string& name, double ratio, const std::string& what) {
  return judge(name, "ratio", ratio, 1.0, PassIf::below, what + " (ratio " + std::to_string(ratio) + ")");
}

}  // namespace fh
