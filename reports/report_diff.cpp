// forge-verify diff's comparison (reports/report_diff.h): claims, cases and checks matched by
// name, then /meta and /benchmarks.
#include "reports/report_diff.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

namespace fh {

namespace {

// Shortest text that reads back as the same double: fixed notation in the everyday range
// (100000, not 1e+05), scientific outside it.
std::string num(double v) {
  if (std::isnan(v)) return "nan";
  char buf[400];
  const double a = std::fabs(v);
  const auto fmt = (a == 0 || (a >= 1e-4 && a < 1e15)) ? std::chars_format::fixed
                                                         : std::chars_format::scientific;
  auto r = std::to_chars(buf, buf + sizeof buf, v, fmt);
  return std::string(buf, r.ptr);
}

// Doubles compare bit for bit (0.0 differs from -0.0), except that any NaN equals any NaN.
bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;
}

std::string join(const std::string& a, const std::string& b) { return a + "/" + b; }

// The side of its bound on which a check passes. Reports of schema version 1 have no pass_if
// (every check reads as "<="): a check that passed with metric above its bound can only have
// been an "at least" check.
bool passes_above(const Check& base) {
  if (base.pass_if != PassIf::at_most) return true;
  return base.verdict == Verdict::pass && base.metric > base.bound;
}

// The check's distance to failing, relative to its bound (absolute when the bound is 0).
double margin(const Check& c, bool above) {
  const double slack = above ? c.metric - c.bound : c.bound - c.metric;
  return c.bound != 0 ? slack / std::fabs(c.bound) : slack;
}

bool failing(Verdict v) { return v == Verdict::fail || v == Verdict::error; }
// A verdict that judged: pass or fail (for a finding, confirmed or refuted).
bool judged(Verdict v) { return v == Verdict::pass || v == Verdict::fail; }

class Differ {
 public:
  Differ(const DiffOptions& o) : opt_(o) {}
  DiffResult out;

  void add(std::string kind, std::string path, std::string field, std::string base,
           std::string now, bool regression, std::string note = {}) {
    out.changes.push_back(Change{std::move(kind), std::move(path), std::move(field),
                                 std::move(base), std::move(now), regression, std::move(note)});
  }

  void reports(const ReportData& b, const ReportData& n) {
    meta(b.meta, n.meta);
    for (const auto& bc : b.claims) {
      const ClaimData* nc = n.find_claim(bc.name);
      if (!nc) {
        add("disappeared", bc.name, "claim", verdict_name(bc.verdict), "", true,
            "claim with " + std::to_string(bc.cases.size()) + " cases is not in the new report");
        continue;
      }
      claim(bc, *nc);
    }
    for (const auto& nc : n.claims)
      if (!b.find_claim(nc.name))
        add("appeared", nc.name, "claim", "", verdict_name(nc.verdict), false, "new claim");
    benchmarks(b, n);
  }

 private:
  void meta(const Meta& b, const Meta& n) {
    std::set<std::string> keys;
    for (const auto& [k, v] : b.values) keys.insert(k);
    for (const auto& [k, v] : n.values) keys.insert(k);
    for (const auto& k : keys) {
      auto bi = b.values.find(k), ni = n.values.find(k);
      const std::string bv = bi == b.values.end() ? "" : bi->second;
      const std::string nv = ni == n.values.end() ? "" : ni->second;
      if (bi == b.values.end() || ni == n.values.end() || bv != nv)
        add("meta", "meta/" + k, k, bv, nv, false, "provenance");
    }
  }

  // A claim or case that ran in the base and runs nothing now is one change, not one per check.
  bool became_not_run(const std::string& path, const char* what, Verdict b, Verdict n) {
    if (n != Verdict::not_run || b == Verdict::not_run) return false;
    add("became_not_run", path, what, verdict_name(b), verdict_name(n), b == Verdict::pass,
        b == Verdict::pass ? "it passed in the base" : "it did not pass in the base either");
    return true;
  }

