// forge-verify: the audit. Runs every claim that this machine can judge for one configuration,
// prints a verdict table per claim, writes the HDF5 report, and exits non-zero on any failure.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "kernels/gpu/device_info.h"
#include "kernels/rules/hyper_fields.h"
#include "suites/forge_verify/git_revision.h"
#include "inputs/run_inputs.h"
#include "reports/summary_export.h"
#include "suites/claims/registry.h"
#include "suites/claims/external_common.h"
#include "suites/forge_verify/claim_scheduler.h"
#include "suites/forge_verify/console_table.h"
#include "suites/forge_verify/diff_main.h"
#include "suites/forge_verify/external_cases_main.h"

namespace fh {
namespace {

// Exit codes (--help says them). A claim that throws is its own `error` verdict, and the run
// goes on; it exits 3 like any other internal error.
constexpr int kExitFail = 1, kExitUsage = 2, kExitInternal = 3, kExitNotRunRequired = 4;

struct UsageError : std::runtime_error { using std::runtime_error::runtime_error; };

// Set once the claims start: from then on any exception is an internal error (exit 3), never
// a usage error, and the verdict table is printed before the report is written.
bool g_run_started = false;

// The documented ranges of the numeric options (kHelp states them: keep the two in step).
constexpr uint64_t kDimMax = (uint64_t(1) << 31) - 1;  // --shape OUT and IN, each
constexpr uint64_t kOutInMax = uint64_t(1) << 26;      // --shape OUT*IN
constexpr uint64_t kTokensMax = uint64_t(1) << 20;     // --shape T
constexpr uint64_t kStepsMax = 10000;
constexpr uint64_t kSamplesMax = 10000000;

const char* kHelp = R"(forge-verify: audit the FORGE claims (fused optimizer step in the wgrad GEMM)

Usage: forge-verify [options]
       forge-verify diff BASE.h5 NEW.h5 [options]
       forge-verify external-cases --set ci|forge [--seed N] [--force] OUT.h5

Subcommands (each has its own --help):
  diff                     compare two reports: what regressed, improved or changed
  external-cases           write the cases file an external producer answers
                           (docs/EXTERNAL_PRODUCER.md; judged with --external)

With no options it runs every claim on the default configuration: every rule with
torch.optim's default hyperparameters, state formats fp32, bf16, int8 (block 64), weight stores
fp32_master, bf16_rne, bf16_sr, one layer of out=192, in=256, T=100 tokens, 5 steps, seed
20261202. A claim whose needs the machine lacks (a GPU, 2 GPUs, an sm_90 GPU) is reported
"not-run: not applicable: needs a GPU, 0 visible" (listed, never a failure), and the claims that
judge measurements or external results (--external*, --model-step) "not-run: no
measurements given" or "no external results" when none are given. The last lines say the overall
verdict, how many claims were judged, and why the others judged nothing.

Options:
  --rule NAME[,NAME...]    rules to audit (repeatable): @RULES@ (default: all)
  --format F[,F...]        optimizer-state formats: fp32 bf16 int8 (default: all)
  --store S[,S...]         weight stores: fp32_master bf16_rne bf16_sr (default: all)
  --shape OUTxINxT         layer shape and token count: three integers joined by 'x', OUT and
                           IN in 1..2147483647 with OUT*IN <= 67108864 (2^26), T in
                           1..1048576 (2^20) (default: 192x256x100)
  --steps N                consecutive optimizer steps per case, 1..10000 (default: 5)
  --seed N                 the run's one seed, 0..18446744073709551615, decimal or 0x hex
                           (default: 20261202); printed at the start and kept in /meta; every
                           generated input is a named stream of it ("<claim>/<purpose>")
  --samples N              elements per rule and input class for the MPFR check, 1..10000000
                           (default: 1000)
  --hyper KEY=VALUE        set a hyperparameter (torch.optim names; beta1/beta2 for betas;
                           flags as 0/1) on every selected rule that has it (repeatable);
                           VALUE a finite double; an error if no selected rule has KEY or
                           VALUE is invalid
  --claim NAME[,NAME...]   run only these claims (see --list-claims)
  --jobs N                 run up to N claims at a time, 1..256 (default: the machine's cores);
                           claims that use the GPU take turns on it. The report, tables and
                           summaries are the same for every N; progress says each claim's start
                           and finish (with its notes under it)
  --list-claims            print the claim registry (id, GPU, options honoured, paper statement,
                           what it judges), then exit; --list-claims-markdown and
                           --list-claims-json print it as the README's table and as JSON
  --report PATH            where the HDF5 report goes (default: ./forge-verify-<UTC>-<pid>.h5,
                           unique per run); PATH must be absent or a regular file
  --json PATH              also write a JSON summary: per claim and check, the verdict table's
                           content, the exit code and what --require-gpu found
  --junit PATH             also write JUnit XML: one test case per check; a failed check is a
                           failure, a claim that threw an error, a not-run check skipped
  --bench-json PATH        store forge-bench's JSON (--benchmark_out) in the report's
                           /benchmarks, every repetition and the median, so that
                           `forge-verify diff` can test a slowdown; read before any claim runs
  --external PATH          judge an external producer's results file (repeatable; one kernel
                           path per file; docs/EXTERNAL_PRODUCER.md). Needs --external-cases.
                           Without --claim, only the claims that judge the given files run (for
                           --external the ext_* claims). A bad, truncated or mismatched file is
                           bad input (exit 2, no report)
  --external-cases PATH    the cases file the results answer (written by
                           `forge-verify external-cases --set ci|forge [--seed N] [--force] OUT`)
  --external-model PATH    a model configuration measured by scripts/forge_model_bench.py
                           (JSON; repeatable): @CLAIMS_MODEL_RUNS@
  --model-step PATH        a run of forge-model-step (JSON; repeatable), judged by
                           @CLAIMS_MODEL_STEPS@, with --external-model's torch runs
                           beside it. Bad JSON is bad input (exit 2, no report)
  --external-timing PATH   per-layer timings, Google Benchmark JSON (forge_adapter.py --timing,
                           forge-bench; repeatable), judged by
                           @CLAIMS_TIMINGS@. Bad JSON is bad
                           input (exit 2, no report)
  --require-gpu            asserts a GPU is visible and every GPU claim this machine can run
                           ran; else the run fails (exit 4). A claim not applicable here (it
                           needs 2 GPUs, 1 visible) does not fail it. The GPU runner's entry
                           point always passes it
  --force                  replace existing regular files at the report, JSON and JUnit paths
  --quiet                  no progress lines on stderr
  --help                   this text

An option that a selected claim does not honour (see --list-claims) is reported on stderr and
in the report's /meta (options_not_honoured), never silently dropped.

The report path is checked before any claim runs: its directory must exist and take a new
file, the name and its temporary name (<name>.tmp.<pid>, beside it) must fit the filesystem's
limits, and the path must be absent or a regular file. A directory, device node, FIFO, socket
or symbolic link there is refused (never followed or replaced), and so is an existing regular
file unless --force is given. The report is written to the temporary name and renamed; without
--force the rename never replaces a file that appeared meanwhile (another run's report). Stale
temporary files of the same report name whose process is gone are removed (said on stderr).

A claim that throws (out of memory, any exception) gets its own `error` verdict with the
message, and the other claims still run; the report is written as usual. SIGINT or SIGTERM
stops the run: it says which claims were running, leaves no report or temporary file, and
exits 128 + the signal's number.

Verdicts: a harness contract (a bitwise identity, a bound the harness proves, a self-check, a
planted defect) is pass, fail or not-run; a finding (a statement of the paper or of the external
release, named in the claim's registry row) is confirmed, refuted or inconclusive. A refutation is
what the audit found, not a broken harness: it is listed (table, closing lines, JSON, a JUnit
property, the page) and does not fail the run. Either kind is `error` when its claim threw.

Exit status (the first that applies):
  0  every contract that ran passed; not-run checks are allowed unless --require-gpu says
     otherwise (a not-run is never counted as a pass: the table and summaries say not-run);
     findings, refuted ones included, never change the status
  1  a contract failed
  2  bad usage or input: nothing is run and no report is written
  3  internal error: a claim threw (its verdict is `error`, the report is written), or the
     run itself failed after it started (the report could not be written); the verdict
     table, when reached, is printed before the report is written
  4  --require-gpu and no GPU is visible, or a GPU claim that this machine could run did not
     (no check failed, none errored); the claims are named on stderr
)";

// The rule names of kAllRules, space separated: help and messages never list them by hand.
std::string rule_names() {
  std::string o;
  for (RuleId id : kAllRules) o += (o.empty() ? "" : " ") + std::string(rule_name(id));
  return o;
}

// "the a and b claims": the claims that judge `input` (RunInput bits), named from their rows.
std::string claims_judging(uint32_t input) {
  std::vector<std::string> ids;
  for (const ClaimInfo& c : claim_registry())
    if (c.reads & input) ids.push_back(c.id);
  std::string o = "the";
  for (size_t i = 0; i < ids.size(); ++i) o += (i == 0 ? " " : i + 1 == ids.size() ? " and " : ", ") + ids[i];
  return o + (ids.size() == 1 ? " claim" : " claims");
}

std::string help_text() {
  std::string h = kHelp;
  const std::pair<std::string, std::string> keys[] = {{"@RULES@", rule_names()},
                                                      {"@CLAIMS_MODEL_RUNS@", claims_judging(kInputModelRuns)},
                                                      {"@CLAIMS_MODEL_STEPS@", claims_judging(kInputModelSteps)},
                                                      {"@CLAIMS_TIMINGS@", claims_judging(kInputTimings)}};
  for (const auto& [key, value] : keys) h.replace(h.find(key), key.size(), value);
  return h;
}

// `s` cut at every `sep`, empty parts kept ("a,,b" is three parts, "a," two).
std::vector<std::string> split_at(const std::string& s, char sep) {
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t at = s.find(sep, start);
    parts.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return parts;
    start = at + 1;
  }
}

// A comma-separated option value. An empty element is a slip ("adamw,,lion", "adamw,"), refused
// rather than dropped: the run would audit less than the user typed.
std::vector<std::string> split_list(const std::string& s, const std::string& option) {
  const std::vector<std::string> out = split_at(s, ',');
  const auto empty = [](const std::string& item) { return item.empty(); };
  if (std::all_of(out.begin(), out.end(), empty)) throw UsageError(option + ": empty list '" + s + "'");
  if (std::any_of(out.begin(), out.end(), empty)) throw UsageError(option + ": empty element in list '" + s + "'");
  return out;
}

// An unsigned option value in lo..hi: the whole string, decimal digits (or 0x and hex digits
// where `hex`), no sign, no spaces. A negative number or one beyond the range (also beyond
// 2^64) is named with the option and the range.
uint64_t parse_unsigned(const std::string& s, const std::string& what, uint64_t lo, uint64_t hi,
                        bool hex = false) {
  const std::string range = std::to_string(lo) + ".." + std::to_string(hi);
  const UsageError out_of_range(what + " must be in " + range + ", got " + s);
  auto all = [](const std::string& t, int (*pred)(int)) {
    return !t.empty() && std::all_of(t.begin(), t.end(), [&](char c) { return pred((unsigned char)c) != 0; });
  };
  if (s.size() > 1 && s[0] == '-' && all(s.substr(1), ::isdigit)) throw out_of_range;
  const bool is_hex = hex && s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  const std::string digits = is_hex ? s.substr(2) : s;
  if (!all(digits, is_hex ? ::isxdigit : ::isdigit))
    throw UsageError(what + ": not an unsigned integer: '" + s + "' (" + (hex ? "decimal or 0x hex, " : "") +
                     "range " + range + ")");
  errno = 0;
  const unsigned long long v = std::strtoull(digits.c_str(), nullptr, is_hex ? 16 : 10);
  if (errno == ERANGE || v < lo || v > hi) throw out_of_range;
  return v;
}

// --shape OUTxINxT: exactly three parts, each a positive integer in range, the product checked
// in 64 bits (OUT, IN < 2^31, so OUT*IN < 2^62 cannot overflow).
void parse_shape(const std::string& v, VerifyConfig& cfg) {
  const std::vector<std::string> parts = split_at(v, 'x');
  if (parts.size() != 3 || std::any_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty(); }))
    throw UsageError("--shape wants OUTxINxT (three positive integers joined by 'x'), got '" + v + "'");
  const uint64_t out = parse_unsigned(parts[0], "--shape OUT", 1, kDimMax);
  const uint64_t in = parse_unsigned(parts[1], "--shape IN", 1, kDimMax);
  const uint64_t tokens = parse_unsigned(parts[2], "--shape T", 1, kTokensMax);
  if (out * in > kOutInMax)
    throw UsageError("--shape OUT*IN must be <= " + std::to_string(kOutInMax) + " (2^26) for a CPU audit, got " +
                     parts[0] + "*" + parts[1] + " = " + std::to_string(out * in));
  cfg.out = int64_t(out);
  cfg.in = int64_t(in);
  cfg.tokens = int64_t(tokens);
}

