// forge-verify's command line: the option table that both the parser and --help read, and the
// parser itself (the driver, main.cpp, runs what it returns).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "suites/claims/claim_config.h"
#include "suites/forge_verify/option_table.h"

namespace fh {

// Bad usage or input: exit 2, nothing run, no report.
struct UsageError : std::runtime_error { using std::runtime_error::runtime_error; };

enum class ListMode { none, text, markdown, json };

// What the command line asks of the run itself (VerifyConfig is what the claims see).
struct RunOptions {
  ListMode list_mode = ListMode::none;
  uint32_t given = 0;  // kOpt* bits of the claim options given
  bool force = false, require_gpu = false;
  int jobs = 0;  // --jobs; 0: default_job_count()
  std::string json_path, junit_path;
  std::string bench_json;  // forge-bench's Google Benchmark JSON, stored in /benchmarks
};

// What the option rows write into while the command line is read.
struct ParsedArgs {
  VerifyConfig cfg;
  RunOptions run;
  std::vector<RuleId> rules;  // --rule, in order, once each; empty: all
  std::vector<std::pair<std::string, double>> hypers;
};

// A row of forge-verify's own option table (option_table.h).
using OptionRow = OptionRowOf<ParsedArgs>;

// The table, in --help's order.
const std::vector<OptionRow>& option_rows();

// forge-verify --help: the text around the table, and each row wrapped under "Options:" (no line
// wider than kHelpWidth).
std::string help_text();

// The command line (argv[1..]) into the claims' configuration and the run's own options; throws
// UsageError on anything bad. --help prints help_text() and exits 0.
VerifyConfig parse_args(int argc, char** argv, RunOptions& run);

}  // namespace fh
