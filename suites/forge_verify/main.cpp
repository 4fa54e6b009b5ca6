// forge-verify: the audit. Runs every claim that this machine can judge for one configuration,
// prints a verdict table per claim, writes the HDF5 report, and exits non-zero on any failure.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <set>
#include <sstream>

#include "kernels/gpu/device_info.h"
#include "kernels/rules/hyper_fields.h"
#include "suites/forge_verify/git_revision.h"
#include "suites/claims/registry.h"

namespace fh {
namespace {

// Exit codes (--help says them): 4 is kept for issue 19's "not-run where a run was required".
constexpr int kExitFail = 1, kExitUsage = 2, kExitInternal = 3;

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

With no options it runs every claim on the default configuration: every rule with
torch.optim's default hyperparameters, state formats fp32, bf16, int8 (block 64), weight stores
fp32_master, bf16_rne, bf16_sr, one layer of out=192, in=256, T=100 tokens, 5 steps, seed
20261202. Claims that need a GPU are reported "not-run: no GPU" on a machine without one.

Options:
  --rule NAME[,NAME...]    rules to audit (repeatable): @RULES@ (default: all)
  --format F[,F...]        optimizer-state formats: fp32 bf16 int8 (default: all)
  --store S[,S...]         weight stores: fp32_master bf16_rne bf16_sr (default: all)
  --shape OUTxINxT         layer shape and token count: three integers joined by 'x', OUT and
                           IN in 1..2147483647 with OUT*IN <= 67108864 (2^26), T in
                           1..1048576 (2^20) (default: 192x256x100)
  --steps N                consecutive optimizer steps per case, 1..10000 (default: 5)
  --seed N                 seed of every generated input, 0..18446744073709551615, decimal or
                           0x hex (default: 20261202)
  --samples N              elements per rule and input class for the MPFR check, 1..10000000
                           (default: 1000)
  --hyper KEY=VALUE        set a hyperparameter (torch.optim names; beta1/beta2 for betas;
                           flags as 0/1) on every selected rule that has it (repeatable);
                           VALUE a finite double; an error if no selected rule has KEY or
                           VALUE is invalid
  --claim NAME[,NAME...]   run only these claims (see --list-claims)
  --list-claims            print the claim registry (id, GPU, options honoured, paper statement,
                           what it judges), then exit; --list-claims-markdown and
                           --list-claims-json print it as the README's table and as JSON
  --report PATH            where the HDF5 report goes (default: ./forge-verify-<UTC>-<pid>.h5,
                           unique per run); PATH must be absent or a regular file
  --force                  replace an existing regular file at the report path
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

Exit status:
  0  every check passed (not-run checks are allowed)
  1  a check failed
  2  bad usage or input: nothing is run and no report is written
  3  internal error after the run started (out of memory, the report could not be written,
     any other exception); the verdict table, when reached, is printed before the report is
     written
)";

// The rule names of kAllRules, space separated: help and messages never list them by hand.
std::string rule_names() {
  std::string o;
  for (RuleId id : kAllRules) o += (o.empty() ? "" : " ") + std::string(rule_name(id));
  return o;
}

std::string help_text() {
  std::string h = kHelp;
  const std::string key = "@RULES@";
  h.replace(h.find(key), key.size(), rule_names());
  return h;
}

std::vector<std::string> split_list(const std::string& s, const std::string& option) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  if (out.empty()) throw UsageError(option + ": empty list '" + s + "'");
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
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t x = v.find('x', start);
    parts.push_back(v.substr(start, x == std::string::npos ? std::string::npos : x - start));
    if (x == std::string::npos) break;
    start = x + 1;
  }
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

