// The claim registry keeps every claim's homes in step: its file under suites/claims, its
// GoogleTest suite (named by the claim id), its README row (the README's table is the registry's
// Markdown, byte for byte), and its declared datasets, which the report builder enforces.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "reports/report.h"
#include "suites/claims/registry.h"

namespace {
namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const fs::path kRoot = FH_SOURCE_DIR;

TEST(claim_registry, IdsAreUniqueAndEntriesComplete) {
  std::set<std::string> ids;
  for (const fh::ClaimInfo& c : fh::claim_registry()) {
    EXPECT_TRUE(ids.insert(c.id).second) << "duplicate claim id " << c.id;
    EXPECT_TRUE(std::regex_match(c.id, std::regex("[a-z0-9_]+"))) << c.id;
    EXPECT_FALSE(c.statement.empty()) << c.id;
    EXPECT_FALSE(c.what.empty()) << c.id;
    EXPECT_FALSE(c.producers.empty()) << c.id;
    EXPECT_FALSE(c.oracles.empty()) << c.id;
    EXPECT_TRUE(bool(c.run)) << c.id;
    std::set<std::string> ds(c.datasets.begin(), c.datasets.end());
    EXPECT_EQ(ds.size(), c.datasets.size()) << c.id << " declares a dataset twice";
    EXPECT_EQ(fh::find_claim(c.id), &c);
  }
  EXPECT_EQ(fh::find_claim("no_such_claim"), nullptr);
}

// suites/claims/<id>.cpp defines claim_<id>; a GPU variant runs the code of the claim it is a
// variant of.
TEST(claim_registry, EveryClaimHasItsFile) {
  for (const fh::ClaimInfo& c : fh::claim_registry()) {
    const std::string home = c.variant_of.empty() ? c.id : c.variant_of;
    const fs::path file = kRoot / "suites/claims" / (home + ".cpp");
    ASSERT_TRUE(fs::exists(file)) << c.id << ": no suites/claims/" << home << ".cpp";
    EXPECT_NE(slurp(file).find("claim_" + home + "("), std::string::npos)
        << file << " does not define claim_" << home;
  }
}

// One row, two claims: each GPU variant is <twin>_gpu, needs an sm_90 GPU where its twin needs
// none, and keeps the twin's datasets, options and findings (the same code writes them). Planted
// defect: dropping `gpu.variant_of = twin.id` from with_gpu_variant (registry.cpp) leaves no
// variant (and EveryClaimHasItsFile fails on claim_prop4_int8_gpu).
TEST(claim_registry, GpuVariantsShareTheirTwinsRow) {
  std::vector<std::string> variants;
  for (const fh::ClaimInfo& c : fh::claim_registry()) {
    if (c.variant_of.empty()) continue;
    variants.push_back(c.id);
    const fh::ClaimInfo* twin = fh::find_claim(c.variant_of);
    ASSERT_NE(twin, nullptr) << c.id;
    EXPECT_EQ(c.id, twin->id + "_gpu");
    EXPECT_EQ(c.datasets, twin->datasets) << c.id;
    EXPECT_EQ(c.options, twin->options) << c.id;
    EXPECT_EQ(c.findings, twin->findings) << c.id;
    EXPECT_EQ(c.needs.gpus, fh::kNeedsSm90Gpu.gpus) << c.id;
    EXPECT_EQ(c.needs.sm, fh::kNeedsSm90Gpu.sm) << c.id;
    EXPECT_FALSE(twin->needs_gpu()) << twin->id;
    EXPECT_TRUE(twin->variant_of.empty()) << twin->id;
  }
  const std::vector<std::string> expected = {
      "prop2_tp_sharded_gpu", "prop2_sp_sharded_gpu", "prop2_referee_dataflow_gpu", "prop2_token_partial_gpu",
      "prop2_block_stack_gpu", "nonseparable_falsifier_gpu", "prop4_int8_gpu", "sr_statistics_gpu", "stagnation_gpu",
      "gradient_fidelity_gpu"};
  EXPECT_EQ(variants, expected);
}

// What a claim needs, said as its not-run reason. Planted defect: `caps.gpus < needs.gpus` made
// `<=` in unmet_need (registry.cpp) fails the met cases.
TEST(claim_registry, UnmetNeedsSayWhatIsMissing) {
  using fh::unmet_need;
  EXPECT_EQ(unmet_need(fh::kNeedsSm90Gpu, {.gpus = 0, .sm = 0}), "needs a GPU, 0 visible");
  EXPECT_EQ(unmet_need({.gpus = 2, .sm = 90}, {.gpus = 1, .sm = 90}), "needs 2 GPUs, 1 visible");
  EXPECT_EQ(unmet_need(fh::kNeedsSm90Gpu, {.gpus = 1, .sm = 89}), "needs a GPU of compute capability 9.0, 8.9 here");
  EXPECT_EQ(unmet_need(fh::kNeedsSm90Gpu, {.gpus = 1, .sm = 90}), "");
  EXPECT_EQ(unmet_need({.gpus = 2, .sm = 90}, {.gpus = 2, .sm = 90}), "");
  EXPECT_EQ(unmet_need(fh::kNeedsNothing, {.gpus = 0, .sm = 0}), "");
}

// The inputs a row says its claim reads are the ones its code reads: a claim file that reads
// claim_inputs(cfg).<member> declares that member's bit, and each input selects the claims that
// judge it (forge-verify picks them by default from these bits alone). Planted defect: dropping
// kInputTimings from speed_decomposition's row fails both halves.
TEST(claim_registry, RowsDeclareTheInputsTheirCodeReads) {
  const std::pair<const char*, uint32_t> members[] = {{"external", fh::kInputExternal},
                                                      {"model_runs", fh::kInputModelRuns},
                                                      {"model_steps", fh::kInputModelSteps},
                                                      {"timings", fh::kInputTimings}};
  for (const fh::ClaimInfo& c : fh::claim_registry()) {
    if (!c.variant_of.empty()) continue;
    const std::string code = slurp(kRoot / "suites/claims" / (c.id + ".cpp"));
    for (const auto& [member, bit] : members) {
      const bool read = code.find(std::string("claim_inputs(cfg).") + member) != std::string::npos;
      EXPECT_TRUE(!read || ((c.reads | c.reads_beside) & bit)) << c.id << " reads " << member << ", its row not";
    }
  }
  auto judging = [](uint32_t bit) {
    std::vector<std::string> ids;
    for (const fh::ClaimInfo& c : fh::claim_registry())
      if (c.reads & bit) ids.push_back(c.id);
    return ids;
  };
  EXPECT_EQ(judging(fh::kInputExternal),
            (std::vector<std::string>{"ext_order_probe", "ext_prop1", "ext_variant", "ext_corollary1", "ext_int8"}));
  EXPECT_EQ(judging(fh::kInputModelRuns), (std::vector<std::string>{"ext_model_memory", "ext_model_time"}));
  EXPECT_EQ(judging(fh::kInputModelSteps), (std::vector<std::string>{"model_step_figures"}));
  EXPECT_EQ(judging(fh::kInputTimings), (std::vector<std::string>{"ext_layer_speed", "speed_decomposition"}));
  EXPECT_EQ(judging(fh::kInputKillMatrices), (std::vector<std::string>{"mutation_kill_matrix"}));
  EXPECT_EQ(judging(fh::kInputConvergenceRuns), (std::vector<std::string>{"convergence_parity"}));
  fh::RunInputPaths paths;
  EXPECT_EQ(fh::inputs_given(paths), 0u);
  paths.external_timing = {"t.json"};
  paths.model_step = {"m.json"};
  EXPECT_EQ(fh::inputs_given(paths), fh::kInputTimings | fh::kInputModelSteps);
}

// A GoogleTest suite named by the claim id, in suites/cpu or suites/gpu.
TEST(claim_registry, EveryClaimHasItsGoogleTestSuite) {
  std::string sources;
  for (const char* dir : {"suites/cpu", "suites/gpu"})
    for (const auto& e : fs::directory_iterator(kRoot / dir))
      if (e.path().filename().string().starts_with("test_")) sources += slurp(e.path());
  for (const fh::ClaimInfo& c : fh::claim_registry()) {
    const std::regex suite("\\b(TEST|TEST_F|TEST_P)\\(" + c.id + ",");
    EXPECT_TRUE(std::regex_search(sources, suite)) << c.id << ": no TEST(" << c.id << ", ...) in suites/cpu or suites/gpu";
  }
}

// The README's claim table is the registry's, between its two markers.
TEST(claim_registry, ReadmeTableIsTheRegistry) {
  const std::string readme = slurp(kRoot / "README.md");
  const std::string begin = "<!-- claim registry: begin (forge-verify --list-claims-markdown) -->\n";
  const std::string end = "<!-- claim registry: end -->";
  const size_t b = readme.find(begin), e = readme.find(end);
  ASSERT_NE(b, std::string::npos) << "README.md lacks the claim-registry markers";
  ASSERT_NE(e, std::string::npos);
  const std::string table = readme.substr(b + begin.size(), e - b - begin.size());
  EXPECT_EQ(table, fh::registry_markdown())
      << "README.md's claim table differs from the registry: regenerate it with forge-verify --list-claims-markdown";
  for (const fh::ClaimInfo& c : fh::claim_registry())
    EXPECT_NE(table.find("| `" + c.id + "` |"), std::string::npos) << c.id << " has no README row";
}

// The report refuses a dataset (and a claim) its registry row does not declare.
TEST(claim_registry, ReportRefusesUndeclaredDatasetsAndClaims) {
  fh::Report report(fh::Meta::unknown());
  report.declare_claim("declared", {"curve"});
  fh::CaseRecord& cs = report.add_case("declared", "case");
  EXPECT_NO_THROW(cs.add_f64("curve", {1.0}));
  EXPECT_THROW(cs.add_f64("undeclared_curve", {1.0}), std::invalid_argument);
  EXPECT_THROW(report.add_case("undeclared_claim", "case"), std::invalid_argument);
}

// A row's findings (the checks that judge the paper or the release): each a check name that some
// claim source writes as a string literal ("name", or "name... for a "name*" prefix), named once;
// and the paper statements the audit refutes today are findings, so their refutation does not
// fail the run. Planted defect: a typo in a finding name (e.g. "more_than_halfs") fails the
// first loop; dropping "more_than_halves" from model_step_figures' row fails the second.
TEST(claim_registry, FindingsAreCheckNamesTheClaimsWrite) {
  std::string sources;
  for (const auto& e : fs::directory_iterator(kRoot / "suites/claims"))
    if (e.path().extension() == ".cpp") sources += slurp(e.path());
  for (const fh::ClaimInfo& c : fh::claim_registry()) {
    std::set<std::string> seen;
    for (const std::string& f : c.findings) {
      EXPECT_TRUE(seen.insert(f).second) << c.id << " names finding " << f << " twice";
      const bool prefix = f.ends_with("*");
      const std::string literal = "\"" + (prefix ? f.substr(0, f.size() - 1) : f + "\"");
      EXPECT_NE(sources.find(literal), std::string::npos) << c.id << ": no check " << f << " in suites/claims";
    }
  }
  auto finding = [](const std::string& claim, const std::string& check) {
    const fh::ClaimInfo* c = fh::find_claim(claim);
    return c && fh::is_declared_finding(c->findings, check);
  };
  EXPECT_TRUE(finding("model_step_figures", "more_than_halves"));
  EXPECT_TRUE(finding("model_step_figures", "fits_only_under_forge"));
  EXPECT_TRUE(finding("ext_layer_speed", "faster_than_torch_fused"));
  EXPECT_TRUE(finding("ext_prop1", "fused_equals_two_phase"));
  EXPECT_TRUE(finding("stagnation", "rne_gap_beyond_noise"));
  // Bitwise identities the harness proves stay contracts.
  EXPECT_FALSE(finding("model_step_figures", "remark1_bitwise"));
  EXPECT_FALSE(finding("prop1_twin", "prop1_twin"));
  EXPECT_FALSE(finding("ext_corollary1", "host_torch_model_reproduces_reference"));
}

TEST(claim_registry, JsonExportNamesEveryClaimAndDataset) {
  const std::string json = fh::registry_json();
  for (const fh::ClaimInfo& c : fh::claim_registry()) {
    EXPECT_NE(json.find("\"id\": \"" + c.id + "\""), std::string::npos) << c.id;
    for (const auto& d : c.datasets) EXPECT_NE(json.find("\"" + d + "\""), std::string::npos) << d;
    for (const auto& f : c.findings) EXPECT_NE(json.find("\"" + f + "\""), std::string::npos) << f;
  }
}

}  // namespace
