#include "suites/claims/fidelity_common.h"

#include <cstdio>

#include "kernels/gpu/gpu_step_backend.h"
#include "oracles/param_compare.h"

namespace fh {

void run_fidelity(FidelityBody body, const ClaimVariant& variant, const VerifyConfig& cfg, Report& report,
                  const Progress& progress) {
  if (variant.backend == ClaimBackend::twin) {
    body(cfg, report, progress, Where{variant.group, nullptr});
    return;
  }
  TwinTally tally;
  const FusedStepBackend be = gpu_backend_with_twin_tally(&tally);
  body(cfg, report, progress, Where{variant.group, &be});
  record_twin_tally_case(report, variant.group, tally, progress);
}

void record_twin_tally_case(Report& report, const std::string& group, const TwinTally& tally,
                            const Progress& progress) {
  CaseRecord& cs = report.add_case(group, "fused kernel == host twin on every step");
  cs.set_attr("steps", std::to_string(tally.steps)).set_attr("values_compared", std::to_string(tally.ev.values));
  const double diff = double(tally.ev.differing);
  // No step compared is no evidence: a fail, whatever the (zero) count.
  cs.add_check(judge_and("gpu_equals_twin", "differing", diff, 0, PassIf::at_most, tally.steps > 0,
                         tally.steps ? tally.ev.first_diff : "no step compared"));
  progress.note(group + ": " + std::to_string(tally.steps) + " GPU steps, " + std::to_string(tally.ev.values) +
                " values compared with the twin, " + std::to_string(tally.ev.differing) + " differ");
}

FusedStepBackend gpu_backend_with_twin_tally(TwinTally* tally) {
  return with_twin_tally(gpu::make_gpu_step_backend(), tally, [](const TwinSchedule& sched) {
    const gpu::TileShape t = gpu::gpu_tile_for(sched);
    return TileShape{t.rows, t.cols};
  });
}

std::string fidelity_fmt(const char* f, double a, double b, double c) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

ClaimCaseResult fidelity_bitwise_case(const std::string& claim, const std::string& name,
                                      const std::vector<BitwiseReport>& reps) {
  ParamEvidence ev;
  for (const auto& r : reps) ev.add(r);
  return bitwise_case(claim, name, ev);
}

double fidelity_seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace fh
