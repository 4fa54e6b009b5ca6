// Bitwise comparison of two whole parameters (weights, the bf16 copy, every kept state slot in
// its stored form; int8: codes and absmax), folding DESIGN contract 7's evidence over arrays and
// steps. Used by the twin claims, the GPU suites and forge-verify.
#pragma once
#include <string>
#include "kernels/formats/host_param.h"
#include "oracles/bitwise.h"
#include "oracles/evidence.h"

namespace fh {

struct ParamEvidence {
  int64_t differing = 0;   // elements that differ, summed over arrays and steps
  double max_ulp = 0;      // largest ulp distance among them (+inf when a NaN differs)
  std::string first_diff;  // the first difference, with its array, coordinate, tile and step
  int64_t compared = 0;    // arrays compared
  int64_t values = 0;      // elements compared, summed over those arrays
  void add(const BitwiseReport& r, const std::string& where = {});
  void add(const ParamEvidence& e);
};

// Every stored array of a and b (same rule, format, store and shape), bit for bit.
void compare_params(ParamEvidence& ev, const HostParam& a, const HostParam& b, int64_t step,
                    TileShape tile, const std::string& where);

// A bitwise check from folded evidence: metric = differing elements, bound = 0; a failure's
// reason is fail_reason (when given) and the first difference.
Check bitwise_check(const std::string& name, const ParamEvidence& ev, const std::string& fail_reason = {});
// A runner's case from folded evidence: differing, max ulp and the first difference, metric =
// differing against bound 0 (a bounded case then judges its own metric with judge_case).
void fill_bitwise(ClaimCaseResult& c, const ParamEvidence& ev);
// The one bitwise case: fill_bitwise, judged (passes when nothing differs).
void judge_bitwise(ClaimCaseResult& c, const ParamEvidence& ev);
// The same as a new case `case_name` of `claim`.
ClaimCaseResult bitwise_case(std::string claim, std::string case_name, const ParamEvidence& ev);
// The evidence of one comparison.
ParamEvidence evidence_of(const BitwiseReport& r, const std::string& where = {});

}  // namespace fh