// A --hyper value: the whole string a double (strtod). "nan" and "inf" parse here, and
// set_hyper refuses them as non-finite, naming the hyperparameter; a finite literal beyond the
// double range, or one that underflows to zero, is out of range.
double parse_hyper_value(const std::string& key, const std::string& s) {
  const std::string what = "--hyper " + key;
  if (s.empty() || std::isspace((unsigned char)s[0])) throw UsageError(what + ": not a number: '" + s + "'");
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) throw UsageError(what + ": not a number: '" + s + "'");
  if (errno == ERANGE && std::isinf(v))
    throw UsageError(what + ": '" + s + "' is out of range (beyond the largest finite double, about 1.8e308)");
  if (errno == ERANGE && v == 0)
    throw UsageError(what + ": '" + s + "' is out of range (it underflows to 0; the smallest double is about 4.9e-324)");
  return v;
}

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

VerifyConfig parse_args(int argc, char** argv, RunOptions& run) {
  VerifyConfig cfg;
  std::vector<RuleId> rules;
  std::vector<std::pair<std::string, double>> hypers;
  auto need = [&](int& i) -> std::string {
    // A following option is not a value: "--steps --report x" is a missing value, not "--report".
    if (i + 1 >= argc || std::strncmp(argv[i + 1], "--", 2) == 0)
      throw UsageError(std::string(argv[i]) + " needs a value");
    // Nor is an empty one: "--report ''" took the default name, "--bench-json ''" read nothing.
    if (argv[i + 1][0] == '\0') throw UsageError(std::string(argv[i]) + ": empty value");
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") { std::fputs(help_text().c_str(), stdout); std::exit(0); }
    else if (a == "--list-claims") run.list_mode = ListMode::text;
    else if (a == "--list-claims-markdown") run.list_mode = ListMode::markdown;
    else if (a == "--list-claims-json") run.list_mode = ListMode::json;
    else if (a == "--quiet") cfg.quiet = true;
    else if (a == "--force") run.force = true;
    else if (a == "--require-gpu") run.require_gpu = true;
    else if (a == "--jobs") run.jobs = int(parse_unsigned(need(i), a, 1, kMaxJobs));
    else if (a == "--json") run.json_path = need(i);
    else if (a == "--junit") run.junit_path = need(i);
    else if (a == "--bench-json") run.bench_json = need(i);
    else if (a == "--external") cfg.external_results.push_back(need(i));
    else if (a == "--external-cases") cfg.external_cases = need(i);
    else if (a == "--external-model") cfg.external_model.push_back(need(i));
    else if (a == "--model-step") cfg.model_step.push_back(need(i));
    else if (a == "--external-timing") cfg.external_timing.push_back(need(i));
    else if (a == "--rule") {
      run.given |= kOptRule;
      for (const auto& n : split_list(need(i), a)) {
        auto id = parse_rule(n);
        if (!id) throw UsageError("unknown rule '" + n + "' (known: " + rule_names() + ")");
        if (std::find(rules.begin(), rules.end(), *id) == rules.end()) rules.push_back(*id);
      }
    } else if (a == "--format") {
      run.given |= kOptFormat;
      cfg.formats.clear();
      for (const auto& n : split_list(need(i), a)) {
        if (n == "fp32") cfg.formats.push_back(StateFormat::fp32);
        else if (n == "bf16") cfg.formats.push_back(StateFormat::bf16);
        else if (n == "int8") cfg.formats.push_back(StateFormat::int8);
        else throw UsageError("unknown state format '" + n + "' (known: fp32 bf16 int8)");
      }
    } else if (a == "--store") {
      run.given |= kOptStore;
      cfg.stores.clear();
      for (const auto& n : split_list(need(i), a)) {
        if (n == "fp32_master") cfg.stores.push_back(WeightStore::fp32_master);
        else if (n == "bf16_rne") cfg.stores.push_back(WeightStore::bf16_rne);
        else if (n == "bf16_sr") cfg.stores.push_back(WeightStore::bf16_sr);
        else throw UsageError("unknown weight store '" + n + "' (known: fp32_master bf16_rne bf16_sr)");
      }
    } else if (a == "--shape") {
      run.given |= kOptShape;
      parse_shape(need(i), cfg);
    } else if (a == "--steps") { run.given |= kOptSteps; cfg.steps = int64_t(parse_unsigned(need(i), a, 1, kStepsMax)); }
    else if (a == "--seed") {
      run.given |= kOptSeed;
      cfg.seed = parse_unsigned(need(i), a, 0, std::numeric_limits<uint64_t>::max(), /*hex=*/true);
    } else if (a == "--samples") {
      run.given |= kOptSamples;
      cfg.rule_samples = int64_t(parse_unsigned(need(i), a, 1, kSamplesMax));
    }
    else if (a == "--hyper") {
      run.given |= kOptHyper;
      const std::string v = need(i);
      const auto eq = v.find('=');
      if (eq == std::string::npos || eq == 0) throw UsageError("--hyper wants KEY=VALUE, got '" + v + "'");
      hypers.emplace_back(v.substr(0, eq), parse_hyper_value(v.substr(0, eq), v.substr(eq + 1)));
    } else if (a == "--claim") {
      for (const auto& n : split_list(need(i), a)) cfg.claims.push_back(n);
    } else if (a == "--report") cfg.report_path = need(i);
    else throw UsageError("unknown option '" + a + "' (see --help)");
  }
  if (rules.empty()) rules.assign(std::begin(kAllRules), std::end(kAllRules));
  for (RuleId id : rules) cfg.rules.push_back(default_rule_config(id));
  for (const auto& [key, value] : hypers) {
    bool any = false;
    try {
      for (auto& rc : cfg.rules) any |= set_hyper(rc, key, value);
    } catch (const std::invalid_argument& e) { throw UsageError(e.what()); }
    if (!any) throw UsageError("--hyper " + key + ": no selected rule has a hyperparameter of that name");
  }
  for (const auto& c : cfg.claims)
    if (!find_claim(c)) throw UsageError("unknown claim '" + c + "' (see --list-claims)");
  if (cfg.external_results.empty() != cfg.external_cases.empty())
    throw UsageError("--external and --external-cases go together (docs/EXTERNAL_PRODUCER.md)");
  // Judging input files: by default only the claims that judge one of those given (their rows say which).
  if (const uint32_t given = inputs_given(input_paths_of(cfg)); given && cfg.claims.empty())
    for (const ClaimInfo& c : claim_registry())
      if (c.reads & given) cfg.claims.push_back(c.id);
  if (cfg.report_path.empty()) {
    // Unique per run: two runs started in the same second in one folder differ by pid (and the
    // no-replace rename keeps either from ever replacing the other's report).
    std::string t = utc_now_iso8601();
    std::replace(t.begin(), t.end(), ':', '-');
    cfg.report_path = "forge-verify-" + t + "-" + std::to_string(::getpid()) + ".h5";
  }
  // Three outputs, three files, none of them an input: one file named twice would be
  // overwritten by the next write, or destroy what the run reads (same_file: device and inode).
  const std::vector<std::pair<std::string, std::string>> outs = {
      {"--report", cfg.report_path}, {"--json", run.json_path}, {"--junit", run.junit_path}};
  std::vector<std::pair<std::string, std::string>> ins = {{"--external-cases", cfg.external_cases},
                                                          {"--bench-json", run.bench_json}};
  for (const auto& [opt, files] : {std::pair<const char*, const std::vector<std::string>*>{"--external", &cfg.external_results},
                                   {"--external-model", &cfg.external_model}, {"--model-step", &cfg.model_step},
                                   {"--external-timing", &cfg.external_timing}})
    for (const auto& f : *files) ins.emplace_back(opt, f);
  for (size_t i = 0; i < outs.size(); ++i) {
    if (outs[i].second.empty()) continue;
    for (size_t j = i + 1; j < outs.size(); ++j)
      if (!outs[j].second.empty() && same_file(outs[i].second, outs[j].second))
        throw UsageError(outs[i].first + " and " + outs[j].first + " name the same file ('" + outs[i].second +
                         "', '" + outs[j].second + "')");
    for (const auto& [opt, f] : ins)
      if (!f.empty() && same_file(outs[i].second, f))
        throw UsageError(outs[i].first + " '" + outs[i].second + "' is the input " + opt + " '" + f +
                         "'; an output never replaces what the run reads");
  }
  return cfg;
}

