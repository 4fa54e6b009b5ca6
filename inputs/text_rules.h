// The text and name rules every string read from an input must meet before it may reach the
// report (the report's builder and schema checker apply the same rules, reports/report_rules.h).
// Each returns "" when valid, else the problem in words.
#pragma once
#include <string>

namespace fh {

// A link or attribute name: not empty, no '/', not made only of '.', no NUL, valid UTF-8.
std::string name_problem(const std::string& name);
// HDF5 strings are C strings declared UTF-8: an embedded NUL would silently truncate.
std::string text_problem(const std::string& text);

}  // namespace fh
