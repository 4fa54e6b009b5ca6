// The judge that compares an fp32 rule against its MPFR twin (reference/mpfr_rules.h): the
// fp32 output is within the twin's running-error bound (exact/tracked.h), decided
// exactly in MPFR. The derivation and the per-rule shape of the bound are in
// oracles/RULE_BOUNDS.md.
#pragma once
#include <string>

#include "exact/tracked.h"

namespace fh {

// The verdict on one output: |fp32 - exact| <= bound, decided exactly in MPFR.
struct OutputCheck {
  bool judged = false;   // false: the reference flagged the output (status != bounded)
  bool pass = true;
  bool was_nan = false;  // fp32 gave NaN where nan_allowed (pass, counted)
  double err = 0, bound = 0;  // |fp32 - exact| and the bound, rounded to double for display
  double err_ulps = 0;        // err / ulp(exact), ulp as in oracles/ulp.h's ulp_f32
  double bound_ulps = 0;      // bound / ulp(exact)
  double ratio = 0;           // err / bound (0 when both are 0)
};
struct RuleCheck {
  bool pass = true;
  bool judged = true;      // every output was judged
  OutputCheck p;
  OutputCheck st[kMaxStates];
  std::string first_failure;  // "p", "st[1]", ... empty when pass
};
OutputCheck check_output(const RefOutput& ref, float fp32);
RuleCheck check_rule_element(const RuleRefResult& ref, float p_fp32, const float* st_fp32);

}  // namespace fh
