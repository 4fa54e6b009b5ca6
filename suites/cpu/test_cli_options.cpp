// forge-verify's command line (suites/forge_verify/cli_options.cpp and, for its diff subcommand,
// diff_main.cpp, compiled into this suite):
// --help is generated from the option table the parser reads, so every row is checked both
// ways here: its example value parses through parse_args, and --help shows it at a line start
// with no line wider than kHelpWidth. The real binary's --help is checked against the README by
// CTest readme_options.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "suites/forge_verify/cli_options.h"
#include "suites/forge_verify/diff_main.h"

namespace fh {
namespace {

// parse_args over these arguments (argv[0] added).
VerifyConfig parse(std::vector<std::string> args, RunOptions& run) {
  args.insert(args.begin(), "forge-verify");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return parse_args(int(argv.size()), argv.data(), run);
}

// The arguments that try one row: the option and its example; --external and --external-cases
// only go together, so each brings the other.
std::vector<std::string> try_row(const OptionRow& r) {
  std::vector<std::string> a{r.name};
  if (!r.value.empty()) a.push_back(r.example);
  if (r.name == "--external") a.insert(a.end(), {"--external-cases", "cases.h5"});
  if (r.name == "--external-cases") a.insert(a.end(), {"--external", "results.h5"});
  return a;
}

TEST(CliOptions, EveryRowsExampleParses) {
  std::set<std::string> names;
  for (const OptionRow& r : option_rows()) {
    EXPECT_TRUE(names.insert(r.name).second) << r.name << " has two rows";
    EXPECT_EQ(r.name.rfind("--", 0), 0u) << r.name;
    EXPECT_FALSE(r.help.empty()) << r.name << " has no help";
    EXPECT_EQ(r.value.empty(), r.example.empty()) << r.name << ": a value name wants an example, a flag none";
    if (r.name == "--help") continue;  // prints and exits
    RunOptions run;
    EXPECT_NO_THROW(parse(try_row(r), run)) << r.name << " " << r.example;
  }
  EXPECT_GE(names.size(), 20u);
}

// A value-taking row given without its value, or with another option as its value, is refused;
// an unknown option too.
TEST(CliOptions, MissingValuesAndUnknownOptionsAreRefused) {
  for (const OptionRow& r : option_rows()) {
    if (r.value.empty()) continue;
    RunOptions run;
    EXPECT_THROW(parse({r.name}, run), UsageError) << r.name << " without a value";
    EXPECT_THROW(parse({r.name, "--quiet"}, run), UsageError) << r.name << " --quiet";
    EXPECT_THROW(parse({r.name, ""}, run), UsageError) << r.name << " ''";
  }
  RunOptions run;
  EXPECT_THROW(parse({"--no-such-option"}, run), UsageError);
  // --hyper without '=' or without a key says what it wants (found by mutate.py --changed: a
  // refusal further down, with another message, hid a broken check here).
  for (const char* bad : {"lr", "=0.1"}) {
    try {
      parse({"--hyper", bad}, run);
      ADD_FAILURE() << "--hyper " << bad << " accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("wants KEY=VALUE"), std::string::npos) << bad << ": " << e.what();
    }
  }
}

// The rows set what they say (a few of them, one of each kind).
TEST(CliOptions, RowsSetTheirFields) {
  RunOptions run;
  const VerifyConfig cfg = parse({"--rule", "lion,adamw,lion", "--format", "int8", "--shape", "64x96x33", "--steps", "2",
                                  "--seed", "0x1f", "--jobs", "3", "--quiet", "--json", "r.json"},
                                 run);
  ASSERT_EQ(cfg.rules.size(), 2u);
  EXPECT_EQ(cfg.formats, std::vector<StateFormat>{StateFormat::int8});
  EXPECT_EQ(cfg.out, 64);
  EXPECT_EQ(cfg.in, 96);
  EXPECT_EQ(cfg.tokens, 33);
  EXPECT_EQ(cfg.steps, 2);
  EXPECT_EQ(cfg.seed, 31u);
  EXPECT_TRUE(cfg.quiet);
  EXPECT_EQ(run.jobs, 3);
  EXPECT_EQ(run.json_path, "r.json");
  // The numeric ranges --help states hold at their edges: OUT*IN <= 2^26, T <= 2^20, steps.
  EXPECT_NO_THROW(parse({"--shape", "8192x8192x1048576"}, run));
  EXPECT_THROW(parse({"--shape", "8192x8193x1"}, run), UsageError);
  EXPECT_THROW(parse({"--shape", "1x1x1048577"}, run), UsageError);
  EXPECT_NO_THROW(parse({"--steps", "10000"}, run));
  EXPECT_THROW(parse({"--steps", "10001"}, run), UsageError);
}

TEST(CliOptions, HelpShowsEveryRowWithinItsWidth) {
  const std::string h = help_text();
  EXPECT_EQ(h.find('@'), std::string::npos) << "a placeholder left in --help";
  std::istringstream in(h);
  std::set<std::string> at_line_start;
  for (std::string line; std::getline(in, line);) {
    EXPECT_LE(line.size(), kHelpWidth) << "too wide: " << line;
    if (line.rfind("  --", 0) == 0) at_line_start.insert(line.substr(2, line.find(' ', 2) - 2));
  }
  for (const OptionRow& r : option_rows()) EXPECT_TRUE(at_line_start.count(r.name)) << r.name << " not in --help";
  EXPECT_EQ(at_line_start.size(), option_rows().size()) << "--help lists an option with no row";
  // Defaults and ranges come from the code, not from the text.
  const VerifyConfig d;
  EXPECT_NE(h.find("(default: " + std::to_string(d.steps) + ")"), std::string::npos);
  EXPECT_NE(h.find(std::to_string(d.out) + "x" + std::to_string(d.in) + "x" + std::to_string(d.tokens)), std::string::npos);
}

// forge-verify diff's table: every row's example applies, and --help shows every row.
TEST(CliOptions, DiffRowsParseAndShowInHelp) {
  std::set<std::string> names;
  for (const auto& r : diff_option_rows()) {
    EXPECT_TRUE(names.insert(r.name).second) << r.name << " has two rows";
    EXPECT_EQ(r.value.empty(), r.example.empty()) << r.name;
    DiffArgs a;
    EXPECT_NO_THROW(r.apply(a, r.example)) << r.name << " " << r.example;
  }
  DiffArgs a;
  find_option(diff_option_rows(), "--alpha")->apply(a, "0.01");
  EXPECT_EQ(a.opt.alpha, 0.01);
  EXPECT_ANY_THROW(find_option(diff_option_rows(), "--alpha")->apply(a, "1.5"));
  const std::string h = diff_help_text();
  std::istringstream in(h);
  std::set<std::string> shown;
  for (std::string line; std::getline(in, line);) {
    EXPECT_LE(line.size(), kHelpWidth) << "too wide: " << line;
    if (line.rfind("  --", 0) == 0) shown.insert(line.substr(2, line.find(' ', 2) - 2));
  }
  EXPECT_EQ(shown, names);
  EXPECT_NE(h.find("(default " + std::string("0.05") + ")"), std::string::npos) << "alpha's default from DiffOptions";
}

}  // namespace
}  // namespace fh