// The verdict tables and the closing lines: suites/forge_verify/console_table.cpp (no line wider
// than kConsoleWidth).
void print_table(const ReportData& data) {
  std::fputs(console_tables(data).c_str(), stdout);
  std::fputs(("\n" + console_closing(data)).c_str(), stdout);
}

std::string describe_config(const VerifyConfig& cfg) {
  std::ostringstream o;
  o << "shape=" << cfg.out << "x" << cfg.in << "x" << cfg.tokens << " steps=" << cfg.steps
    << " seed=" << cfg.seed << " samples=" << cfg.rule_samples << " formats=";
  for (auto f : cfg.formats) o << state_format_name(f) << ",";
  o << " stores=";
  for (auto w : cfg.stores) o << weight_store_name(w) << ",";
  o << " rules=";
  for (const auto& r : cfg.rules) o << rule_name(r.id) << "{" << describe_hyper(r) << "};";
  return o.str();
}

void print_registry() {
  const auto& reg = claim_registry();
  size_t w_id = 5, w_opt = 7;
  for (const ClaimInfo& c : reg) {
    w_id = std::max(w_id, c.id.size());
    w_opt = std::max(w_opt, option_flags(c.options).size());
  }
  std::printf("%-*s  %-3s  %-*s  %s\n", int(w_id), "claim", "GPU", int(w_opt), "options", "paper statement / what it judges");
  for (const ClaimInfo& c : reg) {
    std::printf("%-*s  %-3s  %-*s  %s\n", int(w_id), c.id.c_str(), c.needs_gpu() ? "yes" : "no", int(w_opt),
                option_flags(c.options).c_str(), c.statement.c_str());
    std::printf("%-*s  %-3s  %-*s  %s\n", int(w_id), "", "", int(w_opt), "", c.what.c_str());
  }
}

