// forge-verify's console output (console_table.h): the verdict tables and the closing lines.
#include "suites/forge_verify/console_table.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <string_view>
#include <utility>

namespace fh {
namespace {

// Display columns of UTF-8 text: one per code point (names are valid UTF-8; no wide glyphs here).
size_t cols(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// The byte offset at which column `col` of `s` begins (s.size() when `s` is shorter).
size_t byte_at_col(std::string_view s, size_t col) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;
    if (n == col) return i;
    ++n;
  }
  return s.size();
}

// Whitespace runs (newlines and tabs too) as one space, none at either end: a reason may hold a
// whole traceback, and the table keeps one row per check.
std::string one_line(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  bool space = false;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !o.empty();
      continue;
    }
    if (space) o += ' ';
    space = false;
    o += c;
  }
  return o;
}

std::string pad(const std::string& s, size_t width) {
  const size_t n = cols(s);
  return n >= width ? s : s + std::string(width - n, ' ');
}

void rtrim(std::string& s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
}

// Where a name may break when no space falls within the width: after one of these.
bool break_after(char c) {
  return c == '.' || c == '_' || c == '|' || c == ',' || c == ';' || c == '/' || c == '-' || c == ')' || c == ':' ||
         c == '=' || c == '+';
}

std::string format_number(double x) {
  if (std::isnan(x)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

// Findings' counts only where there are findings: a run of contracts reads as it always did.
std::string counts_text(const Counts& c) {
  std::string t = std::to_string(c.n_pass) + " pass, " + std::to_string(c.n_fail) + " fail, " +
                  std::to_string(c.n_not_run) + " not-run, " + std::to_string(c.n_error) + " error";
  if (c.n_confirmed + c.n_refuted + c.n_inconclusive > 0)
    t += "; findings: " + std::to_string(c.n_confirmed) + " confirmed, " + std::to_string(c.n_refuted) + " refuted, " +
         std::to_string(c.n_inconclusive) + " inconclusive";
  return t;
}

// One row of the verdict table, every cell on one line: case, check, verdict, measured
// (name = value), pass if, bound, evidence.
constexpr int kCols = 7;
struct Row {
  std::string cell[kCols];
};

Row make_row(const CaseData& cs, const Check& ck) {
  Row r;
  r.cell[0] = one_line(cs.name);
  r.cell[1] = one_line(ck.name);
  r.cell[2] = ck.word();
  std::string evidence;
  if (ck.verdict == Verdict::pass || ck.verdict == Verdict::fail) {
    r.cell[3] = one_line(ck.metric_name) + " = " + format_number(ck.metric);
    r.cell[4] = pass_if_name(ck.pass_if);
    r.cell[5] = format_number(ck.bound);
    if (ck.has_bitwise())
      evidence = std::to_string(ck.differing) + " differ" +
                 (ck.differing ? ", max " + format_number(ck.max_ulp) + " ulp, first " + ck.first_diff : "");
  }
  // A not-run's or an error's reason, a failed check's note: after the bitwise evidence.
  if (!ck.reason.empty()) evidence += (evidence.empty() ? "" : "; ") + ck.reason;
  r.cell[6] = one_line(evidence);
  return r;
}

// Column layout. Indent 2, 2 spaces between columns. verdict, pass if and bound keep their
// widths (a few characters); measured is at most kMeasuredMax wide; case and check share what
// is left of the width, check at least kCheckMin (or its own width when narrower); evidence
// goes beside the row when it fits there or has at least kEvidenceMin columns, else under it.
constexpr size_t kIndent = 2, kGap = 2, kMeasuredMax = 36, kMeasuredMin = 16, kCaseMin = 16, kCheckMin = 16, kEvidenceMin = 36;
constexpr size_t kEvidenceLines = 3, kBelowIndent = 6;

std::string claim_table(const ClaimData& claim, size_t width) {
  // The header wraps (the findings' counts can take it past the width), never cut.
  std::string out = "\n" + wrap_paragraph("== " + one_line(claim.name) + ": " + verdict_name(claim.verdict) + " (" +
                                               counts_text(claim.counts) + ")",
                                           width, "   ");
  std::vector<Row> rows;
  for (const CaseData& cs : claim.cases)
    for (const Check& ck : cs.checks) rows.push_back(make_row(cs, ck));

  // A claim that judged nothing, every check for one reason: the reason, not a table of it.
  if (!rows.empty() && std::all_of(claim.cases.begin(), claim.cases.end(), [&](const CaseData& cs) {
        return std::all_of(cs.checks.begin(), cs.checks.end(), [&](const Check& ck) {
          return ck.verdict == Verdict::not_run && one_line(ck.reason) == rows.front().cell[6];
        });
      })) {
    const std::string n = rows.size() == 1 ? "" : " (" + std::to_string(rows.size()) + " checks)";
    return out + wrap_paragraph("  not run" + n + ": " + rows.front().cell[6], width, "    ", kEvidenceLines);
  }

  static const std::string kHeads[kCols] = {"case", "check", "verdict", "measured", "pass if", "bound", "evidence"};
  size_t nat[kCols];
  for (int c = 0; c < kCols; ++c) {
    nat[c] = c == kCols - 1 ? 0 : cols(kHeads[c]);
    for (const Row& r : rows) nat[c] = std::max(nat[c], cols(r.cell[c]));
  }
  size_t w[kCols];
  std::copy(nat, nat + kCols, w);
  w[3] = std::max(cols(kHeads[3]), std::min(nat[3], kMeasuredMax));
  size_t fixed = kIndent + w[2] + w[3] + w[4] + w[5] + 5 * kGap;
  const size_t need = std::min(nat[0], kCaseMin) + std::min(nat[1], kCheckMin);
  if (fixed + need > width) {  // a narrow console: measured gives way first (it wraps)
    const size_t cut = std::min(fixed + need - width, w[3] > kMeasuredMin ? w[3] - kMeasuredMin : 0);
    w[3] -= cut;
    fixed -= cut;
  }
  const size_t budget = width > fixed ? width - fixed : 0;  // for case and check together
  if (nat[0] + nat[1] > budget) {
    // Case and check share the budget the way that makes the table shortest (fewest wrapped
    // lines), each at least its minimum; on a tie the case column gets more.
    const size_t lo1 = std::min(nat[1], kCheckMin), lo0 = std::min(nat[0], kCaseMin);
    size_t best = SIZE_MAX;
    w[0] = lo0;
    w[1] = lo1;
    for (size_t w1 = std::min(nat[1], budget > lo0 ? budget - lo0 : lo1); w1 >= lo1; --w1) {
      const size_t w0 = std::min(nat[0], std::max(lo0, budget > w1 ? budget - w1 : 0));
      size_t lines = 0;
      for (const Row& r : rows)
        lines += std::max(wrap_text(r.cell[0], w0).size(), wrap_text(r.cell[1], w1).size());
      if (lines < best) {
        best = lines;
        w[0] = w0;
        w[1] = w1;
      }
      if (w1 == 0) break;
    }
  }
  size_t main = kIndent + 5 * kGap;
  for (int c = 0; c < kCols - 1; ++c) main += w[c];
  const size_t avail = width > main + kGap ? width - main - kGap : 0;
  const bool beside = nat[6] == 0 || nat[6] <= avail || avail >= kEvidenceMin;
  w[6] = beside ? std::min(nat[6], avail) : 0;

  auto emit = [&](const std::vector<std::string>* cells) {
    size_t n = 1;
    for (int c = 0; c < kCols; ++c) n = std::max(n, cells[c].size());
    for (size_t k = 0; k < n; ++k) {
      std::string l(kIndent, ' ');
      for (int c = 0; c < kCols; ++c) {
        const std::string s = k < cells[c].size() ? cells[c][k] : "";
        if (c == kCols - 1) l += s;
        else l += pad(s, w[c]) + (c == kCols - 2 && w[6] == 0 ? "" : std::string(kGap, ' '));
      }
      rtrim(l);
      out += fit_line(l, width) + "\n";
    }
  };
  std::vector<std::string> head[kCols];
  for (int c = 0; c < kCols; ++c)
    if (c < kCols - 1 || w[6] > 0) head[c] = {kHeads[c]};
  emit(head);
  for (const Row& r : rows) {
    std::vector<std::string> cells[kCols];
    for (int c = 0; c < kCols - 1; ++c) cells[c] = wrap_text(r.cell[c], w[c]);
    if (beside) cells[6] = wrap_text(r.cell[6], std::max<size_t>(w[6], 1), kEvidenceLines);
    emit(cells);
    // Under the row: a failed or unjudged check's evidence; a pass's "0 differ" says no more
    // than its measured "differing = 0".
    if (!beside && !r.cell[6].empty() && !(r.cell[2] == "pass" && r.cell[6] == "0 differ"))
      for (const std::string& e : wrap_text(r.cell[6], width - kBelowIndent, kEvidenceLines))
        out += std::string(kBelowIndent, ' ') + e + "\n";
  }
  return out;
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool contains(const std::string& s, std::string_view what) { return s.find(what) != std::string::npos; }

// A not-run reason that says the machine lacks a GPU: forge-verify's "not applicable: needs a
// GPU, 0 visible", "needs 2 GPUs, 1 visible", "needs a GPU of compute capability 9.0, ...", or its
// "no GPU: <why>" (a GPU that does not work, and older reports).
bool wants_gpu(const std::string& reason) {
  const std::string r = lower(reason);
  return r.starts_with("no gpu") || (contains(r, "gpu") && contains(r, "need"));
}

// A not-run reason that says this machine has no GPU at all ("..., 0 visible; <why>" or "no GPU:
// <why>"), rather than too few or the wrong kind.
bool says_no_gpu_here(const std::string& reason) {
  const std::string r = lower(reason);
  return r.starts_with("no gpu") || contains(r, ", 0 visible");
}

// A not-run reason that says the run was given no measurement file (scripts/forge_audit.sh and
// the runner make them): "no measurements given: run forge-verify --external-timing ...",
// "no external results: run forge-verify --external ...".
bool wants_measurements(const std::string& reason) {
  const std::string r = lower(reason);
  return r.starts_with("no measurements") || r.starts_with("no external results");
}

// The options named in `reason` ("--external-model"), in order.
std::vector<std::string> options_in(const std::string& reason) {
  std::vector<std::string> out;
  for (size_t p = reason.find("--"); p != std::string::npos; p = reason.find("--", p + 2)) {
    size_t e = p + 2;
    while (e < reason.size() && (std::islower(static_cast<unsigned char>(reason[e])) || reason[e] == '-')) ++e;
    if (e > p + 2) out.push_back(reason.substr(p, e - p));
    p = e - 2;
  }
  return out;
}

bool judged(const ClaimData& c) {
  return c.counts.n_pass + c.counts.n_fail + c.counts.n_confirmed + c.counts.n_refuted > 0;
}

}  // namespace

std::vector<std::string> wrap_text(const std::string& text, size_t width, size_t max_lines) {
  width = std::max<size_t>(width, 4);
  const std::string t = one_line(text);
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < t.size()) {
    const std::string_view rest = std::string_view(t).substr(pos);
    if (max_lines && lines.size() + 1 == max_lines && cols(rest) > width) {
      std::string cut(rest.substr(0, byte_at_col(rest, width - 3)));
      rtrim(cut);
      lines.push_back(cut + "...");
      break;
    }
    if (cols(rest) <= width) {
      lines.emplace_back(rest);
      break;
    }
    const size_t limit = byte_at_col(rest, width);  // bytes of the first `width` columns
    size_t take = 0, skip = 0;
    const size_t space = rest.rfind(' ', limit);
    if (space != std::string_view::npos && space > 0) {
      take = space;
      skip = 1;
    } else {
      // After the last punctuation mark within the width, unless that leaves a short stub.
      for (size_t i = limit; i > limit / 3 && i >= 1; --i)
        if (break_after(rest[i - 1])) {
          take = i;
          break;
        }
      if (take == 0) take = limit;
    }
    std::string line(rest.substr(0, take));
    rtrim(line);
    lines.push_back(line);
    pos += take + skip;
    while (pos < t.size() && t[pos] == ' ') ++pos;
  }
  return lines;
}

std::string wrap_paragraph(const std::string& text, size_t width, const std::string& indent, size_t max_lines) {
  // The first line keeps its own leading spaces (one_line would drop them).
  size_t lead = 0;
  while (lead < text.size() && text[lead] == ' ') ++lead;
  const std::string first_indent = text.substr(0, lead);
  std::string out;
  std::string rest = one_line(text);
  const size_t w1 = width > lead ? width - lead : 4;
  std::vector<std::string> first = wrap_text(rest, w1);
  if (first.empty()) return first_indent + "\n";
  out = first_indent + first.front() + "\n";
  rest = rest.substr(std::min(rest.size(), first.front().size()));
  const size_t w2 = width > cols(indent) ? width - cols(indent) : 4;
  if (max_lines == 1 && first.size() > 1) return first_indent + wrap_text(one_line(text), w1, 1).front() + "\n";
  for (const std::string& l : wrap_text(rest, w2, max_lines ? max_lines - 1 : 0)) out += indent + l + "\n";
  return out;
}

std::string fit_line(const std::string& line, size_t width) {
  if (cols(line) <= width) return line;
  return line.substr(0, byte_at_col(line, width > 3 ? width - 3 : 0)) + "...";
}

std::string console_tables(const ReportData& data, size_t width) {
  std::string out;
  for (const ClaimData& claim : data.claims) out += claim_table(claim, width);
  return out;
}

std::string not_judged_why(const ClaimData& claim) {
  if (judged(claim)) return "";
  if (claim.counts.n_error > 0) return "threw an error";
  bool gpu = true, measurements = true, any = false;
  for (const CaseData& cs : claim.cases)
    for (const Check& ck : cs.checks) {
      any = true;
      gpu = gpu && wants_gpu(ck.reason);
      measurements = measurements && wants_measurements(ck.reason);
    }
  if (any && gpu) return "need a GPU";
  if (any && measurements) return "need measurements";
  return "not run for other reasons";
}

std::string console_closing(const ReportData& data, size_t width) {
  const size_t n = data.claims.size();
  const size_t n_judged = size_t(std::count_if(data.claims.begin(), data.claims.end(), judged));
  std::string line = std::string("overall: ") + verdict_name(data.verdict) + ": " +
                     (n_judged == n && n > 1 ? "all " : "") + std::to_string(n_judged) +
                     (n_judged == n ? "" : " of " + std::to_string(n)) + (n == 1 ? " claim" : " claims") +
                     " judged; checks: " + counts_text(data.counts);
  std::string out = wrap_paragraph(line, width, "  ");
  // Refuted findings are what the audit found, not a failure: named, so nobody reads them as one.
  std::string refuted;
  for (const ClaimData& c : data.claims)
    if (c.counts.n_refuted > 0)
      refuted += (refuted.empty() ? "" : ", ") + c.name + " (" + std::to_string(c.counts.n_refuted) + ")";
  if (!refuted.empty())
    out += wrap_paragraph("  refuted (a finding on the paper or the release, not a failure): " + refuted, width,
                          "    ");
  if (n_judged == n) return out;

  // The claims that judged nothing, grouped by why.
  struct Group {
    std::string why;
    size_t count = 0;
    bool no_gpu_here = true;            // every GPU reason says no GPU is here (says_no_gpu_here)
    std::vector<std::string> options;   // what would give the measurements
  };
  std::vector<Group> groups;
  for (const ClaimData& c : data.claims) {
    const std::string why = not_judged_why(c);
    if (why.empty()) continue;
    auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& x) { return x.why == why; });
    if (g == groups.end()) {
      groups.emplace_back();
      groups.back().why = why;
      g = std::prev(groups.end());
    }
    ++g->count;
    for (const CaseData& cs : c.cases)
      for (const Check& ck : cs.checks) {
        g->no_gpu_here = g->no_gpu_here && says_no_gpu_here(ck.reason);
        for (std::string o : options_in(ck.reason))
          if (std::find(g->options.begin(), g->options.end(), o) == g->options.end()) g->options.push_back(o);
      }
  }
  // A GPU first, then measurements (what a newcomer can supply), then the rest.
  auto rank = [](const std::string& why) {
    return why == "need a GPU" ? 0 : why == "need measurements" ? 1 : why == "threw an error" ? 2 : 3;
  };
  std::stable_sort(groups.begin(), groups.end(), [&](const Group& a, const Group& b) { return rank(a.why) < rank(b.why); });
  std::string parts;
  for (const Group& g : groups) {
    std::string what = g.why;
    if (g.count == 1 && what.starts_with("need ")) what = "needs " + what.substr(5);
    std::string detail;
    if (g.why == "need a GPU" && g.no_gpu_here) detail = "no usable GPU here";
    if (g.why == "need measurements") {
      // --external, --external-cases, --external-model, --external-timing: "--external*".
      std::vector<std::string> shown;
      const auto ext = std::count_if(g.options.begin(), g.options.end(),
                                     [](const std::string& o) { return o.starts_with("--external"); });
      for (const std::string& o : g.options) {
        const std::string s = ext > 1 && o.starts_with("--external") ? "--external*" : o;
        if (std::find(shown.begin(), shown.end(), s) == shown.end()) shown.push_back(s);
      }
      for (const std::string& s : shown) detail += (detail.empty() ? "" : ", ") + s;
    }
    if (g.why == "not run for other reasons") detail = "see their tables";
    parts += (parts.empty() ? "" : ", ") + std::to_string(g.count) + " " + what +
             (detail.empty() ? "" : " (" + detail + ")");
  }
  out += wrap_paragraph("  " + std::to_string(n - n_judged) + " judged nothing: " + parts, width, "    ");
  return out;
}

}  // namespace fh
