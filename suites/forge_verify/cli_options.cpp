// forge-verify's command line (cli_options.h).
#include "suites/forge_verify/cli_options.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>

#include "inputs/run_inputs.h"
#include "kernels/rules/hyper_fields.h"
#include "reports/summary_export.h"
#include "suites/claims/external_common.h"
#include "suites/claims/registry.h"
#include "suites/forge_verify/claim_scheduler.h"

namespace fh {
namespace {

// The ranges of the numeric options (the parser checks them, --help states them from here).
constexpr uint64_t kDimMax = (uint64_t(1) << 31) - 1;  // --shape OUT and IN, each
constexpr uint64_t kOutInMax = uint64_t(1) << 26;      // --shape OUT*IN
constexpr uint64_t kTokensMax = uint64_t(1) << 20;     // --shape T
constexpr uint64_t kStepsMax = 10000;
constexpr uint64_t kSamplesMax = 10000000;

const char* kHelpHead = R"(forge-verify: audit the FORGE claims (fused optimizer step in the wgrad GEMM)

Usage: forge-verify [options]
       forge-verify diff BASE.h5 NEW.h5 [options]
       forge-verify external-cases --set ci|forge [--seed N] [--force] OUT.h5

Subcommands (each has its own --help):
  diff                     compare two reports: what regressed, improved or changed
  external-cases           write the cases file an external producer answers
                           (docs/EXTERNAL_PRODUCER.md; judged with --external)

With no options it runs every claim on the default configuration: every rule with
torch.optim's default hyperparameters, state formats fp32, bf16, int8 (block 64), weight stores
fp32_master, bf16_rne, bf16_sr, one layer of out=@OUT@, in=@IN@, T=@T@ tokens, @STEPS@ steps, seed
@SEED@. A claim whose needs the machine lacks (a GPU, 2 GPUs, an sm_90 GPU) is reported
"not-run: not applicable: needs a GPU, 0 visible" (listed, never a failure), and the claims that
judge measurements or external results (--external*, --model-step) "not-run: no
measurements given" or "no external results" when none are given. The last lines say the overall
verdict, how many claims were judged, and why the others judged nothing.
)";

// Between the two: "Options:" and the rows of option_rows(), each wrapped by help_text.
const char* kHelpTail = R"(
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

template <class T>
using NameTable = std::vector<std::pair<std::string, T>>;
const NameTable<StateFormat> kFormatNames = {{"fp32", StateFormat::fp32}, {"bf16", StateFormat::bf16}, {"int8", StateFormat::int8}};
const NameTable<WeightStore> kStoreNames = {
    {"fp32_master", WeightStore::fp32_master}, {"bf16_rne", WeightStore::bf16_rne}, {"bf16_sr", WeightStore::bf16_sr}};

// The names of a table, space separated (help and messages never list them by hand).
template <class T>
std::string names_of(const NameTable<T>& known) {
  std::string o;
  for (const auto& [n, x] : known) o += (o.empty() ? "" : " ") + n;
  return o;
}

// A comma-separated list of names, each one of `known`, into `out` (cleared first: the last
// --format wins, as before).
template <class T>
void parse_names(const std::string& v, const std::string& option, const char* what, const NameTable<T>& known,
                 std::vector<T>& out) {
  out.clear();
  for (const auto& n : split_list(v, option)) {
    const auto it = std::find_if(known.begin(), known.end(), [&](const auto& k) { return k.first == n; });
    if (it == known.end()) throw UsageError(std::string("unknown ") + what + " '" + n + "' (known: " + names_of(known) + ")");
    out.push_back(it->second);
  }
}

}  // namespace

