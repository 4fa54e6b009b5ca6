// A command line's options as one table that its parser and its --help both read (forge-verify
// and its diff subcommand), so that an option cannot be accepted and undocumented, or the reverse.
#pragma once
#include <algorithm>
#include <cstddef>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace fh {

// One option: its name, its value's name (empty: a flag), its --help paragraph, a value it
// accepts (test_cli_options applies every row's example), and what it does to the parse state S.
template <class S>
struct OptionRowOf {
  std::string name, value, help, example;
  std::function<void(S&, const std::string& value)> apply;
};

// No --help line is wider than this.
constexpr size_t kHelpWidth = 100;

// `text` wrapped at kHelpWidth, the first line starting at column first_used, every later one
// indented by `indent` spaces.
inline std::string wrap_help(const std::string& text, size_t indent, size_t first_used) {
  std::istringstream words(text);
  std::string o, w;
  size_t col = first_used;
  bool line_start = true;
  while (words >> w) {
    if (!line_start && col + 1 + w.size() > kHelpWidth) {
      o += "\n" + std::string(indent, ' ');
      col = indent;
      line_start = true;
    }
    if (!line_start) {
      o += ' ';
      ++col;
    }
    o += w;
    col += w.size();
    line_start = false;
  }
  return o;
}

// The rows as --help's option list: "  NAME VALUE" padded to `column` (on a line of its own when
// longer), then the help wrapped under it.
template <class S>
std::string option_help(const std::vector<OptionRowOf<S>>& rows, size_t column) {
  std::string h;
  for (const OptionRowOf<S>& r : rows) {
    std::string left = "  " + r.name + (r.value.empty() ? "" : " " + r.value);
    if (left.size() + 1 > column) left += "\n" + std::string(column, ' ');
    else left += std::string(column - left.size(), ' ');
    h += left + wrap_help(r.help, column, column) + "\n";
  }
  return h;
}

// The row named `name`, or nullptr.
template <class S>
const OptionRowOf<S>* find_option(const std::vector<OptionRowOf<S>>& rows, const std::string& name) {
  const auto it = std::find_if(rows.begin(), rows.end(), [&](const OptionRowOf<S>& r) { return r.name == name; });
  return it == rows.end() ? nullptr : &*it;
}

}  // namespace fh