  void claim(const ClaimData& b, const ClaimData& n) {
    if (became_not_run(b.name, "claim", b.verdict, n.verdict)) return;
    for (const auto& bc : b.cases) {
      const std::string path = join(b.name, bc.name);
      auto it = std::find_if(n.cases.begin(), n.cases.end(),
                             [&](const CaseData& c) { return c.name == bc.name; });
      if (it == n.cases.end()) {
        add("disappeared", path, "case", verdict_name(bc.verdict), "", true,
            "case is not in the new report");
        continue;
      }
      kase(path, bc, *it);
    }
    for (const auto& nc : n.cases)
      if (std::none_of(b.cases.begin(), b.cases.end(),
                       [&](const CaseData& c) { return c.name == nc.name; }))
        add("appeared", join(b.name, nc.name), "case", "", verdict_name(nc.verdict), false, "new case");
  }

  void kase(const std::string& path, const CaseData& b, const CaseData& n) {
    if (became_not_run(path, "case", b.verdict, n.verdict)) return;
    case_attrs(path, b, n);
    for (const auto& bc : b.checks) {
      auto it = std::find_if(n.checks.begin(), n.checks.end(),
                             [&](const Check& c) { return c.name == bc.name; });
      if (it == n.checks.end()) {
        add("disappeared", join(path, bc.name), "check", bc.word(), "", true,
            "check is not in the new report");
        continue;
      }
      check(join(path, bc.name), bc, *it);
    }
    for (const auto& nc : n.checks)
      if (std::none_of(b.checks.begin(), b.checks.end(),
                       [&](const Check& c) { return c.name == nc.name; }))
        add("appeared", join(path, nc.name), "check", "", nc.word(), false, "new check");
    if (opt_.compare_datasets) datasets(path, b, n);
  }

  void case_attrs(const std::string& path, const CaseData& b, const CaseData& n) {
    std::map<std::string, std::string> bm(b.attrs.begin(), b.attrs.end()), nm(n.attrs.begin(), n.attrs.end());
    std::set<std::string> keys;
    for (const auto& [k, v] : bm) keys.insert(k);
    for (const auto& [k, v] : nm) keys.insert(k);
    for (const auto& k : keys) {
      const bool in_b = bm.count(k), in_n = nm.count(k);
      if (in_b && in_n && bm[k] == nm[k]) continue;
      add("case_attr", path, k, in_b ? bm[k] : "", in_n ? nm[k] : "", false,
          in_b && in_n ? "case attribute changed" : in_b ? "case attribute removed" : "case attribute added");
    }
  }

  void check(const std::string& path, const Check& b, const Check& n) {
    // The verdict.
    const bool finding = b.kind == CheckKind::finding || n.kind == CheckKind::finding;
    if (b.kind != n.kind)
      add("kind", path, "kind", check_kind_name(b.kind), check_kind_name(n.kind), false,
          "the registry reclassified the check");
    if (b.verdict != n.verdict) {
      // A contract regresses when it stops passing or starts failing. A finding's judgement is
      // the product: one that changes (confirmed to refuted or back, or to inconclusive) is a
      // regression to look at, as is an error; a first judgement of an inconclusive one is news.
      const bool reg = finding ? judged(b.verdict) || n.verdict == Verdict::error
                               : b.verdict == Verdict::pass || (failing(n.verdict) && !failing(b.verdict));
      std::string note = finding && judged(b.verdict) && judged(n.verdict) ? "the finding changed" : "";
      if (!n.reason.empty()) note += (note.empty() ? "" : "; ") + std::string("reason: ") + n.reason;
      add(finding ? "finding" : "verdict", path, "verdict", b.word(), n.word(), reg, note);
    }
    // The bitwise count: zero differing elements is the claim; any other count is news.
    if (b.differing != n.differing) {
      const bool off_zero = b.differing == 0 && n.differing > 0;
      add("bitwise_count", path, "differing", b.has_bitwise() ? std::to_string(b.differing) : "",
          n.has_bitwise() ? std::to_string(n.differing) : "", off_zero,
          off_zero ? "moved off zero" + (n.first_diff.empty() ? "" : ", first at " + n.first_diff)
                   : "count changed");
    }
    // The margin of a check that passes on both sides.
    if (b.verdict == Verdict::pass && n.verdict == Verdict::pass && std::isfinite(b.metric) &&
        std::isfinite(b.bound) && std::isfinite(n.metric) && std::isfinite(n.bound)) {
      const bool above = passes_above(b);
      const double mb = margin(b, above), mn = margin(n, above);
      if (mb > 0 && mn < mb) {
        const double shrink = (mb - mn) / mb;
        // A finding's verdict is what is tracked; its margin moving is information.
        if (shrink > opt_.margin_fraction)
          add("margin", path, "margin", num(mb), num(mn), !finding,
              std::string("passes if metric ") + (above ? ">=" : "<=") + " bound; margin " +
                  (b.bound != 0 ? "relative to the bound " : "(bound 0: absolute) ") + "shrank by " +
                  num(std::round(shrink * 1000) / 10) + "% > " + num(opt_.margin_fraction * 100) + "%");
      }
    }
    // The rest of the evidence, for information.
    auto info = [&](const char* field, std::string bv, std::string nv) {
      if (bv != nv) add("evidence", path, field, std::move(bv), std::move(nv), false);
    };
    if (!same(b.metric, n.metric)) info("metric", num(b.metric), num(n.metric));
    if (!same(b.bound, n.bound)) info("bound", num(b.bound), num(n.bound));
    info("metric_name", b.metric_name, n.metric_name);
    info("pass_if", pass_if_name(b.pass_if), pass_if_name(n.pass_if));
    if (opt_.compare_reasons) info("reason", b.reason, n.reason);
    if (!same(b.max_ulp, n.max_ulp)) info("max_ulp", num(b.max_ulp), num(n.max_ulp));
    info("first_diff", b.first_diff, n.first_diff);
  }

