// forge-verify diff BASE.h5 NEW.h5: the nightly comparison of two reports (reports/report_diff.h).
#pragma once

namespace fh {

// argv[0] is "diff". Prints one line per change and a summary; returns 0 when nothing
// regressed, 1 when something did, 2 for bad usage or an input that is not a readable,
// schema-valid report (the message names the file; no --json file is written then).
int run_diff(int argc, char** argv);

}  // namespace fh