VerifyConfig parse_args(int argc, char** argv, ListMode& list_mode, uint32_t& given, bool& force) {
  VerifyConfig cfg;
  std::vector<RuleId> rules;
  std::vector<std::pair<std::string, double>> hypers;
  auto need = [&](int& i) -> std::string {
    // A following option is not a value: "--steps --report x" is a missing value, not "--report".
    if (i + 1 >= argc || std::strncmp(argv[i + 1], "--", 2) == 0)
      throw UsageError(std::string(argv[i]) + " needs a value");
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") { std::fputs(help_text().c_str(), stdout); std::exit(0); }
    else if (a == "--list-claims") list_mode = ListMode::text;
    else if (a == "--list-claims-markdown") list_mode = ListMode::markdown;
    else if (a == "--list-claims-json") list_mode = ListMode::json;
    else if (a == "--quiet") cfg.quiet = true;
    else if (a == "--force") force = true;
    else if (a == "--rule") {
      given |= kOptRule;
      for (const auto& n : split_list(need(i), a)) {
        auto id = parse_rule(n);
        if (!id) throw UsageError("unknown rule '" + n + "' (known: " + rule_names() + ")");
        if (std::find(rules.begin(), rules.end(), *id) == rules.end()) rules.push_back(*id);
      }
    } else if (a == "--format") {
      given |= kOptFormat;
      cfg.formats.clear();
      for (const auto& n : split_list(need(i), a)) {
        if (n == "fp32") cfg.formats.push_back(StateFormat::fp32);
        else if (n == "bf16") cfg.formats.push_back(StateFormat::bf16);
        else if (n == "int8") cfg.formats.push_back(StateFormat::int8);
        else throw UsageError("unknown state format '" + n + "' (known: fp32 bf16 int8)");
      }
    } else if (a == "--store") {
      given |= kOptStore;
      cfg.stores.clear();
      for (const auto& n : split_list(need(i), a)) {
        if (n == "fp32_master") cfg.stores.push_back(WeightStore::fp32_master);
        else if (n == "bf16_rne") cfg.stores.push_back(WeightStore::bf16_rne);
        else if (n == "bf16_sr") cfg.stores.push_back(WeightStore::bf16_sr);
        else throw UsageError("unknown weight store '" + n + "' (known: fp32_master bf16_rne bf16_sr)");
      }
    } else if (a == "--shape") {
      given |= kOptShape;
      parse_shape(need(i), cfg);
    } else if (a == "--steps") { given |= kOptSteps; cfg.steps = int64_t(parse_unsigned(need(i), a, 1, kStepsMax)); }
    else if (a == "--seed") {
      given |= kOptSeed;
      cfg.seed = parse_unsigned(need(i), a, 0, std::numeric_limits<uint64_t>::max(), /*hex=*/true);
    } else if (a == "--samples") {
      given |= kOptSamples;
      cfg.rule_samples = int64_t(parse_unsigned(need(i), a, 1, kSamplesMax));
    }
    else if (a == "--hyper") {
      given |= kOptHyper;
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
  if (cfg.report_path.empty()) {
    // Unique per run: two runs started in the same second in one folder differ by pid (and the
    // no-replace rename keeps either from ever replacing the other's report).
    std::string t = utc_now_iso8601();
    std::replace(t.begin(), t.end(), ':', '-');
    cfg.report_path = "forge-verify-" + t + "-" + std::to_string(::getpid()) + ".h5";
  }
  return cfg;
}

std::string format_number(double x) {
  if (std::isnan(x)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

void print_table(const ReportData& data) {
  for (const ClaimData& claim : data.claims) {
    std::printf("\n== %s: %s (%lld pass, %lld fail, %lld not-run)\n", claim.name.c_str(),
                verdict_name(claim.verdict), (long long)claim.counts.n_pass,
                (long long)claim.counts.n_fail, (long long)claim.counts.n_not_run);
    std::printf("  %-34s %-22s %-8s %-12s %-12s %s\n", "case", "check", "verdict", "metric", "bound", "evidence");
    for (const CaseData& cs : claim.cases)
      for (const Check& ck : cs.checks) {
        std::string ev;
        if (ck.verdict == Verdict::not_run) ev = ck.reason;
        else if (ck.has_bitwise())
          ev = std::to_string(ck.differing) + " differ" +
               (ck.differing ? ", max " + format_number(ck.max_ulp) + " ulp, first " + ck.first_diff : "");
        else ev = ck.metric_name + (ck.reason.empty() ? "" : "; " + ck.reason);
        std::printf("  %-34s %-22s %-8s %-12s %-12s %s\n", cs.name.c_str(), ck.name.c_str(),
                    verdict_name(ck.verdict), format_number(ck.metric).c_str(),
                    format_number(ck.bound).c_str(), ev.c_str());
      }
  }
  std::printf("\noverall: %s (%lld pass, %lld fail, %lld not-run)\n", verdict_name(data.verdict),
              (long long)data.counts.n_pass, (long long)data.counts.n_fail,
              (long long)data.counts.n_not_run);
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
    std::printf("%-*s  %-3s  %-*s  %s\n", int(w_id), c.id.c_str(), c.needs_gpu ? "yes" : "no", int(w_opt),
                option_flags(c.options).c_str(), c.statement.c_str());
    std::printf("%-*s  %-3s  %-*s  %s\n", int(w_id), "", "", int(w_opt), "", c.what.c_str());
  }
}

int run(int argc, char** argv) {
  ListMode list_mode = ListMode::none;
  uint32_t given = 0;
  bool force = false;
  VerifyConfig cfg = parse_args(argc, argv, list_mode, given, force);
  switch (list_mode) {
    case ListMode::text: print_registry(); return 0;
    case ListMode::markdown: std::fputs(registry_markdown().c_str(), stdout); return 0;
    case ListMode::json: std::fputs(registry_json().c_str(), stdout); return 0;
    case ListMode::none: break;
  }
  // Everything about the report path, before any work: a run that cannot write its report
  // fails here, not after it spent its time.
  const WriteOptions write_options{.replace_existing = force};
  try {
    for (const std::string& stale : check_report_path(cfg.report_path, write_options))
      std::fprintf(stderr, "forge-verify: removed stale temporary file '%s' (its process is gone)\n", stale.c_str());
  } catch (const ReportPathError& e) {
    throw UsageError(std::string(e.what()) +
                     (e.kind == ReportPathError::Kind::exists ? " (--force replaces an existing regular file)" : ""));
  }
  const DeviceInfo dev = query_device_info();
  cfg.gpu_available = dev.available;
  cfg.gpu_reason = dev.available ? "" : dev.reason;

  Meta meta = Meta::unknown();
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  meta.set("git_revision", kGitRevision).set("host", host).set("seed", std::to_string(cfg.seed))
      .set("configuration", describe_config(cfg)).set("gpu_name", dev.available ? dev.name : "none")
      .set("gpu_driver", dev.driver).set("cuda_runtime", dev.runtime).set("cublas", dev.cublas)
      .set("gpu_compute_capability", dev.compute_capability)
      .set("gpu_sm_count", std::to_string(dev.sm_count))
      .set("tool", "forge-verify").set("tool_version", std::string("forge-verify ") + kGitRevision);
  std::vector<const ClaimInfo*> selected;
  for (const ClaimInfo& c : claim_registry())
    if (cfg.claims.empty() || std::find(cfg.claims.begin(), cfg.claims.end(), c.id) != cfg.claims.end())
      selected.push_back(&c);
  // Options given that a selected claim does not honour: said, and kept in /meta.
  std::string not_honoured;
  for (const ClaimInfo* c : selected)
    if (const uint32_t ignored = given & ~c->options) {
      not_honoured += (not_honoured.empty() ? "" : "; ") + c->id + ": " + option_flags(ignored);
      std::fprintf(stderr, "forge-verify: note: %s does not honour %s (it runs its own fixed problem there)\n",
                   c->id.c_str(), option_flags(ignored).c_str());
    }
  meta.set("options_not_honoured", not_honoured.empty() ? "none" : not_honoured);
  Report report(meta);
  for (const ClaimInfo& c : claim_registry()) report.declare_claim(c.id, c.datasets);

  Progress progress{cfg.quiet, 0, 0};
  progress.claim_count = int(selected.size());
  const auto t0 = std::chrono::steady_clock::now();
  g_run_started = true;
  for (const ClaimInfo* c : selected) {
    ++progress.claim_index;
    progress.claim(c->id, c->what);
    if (c->needs_gpu && !cfg.gpu_available) {
      report.add_case(c->id, "all").add_check(Check::not_run(c->id, "no GPU: " + cfg.gpu_reason));
      continue;
    }
    c->run(cfg, report, progress);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const ReportData data = report.snapshot();
  print_table(data);
  std::fflush(stdout);  // the table is out before the report is written, whatever happens there
  report.write(cfg.report_path, write_options);
  std::printf("report: %s (%.1f s)\n", cfg.report_path.c_str(), secs);
  return data.verdict == Verdict::fail ? kExitFail : 0;
}

}  // namespace

}  // namespace fh

// Exceptions to exit codes: bad usage or input before the run is 2; anything else (out of
// memory, a failed report write, any exception once the claims started) is 3, an internal
// error, never 1, which only a failed check gives.
int main(int argc, char** argv) {
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
