// The in-memory report: name and text rules, Meta, CaseRecord, Report (add_case, declare_claim,
// snapshot) and ReportData look-ups. Writing is report_write.cpp, reading report_read.cpp.
#include "reports/report.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <ctime>
#include <iterator>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "reports/report_rules.h"

namespace fh {

// ---------------------------------------------------------------------------------------------
// Names, text, evidence (the rules in report_rules.h)
// ---------------------------------------------------------------------------------------------

namespace {

void require_valid_text(const std::string& text, const std::string& what) {
  if (auto p = report_detail::text_problem(text); !p.empty())
    throw std::invalid_argument(what + ": " + p);
}

}  // namespace

namespace report_detail {

std::string evidence_problem(const Check& c) {
  if (auto p = name_problem(c.name); !p.empty()) return "check name: " + p;
  for (const std::string* s : {&c.reason, &c.metric_name, &c.first_diff})
    if (auto p = text_problem(*s); !p.empty()) return "check '" + c.name + "': " + p;
  if ((c.verdict == Verdict::not_run || c.verdict == Verdict::error) && c.reason.empty())
    return "check '" + c.name + "': " + verdict_name(c.verdict) + " needs a reason";
  if (c.verdict == Verdict::pass || c.verdict == Verdict::fail) {
    if (c.metric_name.empty())
      return "check '" + c.name + "': " + verdict_name(c.verdict) + " needs a metric_name";
    if (std::isnan(c.bound))
      return "check '" + c.name + "': " + verdict_name(c.verdict) + " needs a bound";
  }
  if (c.differing < -1) return "check '" + c.name + "': differing must be >= 0 (or -1: none)";
  if (c.differing == -1 && (c.max_ulp != 0 || !c.first_diff.empty()))
    return "check '" + c.name + "': max_ulp/first_diff given without differing";
  if (c.differing >= 0 && !(c.max_ulp >= 0))
    return "check '" + c.name + "': max_ulp must be >= 0";
  if (c.differing > 0 && c.first_diff.empty())
    return "check '" + c.name + "': differing > 0 needs first_diff";
  return {};
}

std::string direction_problem(const Check& c) {
  if (c.verdict != Verdict::pass || std::isnan(c.metric) || std::isnan(c.bound)) return {};
  if (on_passing_side(c.metric, c.bound, c.pass_if)) return {};
  std::ostringstream o;
  o.precision(17);
  o << "check '" << c.name << "': pass, but its metric " << c.metric << " is not " << pass_if_name(c.pass_if) << " its bound "
    << c.bound << " (wrong pass_if, or a wrong verdict)";
  return o.str();
}

const std::set<std::string>& aggregate_attr_names() {
  static const std::set<std::string> s = {"verdict", "n_pass", "n_fail", "n_not_run", "n_error"};
  return s;
}

}  // namespace report_detail

using report_detail::aggregate_attr_names;
using report_detail::direction_problem;
using report_detail::evidence_problem;
using report_detail::name_problem;

void require_valid_name(const std::string& name, const char* what) {
  if (auto p = name_problem(name); !p.empty())
    throw std::invalid_argument(std::string(what) + ": " + p);
}

// ---------------------------------------------------------------------------------------------
// Meta
// ---------------------------------------------------------------------------------------------

const std::vector<std::string>& Meta::required_keys() {
  static const std::vector<std::string> keys = {
      "git_revision", "host",          "gpu_name",       "gpu_driver",   "cuda_runtime",
      "cublas",       "seed",          "configuration",  "tool_version", "start_time_utc"};
  return keys;
}

Meta Meta::unknown() {
  Meta m;
  for (const auto& k : required_keys()) m.values[k] = "unknown";
  m.values["start_time_utc"] = utc_now_iso8601();
  return m;
}

Meta& Meta::set(const std::string& key, const std::string& value) {
  values[key] = value;
  return *this;
}

std::string Meta::get(const std::string& key) const {
  auto it = values.find(key);
  return it == values.end() ? std::string() : it->second;
}

std::string utc_now_iso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// ---------------------------------------------------------------------------------------------
// Builder
// ---------------------------------------------------------------------------------------------

CaseRecord::CaseRecord(std::string claim, std::string name, const std::vector<std::string>* declared)
    : claim_(std::move(claim)), name_(std::move(name)), declared_(declared) {
  require_valid_name(claim_, "claim name");
  require_valid_name(name_, "case name");
}

CaseRecord& CaseRecord::set_attr(const std::string& key, const std::string& value) {
  require_valid_name(key, "case attribute name");
  if (aggregate_attr_names().count(key))
    throw std::invalid_argument("case attribute name '" + key + "' is reserved");
  require_valid_text(value, "case attribute '" + key + "'");
  for (auto& kv : attrs_)
    if (kv.first == key) { kv.second = value; return *this; }
  attrs_.emplace_back(key, value);
  return *this;
}

CaseRecord& CaseRecord::add_check(Check c) {
  if (auto p = evidence_problem(c) + direction_problem(c); !p.empty())
    throw std::invalid_argument(claim_ + "/" + name_ + ": " + p);
  for (const auto& e : checks_)
    if (e.name == c.name)
      throw std::invalid_argument(claim_ + "/" + name_ + ": duplicate check '" + c.name + "'");
  checks_.push_back(std::move(c));
  return *this;
}

void CaseRecord::add_dataset(Dataset d) {
  require_valid_name(d.name, "dataset name");
  require_valid_text(d.description, "dataset '" + d.name + "' description");
  if (declared_ && std::find(declared_->begin(), declared_->end(), d.name) == declared_->end())
    throw std::invalid_argument(claim_ + "/" + name_ + ": dataset '" + d.name +
                                "' is not declared in the claim's registry row");
  for (const auto& e : datasets_)
    if (e.name == d.name)
      throw std::invalid_argument(claim_ + "/" + name_ + ": duplicate dataset '" + d.name + "'");
  datasets_.push_back(std::move(d));
}

CaseRecord& CaseRecord::add_f64(const std::string& name, std::vector<double> values,
                                std::string description) {
  Dataset d;
  d.name = name;
  d.dtype = DType::f64;
  d.shape = {values.size()};
  d.f64 = std::move(values);
  d.description = std::move(description);
  add_dataset(std::move(d));
  return *this;
}

CaseRecord& CaseRecord::add_i64(const std::string& name, std::vector<int64_t> values,
                                std::string description) {
  Dataset d;
  d.name = name;
  d.dtype = DType::i64;
  d.shape = {values.size()};
  d.i64 = std::move(values);
  d.description = std::move(description);
  add_dataset(std::move(d));
  return *this;
}

CaseRecord& CaseRecord::add_f64_2d(const std::string& name, uint64_t rows, uint64_t cols,
                                   std::vector<double> row_major, std::string description) {
  if (cols != 0 && rows > row_major.max_size() / cols)
    throw std::invalid_argument("dataset '" + name + "': shape overflows");
  if (row_major.size() != rows * cols)
    throw std::invalid_argument("dataset '" + name + "': " + std::to_string(row_major.size()) +
                                " values for shape " + std::to_string(rows) + "x" +
                                std::to_string(cols));
  Dataset d;
  d.name = name;
  d.dtype = DType::f64;
  d.shape = {rows, cols};
  d.f64 = std::move(row_major);
  d.description = std::move(description);
  add_dataset(std::move(d));
  return *this;
}

Counts CaseRecord::counts() const {
  Counts c;
  for (const auto& ch : checks_) c.add(ch.verdict);
  return c;
}

CaseData CaseRecord::data() const {
  CaseData d;
  d.name = name_;
  d.counts = counts();
  d.verdict = d.counts.verdict();
  d.attrs = attrs_;
  d.checks = checks_;
  d.datasets = datasets_;
  return d;
}

Report::Report(Meta meta) : meta_(std::move(meta)) {
  for (const auto& [k, v] : meta_.values) {
    require_valid_name(k, "meta key");
    require_valid_text(v, "meta '" + k + "'");
  }
  std::string missing;
  for (const auto& k : Meta::required_keys())
    if (!meta_.values.count(k)) missing += (missing.empty() ? "" : ", ") + k;
  if (!missing.empty())
    throw std::invalid_argument("report meta lacks required keys: " + missing +
                                " (start from Meta::unknown())");
}

Report::Report(Report&&) noexcept = default;
Report& Report::operator=(Report&&) noexcept = default;
Report::~Report() = default;

void Report::declare_claim(const std::string& claim, std::vector<std::string> datasets) {
  require_valid_name(claim, "claim name");
  for (const auto& d : datasets) require_valid_name(d, "declared dataset name");
  for (const auto& c : claims_)
    if (c.name == claim) throw std::invalid_argument("claim '" + claim + "' declared after its first case");
  declared_[claim] = std::move(datasets);
}

CaseRecord& Report::add_case(const std::string& claim, const std::string& case_name) {
  require_valid_name(claim, "claim name");
  require_valid_name(case_name, "case name");
  if (claim == "meta" || claim == "benchmarks")
    throw std::invalid_argument("claim name '" + claim + "' is reserved");
  const std::vector<std::string>* declared = nullptr;
  if (!declared_.empty()) {
    auto d = declared_.find(claim);
    if (d == declared_.end()) throw std::invalid_argument("claim '" + claim + "' is not declared");
    declared = &d->second;
  }
  auto it = std::find_if(claims_.begin(), claims_.end(),
                         [&](const Claim& c) { return c.name == claim; });
  if (it == claims_.end()) {
    claims_.push_back(Claim{claim, {}});
    it = std::prev(claims_.end());
  }
  for (const auto& c : it->cases)
    if (c->name() == case_name)
      throw std::invalid_argument("duplicate case '" + case_name + "' in claim '" + claim + "'");
  it->cases.push_back(std::make_unique<CaseRecord>(claim, case_name, declared));
  return *it->cases.back();
}

CaseRecord* Report::find_case(const std::string& claim, const std::string& case_name) {
  for (auto& cl : claims_)
    if (cl.name == claim)
      for (auto& c : cl.cases)
        if (c->name() == case_name) return c.get();
  return nullptr;
}

void Report::absorb(Report&& part) {
  // Everything is checked before anything moves, so a refusal leaves both reports as they were.
  for (const Claim& pc : part.claims_) {
    if (!declared_.empty()) {
      const auto d = declared_.find(pc.name);
      if (d == declared_.end()) throw std::invalid_argument("absorb: claim '" + pc.name + "' is not declared");
      const auto pd = part.declared_.find(pc.name);
      if (pd == part.declared_.end() || pd->second != d->second)
        throw std::invalid_argument("absorb: claim '" + pc.name + "' is declared with other datasets in the part");
    }
    for (const Claim& c : claims_)
      if (c.name == pc.name)
        for (const auto& here : c.cases)
          for (const auto& moving : pc.cases)
            if (here->name() == moving->name())
              throw std::invalid_argument("absorb: duplicate case '" + moving->name() + "' in claim '" + pc.name + "'");
  }
  for (Claim& pc : part.claims_) {
    auto it = std::find_if(claims_.begin(), claims_.end(), [&](const Claim& c) { return c.name == pc.name; });
    if (it == claims_.end()) {
      claims_.push_back(Claim{pc.name, {}});
      it = std::prev(claims_.end());
    }
    const auto d = declared_.find(pc.name);
    for (auto& cs : pc.cases) {
      cs->declared_ = d == declared_.end() ? nullptr : &d->second;  // part's own list dies with it
      it->cases.push_back(std::move(cs));
    }
  }
  part.claims_.clear();
}

ReportData Report::snapshot() const {
  ReportData r;
  r.schema_version = kReportSchemaVersion;
  r.meta = meta_;
  for (const auto& cl : claims_) {
    ClaimData cd;
    cd.name = cl.name;
    for (const auto& cs : cl.cases) {
      cd.cases.push_back(cs->data());
      cd.counts += cd.cases.back().counts;
    }
    cd.n_cases = static_cast<int64_t>(cd.cases.size());
    cd.verdict = cd.counts.verdict();
    r.counts += cd.counts;
    r.claims.push_back(std::move(cd));
  }
  r.verdict = r.counts.verdict();
  r.benchmarks = benchmarks_;
  return r;
}

void Report::add_benchmark(BenchmarkData b) {
  const std::string what = "benchmark '" + b.name + "'";
  if (b.name.empty()) throw std::invalid_argument("benchmark name is empty");
  require_valid_text(b.name, "benchmark name");
  require_valid_name(benchmark_key(b.name), "benchmark name");
  if (b.unit != "ns") throw std::invalid_argument(what + ": unit is '" + b.unit + "', must be 'ns'");
  for (double t : b.repetitions_ns)
    if (!std::isfinite(t) || t < 0)
      throw std::invalid_argument(what + ": a repetition's time is not a finite value >= 0");
  if (!b.repetitions_ns.empty()) {
    const double m = median_of(b.repetitions_ns);
    if (std::isnan(b.median_ns)) b.median_ns = m;  // not given: computed here
    if (b.median_ns != m)
      throw std::invalid_argument(what + ": median " + std::to_string(b.median_ns) +
                                  " is not its repetitions' median " + std::to_string(m));
  } else if (!std::isfinite(b.median_ns) || b.median_ns < 0) {
    throw std::invalid_argument(what + ": no repetitions and no finite median >= 0");
  }
  for (const auto& o : benchmarks_)
    if (o.name == b.name) throw std::invalid_argument("duplicate " + what);
  benchmarks_.push_back(std::move(b));
}

const BenchmarkData* ReportData::find_benchmark(std::string_view name) const {
  for (const auto& b : benchmarks)
    if (b.name == name) return &b;
  return nullptr;
}

Verdict Report::verdict() const {
  Counts c;
  for (const auto& cl : claims_)
    for (const auto& cs : cl.cases) c += cs->counts();
  return c.verdict();
}

const ClaimData* ReportData::find_claim(std::string_view name) const {
  for (const auto& c : claims)
    if (c.name == name) return &c;
  return nullptr;
}

const CaseData* ReportData::find_case(std::string_view claim, std::string_view case_name) const {
  const ClaimData* cl = find_claim(claim);
  if (!cl) return nullptr;
  for (const auto& c : cl->cases)
    if (c.name == case_name) return &c;
  return nullptr;
}

}  // namespace fh
