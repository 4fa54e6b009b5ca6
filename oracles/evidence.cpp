#include "oracles/evidence.h"

#include <stdexcept>
#include <utility>

namespace fh {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::pass: return "pass";
    case Verdict::fail: return "fail";
    case Verdict::not_run: return "not-run";
  }
  return "invalid";
}

Verdict parse_verdict(std::string_view name) {
  if (name == "pass") return Verdict::pass;
  if (name == "fail") return Verdict::fail;
  if (name == "not-run") return Verdict::not_run;
  throw std::invalid_argument("unknown verdict '" + std::string(name) + "'");
}

Verdict Counts::verdict() const {
  if (n_fail > 0) return Verdict::fail;
  if (n_pass > 0) return Verdict::pass;
  return Verdict::not_run;
}

void Counts::add(Verdict v) {
  switch (v) {
    case Verdict::pass: ++n_pass; break;
    case Verdict::fail: ++n_fail; break;
    case Verdict::not_run: ++n_not_run; break;
  }
}

Counts& Counts::operator+=(const Counts& o) {
  n_pass += o.n_pass;
  n_fail += o.n_fail;
  n_not_run += o.n_not_run;
  return *this;
}

Check Check::passed(std::string name, std::string metric_name, double metric, double bound) {
  Check c;
  c.name = std::move(name);
  c.verdict = Verdict::pass;
  c.metric_name = std::move(metric_name);
  c.metric = metric;
  c.bound = bound;
  return c;
}

Check Check::failed(std::string name, std::string metric_name, double metric, double bound,
                    std::string reason) {
  Check c = passed(std::move(name), std::move(metric_name), metric, bound);
  c.verdict = Verdict::fail;
  c.reason = std::move(reason);
  return c;
}

Check Check::not_run(std::string name, std::string reason) {
  Check c;
  c.name = std::move(name);
  c.verdict = Verdict::not_run;
  c.reason = std::move(reason);
  return c;
}

Check& Check::bitwise(int64_t n_differing, double ulp, std::string first) {
  differing = n_differing;
  max_ulp = ulp;
  first_diff = std::move(first);
  return *this;
}

Check case_check(const ClaimCaseResult& r, const std::string& check_name) {
  if (r.not_run) return Check::not_run(check_name, r.note.empty() ? "not run" : r.note);
  const bool bitwise = r.bound == 0 && r.metric == double(r.differing);
  Check c = r.pass ? Check::passed(check_name, bitwise ? "differing" : "metric", r.metric, r.bound)
                   : Check::failed(check_name, bitwise ? "differing" : "metric", r.metric, r.bound,
                                   r.first_diff.empty() ? r.note : r.first_diff);
  if (bitwise) c.bitwise(r.differing, r.max_ulp, r.differing ? (r.first_diff.empty() ? "unknown" : r.first_diff) : "");
  return c;
}

}  // namespace fh