  void datasets(const std::string& path, const CaseData& b, const CaseData& n) {
    for (const auto& bd : b.datasets) {
      const std::string p = path + "/data/" + bd.name;
      auto it = std::find_if(n.datasets.begin(), n.datasets.end(),
                             [&](const Dataset& d) { return d.name == bd.name; });
      if (it == n.datasets.end()) {
        add("dataset", p, "dataset", "present", "", false, "dataset removed");
        continue;
      }
      const Dataset& nd = *it;
      if (bd.dtype != nd.dtype || bd.shape != nd.shape) {
        auto desc = [](const Dataset& d) {
          std::string s = d.dtype == DType::f64 ? "f64[" : "i64[";
          for (size_t i = 0; i < d.shape.size(); ++i) s += (i ? "," : "") + std::to_string(d.shape[i]);
          return s + "]";
        };
        add("dataset", p, "type", desc(bd), desc(nd), false, "dataset type or shape changed");
        continue;
      }
      size_t first = SIZE_MAX, count = 0;
      const size_t len = bd.dtype == DType::f64 ? bd.f64.size() : bd.i64.size();
      for (size_t i = 0; i < len; ++i) {
        const bool eq = bd.dtype == DType::f64 ? same(bd.f64[i], nd.f64[i]) : bd.i64[i] == nd.i64[i];
        if (!eq) {
          if (first == SIZE_MAX) first = i;
          ++count;
        }
      }
      if (count > 0) {
        auto at = [&](const Dataset& d) {
          return d.dtype == DType::f64 ? num(d.f64[first]) : std::to_string(d.i64[first]);
        };
        add("dataset", p, "values", at(bd), at(nd), false,
            std::to_string(count) + " of " + std::to_string(len) +
                " values differ; first at flat index " + std::to_string(first));
      }
      if (bd.description != nd.description)
        add("dataset", p, "description", bd.description, nd.description, false);
    }
    for (const auto& nd : n.datasets)
      if (std::none_of(b.datasets.begin(), b.datasets.end(),
                       [&](const Dataset& d) { return d.name == nd.name; }))
        add("dataset", path + "/data/" + nd.name, "dataset", "", "present", false, "dataset added");
  }

  void benchmarks(const ReportData& b, const ReportData& n) {
    for (const auto& bb : b.benchmarks) {
      const std::string path = "benchmarks/" + bb.name;
      const BenchmarkData* nb = n.find_benchmark(bb.name);
      if (!nb) {
        add("disappeared", path, "benchmark", num(bb.median_ns), "", false,
            "benchmark not in the new report (information: a filtered benchmark run)");
        continue;
      }
      const BenchmarkVerdict v = benchmark_verdict(bb, *nb, opt_);
      if (v.slower || v.faster || v.ratio >= opt_.min_ratio)
        add("benchmark", path, "median_ns", num(bb.median_ns), num(nb->median_ns), v.slower, v.note);
    }
    for (const auto& nb : n.benchmarks)
      if (!b.find_benchmark(nb.name))
        add("appeared", "benchmarks/" + nb.name, "benchmark", "", num(nb.median_ns), false, "new benchmark");
  }

