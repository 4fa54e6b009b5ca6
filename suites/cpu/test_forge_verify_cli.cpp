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

RunResult run_verify(const std::string& args) {
  const fs::path err = fs::temp_directory_path() / ("fv_err_" + std::to_string(::getpid()));
  const std::string cmd = std::string(FH_FORGE_VERIFY) + " " + args + " >/dev/null 2>" + err.string();
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
      {"--shape 0x16x16", "--shape OUT must be >= 1"},
      {"--shape 16x-2x16", "--shape IN must be >= 1"},
      {"--shape 16x16", "--shape wants OUTxINxT"},
      {"--hyper lr=nan", "lr must be finite"},
      {"--hyper eps=inf --rule adamw", "eps must be finite"},
      {"--hyper beta2=1", "betas must be in [0, 1)"},
      {"--hyper nosuch=1", "no selected rule has a hyperparameter"},
      {"--steps 0", "--steps must be >= 1"},
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
  // Issue 5's low-precision fidelity claims, with their curves.
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
    EXPECT_EQ(gpu->checks[0].reason.rfind("no GPU", 0), 0u) << gpu->checks[0].reason;
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
