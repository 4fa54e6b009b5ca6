// The fp32-vs-MPFR judge; see rule_bounds.h.
#include "oracles/rule_bounds.h"

#include <cmath>
#include <limits>

namespace fh {

OutputCheck check_output(const RefOutput& ref, float fp32) {
  OutputCheck c;
  c.bound = ref.bound.toDouble();
  if (ref.status != RefStatus::bounded) { c.judged = false; return c; }
  const mpreal ulp = fp32_ulp_of_real(ref.exact);
  c.bound_ulps = (ref.bound / ulp).toDouble();
  c.judged = true;
  if (std::isnan(fp32) && ref.nan_allowed) { c.was_nan = true; return c; }
  if (!std::isfinite(fp32)) {
    c.pass = false;
    c.err = c.err_ulps = c.ratio = std::numeric_limits<double>::infinity();
    return c;
  }
  // 1024 bits hold fp32 - exact exactly whenever the two are within ~700 binades of each other.
  mpreal diff(0, 1024);
  mpfr_sub(diff.mpfr_ptr(), ref_real(fp32).mpfr_srcptr(), ref.exact.mpfr_srcptr(), MPFR_RNDN);
  diff = abs(diff);
  c.pass = diff <= ref.bound;
  c.err = diff.toDouble();
  c.err_ulps = (diff / ulp).toDouble();
  c.ratio = ref.bound > 0 ? (diff / ref.bound).toDouble()
                          : (diff == 0 ? 0.0 : std::numeric_limits<double>::infinity());
  return c;
}

RuleCheck check_rule_element(const RuleRefResult& ref, float p_fp32, const float* st_fp32) {
  RuleCheck r;
  r.p = check_output(ref.p, p_fp32);
  r.judged = r.p.judged;
  if (!r.p.pass) { r.pass = false; r.first_failure = "p"; }
  for (int k = 0; k < kMaxStates; ++k) {
    if (!ref.kept[k]) continue;
    r.st[k] = check_output(ref.st[k], st_fp32[k]);
    r.judged = r.judged && r.st[k].judged;
    if (!r.st[k].pass && r.pass) { r.pass = false; r.first_failure = "st[" + std::to_string(k) + "]"; }
  }
  return r;
}

}  // namespace fh
