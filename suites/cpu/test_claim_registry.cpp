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
    EXPECT_NE(c.run, nullptr) << c.id;
    std::set<std::string> ds(c.datasets.begin(), c.datasets.end());
    EXPECT_EQ(ds.size(), c.datasets.size()) << c.id << " declares a dataset twice";
    EXPECT_EQ(fh::find_claim(c.id), &c);
  }
  EXPECT_EQ(fh::find_claim("no_such_claim"), nullptr);
}

// suites/claims/<id>.cpp defines claim_<id>; a claim's _gpu twin shares its CPU claim's file.
TEST(claim_registry, EveryClaimHasItsFile) {
  for (const fh::ClaimInfo& c : fh::claim_registry()) {
    std::string base = c.id;
    fs::path file = kRoot / "suites/claims" / (base + ".cpp");
    if (!fs::exists(file) && base.size() > 4 && base.ends_with("_gpu"))
      file = kRoot / "suites/claims" / (base.substr(0, base.size() - 4) + ".cpp");
    ASSERT_TRUE(fs::exists(file)) << c.id << ": no suites/claims/" << c.id << ".cpp";
    EXPECT_NE(slurp(file).find("claim_" + c.id + "("), std::string::npos)
        << file << " does not define claim_" << c.id;
  }
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
