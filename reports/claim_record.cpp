#include "reports/claim_record.h"

namespace fh {

std::vector<CaseRecord*> record_claim_cases(Report& report, const std::vector<ClaimCaseResult>& results,
                                            const std::string& claim) {
  std::vector<CaseRecord*> made;
  for (const ClaimCaseResult& r : results) {
    CaseRecord& cs = report.add_case(claim, r.case_name);
    made.push_back(&cs);
    if (!r.note.empty()) cs.set_attr("note", r.note);
    if (r.not_run) { cs.add_check(Check::not_run(claim, r.note.empty() ? "not run" : r.note)); continue; }
    const bool bitwise = r.bound == 0 && r.metric == double(r.differing);
    Check c = r.pass ? Check::passed(claim, bitwise ? "differing" : "metric", r.metric, r.bound)
                     : Check::failed(claim, bitwise ? "differing" : "metric", r.metric, r.bound, r.first_diff.empty() ? r.note : r.first_diff);
    if (bitwise) c.bitwise(r.differing, r.max_ulp, r.differing ? (r.first_diff.empty() ? "unknown" : r.first_diff) : "");
    cs.add_check(c);
  }
  return made;
}

}  // namespace fh
