// The input layer's contract for the claims (DESIGN contract 8): every file is parsed once,
// before any claim runs, and the claims judge the parsed values. A file removed or replaced
// after parsing changes nothing a claim says; a fresh parse of the replaced files does (so the
// replacement is one a claim reading the file again would have seen).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "inputs/run_inputs.h"
#include "suites/claims/claim_entries.h"
#include "suites/claims/external_common.h"

namespace fs = std::filesystem;

namespace {

using ClaimFn = void (*)(const fh::VerifyConfig&, fh::Report&, const fh::Progress&);

class RunInputsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("fh_run_inputs_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  void write(const std::string& name, const std::string& text) const { std::ofstream(dir_ / name) << text; }
  fs::path dir_;
};

// Every check of the claim as "case/check" -> verdict.
std::map<std::string, fh::Verdict> judge(ClaimFn claim, const fh::VerifyConfig& cfg) {
  fh::Report report(fh::Meta::unknown());
  claim(cfg, report, fh::Progress{true});
  std::map<std::string, fh::Verdict> out;
  for (const auto& cl : report.snapshot().claims)
    for (const auto& cs : cl.cases)
      for (const auto& ck : cs.checks) out[cs.name + "/" + ck.name] = ck.verdict;
  return out;
}

bool any_judged(const std::map<std::string, fh::Verdict>& v) {
  return std::any_of(v.begin(), v.end(), [](const auto& kv) {
    return kv.second == fh::Verdict::pass || kv.second == fh::Verdict::fail;
  });
}

std::string model_json(const std::string& config, double peak_gib, double median_ms) {
  return "{\"config\": \"" + config + "\", \"model\": \"llama8b\", \"status\": \"ok\", \"batch\": 1, \"seq\": 512, "
         "\"dtype\": \"bf16\", \"steps\": 20, \"warmup_steps\": 3, \"peak_bytes\": " +
         std::to_string(peak_gib * 1073741824.0) + ", \"median_ms\": " + std::to_string(median_ms) +
         ", \"step_ms\": [1.0], \"losses\": [3.0, 2.0]}";
}

// JSON measurements: read whole at parse time. Rewriting them (in place, same inode) afterwards
// must not move a verdict. Planted defect that fails this: claim_ext_model_memory reading
// `read_model_bench_json` on cfg.external_model instead of claim_inputs(cfg).model_runs.
TEST_F(RunInputsTest, JsonRewrittenAfterParsingChangesNoVerdict) {
  write("torch.json", model_json("torch_fused", 60.0, 134.0));
  write("forge.json", model_json("forge", 48.0, 110.0));
  fh::VerifyConfig cfg;
  cfg.external_model = {path("torch.json"), path("forge.json")};
  const fh::RunInputs parsed = fh::read_run_inputs(fh::input_paths_of(cfg));
  cfg.inputs = &parsed;
  const auto before = judge(fh::claim_ext_model_memory, cfg);
  ASSERT_TRUE(any_judged(before)) << "the claim judged nothing: the test would show nothing";

  // FORGE now above torch's peak: a claim that read the file again would fail it.
  write("forge.json", model_json("forge", 61.0, 150.0));
  EXPECT_EQ(judge(fh::claim_ext_model_memory, cfg), before);

  fh::VerifyConfig fresh = cfg;
  const fh::RunInputs reparsed = fh::read_run_inputs(fh::input_paths_of(fresh));
  fresh.inputs = &reparsed;
  EXPECT_NE(judge(fh::claim_ext_model_memory, fresh), before) << "the rewrite is one a claim would have seen";
}

// The producer's HDF5 files: tensors are read on demand, through the file held open since it
// was validated. Removing the cases file and replacing the results file afterwards must not move
// a verdict. Planted defect that fails this: CasesFile::load or ResultsFile::load opening
// `path_` again (`H5File f(path_);` and reading `f.f` instead of `file_->f`): the load then
// throws (cases file gone) or reads the replacement.
TEST_F(RunInputsTest, ProducerFilesRemovedOrReplacedAfterParsingChangeNoVerdict) {
  namespace ext = fh::ext;
  const std::string cases = path("ci.h5"), results = path("res.h5");
  fh::write_external_cases(cases, "ci", 1, "test");
  const ext::DeclaredOrder order{"mma_chain", 16, 1, 16};
  std::vector<ext::ResultCaseOut> answered, zeros;
  {
    const ext::CasesFile cf(cases);
    for (const ext::CaseSpec& c : cf.cases()) {
      if (c.kind != "order_probe") continue;
      // The probe answered as a producer of the declared order computes it: the claim passes it.
      answered.push_back({c.id, "ok", "", "", {{"G", ext::Tensor::from_floats(ext::Dtype::fp32, {c.out, c.in},
                                                                                fh::host_g(cf, c, order).at(0))}}});
      zeros.push_back({c.id, "ok", "", "", {{"G", ext::Tensor::make(ext::Dtype::fp32, {c.out, c.in})}}});
    }
    ASSERT_FALSE(answered.empty()) << "the ci set has no order probe";
    ext::write_results_file(results, {cf.header().cases_id, "planted", "planted_path", "fused", order, {}}, answered);
  }
  fh::VerifyConfig cfg;
  cfg.external_cases = cases;
  cfg.external_results = {results};
  const fh::RunInputs parsed = fh::read_run_inputs(fh::input_paths_of(cfg));
  cfg.inputs = &parsed;
  const auto before = judge(fh::claim_ext_order_probe, cfg);
  ASSERT_TRUE(any_judged(before)) << "the claim judged nothing: the test would show nothing";

  // The results replaced by zeros (a new file renamed over the path), the cases file removed.
  const std::string cases_id = parsed.external.cases->header().cases_id;
  ext::write_results_file(results, {cases_id, "planted", "planted_path", "fused", order, {}}, zeros);
  fs::remove(cases);
  EXPECT_EQ(judge(fh::claim_ext_order_probe, cfg), before);

  // The same replacement, parsed afresh (with the cases file back), is judged differently.
  fh::write_external_cases(cases, "ci", 1, "test");
  fh::VerifyConfig fresh = cfg;
  const fh::RunInputs reparsed = fh::read_run_inputs(fh::input_paths_of(fresh));
  fresh.inputs = &reparsed;
  EXPECT_NE(judge(fh::claim_ext_order_probe, fresh), before) << "the replacement is one a claim would have seen";
}

// A claim given paths that were never parsed refuses to run (it never opens a file itself).
TEST_F(RunInputsTest, AClaimNeverReadsAFileThatWasNotParsed) {
  write("forge.json", model_json("forge", 48.0, 110.0));
  fh::VerifyConfig cfg;
  cfg.external_model = {path("forge.json")};
  fh::Report report(fh::Meta::unknown());
  EXPECT_THROW(fh::claim_ext_model_memory(cfg, report, fh::Progress{true}), std::logic_error);
}

// A bad input is refused by the one parse, naming the file and the field.
TEST_F(RunInputsTest, ABadInputIsRefusedAtParseNamingFileAndField) {
  write("bad.json", "{\"config\": \"forge\", \"model\": \"llama8b\", \"status\": \"ok\", \"peak_bytes\": 1, "
                    "\"median_ms\": 1, \"layers\": -3}");
  fh::RunInputPaths paths;
  paths.external_model = {path("bad.json")};
  try {
    (void)fh::read_run_inputs(paths);
    ADD_FAILURE() << "a layers of -3 was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(path("bad.json")), std::string::npos) << m;
    EXPECT_NE(m.find("layers"), std::string::npos) << m;
  }
  paths = {};
  paths.bench_json = path("missing.json");
  try {
    (void)fh::read_run_inputs(paths);
    ADD_FAILURE() << "a missing --bench-json was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--bench-json: ", 0), 0u) << e.what();
  }
}

}  // namespace

