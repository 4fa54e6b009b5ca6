// forge-verify's console output: the verdict table per claim and the closing lines, made to be
// read at a glance in a terminal. No line is wider than kConsoleWidth columns: a long case or
// check name wraps inside its column, long evidence wraps (and is cut after a few lines, the whole
// text being in the report, the JSON and the JUnit file), and a claim that judged nothing prints
// its one reason instead of a table. Nothing here changes what is stored: the console shows the
// report's names and texts, only laid out (whitespace runs, newlines included, print as one space).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "reports/report.h"

namespace fh {

inline constexpr size_t kConsoleWidth = 120;

// The verdict table of every claim in `data`, in report order, each after a blank line and a
// header "== <claim>: <verdict> (<n> pass, <n> fail, <n> not-run, <n> error)", followed by
// "; findings: <n> confirmed, <n> refuted, <n> inconclusive" when the claim has findings. Rows are
// "  case  check  verdict  measured  pass if  bound  evidence"; a row's first line always holds
// its verdict, in the column under the header's "verdict", and its continuation lines leave that
// column blank. Evidence that does not fit beside a row goes on the lines under it, indented.
std::string console_tables(const ReportData& data, size_t width = kConsoleWidth);

// The closing lines: "overall: <verdict>: <j> of <n> claims judged (<checks>)"; when a finding
// was refuted, a line naming the claims with refutations (not a failure); when a claim judged
// nothing, a line grouping those claims by why ("need a GPU", "need measurements
// (--external*, --model-step)", "threw an error", ...). Each ends in '\n'.
std::string console_closing(const ReportData& data, size_t width = kConsoleWidth);

// Why a claim that judged nothing (no check passed or failed, no finding confirmed or refuted)
// judged nothing, in a few words, from its checks' reasons: "need a GPU", "need measurements",
// "threw an error", "not run for other reasons". Empty when the claim judged something.
std::string not_judged_why(const ClaimData& claim);

// `text` (whitespace runs as one space) broken into lines of at most `width` columns: at a space
// where one falls within the width, else after a punctuation mark ('.', '_', '|', ',', '/', ...),
// else hard. At most `max_lines` lines (0: no limit); text cut off ends the last line in "...".
std::vector<std::string> wrap_text(const std::string& text, size_t width, size_t max_lines = 0);

// `text` on lines of at most `width` columns: the first as is, the others after `indent`; at most
// `max_lines` lines (0: no limit), text cut off ending the last in "...".
std::string wrap_paragraph(const std::string& text, size_t width, const std::string& indent, size_t max_lines = 0);

// `line` cut to `width` columns, ending in "..." when cut.
std::string fit_line(const std::string& line, size_t width = kConsoleWidth);

}  // namespace fh
