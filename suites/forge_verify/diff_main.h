// forge-verify diff BASE.h5 NEW.h5: the nightly comparison of two reports (reports/report_diff.h).
#pragma once
#include <string>
#include <vector>

#include "reports/report_diff.h"
#include "suites/forge_verify/option_table.h"

namespace fh {

// What diff's command line says: the comparison's options, the two reports and the outputs.
struct DiffArgs {
  DiffOptions opt;
  std::vector<std::string> files;  // BASE.h5, NEW.h5
  std::string json_path, rename_path;
  bool strict = false, force = false, help = false;
};

// diff's option table (option_table.h), read by its parser and by its --help.
const std::vector<OptionRowOf<DiffArgs>>& diff_option_rows();
std::string diff_help_text();

// argv[0] is "diff". Prints one line per change and a summary; returns 0 when nothing
// regressed, 1 when something did, 2 for bad usage or an input that is not a readable,
// schema-valid report (the message names the file; no --json file is written then).
int run_diff(int argc, char** argv);

}  // namespace fh