// --kill-matrix: mutation_kill_matrix judges each mutant; a survivor, a flaky kill and a build
// error fail, an argued equivalent is not run (and fails when killed), a rule mutant killed by
// one unit fails two_independent_kills; an incomplete run says so; a bad file is refused whole.
TEST(mutation_kill_matrix, VerdictsPerMutantAndBadFilesRefused) {
  const fs::path dir = fs::temp_directory_path() / ("fh_kill_matrix_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto path = [&](const std::string& name) { return (dir / name).string(); };
  auto write = [&](const std::string& name, const std::string& text) { std::ofstream(dir / name) << text; };
  auto mutant = [](const std::string& id, const std::string& layer, const std::string& status,
                   const std::string& killed_by, const std::string& units, const std::string& extra = "") {
    return "{\"id\": \"" + id + "\", \"layer\": \"" + layer + "\", \"file\": \"f.h\", \"why\": \"w\", \"status\": \"" +
           status + "\", \"killed_by\": [" + killed_by + "], \"kill_units\": [" + units + "], \"tests\": {\"t1\": " +
           "{\"verdict\": \"killed\", \"message\": \"first check failed\"}}" + extra + "}";
  };
  const std::string rows =
      mutant("rule_two", "rules", "killed", "\"t1\"", "\"t1: a\", \"t1: b\"") + ", " +
      mutant("rule_one", "rules", "killed", "\"t1\"", "\"t1\"") + ", " +
      mutant("fmt_lives", "formats", "survived", "", "", ", \"expected_but_survived\": [\"t2\"]") + ", " +
      mutant("fmt_flaky", "formats", "flaky", "", "", ", \"flaky_kills\": [\"t1\"]") + ", " +
      mutant("broken", "twin", "build_error", "", "", ", \"build\": {\"ok\": false, \"error\": \"x.cpp:1: error\"}") + ", " +
      mutant("equiv", "kernel", "survived", "", "", ", \"equivalent\": \"a prefetch only\"") + ", " +
      mutant("equiv_killed", "kernel", "killed", "\"t1\"", "\"t1\"", ", \"equivalent\": \"wrongly argued\"");
  write("km.json", "{\"tool\": \"scripts/mutate.py\", \"complete\": false, \"reps\": 3, \"mutants\": [" + rows + "]}");
  fh::VerifyConfig cfg;
  cfg.kill_matrix = {path("km.json")};
  const fh::RunInputs inputs = fh::read_run_inputs(fh::input_paths_of(cfg));
  cfg.inputs = &inputs;
  const auto v = judge(fh::claim_mutation_kill_matrix, cfg);
  EXPECT_EQ(v.at("cpu.rules.rule_two/killed_in_every_rep"), fh::Verdict::pass);
  EXPECT_EQ(v.at("cpu.rules.rule_two/two_independent_kills"), fh::Verdict::pass);
  EXPECT_EQ(v.at("cpu.rules.rule_one/two_independent_kills"), fh::Verdict::fail);
  EXPECT_EQ(v.at("cpu.formats.fmt_lives/killed_in_every_rep"), fh::Verdict::fail);
  EXPECT_EQ(v.at("cpu.formats.fmt_flaky/killed_in_every_rep"), fh::Verdict::fail);
  EXPECT_EQ(v.at("cpu.twin.broken/killed_in_every_rep"), fh::Verdict::fail);
  EXPECT_EQ(v.at("cpu.kernel.equiv/killed_in_every_rep"), fh::Verdict::not_run);
  EXPECT_EQ(v.at("cpu.kernel.equiv_killed/killed_in_every_rep"), fh::Verdict::fail);
  EXPECT_EQ(v.at("matrix1.cpu/run_complete"), fh::Verdict::not_run);
  // The same mutant measured in two matrices of one tool: refused.
  fh::VerifyConfig twice;
  twice.kill_matrix = {path("km.json"), path("km2.json")};
  std::filesystem::copy_file(path("km.json"), path("km2.json"));
  EXPECT_THROW((void)fh::read_run_inputs(fh::input_paths_of(twice)), std::invalid_argument);
  // No matrix: not run, never a pass.
  EXPECT_FALSE(any_judged(judge(fh::claim_mutation_kill_matrix, fh::VerifyConfig{})));
  // Bad files: refused before any claim runs, naming the field.
  const std::map<std::string, std::string> bad = {
      {"tool", "{\"tool\": \"other\", \"complete\": true, \"reps\": 3, \"mutants\": []}"},
      {"complete", "{\"tool\": \"scripts/mutate.py\", \"complete\": 1, \"reps\": 3, \"mutants\": []}"},
      {"reps", "{\"tool\": \"scripts/mutate.py\", \"complete\": true, \"reps\": 0, \"mutants\": []}"},
      {"status", "{\"tool\": \"scripts/mutate.py\", \"complete\": true, \"reps\": 3, \"mutants\": [" +
                     mutant("m", "rules", "dead", "", "") + "]}"},
      {"given twice", "{\"tool\": \"scripts/mutate.py\", \"complete\": true, \"reps\": 3, \"mutants\": [" +
                          mutant("m", "rules", "survived", "", "") + ", " + mutant("m", "rules", "survived", "", "") + "]}"},
      {"killing tests", "{\"tool\": \"scripts/mutate.py\", \"complete\": true, \"reps\": 3, \"mutants\": [" +
                            mutant("m", "rules", "killed", "", "") + "]}"}};
  for (const auto& [field, text] : bad) {
    write("bad.json", text);
    fh::VerifyConfig b;
    b.kill_matrix = {path("bad.json")};
    try {
      (void)fh::read_run_inputs(fh::input_paths_of(b));
      ADD_FAILURE() << field << ": accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
  fs::remove_all(dir);
}
