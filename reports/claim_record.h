// How forge-verify maps a runner's ClaimCaseResult cases into the report: one case record per
// result under `claim`, one check named after the claim; a bitwise result (bound 0 and metric ==
// differing) carries its bitwise evidence, a not-run result its reason. Shared by the claim files.
#pragma once
#include <string>
#include <vector>

#include "kernels/twin/twin_claims.h"
#include "reports/report.h"

namespace fh {

// Returns the case records it made, in the order of `results`, so callers can add datasets.
std::vector<CaseRecord*> record_claim_cases(Report& report, const std::vector<ClaimCaseResult>& results,
                                            const std::string& claim);

}  // namespace fh
