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

const char* kDiffHelpHead = R"(forge-verify diff: compare two forge-verify reports

Usage: forge-verify diff BASE.h5 NEW.h5 [options]

Prints one line per change (REGRESSION or info), then a summary.
Regressions: a contract's verdict went from pass to fail, error or not-run (or to fail/error
from not-run); a finding changed (confirmed to refuted or back, or to inconclusive or error);
a bitwise count (differing) moved off zero; a passing check's margin to its
bound (relative to the bound; the side it passes on is the check's pass_if, or inferred from a
schema-1 base) shrank by more than the margin fraction; a claim, case or check disappeared; a
claim or case that passed became not-run; a benchmark's median slowed: a two-sided Mann-Whitney
U test (normal approximation, tie and continuity corrected) over the repetitions at alpha AND
new/base median >= the minimum ratio (with fewer than 3 repetitions on either side, the ratio
alone). Information only: /meta (provenance), new claims, cases, checks and benchmarks,
improvements, a first judgement of an inconclusive finding, a finding's margin, a check's kind
(contract or finding) changed, other evidence, case attributes, datasets (bit for bit).
)";
// Between the two: "Options:" and diff_option_rows(), wrapped by option_help.
const char* kDiffHelpTail = R"(
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

const std::vector<OptionRowOf<DiffArgs>>& diff_option_rows() {
  using A = DiffArgs;
  using V = const std::string&;
  static const std::vector<OptionRowOf<DiffArgs>> rows = [] {  // built once
    const DiffOptions d;  // the defaults the help states
    auto num = [](double x) {
      std::ostringstream o;
      o << x;
      return o.str();
    };
    return std::vector<OptionRowOf<DiffArgs>>{
        {"--json", "OUT",
         "also write the changes as JSON to OUT (only when both reports were read); OUT is never an input, never "
         "anything but a regular file, and is written to a temporary name beside it, then renamed",
         "changes.json", [](A& a, V v) {
           if (v.empty()) throw Usage("--json needs a non-empty path");
           a.json_path = v;
         }},
        {"--force", "", "replace an existing regular file at OUT", "", [](A& a, V) { a.force = true; }},
        {"--alpha", "A", "Mann-Whitney significance level, 0 < A < 1 (default " + num(d.alpha) + ")", "0.01",
         [](A& a, V v) { a.opt.alpha = number("--alpha", v.c_str(), [](double x) { return x > 0 && x < 1; }, "with 0 < A < 1"); }},
        {"--min-ratio", "R", "minimum slowdown new/base median, R >= 1 (default " + num(d.min_ratio) + ")", "1.1",
         [](A& a, V v) { a.opt.min_ratio = number("--min-ratio", v.c_str(), [](double x) { return x >= 1; }, ">= 1"); }},
        {"--margin-fraction", "F",
         "a margin that shrank by more than F of the base's, 0 <= F <= 1 (default " + num(d.margin_fraction) + ")", "0.25",
         [](A& a, V v) {
           a.opt.margin_fraction = number("--margin-fraction", v.c_str(), [](double x) { return x >= 0 && x <= 1; },
                                          "with 0 <= F <= 1");
         }},
        {"--rename-map", "FILE",
         "deliberate renamings applied to BASE: lines \"kind old new\" (kind: claim, case, check, metric_name, "
         "dataset, attr; '#' comments; quote names with spaces); an entry that matches nothing is an error",
         "renames.txt", [](A& a, V v) { a.rename_path = v; }},
        {"--ignore-datasets", "", "do not compare the per-case datasets", "", [](A& a, V) { a.opt.compare_datasets = false; }},
        {"--ignore-reasons", "", "do not compare checks' reason text", "", [](A& a, V) { a.opt.compare_reasons = false; }},
        {"--strict", "", "exit 1 on any change outside /meta, not only on a regression (\"are these two runs the same?\")",
         "", [](A& a, V) { a.strict = true; }},
        {"--help", "", "this text (also -h)", "", [](A& a, V) { a.help = true; }},
    };
  }();
  return rows;
}

std::string diff_help_text() {
  return std::string(kDiffHelpHead) + "\nOptions:\n" + option_help(diff_option_rows(), 25) + kDiffHelpTail;
}

int run_diff(int argc, char** argv) {
  DiffArgs args;
  DiffOptions& opt = args.opt;
  std::vector<std::string>& files = args.files;
  const std::string& json_path = args.json_path;
  const std::string& rename_path = args.rename_path;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = std::strcmp(argv[i], "-h") == 0 ? "--help" : argv[i];
      if (a.size() > 1 && a[0] == '-') {
        const OptionRowOf<DiffArgs>* row = find_option(diff_option_rows(), a);
        if (!row) throw Usage("unknown option '" + a + "'");
        if (!row->value.empty() && i + 1 >= argc) throw Usage(a + " needs a value");
        row->apply(args, row->value.empty() ? std::string() : std::string(argv[++i]));
        if (args.help) {
          std::cout << diff_help_text();
          return kNoRegression;
        }
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
        check_output_path("forge-verify diff", json_path, WriteOptions{.replace_existing = args.force});
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
                      WriteOptions{.replace_existing = args.force});
    } catch (const std::exception& e) {
      // OUT was checked before the reports were read: a failure now is the harness's.
      std::cerr << "forge-verify diff: internal error: --json: " << e.what() << "\n";
      return kInternal;
    }
  }
  const bool changed = std::any_of(result.changes.begin(), result.changes.end(),
                                   [](const Change& c) { return c.kind != "meta"; });
  return result.regressed() || (args.strict && changed) ? kRegression : kNoRegression;
}

}  // namespace fh
