// Internal to reports/: the name, text and evidence rules of the schema. The builder
// (report_builder.cpp, which defines them) throws on a breach; the schema checker
// (report_read.cpp) lists it. Each returns "" when valid, else the problem in words.
#pragma once
#include <set>
#include <string>

#include "inputs/text_rules.h"
#include "oracles/evidence.h"

namespace fh::report_detail {

// The name and text rules are the input layer's (inputs/text_rules.h): what an input may hold
// is what the report can take.
using ::fh::name_problem;
using ::fh::text_problem;
// Contract 7: a verdict carries its evidence.
std::string evidence_problem(const Check& c);
// A pass whose measured metric lies on the failing side of its bound (pass_if), e.g. a power
// check recorded as "<=": the recorded direction or the verdict is wrong. "" when consistent or
// when metric or bound is not a number. Version-2 files only (version 1 has no pass_if).
std::string direction_problem(const Check& c);
// verdict, n_pass, n_fail, n_not_run, n_error: the aggregate attributes every level carries.
const std::set<std::string>& aggregate_attr_names();

}  // namespace fh::report_detail