// ---- interruption ----
// SIGINT/SIGTERM: the handler says which claims were running, removes this run's temporary
// files (the report is built in memory, so before the write there is nothing else on disk)
// and exits 128 + signal. Everything it touches is prepared beforehand: it only reads lock-free
// atomics and calls write, unlink and _exit (async-signal-safe), on whichever thread the
// signal lands.
constexpr size_t kPathMax = 4096;
char g_temp_paths[3][kPathMax] = {};           // report, JSON, JUnit temporary names ("" unused)
std::atomic<const char*> g_running[kMaxJobs];  // per worker: its claim's id (registry storage, lives forever), or null
std::atomic<int> g_phase{0};                   // 0 claims, 1 writing the outputs
static_assert(std::atomic<const char*>::is_always_lock_free);

void put(const char* s) {
  for (size_t n = std::strlen(s); n > 0;) {
    const ssize_t k = ::write(2, s, n);
    if (k <= 0) return;
    s += k;
    n -= size_t(k);
  }
}

extern "C" void on_interrupt(int sig) {
  put(sig == SIGINT ? "\nforge-verify: interrupted by SIGINT " : "\nforge-verify: interrupted by SIGTERM ");
  if (g_phase.load() == 0) {
    int n = 0;
    for (const auto& r : g_running) n += r.load() != nullptr;
    put(n == 0 ? "between claims" : n == 1 ? "during claim " : "during claims ");
    int k = 0;
    for (const auto& r : g_running)
      if (const char* id = r.load()) {
        if (k++ > 0) put(", ");
        put(id);
      }
    put("; no report written\n");
  } else {
    put("while writing the outputs; temporary files removed (a file under its final name is complete)\n");
  }
  for (auto& p : g_temp_paths)
    if (p[0]) ::unlink(p);
  ::_exit(128 + sig);
}

