// forge-verify diff: reads two reports, compares them (reports/report_diff.h), prints the
// changes, optionally writes them as JSON, and says in its exit status whether anything regressed.
#include "suites/forge_verify/diff_main.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "inputs/input_file.h"
#include "reports/report.h"
#include "reports/report_diff.h"

namespace fh {
namespace {

constexpr int kNoRegression = 0, kRegression = 1, kBadInput = 2, kInternal = 3;

const char* kDiffHelp = R"(forge-verify diff: compare two forge-verify reports

Usage: forge-verify diff BASE.h5 NEW.h5 [options]

Prints one line per change (REGRESSION or info), then a summary.
Regressions: a check's verdict went from pass to fail, error or not-run (or to fail/error
from not-run); a bitwise count (differing) moved off zero; a passing check's margin to its
bound (relative to the bound; the side it passes on is the check's pass_if, or inferred from a
schema-1 base) shrank by more than the margin fraction; a claim, case or check disappeared; a
claim or case that passed became not-run; a benchmark's median slowed: a two-sided Mann-Whitney
U test (normal approximation, tie and continuity corrected) over the repetitions at alpha AND
new/base median >= the minimum ratio (with fewer than 3 repetitions on either side, the ratio
alone). Information only: /meta (provenance), new claims, cases, checks and benchmarks,
improvements, other evidence, case attributes, datasets (bit for bit).

Options:
  --json OUT             also write the changes as JSON to OUT (only when both reports were read);
                         OUT is never an input, never anything but a regular file, and is
                         written to a temporary name beside it, then renamed
  --force                replace an existing regular file at OUT
  --alpha A              Mann-Whitney significance level, 0 < A < 1 (default 0.05)
  --min-ratio R          minimum slowdown new/base median, R >= 1 (default 1.05)
  --margin-fraction F    a margin that shrank by more than F of the base's, 0 <= F <= 1
                         (default 0.5)
  --rename-map FILE      deliberate renamings applied to BASE: lines "kind old new" (kind:
                         claim, case, check, metric_name, dataset, attr; '#' comments; quote
                         names with spaces); an entry that matches nothing is an error
  --ignore-datasets      do not compare the per-case datasets
  --ignore-reasons       do not compare checks' reason text
  --strict               exit 1 on any change outside /meta, not only on a regression
                         ("are these two runs the same?")

Exit status: 0 nothing regressed, 1 something regressed (with --strict: anything outside /meta
changed), 2 bad usage, an OUT the path policy refuses, or an input that is not a readable,
schema-valid report (nothing written), 3 internal error (OUT could not be written after all).
)";

struct Usage : std::runtime_error { using std::runtime_error::runtime_error; };

// A finite number that `in_range` accepts; `range` says the range in the message.
template <class InRange>
double number(const std::string& opt, const char* text, InRange in_range, const char* range) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || errno != 0 || !std::isfinite(v) || !in_range(v))
    throw Usage(opt + " '" + text + "': expected a number " + range);
  return v;
}

// A report that read_report can read and validate_report_schema finds nothing wrong with.
ReportData load(const char* role, const std::string& path) {
  const std::vector<std::string> problems = validate_report_schema(path);
  if (!problems.empty()) {
    std::string msg = std::string(role) + " '" + path + "' is not a valid report: " + problems.front();
    if (problems.size() > 1) msg += " (and " + std::to_string(problems.size() - 1) + " more problems)";
    throw std::runtime_error(msg);
  }
  try {
    return read_report(path);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string(role) + " '" + path + "': " + e.what());
  }
}

nlohmann::json to_json(const std::string& base, const std::string& now, const DiffOptions& o,
                       const std::vector<std::string>& renames, const DiffResult& r) {
  nlohmann::json j;
  j["base"] = base;
  j["new"] = now;
  j["options"] = {{"alpha", o.alpha}, {"min_ratio", o.min_ratio}, {"margin_fraction", o.margin_fraction},
                  {"compare_datasets", o.compare_datasets}, {"compare_reasons", o.compare_reasons},
                  {"u_test", "two-sided Mann-Whitney U, normal approximation with tie and continuity correction"},
                  {"min_repetitions_for_u_test", kMinRepetitionsForUTest}};
  j["renames"] = renames;
  j["changes"] = nlohmann::json::array();
  for (const auto& c : r.changes)
    j["changes"].push_back({{"kind", c.kind}, {"path", c.path}, {"field", c.field}, {"base", c.base_value},
                            {"new", c.new_value}, {"regression", c.regression}, {"note", c.note}});
  j["n_changes"] = r.changes.size();
  j["n_regressions"] = r.n_regressions();
  j["regressed"] = r.regressed();
  return j;
}

}  // namespace

