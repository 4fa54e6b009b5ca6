#include "suites/claims/fidelity_common.h"

#include <algorithm>
#include <cstdio>

#include "kernels/gpu/gpu_step_backend.h"

namespace fh {

void run_fidelity_on_twin(FidelityBody body, const std::string& group, const VerifyConfig& cfg, Report& report,
                          const Progress& progress) {
  body(cfg, report, progress, Where{group, nullptr});
}

void run_fidelity_on_gpu(FidelityBody body, const std::string& group, const VerifyConfig& cfg, Report& report,
                         const Progress& progress) {
  TwinTally tally;
  const FusedStepBackend be = gpu_backend_with_twin_tally(&tally);
  body(cfg, report, progress, Where{group, &be});
  record_twin_tally_case(report, group, tally, progress);
}

void record_twin_tally_case(Report& report, const std::string& group, const TwinTally& tally,
                            const Progress& progress) {
  CaseRecord& cs = report.add_case(group, "fused kernel == host twin on every step");
  cs.set_attr("steps", std::to_string(tally.steps)).set_attr("values_compared", std::to_string(tally.ev.values));
  const double diff = double(tally.ev.differing);
  cs.add_check(tally.clean() ? Check::passed("gpu_equals_twin", "differing", diff, 0)
                             : Check::failed("gpu_equals_twin", "differing", diff, 0,
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
  ClaimCaseResult c;
  c.claim = claim;
  c.case_name = name;
  for (const auto& r : reps) {
    c.differing += r.n_differ;
    c.max_ulp = std::max(c.max_ulp, double(r.max_ulp));
    if (c.first_diff.empty() && r.n_differ) c.first_diff = r.to_string();
  }
  c.metric = double(c.differing);
  c.pass = c.differing == 0;
  return c;
}

double fidelity_seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace fh