  DiffOptions opt_;
};

}  // namespace

size_t DiffResult::n_regressions() const {
  return size_t(std::count_if(changes.begin(), changes.end(), [](const Change& c) { return c.regression; }));
}

DiffResult diff_reports(const ReportData& base, const ReportData& now, const DiffOptions& options) {
  Differ d(options);
  d.reports(base, now);
  return std::move(d.out);
}

MannWhitney mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b) {
  MannWhitney r;
  const double na = double(a.size()), nb = double(b.size()), n = na + nb;
  if (a.empty() || b.empty()) {
    r.p_value = std::nan("");
    return r;
  }
  // Midranks of the pooled sample; ties share the mean of their ranks.
  std::vector<std::pair<double, int>> pooled;
  for (double x : a) pooled.push_back({x, 0});
  for (double x : b) pooled.push_back({x, 1});
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  double rank_sum_a = 0, tie_term = 0;
  for (size_t i = 0; i < pooled.size();) {
    size_t j = i;
    while (j < pooled.size() && pooled[j].first == pooled[i].first) ++j;
    const double t = double(j - i), midrank = (double(i + 1) + double(j)) / 2;
    for (size_t k = i; k < j; ++k)
      if (pooled[k].second == 0) rank_sum_a += midrank;
    tie_term += t * t * t - t;
    i = j;
  }
  r.u = rank_sum_a - na * (na + 1) / 2;
  const double mu = na * nb / 2;
  const double var = na * nb / 12 * ((n + 1) - tie_term / (n * (n - 1)));
  if (!(var > 0)) return r;  // every value equal: no evidence of a difference, p = 1
  const double sd = std::sqrt(var);
  r.z = (std::fabs(r.u - mu) - 0.5) / sd;
  r.p_value = std::min(1.0, std::erfc(r.z / std::sqrt(2.0)));  // 2 * P(Z > z)
  return r;
}

BenchmarkVerdict benchmark_verdict(const BenchmarkData& base, const BenchmarkData& now,
                                   const DiffOptions& o) {
  BenchmarkVerdict v;
  auto median = [](const BenchmarkData& b) {
    return b.repetitions_ns.empty() ? b.median_ns : median_of(b.repetitions_ns);
  };
  v.ratio = median(now) / median(base);
  const size_t nb = base.repetitions_ns.size(), nn = now.repetitions_ns.size();
  const std::string ratio_text = "ratio " + num(std::round(v.ratio * 1e4) / 1e4);
  const bool slower_ratio = v.ratio >= o.min_ratio, faster_ratio = v.ratio <= 1 / o.min_ratio;
  if (nb >= kMinRepetitionsForUTest && nn >= kMinRepetitionsForUTest) {
    v.tested = true;
    v.p_value = mann_whitney_u(base.repetitions_ns, now.repetitions_ns).p_value;
    const bool significant = v.p_value < o.alpha;
    v.slower = significant && slower_ratio;
    v.faster = significant && faster_ratio;
    v.note = ratio_text + " (min " + num(o.min_ratio) + "), Mann-Whitney U two-sided p = " +
             num(std::round(v.p_value * 1e4) / 1e4) + (significant ? " < " : " >= ") + "alpha " +
             num(o.alpha) + " over " + std::to_string(nb) + " vs " + std::to_string(nn) + " repetitions";
  } else {
    v.slower = slower_ratio;
    v.faster = faster_ratio;
    v.note = ratio_text + " (min " + num(o.min_ratio) + "), decided by the ratio alone: fewer than " +
             std::to_string(kMinRepetitionsForUTest) + " repetitions (" + std::to_string(nb) +
             " vs " + std::to_string(nn) + ")";
  }
  if (v.slower) v.note = "slower: " + v.note;
  else if (v.faster) v.note = "faster: " + v.note;
  else v.note = "not a significant slowdown: " + v.note;
  return v;
}