const std::vector<OptionRow>& option_rows() {
  using P = ParsedArgs;
  using V = const std::string&;
  static const std::vector<OptionRow> rows = [] {  // built once; the parser looks up every argument here
    const VerifyConfig d;  // the defaults the help states
    const std::string shape_default = std::to_string(d.out) + "x" + std::to_string(d.in) + "x" + std::to_string(d.tokens);
    return std::vector<OptionRow>{
        {"--rule", "NAME[,NAME...]", "rules to audit (repeatable): " + rule_names() + " (default: all)", "adamw,lion",
         [](P& p, V v) {
           p.run.given |= kOptRule;
           for (const auto& n : split_list(v, "--rule")) {
             auto id = parse_rule(n);
             if (!id) throw UsageError("unknown rule '" + n + "' (known: " + rule_names() + ")");
             if (std::find(p.rules.begin(), p.rules.end(), *id) == p.rules.end()) p.rules.push_back(*id);
           }
         }},
        {"--format", "F[,F...]", "optimizer-state formats: " + names_of(kFormatNames) + " (default: all)", "fp32,int8",
         [](P& p, V v) { p.run.given |= kOptFormat; parse_names(v, "--format", "state format", kFormatNames, p.cfg.formats); }},
        {"--store", "S[,S...]", "weight stores: " + names_of(kStoreNames) + " (default: all)", "bf16_sr",
         [](P& p, V v) { p.run.given |= kOptStore; parse_names(v, "--store", "weight store", kStoreNames, p.cfg.stores); }},
        {"--shape", "OUTxINxT",
         "layer shape and token count: three integers joined by 'x', OUT and IN in 1.." + std::to_string(kDimMax) +
             " with OUT*IN <= " + std::to_string(kOutInMax) + " (2^26), T in 1.." + std::to_string(kTokensMax) +
             " (2^20) (default: " + shape_default + ")",
         "64x96x33", [](P& p, V v) { p.run.given |= kOptShape; parse_shape(v, p.cfg); }},
        {"--steps", "N",
         "consecutive optimizer steps per case, 1.." + std::to_string(kStepsMax) + " (default: " + std::to_string(d.steps) + ")",
         "2", [](P& p, V v) { p.run.given |= kOptSteps; p.cfg.steps = int64_t(parse_unsigned(v, "--steps", 1, kStepsMax)); }},
        {"--seed", "N",
         "the run's one seed, 0..18446744073709551615, decimal or 0x hex (default: " + std::to_string(d.seed) +
             "); printed at the start and kept in /meta; every generated input is a named stream of it "
             "(\"<claim>/<purpose>\")",
         "0x1f", [](P& p, V v) {
           p.run.given |= kOptSeed;
           p.cfg.seed = parse_unsigned(v, "--seed", 0, std::numeric_limits<uint64_t>::max(), /*hex=*/true);
         }},
        {"--samples", "N",
         "elements per rule and input class for the MPFR check, 1.." + std::to_string(kSamplesMax) + " (default: " +
             std::to_string(d.rule_samples) + ")",
         "10", [](P& p, V v) {
           p.run.given |= kOptSamples;
           p.cfg.rule_samples = int64_t(parse_unsigned(v, "--samples", 1, kSamplesMax));
         }},
        {"--hyper", "KEY=VALUE",
         "set a hyperparameter (torch.optim names; beta1/beta2 for betas; flags as 0/1) on every selected rule that "
         "has it (repeatable); VALUE a finite double; an error if no selected rule has KEY or VALUE is invalid",
         "lr=0.01", [](P& p, V v) {
           p.run.given |= kOptHyper;
           const auto eq = v.find('=');
           if (eq == std::string::npos || eq == 0) throw UsageError("--hyper wants KEY=VALUE, got '" + v + "'");
           p.hypers.emplace_back(v.substr(0, eq), parse_hyper_value(v.substr(0, eq), v.substr(eq + 1)));
         }},
        {"--claim", "NAME[,NAME...]", "run only these claims (see --list-claims)", "int8_codec_bound",
         [](P& p, V v) { for (const auto& n : split_list(v, "--claim")) p.cfg.claims.push_back(n); }},
        {"--jobs", "N",
         "run up to N claims at a time, 1.." + std::to_string(kMaxJobs) +
             " (default: the machine's cores); claims that use the GPU take turns on it. The report, tables and "
             "summaries are the same for every N; progress says each claim's start and finish (with its notes "
             "under it)",
         "3", [](P& p, V v) { p.run.jobs = int(parse_unsigned(v, "--jobs", 1, kMaxJobs)); }},
        {"--list-claims", "", "print the claim registry (id, GPU, options honoured, paper statement, what it judges), then exit",
         "", [](P& p, V) { p.run.list_mode = ListMode::text; }},
        {"--list-claims-markdown", "", "print it as the README's table, then exit", "",
         [](P& p, V) { p.run.list_mode = ListMode::markdown; }},
        {"--list-claims-json", "", "print it as JSON, then exit", "", [](P& p, V) { p.run.list_mode = ListMode::json; }},
        {"--report", "PATH",
         "where the HDF5 report goes (default: ./forge-verify-<UTC>-<pid>.h5, unique per run); PATH must be absent or "
         "a regular file",
         "r.h5", [](P& p, V v) { p.cfg.report_path = v; }},
        {"--json", "PATH",
         "also write a JSON summary: per claim and check, the verdict table's content, the exit code and what "
         "--require-gpu found",
         "r.json", [](P& p, V v) { p.run.json_path = v; }},
        {"--junit", "PATH",
         "also write JUnit XML: one test case per check; a failed check is a failure, a claim that threw an error, a "
         "not-run check skipped",
         "r.xml", [](P& p, V v) { p.run.junit_path = v; }},
        {"--bench-json", "PATH",
         "store forge-bench's JSON (--benchmark_out) in the report's /benchmarks, every repetition and the median, so "
         "that `forge-verify diff` can test a slowdown; read before any claim runs",
         "b.json", [](P& p, V v) { p.run.bench_json = v; }},
        {"--external", "PATH",
         "judge an external producer's results file (repeatable; one kernel path per file; "
         "docs/EXTERNAL_PRODUCER.md). Needs --external-cases. Without --claim, only the claims that judge the given "
         "files run (for --external the ext_* claims). A bad, truncated or mismatched file is bad input (exit 2, no "
         "report)",
         "res.h5", [](P& p, V v) { p.cfg.external_results.push_back(v); }},
        {"--external-cases", "PATH",
         "the cases file the results answer (written by `forge-verify external-cases --set ci|forge [--seed N] "
         "[--force] OUT`)",
         "cases.h5", [](P& p, V v) { p.cfg.external_cases = v; }},
        {"--external-model", "PATH",
         "a model configuration measured by scripts/forge_model_bench.py (JSON; repeatable): " +
             claims_judging(kInputModelRuns),
         "m.json", [](P& p, V v) { p.cfg.external_model.push_back(v); }},
        {"--model-step", "PATH",
         "a run of forge-model-step (JSON; repeatable), judged by " + claims_judging(kInputModelSteps) +
             ", with --external-model's torch runs beside it. Bad JSON is bad input (exit 2, no report)",
         "s.json", [](P& p, V v) { p.cfg.model_step.push_back(v); }},
        {"--external-timing", "PATH",
         "per-layer timings, Google Benchmark JSON (forge_adapter.py --timing, forge-bench; repeatable), judged by " +
             claims_judging(kInputTimings) + ". Bad JSON is bad input (exit 2, no report)",
         "t.json", [](P& p, V v) { p.cfg.external_timing.push_back(v); }},
        {"--kill-matrix", "PATH",
         "a kill matrix from scripts/mutate.py or scripts/mutate_gpu.py (JSON; repeatable), judged by " +
             claims_judging(kInputKillMatrices) + ". Bad JSON is bad input (exit 2, no report)",
         "k.json", [](P& p, V v) { p.cfg.kill_matrix.push_back(v); }},
        {"--convergence-run", "PATH",
         "a convergence run from forge-model-step --train or scripts/torch_train_reference.py (JSON; repeatable), "
         "judged by " + claims_judging(kInputConvergenceRuns) + ". Bad JSON is bad input (exit 2, no report)",
         "c.json", [](P& p, V v) { p.cfg.convergence_run.push_back(v); }},
        {"--tp-rank-run", "PATH",
         "a tensor-parallel rank's step or micro-batch capacity from forge-model-step --tp (JSON; repeatable), judged by " +
             claims_judging(kInputTpRankRuns) + ". Bad JSON is bad input (exit 2, no report)",
         "r.json", [](P& p, V v) { p.cfg.tp_rank_run.push_back(v); }},
        {"--require-gpu", "",
         "asserts a GPU is visible and every GPU claim this machine can run ran; else the run fails (exit 4). A claim "
         "not applicable here (it needs 2 GPUs, 1 visible) does not fail it. The GPU runner's entry point always "
         "passes it",
         "", [](P& p, V) { p.run.require_gpu = true; }},
        {"--force", "", "replace existing regular files at the report, JSON and JUnit paths", "",
         [](P& p, V) { p.run.force = true; }},
        {"--quiet", "", "no progress lines on stderr", "", [](P& p, V) { p.cfg.quiet = true; }},
        {"--help", "", "this text (also -h)", "", [](P&, V) { std::fputs(help_text().c_str(), stdout); std::exit(0); }},
    };
  }();
  return rows;
}