void install_interrupt_handlers(const std::vector<std::string>& outputs) {
  for (size_t i = 0; i < outputs.size() && i < 3; ++i)
    if (!outputs[i].empty()) {
      const std::string t = report_temp_path(outputs[i]);
      if (t.size() >= kPathMax) throw UsageError("output path too long: " + outputs[i]);
      std::memcpy(g_temp_paths[i], t.c_str(), t.size() + 1);
    }
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

// ---- progress heartbeat ----
// Long claims are silent between notes: every kBeatSeconds one line per running claim that has
// run that long says the claim, the time it has taken and the case it is on (when its runner
// says, progress_set_case, on the claim's own thread). Claims run on workers (--jobs); each
// worker's slot holds its claim while it runs.
class Heartbeat {
 public:
  Heartbeat(bool quiet, int workers) : slots_(size_t(workers)) {
    if (!quiet) thread_ = std::thread([this] { loop(); });
  }
  ~Heartbeat() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  // Called on the worker's thread as its claim starts and ends.
  void claim_started(int worker, const ClaimInfo& c) {
    std::lock_guard<std::mutex> lock(m_);
    Slot& s = slots_.at(size_t(worker));
    s.claim = c.id;
    s.thread = std::this_thread::get_id();
    s.started = std::chrono::steady_clock::now();
    g_running[worker] = c.id.c_str();
  }
  void claim_ended(int worker) {
    std::lock_guard<std::mutex> lock(m_);
    slots_.at(size_t(worker)).claim.clear();
    g_running[worker] = nullptr;
  }

 private:
  static constexpr int kBeatSeconds = 10;
  struct Slot {
    std::string claim;  // "" when idle
    std::thread::id thread;
    std::chrono::steady_clock::time_point started;
  };
  void loop() {
    std::unique_lock<std::mutex> lock(m_);
    while (!cv_.wait_for(lock, std::chrono::seconds(kBeatSeconds), [this] { return stop_; })) {
      std::string lines;
      for (const Slot& s : slots_) {
        if (s.claim.empty()) continue;
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - s.started).count();
        if (secs < kBeatSeconds) continue;
        const std::string at = progress_case_of(s.thread);
        char head[64];
        std::snprintf(head, sizeof head, ": %.0f s", secs);
        lines += fit_line("        ... " + s.claim + head + (at.empty() ? "" : ", case " + at)) + "\n";
      }
      if (!lines.empty()) std::fputs(lines.c_str(), stderr);  // one write: no other line cuts in
    }
  }
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<Slot> slots_;
  std::thread thread_;
};

