// Machine-readable summaries of a report, for CI and nightly runs: the same content as
// forge-verify's verdict table. JSON (nlohmann-json): meta, the overall verdict and counts, and
// per claim its verdict, counts and every check with its evidence (an unmeasured number is
// null). JUnit XML (pugixml): one testsuite per claim, one testcase per check (classname
// "<claim>.<case>"), a failed check a <failure>, an error an <error>, a not-run check
// <skipped> with its reason: a not-run is never counted as passed. A finding is never a
// failure: its word (confirmed, refuted, inconclusive) and a refutation's evidence are the
// testcase's properties, an inconclusive one also <skipped>.
#pragma once
#include <string>
#include <vector>

#include "reports/report.h"

namespace fh {

// What the run adds to the report's content in its JSON summary.
struct RunSummary {
  int exit_code = 0;
  bool require_gpu = false;
  // GPU claims with nothing run that the machine could run (every one when no GPU is visible);
  // a claim not applicable here (it needs 2 GPUs, 1 visible) is not among them.
  std::vector<std::string> gpu_claims_not_run;
  std::string report_path;
  double seconds = 0;
};

std::string summary_json(const ReportData& r, const RunSummary& run);
std::string junit_xml(const ReportData& r);

}  // namespace fh
