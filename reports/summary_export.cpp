#include "reports/summary_export.h"

#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>
#include <pugixml.hpp>

namespace fh {

namespace {

using json = nlohmann::ordered_json;

json number(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

// +inf and -inf are kept as strings (a bound of +inf means "reported, not judged").
json bound_value(double x) {
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return number(x);
}

json counts_json(const Counts& c) {
  return json{{"pass", c.n_pass},           {"fail", c.n_fail},          {"not_run", c.n_not_run},
              {"error", c.n_error},         {"confirmed", c.n_confirmed}, {"refuted", c.n_refuted},
              {"inconclusive", c.n_inconclusive}};
}

json check_json(const Check& ck) {
  json j{{"name", ck.name}, {"kind", check_kind_name(ck.kind)}, {"verdict", ck.word()}};
  if (ck.verdict == Verdict::pass || ck.verdict == Verdict::fail) {
    j["metric_name"] = ck.metric_name;
    j["metric"] = number(ck.metric);
    j["pass_if"] = pass_if_name(ck.pass_if);
    j["bound"] = bound_value(ck.bound);
  }
  if (!ck.reason.empty()) j["reason"] = ck.reason;
  if (ck.has_bitwise()) {
    j["differing"] = ck.differing;
    j["max_ulp"] = bound_value(ck.max_ulp);
    if (!ck.first_diff.empty()) j["first_diff"] = ck.first_diff;
  }
  return j;
}

// What a check's evidence says in one line (JUnit's failure message and text).
std::string evidence_line(const Check& ck) {
  std::ostringstream o;
  o.precision(6);
  o << ck.metric_name << " = " << ck.metric << ", pass if " << pass_if_name(ck.pass_if) << " " << ck.bound;
  if (ck.has_bitwise() && ck.differing > 0)
    o << "; " << ck.differing << " differ, max " << ck.max_ulp << " ulp, first " << ck.first_diff;
  if (!ck.reason.empty()) o << "; " << ck.reason;
  return o.str();
}

}  // namespace

std::string summary_json(const ReportData& r, const RunSummary& run) {
  json j;
  j["tool"] = "forge-verify";
  j["schema_version"] = r.schema_version;
  j["verdict"] = verdict_name(r.verdict);
  j["counts"] = counts_json(r.counts);
  json meta = json::object();
  for (const auto& [k, v] : r.meta.values) meta[k] = v;
  j["meta"] = meta;
  j["exit_code"] = run.exit_code;
  j["require_gpu"] = run.require_gpu;
  j["gpu_claims_not_run"] = run.gpu_claims_not_run;
  j["report"] = run.report_path;
  j["seconds"] = run.seconds;
  json claims = json::array();
  for (const ClaimData& cl : r.claims) {
    json cases = json::array();
    for (const CaseData& cs : cl.cases) {
      json checks = json::array();
      for (const Check& ck : cs.checks) checks.push_back(check_json(ck));
      cases.push_back(json{{"name", cs.name}, {"verdict", verdict_name(cs.verdict)}, {"checks", checks}});
    }
    claims.push_back(json{{"id", cl.name}, {"verdict", verdict_name(cl.verdict)}, {"counts", counts_json(cl.counts)},
                          {"cases", cases}});
  }
  j["claims"] = claims;
  return j.dump(2) + "\n";
}

std::string junit_xml(const ReportData& r) {
  pugi::xml_document doc;
  auto decl = doc.append_child(pugi::node_declaration);
  decl.append_attribute("version") = "1.0";
  decl.append_attribute("encoding") = "UTF-8";
  auto suites = doc.append_child("testsuites");
  suites.append_attribute("name") = "forge-verify";
  auto set_counts = [](pugi::xml_node n, const Counts& c) {
    n.append_attribute("tests") = (long long)(c.n_pass + c.n_fail + c.n_not_run + c.n_error + c.n_confirmed +
                                              c.n_refuted + c.n_inconclusive);
    n.append_attribute("failures") = (long long)c.n_fail;
    n.append_attribute("errors") = (long long)c.n_error;
    n.append_attribute("skipped") = (long long)(c.n_not_run + c.n_inconclusive);
  };
  set_counts(suites, r.counts);
  for (const ClaimData& cl : r.claims) {
    auto suite = suites.append_child("testsuite");
    suite.append_attribute("name") = cl.name.c_str();
    set_counts(suite, cl.counts);
    for (const CaseData& cs : cl.cases)
      for (const Check& ck : cs.checks) {
        auto tc = suite.append_child("testcase");
        tc.append_attribute("classname") = (cl.name + "." + cs.name).c_str();
        tc.append_attribute("name") = ck.name.c_str();
        // A finding is never a failure: its word, and a refutation's evidence, are properties.
        if (ck.kind == CheckKind::finding && ck.verdict != Verdict::error) {
          auto props = tc.append_child("properties");
          auto word = props.append_child("property");
          word.append_attribute("name") = "finding";
          word.append_attribute("value") = ck.word();
          if (ck.verdict == Verdict::fail) {
            auto ev = props.append_child("property");
            ev.append_attribute("name") = "evidence";
            ev.append_attribute("value") = evidence_line(ck).c_str();
          }
          if (ck.verdict == Verdict::not_run)
            tc.append_child("skipped").append_attribute("message") = ck.reason.c_str();
          continue;
        }
        switch (ck.verdict) {
          case Verdict::pass: break;
          case Verdict::fail: {
            auto f = tc.append_child("failure");
            f.append_attribute("message") = evidence_line(ck).c_str();
            f.text() = evidence_line(ck).c_str();
            break;
          }
          case Verdict::error: {
            auto e = tc.append_child("error");
            e.append_attribute("message") = ck.reason.c_str();
            break;
          }
          case Verdict::not_run:
            tc.append_child("skipped").append_attribute("message") = ck.reason.c_str();
            break;
        }
      }
  }
  std::ostringstream o;
  doc.save(o, "  ");
  return o.str();
}

}  // namespace fh