// A planted defect for the isolation test (off unless set): FH_PLANT_THROWING_CLAIM=<claim id>
// makes that claim throw as it starts.
void maybe_plant_throw(const std::string& id) {
  const char* planted = std::getenv("FH_PLANT_THROWING_CLAIM");
  if (planted && id == planted) throw std::runtime_error("planted defect: FH_PLANT_THROWING_CLAIM=" + id);
}

// A planted defect for the exit-status test (off unless set): FH_PLANT_BROKEN_CONTRACT=<claim
// id> adds to that claim, after it ran, one bitwise contract with one differing element.
void maybe_plant_broken_contract(const std::string& id, Report& part) {
  const char* planted = std::getenv("FH_PLANT_BROKEN_CONTRACT");
  if (!planted || id != planted) return;
  const std::string why = "planted defect: FH_PLANT_BROKEN_CONTRACT=" + id;
  part.add_case(id, "planted broken contract")
      .add_check(judge("planted_bitwise", "differing", 1, 0, PassIf::at_most, why).bitwise(1, 1, "planted"));
}

// The machine as the claims' needs are judged against it. Test hooks (off unless set), so that a
// test on any machine can show a claim the machine cannot run and one it could run and did not:
// FH_VISIBLE_GPUS_FOR_TEST=N judges needs as if N sm_90 GPUs were visible (the claims still see
// the real device), and FH_NEEDS_GPUS_FOR_TEST=<claim id>:<n> declares that claim to need n GPUs.
struct Machine {
  MachineCaps caps;
  std::string hooked_claim;  // FH_NEEDS_GPUS_FOR_TEST's claim ("" when unset) and its GPUs
  int hooked_gpus = 0;

  ClaimNeeds needs_of(const ClaimInfo& c) const {
    ClaimNeeds needs = c.needs;
    if (c.id == hooked_claim) needs.gpus = hooked_gpus;
    return needs;
  }
};

int test_hook_count(const char* name, const std::string& value) {
  if (value.empty() || value.size() > 3 || value.find_first_not_of("0123456789") != std::string::npos)
    throw UsageError(std::string(name) + ": not a count: '" + value + "'");
  return std::stoi(value);
}

// Throws UsageError for a bad hook value, before any claim runs.
Machine machine_of(const DeviceInfo& dev) {
  Machine m{.caps = {.gpus = dev.visible, .sm = dev.sm}};
  if (const char* n = std::getenv("FH_VISIBLE_GPUS_FOR_TEST")) {
    m.caps.gpus = test_hook_count("FH_VISIBLE_GPUS_FOR_TEST", n);
    m.caps.sm = m.caps.gpus ? kNeedsSm90Gpu.sm : 0;
  }
  if (const char* hook = std::getenv("FH_NEEDS_GPUS_FOR_TEST")) {
    const std::string h = hook;
    const size_t colon = h.rfind(':');
    if (colon == std::string::npos || !find_claim(h.substr(0, colon)))
      throw UsageError("FH_NEEDS_GPUS_FOR_TEST: want <claim id>:<GPUs>, got '" + h + "'");
    m.hooked_claim = h.substr(0, colon);
    m.hooked_gpus = test_hook_count("FH_NEEDS_GPUS_FOR_TEST", h.substr(colon + 1));
  }
  return m;
}

// Why claim `c` does not run here, as its not-run reason; "" when it runs. A machine that lacks
// what the claim needs makes it not applicable (no failure, not even under --require-gpu); one
// that has it but whose GPU does not work says why ("no GPU: ...").
std::string cannot_run(const ClaimInfo& c, const Machine& machine, const VerifyConfig& cfg) {
  const ClaimNeeds needs = machine.needs_of(c);
  if (const std::string unmet = unmet_need(needs, machine.caps); !unmet.empty())
    return "not applicable: " + unmet +
           (machine.caps.gpus == 0 && !cfg.gpu_reason.empty() ? "; " + cfg.gpu_reason : "");
  if (needs.gpus > 0 && !cfg.gpu_available) return "no GPU: " + cfg.gpu_reason;
  return "";
}

