// forge-verify as a user runs it: bad input gives a clear message, exit status 2 and no report;
// a small run writes a schema-valid report with the claims and cases the configuration implies,
// and GPU claims are not-run with their reason on a machine without a GPU.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "kernels/gpu/device_info.h"
#include "reports/report.h"
#include "suites/claims/registry.h"

namespace {

namespace fs = std::filesystem;

struct RunResult { int status; std::string err; };

// `prefix` goes before the binary (e.g. "timeout 60").
RunResult run_verify(const std::string& args, const std::string& prefix = "") {
  const fs::path err = fs::temp_directory_path() / ("fv_err_" + std::to_string(::getpid()));
  const std::string cmd = prefix + " " + FH_FORGE_VERIFY + " " + args + " >/dev/null 2>" + err.string();
  const int raw = std::system(cmd.c_str());
  std::ifstream f(err);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  fs::remove(err);
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, text};
}

fs::path scratch(const char* name) {
  const fs::path dir = fs::temp_directory_path() / ("fv_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

TEST(ForgeVerifyCli, BadInputIsRefusedWithoutAReport) {
  const fs::path report = scratch("bad.h5");
  const char* cases[][2] = {
      {"--rule adamw,nosuch", "unknown rule 'nosuch'"},
      {"--shape 0x16x16", "--shape OUT must be in 1..2147483647, got 0"},
      {"--shape 16x-2x16", "--shape IN must be in 1..2147483647, got -2"},
      {"--shape 16x16", "--shape wants OUTxINxT"},
      {"--hyper lr=nan", "lr must be finite"},
      {"--hyper eps=inf --rule adamw", "eps must be finite"},
      {"--hyper beta2=1", "betas must be in [0, 1)"},
      {"--hyper nosuch=1", "no selected rule has a hyperparameter"},
      {"--steps 0", "--steps must be in 1..10000, got 0"},
      {"--format fp16", "unknown state format 'fp16'"},
      {"--store fp8", "unknown weight store 'fp8'"},
      {"--claim nosuch", "unknown claim 'nosuch'"},
      {"--frobnicate", "unknown option '--frobnicate'"},
      {"--steps", "--steps needs a value"},
  };
  for (const auto& c : cases) {
    const RunResult r = run_verify(std::string(c[0]) + " --report " + report.string());
    EXPECT_EQ(r.status, 2) << c[0] << ": " << r.err;
    EXPECT_NE(r.err.find(c[1]), std::string::npos) << c[0] << " printed: " << r.err;
    EXPECT_FALSE(fs::exists(report)) << c[0] << " left a report behind";
  }
  // Unwritable report places: a missing directory, a path under a regular file, a directory.
  const fs::path file = scratch("plain_file");
  { std::ofstream(file) << "x"; }
  for (const std::string& where : {std::string("/nonexistent_dir_fh/r.h5"), (file / "r.h5").string(),
                                   scratch("").string()}) {
    const RunResult r = run_verify("--claim sr_exact_mean --report " + where);
    EXPECT_EQ(r.status, 2) << where << ": " << r.err;
    EXPECT_NE(r.err.find("report"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists("/nonexistent_dir_fh"));
}

// Every numeric option has a documented range, checked before any work with
// overflow-safe arithmetic, and a message that names the option, the value and the range. Each
// of these was taken (a truncated or overflowed value), ran without end, or ended in bad_alloc.
TEST(ForgeVerifyCli, NumericOptionsAreRangeChecked) {
  const fs::path report = scratch("numeric.h5");
  const char* cases[][2] = {
      // --shape: out*in overflowed int64 and passed the size check, then bad_alloc or ran on.
      {"--shape 4294967296x4294967296x1", "--shape OUT must be in 1..2147483647, got 4294967296"},
      {"--shape 3037000500x3037000500x1", "--shape OUT must be in 1..2147483647, got 3037000500"},
      {"--shape 16x3037000500x1", "--shape IN must be in 1..2147483647, got 3037000500"},
      {"--shape 65536x65536x1", "--shape OUT*IN must be <= 67108864 (2^26) for a CPU audit, got 65536*65536"},
      {"--shape 16x16x1048577", "--shape T must be in 1..1048576, got 1048577"},
      {"--shape 99999999999999999999999x1x1", "--shape OUT must be in 1..2147483647, got 99999999999999999999999"},
      // --shape: exactly three non-empty parts ("192x256x100x" was taken as 192x256x100).
      {"--shape 192x256x100x", "--shape wants OUTxINxT"},
      {"--shape x192x256x100", "--shape wants OUTxINxT"},
      {"--shape 192xx256", "--shape wants OUTxINxT"},
      {"--shape 192x256x100x7", "--shape wants OUTxINxT"},
      {"--shape +16x16x16", "--shape OUT: not an unsigned integer: '+16'"},
      {"--shape 0x10x16x16", "--shape wants OUTxINxT"},
      // --steps: 4294967297 ran one step (truncated to int); 10^9 ran without end.
      {"--steps 4294967297", "--steps must be in 1..10000, got 4294967297"},
      {"--steps 1000000000", "--steps must be in 1..10000, got 1000000000"},
      {"--steps 10001", "--steps must be in 1..10000, got 10001"},
      {"--steps 18446744073709551617", "--steps must be in 1..10000, got 18446744073709551617"},
      {"--steps 2x", "--steps: not an unsigned integer: '2x' (range 1..10000)"},
      {"--steps 0x10", "--steps: not an unsigned integer: '0x10'"},
      // --samples: 10^11 ended in bad_alloc.
      {"--samples 100000000000", "--samples must be in 1..10000000, got 100000000000"},
      {"--samples 0", "--samples must be in 1..10000000, got 0"},
      // --jobs: 1..256 workers.
      {"--jobs 0", "--jobs must be in 1..256, got 0"},
      {"--jobs 257", "--jobs must be in 1..256, got 257"},
      {"--jobs -1", "--jobs must be in 1..256, got -1"},
      {"--jobs 2x", "--jobs: not an unsigned integer: '2x' (range 1..256)"},
      // --seed: the full uint64 range, and nothing beyond it.
      {"--seed 18446744073709551616", "--seed must be in 0..18446744073709551615, got 18446744073709551616"},
      {"--seed 0x10000000000000000", "--seed must be in 0..18446744073709551615, got 0x10000000000000000"},
      {"--seed -1", "--seed must be in 0..18446744073709551615, got -1"},
      {"--seed 1.5", "--seed: not an unsigned integer: '1.5' (decimal or 0x hex, range 0..18446744073709551615)"},
      {"--seed 0x", "--seed: not an unsigned integer: '0x'"},
      // --hyper: out of the double range is "out of range" for the named key, not "not a number".
      {"--hyper lr=1e400", "--hyper lr: '1e400' is out of range"},
      {"--hyper lr=-1e400", "--hyper lr: '-1e400' is out of range"},
      {"--hyper eps=1e-400", "--hyper eps: '1e-400' is out of range (it underflows to 0"},
      {"--hyper lr=0.1x", "--hyper lr: not a number: '0.1x'"},
      {"--hyper lr=", "--hyper lr: not a number: ''"},
      // An empty list, or an empty element of one (dropped, it made the run audit less than the
      // user typed), names its option.
      {"--format ,", "--format: empty list ','"},
      {"--rule adamw,,lion", "--rule: empty element in list 'adamw,,lion'"},
      {"--rule adamw,", "--rule: empty element in list 'adamw,'"},
      {"--format fp32,,bf16", "--format: empty element in list 'fp32,,bf16'"},
      {"--claim ,sr_exact_mean", "--claim: empty element in list ',sr_exact_mean'"},
      // An empty value is no value: "--report ''" took the default name and wrote a report.
      {"--rule ''", "--rule: empty value"},
      {"--store ''", "--store: empty value"},
      {"--claim ''", "--claim: empty value"},
      {"--bench-json ''", "--bench-json: empty value"},
      {"--report ''", "--report: empty value"},
  };
  for (const auto& c : cases) {
    // Each was refused at once; the time limit keeps one that runs on (as some did) from
    // holding the suite (exit 124).
    const RunResult r = run_verify(std::string(c[0]) + " --report " + report.string(), "timeout 60");
    EXPECT_EQ(r.status, 2) << c[0] << ": " << r.err;
    EXPECT_NE(r.err.find(c[1]), std::string::npos) << c[0] << " printed: " << r.err;
    EXPECT_EQ(r.err.find("[1/"), std::string::npos) << c[0] << " started a claim: " << r.err;
    EXPECT_FALSE(fs::exists(report)) << c[0] << " left a report behind";
  }
  // The ends of every range are taken (on a claim that honours none of these options, so that
  // the run stays short; the options are still parsed and checked), and the largest seed, in
  // decimal and in hex, reaches /meta intact.
  for (const char* seed : {"18446744073709551615", "0xFFFFFFFFFFFFFFFF", "0"}) {
    fs::remove(report);
    const RunResult r = run_verify(std::string("--claim int8_codec_bound --seed ") + seed +
                                   " --shape 67108864x1x1048576 --steps 10000 --samples 10000000 --jobs 256 --quiet --report " +
                                   report.string());
    ASSERT_EQ(r.status, 0) << seed << ": " << r.err;
    EXPECT_EQ(fh::read_report(report.string()).meta.get("seed"),
              std::string(seed) == "0" ? "0" : "18446744073709551615") << seed;
  }
  fs::remove_all(report.parent_path());
}

// --help names the subcommands (diff, external-cases), which a user could not find from it
// before, and each subcommand answers its own --help; all exit 0 with the text on stdout.
TEST(ForgeVerifyCli, HelpNamesTheSubcommands) {
  const fs::path out = scratch("help.txt");
  auto help = [&](const std::string& args) {
    const int raw = std::system((std::string(FH_FORGE_VERIFY) + " " + args + " >" + out.string() + " 2>/dev/null").c_str());
    EXPECT_TRUE(WIFEXITED(raw) && WEXITSTATUS(raw) == 0) << args << ": status " << raw;
    std::ifstream f(out);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  };
  const std::string text = help("--help");
  for (const char* want : {"forge-verify diff BASE.h5 NEW.h5", "forge-verify external-cases --set",
                           "Subcommands", "  diff ", "  external-cases "})
    EXPECT_NE(text.find(want), std::string::npos) << "--help lacks '" << want << "':\n" << text;
  EXPECT_EQ(help("diff --help").rfind("forge-verify diff:", 0), 0u);
  EXPECT_NE(help("external-cases --help").find("Usage: forge-verify external-cases"), std::string::npos);
  fs::remove_all(out.parent_path());
}

TEST(ForgeVerifyCli, SmallRunWritesAValidReport) {
  const fs::path report = scratch("small.h5");
  fs::remove(report);
  const RunResult r = run_verify("--rule sgd,lion --format fp32,int8 --store fp32_master,bf16_sr "
                                 "--shape 24x128x20 --steps 2 --samples 40 --quiet --report " + report.string());
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(fs::exists(report));
  EXPECT_TRUE(fh::validate_report_schema(report.string()).empty());
  const fh::ReportData data = fh::read_report(report.string());
  EXPECT_NE(data.meta.get("configuration").find("shape=24x128x20"), std::string::npos);
  // One case per rule in the MPFR claim; one per rule x format x store in the two-phase claim.
  for (const char* rule : {"sgd", "lion"}) EXPECT_NE(data.find_case("rules_vs_mpfr", rule), nullptr) << rule;
  const fh::ClaimData* two = data.find_claim("two_phase_exact_vs_seq");
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(two->cases.size(), 2u * 2u * 2u);
  EXPECT_NE(data.find_case("two_phase_exact_vs_seq", "lion.int8.bf16_sr"), nullptr);
  EXPECT_NE(data.find_claim("prop1_twin"), nullptr);
  // The low-precision fidelity claims, with their curves.
  for (const char* claim : {"prop4_int8", "sr_statistics", "stagnation", "gradient_fidelity"}) {
    const fh::ClaimData* c = data.find_claim(claim);
    ASSERT_NE(c, nullptr) << claim;
    EXPECT_EQ(c->verdict, fh::Verdict::pass) << claim;
  }
  const fh::CaseData* curves = data.find_case("stagnation", "curves bf16_rne");
  ASSERT_NE(curves, nullptr);
  ASSERT_FALSE(curves->datasets.empty());
  EXPECT_EQ(curves->datasets[0].shape.size(), 2u) << "loss curves are [run seed, step]";
  EXPECT_EQ(data.verdict, fh::Verdict::pass);
  if (!fh::query_device_info().available) {
    const fh::CaseData* gpu = data.find_case("gpu_fused_vs_twin", "all");
    ASSERT_NE(gpu, nullptr);
    ASSERT_EQ(gpu->checks.size(), 1u);
    EXPECT_EQ(gpu->checks[0].verdict, fh::Verdict::not_run);
    EXPECT_EQ(gpu->checks[0].reason.rfind("not applicable: needs a GPU", 0), 0u) << gpu->checks[0].reason;
    // With no driver the reason says so, with the CUDA error's name: the runtime's own "driver
    // version is insufficient" sent newcomers to upgrade a driver that is not there.
    if (fh::query_device_info().driver == "none") {
      EXPECT_EQ(gpu->checks[0].reason.rfind(
                    "not applicable: needs a GPU, 0 visible; no NVIDIA driver or device on this machine (cudaError", 0),
                0u)
          << gpu->checks[0].reason;
    }
  }
  // Every claim that ran wrote each dataset its registry row declares, and (the builder enforces
  // it) no other.
  for (const fh::ClaimData& claim : data.claims) {
    const fh::ClaimInfo* info = fh::find_claim(claim.name);
    ASSERT_NE(info, nullptr) << claim.name;
    if (claim.counts.n_pass + claim.counts.n_fail == 0) continue;  // not run here
    std::set<std::string> written;
    for (const fh::CaseData& cs : claim.cases)
      for (const fh::Dataset& d : cs.datasets) written.insert(d.name);
    for (const std::string& d : info->datasets) EXPECT_TRUE(written.count(d)) << claim.name << " never wrote " << d;
    EXPECT_LE(written.size(), info->datasets.size()) << claim.name;
  }
  // Options the selected claims do not honour are reported, not dropped.
  EXPECT_NE(r.err.find("stagnation does not honour --rule --format --store --shape --steps --samples"), std::string::npos)
      << r.err;
  EXPECT_NE(data.meta.get("options_not_honoured").find("stagnation: --rule"), std::string::npos);
  fs::remove_all(report.parent_path());
}

}  // namespace