std::string help_text() {
  const VerifyConfig d;
  std::string h = kHelpHead;
  const std::pair<std::string, std::string> keys[] = {{"@OUT@", std::to_string(d.out)}, {"@IN@", std::to_string(d.in)},
                                                      {"@T@", std::to_string(d.tokens)}, {"@STEPS@", std::to_string(d.steps)},
                                                      {"@SEED@", std::to_string(d.seed)}};
  for (const auto& [key, value] : keys) h.replace(h.find(key), key.size(), value);
  return h + "\nOptions:\n" + option_help(option_rows(), 27) + kHelpTail;
}

VerifyConfig parse_args(int argc, char** argv, RunOptions& run_out) {
  ParsedArgs p;
  VerifyConfig& cfg = p.cfg;
  RunOptions& run = p.run;
  auto need = [&](int& i) -> std::string {
    // A following option is not a value: "--steps --report x" is a missing value, not "--report".
    if (i + 1 >= argc || std::strncmp(argv[i + 1], "--", 2) == 0)
      throw UsageError(std::string(argv[i]) + " needs a value");
    // Nor is an empty one: "--report ''" took the default name, "--bench-json ''" read nothing.
    if (argv[i + 1][0] == '\0') throw UsageError(std::string(argv[i]) + ": empty value");
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = std::strcmp(argv[i], "-h") == 0 ? "--help" : argv[i];
    const OptionRow* row = find_option(option_rows(), a);
    if (!row) throw UsageError("unknown option '" + a + "' (see --help)");
    row->apply(p, row->value.empty() ? std::string() : need(i));
  }
  std::vector<RuleId>& rules = p.rules;
  if (rules.empty()) rules.assign(std::begin(kAllRules), std::end(kAllRules));
  for (RuleId id : rules) cfg.rules.push_back(default_rule_config(id));
  for (const auto& [key, value] : p.hypers) {
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
                                   {"--external-timing", &cfg.external_timing}, {"--kill-matrix", &cfg.kill_matrix},
                                   {"--convergence-run", &cfg.convergence_run}, {"--tp-rank-run", &cfg.tp_rank_run}})
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
  run_out = run;
  return cfg;
}

}  // namespace fh