// One claim on a worker thread: its start line, its run into a Report of its own (declared like
// the run's), then its finish line with its verdict, time and the notes it made, in one write.
// Isolation: a claim that throws is that claim's error verdict; the others still run.
std::unique_ptr<Report> run_claim(const ClaimInfo& c, int index, int count, const VerifyConfig& cfg, const Meta& meta,
                                  const Machine& machine, Heartbeat& heartbeat, int worker) {
  auto part = std::make_unique<Report>(meta);
  for (const ClaimInfo& d : claim_registry()) part->declare_claim(d.id, d.datasets, d.findings);
  std::mutex notes_mutex;
  std::string notes;
  Progress progress{cfg.quiet, index, count};
  progress.note_sink = [&](const std::string& text) {
    std::lock_guard<std::mutex> lock(notes_mutex);
    notes += "        " + text + "\n";
  };
  const std::string tag = "[" + std::to_string(index) + "/" + std::to_string(count) + "] " + c.id;
  // One line: what the claim judges, cut to the console's width (--list-claims has it whole).
  const size_t lead = tag.size() + 2;
  progress.claim(c.id, fit_line(c.what, kConsoleWidth > lead + 20 ? kConsoleWidth - lead : 20));
  heartbeat.claim_started(worker, c);
  progress_set_case("");
  const auto t0 = std::chrono::steady_clock::now();
  std::string error;
  if (const std::string why = cannot_run(c, machine, cfg); !why.empty()) {
    part->add_case(c.id, "all").add_check(Check::not_run(c.id, why));
  } else {
    try {
      maybe_plant_throw(c.id);
      c.run(cfg, *part, progress);
      maybe_plant_broken_contract(c.id, *part);
    } catch (const std::exception& e) {
      error = e.what();
    } catch (...) {
      error = "unknown exception";
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  progress_set_case("");
  heartbeat.claim_ended(worker);
  std::string said;
  if (!error.empty()) {
    said = "forge-verify: internal error: claim " + c.id + " threw: " + error + " (recorded as its error verdict; going on)\n";
    part->add_case(c.id, "claim threw").add_check(Check::errored(c.id, error));
  }
  if (!cfg.quiet) {
    char took[64];
    std::snprintf(took, sizeof took, " (%.1f s)", secs);
    std::lock_guard<std::mutex> lock(notes_mutex);
    said = fit_line(tag + " finished: " + verdict_name(part->verdict()) + took) + "\n" + notes + said;
  }
  if (!said.empty()) std::fputs(said.c_str(), stderr);  // one write: another claim's lines never cut in
  return part;
}

int run(int argc, char** argv) {
  RunOptions opts;
  VerifyConfig cfg = parse_args(argc, argv, opts);
  switch (opts.list_mode) {
    case ListMode::text: print_registry(); return 0;
    case ListMode::markdown: std::fputs(registry_markdown().c_str(), stdout); return 0;
    case ListMode::json: std::fputs(registry_json().c_str(), stdout); return 0;
    case ListMode::none: break;
  }
  // Everything about the output paths, before any work: a run that cannot write its report
  // fails here, not after it spent its time.
  const WriteOptions write_options{.replace_existing = opts.force};
  const std::vector<std::string> outputs = {cfg.report_path, opts.json_path, opts.junit_path};
  for (const std::string& out : outputs) {
    if (out.empty()) continue;
    try {
      check_output_path("forge-verify", out, write_options);
    } catch (const ReportPathError& e) {
      throw UsageError(e.what());
    }
  }
  // Every input is parsed and validated in full now, once: a bad one is bad input, refused
  // before the run. The claims judge these values and never open the files.
  RunInputs inputs;
  try {
    RunInputPaths paths = input_paths_of(cfg);
    paths.bench_json = opts.bench_json;
    inputs = read_run_inputs(paths);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  cfg.inputs = &inputs;
  const ExternalRun* external = inputs.external.cases ? &inputs.external : nullptr;
  install_interrupt_handlers(outputs);
  const DeviceInfo dev = query_device_info();
  cfg.gpu_available = dev.available;
  cfg.gpu_reason = dev.available ? "" : dev.reason;
  const Machine machine = machine_of(dev);

  Meta meta = Meta::unknown();
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  meta.set("git_revision", kGitRevision).set("host", host).set("seed", std::to_string(cfg.seed))
      .set("configuration", describe_config(cfg)).set("gpu_name", dev.available ? dev.name : "none")
      .set("gpu_driver", dev.driver).set("cuda_runtime", dev.runtime).set("cublas", dev.cublas)
      .set("gpu_compute_capability", dev.compute_capability)
      .set("gpu_sm_count", std::to_string(dev.sm_count))
      .set("require_gpu", opts.require_gpu ? "yes" : "no")
      .set("tool", "forge-verify").set("tool_version", std::string("forge-verify ") + kGitRevision);
  std::vector<const ClaimInfo*> selected;
  for (const ClaimInfo& c : claim_registry())
    if (cfg.claims.empty() || std::find(cfg.claims.begin(), cfg.claims.end(), c.id) != cfg.claims.end())
      selected.push_back(&c);
  // Options given that a selected claim does not honour: said, and kept in /meta.
  std::string not_honoured;
  for (const ClaimInfo* c : selected)
    if (const uint32_t ignored = opts.given & ~c->options) {
      not_honoured += (not_honoured.empty() ? "" : "; ") + c->id + ": " + option_flags(ignored);
      std::fprintf(stderr, "forge-verify: note: %s does not honour %s (it runs its own fixed problem there)\n",
                   c->id.c_str(), option_flags(ignored).c_str());
    }
  meta.set("options_not_honoured", not_honoured.empty() ? "none" : not_honoured);
  // Workers for the claims (--jobs, capped at the claims' count): provenance only, the report's
  // content is the same for every number.
  const int count = int(selected.size());
  const int workers = std::max(1, std::min(opts.jobs > 0 ? opts.jobs : default_job_count(), count));
  meta.set("jobs", std::to_string(workers));
  // What was judged: each external file's provenance, under external.<path>.<key>.
  if (external) {
    meta.set("external.cases", cfg.external_cases + " (" + external->cases->header().cases_id + ")");
    for (const auto& r : external->results) {
      const std::string k = "external." + r->path_name() + ".";
      meta.set(k + "file", r->path()).set(k + "producer", r->producer()).set(k + "role", r->role())
          .set(k + "order_model", r->order().describe());
      for (const auto& [key, value] : r->meta()) meta.set(k + key, value);
    }
  }
  Report report(meta);
  for (const ClaimInfo& c : claim_registry()) report.declare_claim(c.id, c.datasets, c.findings);

  // The claims, side by side on --jobs workers (the rule and the thread-safety audit:
  // claim_scheduler.h). Each claim fills a Report of its own; they are absorbed here in registry
  // order after the last one ended, so the report does not depend on the number of workers.
  std::vector<JobKind> kinds;
  for (const ClaimInfo* c : selected)
    kinds.push_back({.gpu_lane = c->needs_gpu() && cfg.gpu_available, .exclusive = c->exclusive});
  std::vector<std::unique_ptr<Report>> parts(selected.size());
  const auto t0 = std::chrono::steady_clock::now();
  // The run's one seed, said once before any claim draws from it: every claim's random streams
  // derive from it (kernels/common/seed_stream.h), and /meta keeps it.
  if (!cfg.quiet) std::fprintf(stderr, "seed: 0x%016llx (--seed N to change)\n", (unsigned long long)cfg.seed);
  g_run_started = true;
  {
    Heartbeat heartbeat(cfg.quiet, workers);
    run_claim_jobs(kinds, workers, [&](size_t i, int worker) {
      parts[i] = run_claim(*selected[i], int(i) + 1, count, cfg, meta, machine, heartbeat, worker);
    });
  }
  for (auto& part : parts) report.absorb(std::move(*part));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (BenchmarkData& b : inputs.benchmarks) report.add_benchmark(std::move(b));
  const ReportData data = report.snapshot();
  print_table(data);

  // --require-gpu asserts that a GPU is here and that every GPU claim the machine can run ran: a
  // GPU claim that did not run fails the run (exit 4) unless it is not applicable here (it needs
  // more than the machine has: 2 GPUs on a one-GPU runner). With no GPU visible nothing excuses
  // it: the flag's own assertion failed, whichever claims were selected.
  std::vector<std::string> gpu_not_run;
  for (const ClaimInfo* c : selected)
    if (const ClaimData* cd = data.find_claim(c->id);
        c->needs_gpu() && cd && cd->verdict == Verdict::not_run &&
        (machine.caps.gpus == 0 || unmet_need(machine.needs_of(*c), machine.caps).empty()))
      gpu_not_run.push_back(c->id);
  const bool require_failed = opts.require_gpu && (machine.caps.gpus == 0 || !gpu_not_run.empty());
  int code = 0;
  if (data.counts.n_fail > 0) code = kExitFail;  // contracts only: a refuted finding never fails the run
  else if (data.counts.n_error > 0) code = kExitInternal;
  else if (require_failed) code = kExitNotRunRequired;
  if (require_failed) {
    std::string names;
    for (const auto& n : gpu_not_run) names += (names.empty() ? "" : ", ") + n;
    const std::string n = std::to_string(gpu_not_run.size());
    const std::string here = machine.caps.gpus > 0 && cfg.gpu_available ? "GPU present"
                             : "no GPU: " + (cfg.gpu_reason.empty() ? std::string("none visible") : cfg.gpu_reason);
    const std::string what = gpu_not_run.empty() ? "no GPU visible" : n + " GPU claim(s) not run";
    const std::string listed = names.empty() ? "" : ": " + names;
    std::fputs(wrap_paragraph("--require-gpu: " + what + listed, kConsoleWidth, "  ").c_str(), stdout);
    const std::string said = "forge-verify: --require-gpu: " + what + " (" + here + ")" + listed;
    std::fputs(wrap_paragraph(said, kConsoleWidth, "  ").c_str(), stderr);
  }
  std::fflush(stdout);  // the table is out before the report is written, whatever happens there

  g_phase = 1;
  report.write(cfg.report_path, write_options);
  std::printf("report: %s (%.1f s)\n", cfg.report_path.c_str(), secs);
  if (!opts.json_path.empty()) {
    const RunSummary run{.exit_code = code, .require_gpu = opts.require_gpu, .gpu_claims_not_run = gpu_not_run,
                         .report_path = cfg.report_path, .seconds = secs};
    write_text_file(opts.json_path, summary_json(data, run), write_options);
    std::printf("json: %s\n", opts.json_path.c_str());
  }
  if (!opts.junit_path.empty()) {
    write_text_file(opts.junit_path, junit_xml(data), write_options);
    std::printf("junit: %s\n", opts.junit_path.c_str());
  }
  return code;
}

}  // namespace

}  // namespace fh

// Exceptions to exit codes: bad usage or input before the run is 2; anything else (out of
// memory, a failed report write, any exception once the claims started) is 3, an internal
// error, never 1, which only a failed check gives.
int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "diff") return fh::run_diff(argc - 1, argv + 1);
  if (argc > 1 && std::string(argv[1]) == "external-cases") return fh::run_external_cases(argc - 1, argv + 1, fh::kGitRevision);
  try {
    return fh::run(argc, argv);
  } catch (const fh::UsageError& e) {
    std::fprintf(stderr, "forge-verify: %s\n", e.what());
    return fh::kExitUsage;
  } catch (const std::invalid_argument& e) {
    if (!fh::g_run_started) {
      std::fprintf(stderr, "forge-verify: invalid input: %s\n", e.what());
      return fh::kExitUsage;
    }
    std::fprintf(stderr, "forge-verify: internal error: %s\n", e.what());
    return fh::kExitInternal;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "forge-verify: internal error: %s\n", e.what());
    return fh::kExitInternal;
  } catch (...) {
    std::fprintf(stderr, "forge-verify: internal error: unknown exception\n");
    return fh::kExitInternal;
  }
}
