// Two reports compared for the nightly run (forge-verify diff): what changed between a baseline
// report and a new one, and which of those changes are regressions. Pure: ReportData in, a list
// of changes out; reading the files and printing is suites/forge_verify/diff_main.cpp.
//
// Regressions: a contract's verdict went from pass to anything else (fail, error, not-run), or
// to fail/error from not-run; a finding's verdict changed once it was judged (confirmed to
// refuted or back, or to inconclusive), or became error; a bitwise count (Check::differing)
// moved off zero; a passing bounded
// check's margin to its bound shrank by more than DiffOptions::margin_fraction of the base
// margin; a claim, case or check disappeared; a claim or case that passed became not-run; a
// benchmark's median slowed significantly (benchmark_verdict). Everything else that differs
// (provenance in /meta, new claims, improvements, a first judgement of an inconclusive finding,
// a finding's margin, a check's kind, other evidence, case attributes, datasets) is information
// only.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "reports/report.h"

namespace fh {

struct DiffOptions {
  double alpha = 0.05;           // Mann-Whitney significance level for benchmarks
  double min_ratio = 1.05;       // new_median / base_median at or above which a benchmark slowed
  double margin_fraction = 0.5;  // a margin that shrank by more than this fraction of the base's
  bool compare_datasets = true;  // false: --ignore-datasets
  bool compare_reasons = true;   // false: --ignore-reasons
};

struct Change {
  std::string kind;   // verdict (a contract's), finding (a finding's verdict), kind (contract or
                      // finding), bitwise_count, margin, evidence, appeared, disappeared,
                      // became_not_run, case_attr, dataset, meta, benchmark
  std::string path;   // claim, claim/case, claim/case/check, claim/case/data/<d>, meta/<key>,
                      // benchmarks/<name>
  std::string field;  // what changed there: verdict, differing, margin, metric, median, ...
  std::string base_value, new_value;  // as text; "" where absent
  bool regression = false;
  std::string note;   // why it is (or is not) a regression, in words
};

struct DiffResult {
  std::vector<Change> changes;
  size_t n_regressions() const;
  bool regressed() const { return n_regressions() > 0; }
};

DiffResult diff_reports(const ReportData& base, const ReportData& now, const DiffOptions& options = {});

// The Mann-Whitney U test, two-sided, in its normal approximation with the tie correction and
// the 0.5 continuity correction (scipy.stats.mannwhitneyu(a, b, method="asymptotic"), which
// Google Benchmark's tools/compare.py calls). u is the U statistic of `a`.
struct MannWhitney {
  double u = 0, z = 0, p_value = 1;
};
MannWhitney mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b);

// Whether a benchmark slowed, as compare.py decides with a minimum ratio added: with at least
// kMinRepetitionsForUTest repetitions on both sides, p < alpha and new/base median >= min_ratio;
// with fewer, the ratio alone (and the note says so).
constexpr size_t kMinRepetitionsForUTest = 3;
struct BenchmarkVerdict {
  double ratio = 0;     // new median / base median
  bool tested = false;  // the U test ran (enough repetitions)
  double p_value = 1;   // when tested
  bool slower = false;  // a regression
  bool faster = false;  // an improvement (the same test, ratio <= 1 / min_ratio)
  std::string note;
};
BenchmarkVerdict benchmark_verdict(const BenchmarkData& base, const BenchmarkData& now,
                                   const DiffOptions& options);

// Deliberate renamings, applied to the base report before comparing, all at once (so "a b" and
// "b a" swap). A line is "kind old new" (kind: claim, case, check, metric_name, dataset, attr);
// a name with spaces is quoted ('...' or "..."); '#' starts a comment.
struct Rename {
  std::string kind, old_name, new_name;
  int line = 0;
};
// Throws std::invalid_argument ("line N: ...") on a malformed line, an unknown kind or a
// duplicate entry.
std::vector<Rename> parse_rename_map(const std::string& text);
// Renames in `base`, returns one line per entry applied ("claim a -> b (1)"). Throws
// std::invalid_argument when an entry matches nothing (a stale map would hide drift) or a
// rename makes two names collide.
std::vector<std::string> apply_renames(ReportData& base, const std::vector<Rename>& renames);

}  // namespace fh
