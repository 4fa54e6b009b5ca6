#include "oracles/evidence.h"

#include <cmath>
#include <stdexcept>
#include <utility>

namespace fh {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::pass: return "pass";
    case Verdict::fail: return "fail";
    case Verdict::not_run: return "not-run";
    case Verdict::error: return "error";
  }
  return "invalid";
}

const char* check_kind_name(CheckKind k) {
  switch (k) {
    case CheckKind::contract: return "contract";
    case CheckKind::finding: return "finding";
  }
  return "invalid";
}

CheckKind parse_check_kind(std::string_view name) {
  if (name == "contract") return CheckKind::contract;
  if (name == "finding") return CheckKind::finding;
  throw std::invalid_argument("unknown check kind '" + std::string(name) + "' (contract, finding)");
}

const char* verdict_word(Verdict v, CheckKind k) {
  if (k == CheckKind::contract || v == Verdict::error) return verdict_name(v);
  switch (v) {
    case Verdict::pass: return "confirmed";
    case Verdict::fail: return "refuted";
    case Verdict::not_run: return "inconclusive";
    case Verdict::error: break;
  }
  return "invalid";
}

Verdict parse_verdict_word(std::string_view word, CheckKind k) {
  for (Verdict v : {Verdict::pass, Verdict::fail, Verdict::not_run, Verdict::error})
    if (word == verdict_word(v, k)) return v;
  throw std::invalid_argument("unknown verdict '" + std::string(word) + "' for a " + check_kind_name(k) +
                              (k == CheckKind::contract ? " (pass, fail, not-run, error)"
                                                        : " (confirmed, refuted, inconclusive, error)"));
}

const char* pass_if_name(PassIf p) {
  switch (p) {
    case PassIf::at_most: return "<=";
    case PassIf::below: return "<";
    case PassIf::at_least: return ">=";
    case PassIf::above: return ">";
  }
  return "invalid";
}

PassIf parse_pass_if(std::string_view name) {
  if (name == "<=") return PassIf::at_most;
  if (name == "<") return PassIf::below;
  if (name == ">=") return PassIf::at_least;
  if (name == ">") return PassIf::above;
  throw std::invalid_argument("unknown pass direction '" + std::string(name) + "' (<=, <, >=, >)");
}

Verdict parse_verdict(std::string_view name) {
  if (name == "pass") return Verdict::pass;
  if (name == "fail") return Verdict::fail;
  if (name == "not-run") return Verdict::not_run;
  if (name == "error") return Verdict::error;
  throw std::invalid_argument("unknown verdict '" + std::string(name) + "'");
}

Verdict Counts::verdict() const {
  if (n_fail > 0) return Verdict::fail;
  if (n_error > 0) return Verdict::error;
  if (n_pass > 0 || n_confirmed > 0 || n_refuted > 0) return Verdict::pass;
  return Verdict::not_run;
}

void Counts::add(Verdict v, CheckKind k) {
  if (k == CheckKind::finding) {
    switch (v) {
      case Verdict::pass: ++n_confirmed; return;
      case Verdict::fail: ++n_refuted; return;
      case Verdict::not_run: ++n_inconclusive; return;
      case Verdict::error: ++n_error; return;
    }
  }
  switch (v) {
    case Verdict::pass: ++n_pass; break;
    case Verdict::fail: ++n_fail; break;
    case Verdict::not_run: ++n_not_run; break;
    case Verdict::error: ++n_error; break;
  }
}

Counts& Counts::operator+=(const Counts& o) {
  n_pass += o.n_pass;
  n_fail += o.n_fail;
  n_not_run += o.n_not_run;
  n_error += o.n_error;
  n_confirmed += o.n_confirmed;
  n_refuted += o.n_refuted;
  n_inconclusive += o.n_inconclusive;
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

Check Check::errored(std::string name, std::string message) {
  Check c = not_run(std::move(name), std::move(message));
  c.verdict = Verdict::error;
  return c;
}

Check& Check::passes_if(PassIf p) {
  pass_if = p;
  return *this;
}

Check& Check::as_finding() {
  kind = CheckKind::finding;
  return *this;
}

Check& Check::bitwise(int64_t n_differing, double ulp, std::string first) {
  differing = n_differing;
  max_ulp = ulp;
  first_diff = std::move(first);
  return *this;
}

bool on_passing_side(double metric, double bound, PassIf p) {
  switch (p) {
    case PassIf::at_most: return metric <= bound;
    case PassIf::below: return metric < bound;
    case PassIf::at_least: return metric >= bound;
    case PassIf::above: return metric > bound;
  }
  return false;
}

namespace {

// The one decision every verdict comes from.
bool meets(double metric, double bound, PassIf p) { return std::isfinite(metric) && on_passing_side(metric, bound, p); }

}  // namespace

Check judge_and(std::string name, std::string metric_name, double metric, double bound, PassIf pass_if, bool also,
                std::string reason) {
  if (also && meets(metric, bound, pass_if))
    return Check::passed(std::move(name), std::move(metric_name), metric, bound).passes_if(pass_if);
  // NaN, or an infinity the comparison alone would let pass: the caller's reason would not say why.
  if (std::isnan(metric) || (std::isinf(metric) && on_passing_side(metric, bound, pass_if)))
    reason = metric_name + " is " + (std::isnan(metric) ? "NaN" : metric > 0 ? "inf" : "-inf") +
             ", not a finite measurement" + (reason.empty() ? "" : "; " + reason);
  return Check::failed(std::move(name), std::move(metric_name), metric, bound, std::move(reason)).passes_if(pass_if);
}

Check judge(std::string name, std::string metric_name, double metric, double bound, PassIf pass_if, std::string reason) {
  return judge_and(std::move(name), std::move(metric_name), metric, bound, pass_if, true, std::move(reason));
}

Check judge_true(std::string name, std::string metric_name, bool ok, std::string reason) {
  return judge(std::move(name), std::move(metric_name), ok ? 0.0 : 1.0, 0.0, PassIf::at_most, std::move(reason));
}

void judge_case(ClaimCaseResult& r, double metric, double bound, PassIf pass_if, bool also) {
  r.metric = metric;
  r.bound = bound;
  r.pass_if = pass_if;
  r.pass = also && meets(metric, bound, pass_if);
}

Check case_check(const ClaimCaseResult& r, const std::string& check_name) {
  if (r.not_run) return Check::not_run(check_name, r.note.empty() ? "not run" : r.note);
  const bool bitwise = r.bound == 0 && r.metric == double(r.differing);
  const std::string metric_name = bitwise ? "differing" : r.metric_name.empty() ? "metric" : r.metric_name;
  Check c = r.pass ? Check::passed(check_name, metric_name, r.metric, r.bound)
                   : Check::failed(check_name, metric_name, r.metric, r.bound,
                                   r.first_diff.empty() ? r.note : r.first_diff);
  c.passes_if(r.pass_if);
  if (bitwise) c.bitwise(r.differing, r.max_ulp, r.differing ? (r.first_diff.empty() ? "unknown" : r.first_diff) : "");
  return c;
}

}  // namespace fh