// ---------------------------------------------------------------------------------------------
// Rename map
// ---------------------------------------------------------------------------------------------

namespace {

const std::set<std::string>& rename_kinds() {
  static const std::set<std::string> k = {"claim", "case", "check", "metric_name", "dataset", "attr"};
  return k;
}

// Splits a line into words: blanks separate, '...' or "..." quote, '#' outside quotes ends it.
std::vector<std::string> words(const std::string& line, int lineno) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < line.size()) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\r') { ++i; continue; }
    if (c == '#') break;
    std::string w;
    if (c == '\'' || c == '"') {
      const size_t end = line.find(c, i + 1);
      if (end == std::string::npos)
        throw std::invalid_argument("line " + std::to_string(lineno) + ": unterminated quote");
      w = line.substr(i + 1, end - i - 1);
      i = end + 1;
    } else {
      while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r' && line[i] != '#')
        w += line[i++];
    }
    out.push_back(w);
  }
  return out;
}

struct Table {
  std::map<std::string, const Rename*> by_old;
  std::map<const Rename*, int> used;
  // The name `name` becomes, counting the use.
  std::string operator()(const std::string& name) {
    auto it = by_old.find(name);
    if (it == by_old.end()) return name;
    ++used[it->second];
    return it->second->new_name;
  }
};

template <class T, class Name>
void rename_all(std::vector<T>& items, Table& t, Name name_of, const std::string& where, const char* what) {
  std::set<std::string> seen;
  for (auto& it : items) {
    std::string& n = name_of(it);
    n = t(n);
    if (!seen.insert(n).second)
      throw std::invalid_argument("renaming makes two " + std::string(what) + "s named '" + n + "' in " + where);
  }
}

}  // namespace

std::vector<Rename> parse_rename_map(const std::string& text) {
  std::vector<Rename> out;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  std::set<std::pair<std::string, std::string>> seen;
  while (std::getline(in, line)) {
    ++lineno;
    const auto w = words(line, lineno);
    if (w.empty()) continue;
    const std::string at = "line " + std::to_string(lineno) + ": ";
    if (w.size() != 3) throw std::invalid_argument(at + "expected 'kind old new', got " + std::to_string(w.size()) + " words");
    if (!rename_kinds().count(w[0]))
      throw std::invalid_argument(at + "unknown kind '" + w[0] + "' (claim, case, check, metric_name, dataset, attr)");
    if (w[1].empty() || w[2].empty()) throw std::invalid_argument(at + "empty name");
    if (!seen.insert({w[0], w[1]}).second)
      throw std::invalid_argument(at + "duplicate entry for " + w[0] + " '" + w[1] + "'");
    out.push_back(Rename{w[0], w[1], w[2], lineno});
  }
  return out;
}

std::vector<std::string> apply_renames(ReportData& base, const std::vector<Rename>& renames) {
  std::map<std::string, Table> tables;
  for (const auto& r : renames) tables[r.kind].by_old[r.old_name] = &r;
  auto name = [](auto& x) -> std::string& { return x.name; };
  rename_all(base.claims, tables["claim"], name, "the report", "claim");
  for (auto& cl : base.claims) {
    rename_all(cl.cases, tables["case"], name, cl.name, "case");
    for (auto& cs : cl.cases) {
      const std::string where = cl.name + "/" + cs.name;
      rename_all(cs.checks, tables["check"], name, where, "check");
      rename_all(cs.datasets, tables["dataset"], name, where, "dataset");
      rename_all(cs.attrs, tables["attr"], [](auto& kv) -> std::string& { return kv.first; }, where,
                 "case attribute");
      for (auto& ch : cs.checks) ch.metric_name = tables["metric_name"](ch.metric_name);
    }
  }
  std::vector<std::string> applied;
  for (const auto& r : renames) {
    const int n = tables[r.kind].used[&r];
    if (n == 0)
      throw std::invalid_argument("line " + std::to_string(r.line) + ": " + r.kind + " '" + r.old_name +
                                  "' matches nothing in the base report (a stale rename map hides drift)");
    applied.push_back(r.kind + " " + r.old_name + " -> " + r.new_name + " (" + std::to_string(n) + ")");
  }
  return applied;
}

}  // namespace fh