int run_diff(int argc, char** argv) {
  DiffOptions opt;
  std::vector<std::string> files;
  std::string json_path, rename_path;
  bool strict = false, force = false;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> const char* {
        if (i + 1 >= argc) throw Usage(a + " needs a value");
        return argv[++i];
      };
      if (a == "-h" || a == "--help") {
        std::cout << kDiffHelp;
        return kNoRegression;
      } else if (a == "--json") {
        json_path = value();
        if (json_path.empty()) throw Usage("--json needs a non-empty path");
      } else if (a == "--alpha") {
        opt.alpha = number(a, value(), [](double v) { return v > 0 && v < 1; }, "with 0 < A < 1");
      } else if (a == "--min-ratio") {
        opt.min_ratio = number(a, value(), [](double v) { return v >= 1; }, ">= 1");
      } else if (a == "--margin-fraction") {
        opt.margin_fraction = number(a, value(), [](double v) { return v >= 0 && v <= 1; }, "with 0 <= F <= 1");
      } else if (a == "--rename-map") {
        rename_path = value();
      } else if (a == "--ignore-datasets") {
        opt.compare_datasets = false;
      } else if (a == "--ignore-reasons") {
        opt.compare_reasons = false;
      } else if (a == "--strict") {
        strict = true;
      } else if (a == "--force") {
        force = true;
      } else if (a.size() > 1 && a[0] == '-') {
        throw Usage("unknown option '" + a + "'");
      } else {
        files.push_back(a);
      }
    }
    if (files.size() != 2)
      throw Usage("expected two reports, BASE.h5 and NEW.h5, got " + std::to_string(files.size()));
    // The JSON never replaces what this diff reads (same_file: device and inode, not the name).
    if (!json_path.empty())
      for (const auto& [role, in] : {std::pair<const char*, const std::string*>{"BASE", &files[0]}, {"NEW", &files[1]},
                                     {"--rename-map", &rename_path}})
        if (!in->empty() && same_file(json_path, *in))
          throw Usage("--json '" + json_path + "' is the input " + role + " '" + *in + "'; an output never replaces an input");
    // forge-verify's output policy, checked before the reports are read.
    if (!json_path.empty()) {
      try {
        check_output_path("forge-verify diff", json_path, WriteOptions{.replace_existing = force});
      } catch (const ReportPathError& e) {
        throw Usage(std::string("--json: ") + e.what());
      }
    }
  } catch (const Usage& e) {
    std::cerr << "forge-verify diff: " << e.what() << "\n(forge-verify diff --help for usage)\n";
    return kBadInput;
  }

  ReportData base, now;
  std::vector<std::string> applied;
  try {
    std::vector<Rename> renames;
    if (!rename_path.empty()) {
      const std::string who = "rename map '" + rename_path + "'";
      const std::string text = read_input_text(rename_path, who);
      try {
        renames = parse_rename_map(text);
      } catch (const std::invalid_argument& e) {
        throw std::runtime_error(who + ": " + e.what());
      }
    }
    base = load("BASE", files[0]);
    now = load("NEW", files[1]);
    try {
      applied = apply_renames(base, renames);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error("rename map '" + rename_path + "': " + e.what());
    }
  } catch (const std::exception& e) {
    std::cerr << "forge-verify diff: " << e.what() << "\n";
    return kBadInput;
  }

  const DiffResult result = diff_reports(base, now, opt);
  for (const auto& r : applied) std::cout << "renamed " << r << "\n";
  for (const auto& c : result.changes) {
    std::cout << (c.regression ? "REGRESSION " : "info       ") << c.kind << " " << c.path;
    // The field where the kind and the path do not already say it.
    const bool said = c.field == c.kind || (c.path.size() > c.field.size() &&
                                            c.path.compare(c.path.size() - c.field.size() - 1,
                                                           std::string::npos, "/" + c.field) == 0);
    if (!said) std::cout << " [" << c.field << "]";
    std::cout << ": " << (c.base_value.empty() ? "(absent)" : c.base_value) << " -> "
              << (c.new_value.empty() ? "(absent)" : c.new_value);
    if (!c.note.empty()) std::cout << "  (" << c.note << ")";
    std::cout << "\n";
  }
  std::cout << "forge-verify diff: " << result.changes.size() << " changes, " << result.n_regressions()
            << " regressions (" << files[0] << " -> " << files[1] << ")\n";
  if (!json_path.empty()) {
    try {
      // The report path policy's writer: a temporary name, then a rename that replaces only
      // with --force (and never what appeared at OUT meanwhile without it).
      write_text_file(json_path, to_json(files[0], files[1], opt, applied, result).dump(2) + "\n",
                      WriteOptions{.replace_existing = force});
    } catch (const std::exception& e) {
      // OUT was checked before the reports were read: a failure now is the harness's.
      std::cerr << "forge-verify diff: internal error: --json: " << e.what() << "\n";
      return kInternal;
    }
  }
  const bool changed = std::any_of(result.changes.begin(), result.changes.end(),
                                   [](const Change& c) { return c.kind != "meta"; });
  return result.regressed() || (strict && changed) ? kRegression : kNoRegression;
}

}  // namespace fh
