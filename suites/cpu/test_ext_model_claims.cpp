// ext_model_memory, ext_model_time, ext_layer_speed and speed_decomposition (suites/claims/ext_model_*.cpp,
// ext_layer_speed.cpp, speed_decomposition.cpp) on small
// hand-written measurement files: honest numbers pass, and each planted defect fails its check
// (a peak above torch's, a NaN training, a configuration that crashed, a slower layer, a path
// that failed at a shape); bad JSON is refused by the readers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>
#include <map>
#include <string>

#include "inputs/benchmark_json.h"
#include "inputs/external_bench.h"
#include "suites/claims/claim_entries.h"
#include "suites/claims/ext_model_common.h"
#include "suites/cpu/claim_test_util.h"


namespace {

std::string write(const std::string& name, const std::string& text) {
  return fh::test::write_scratch("fh_ext_model_", name, text);
}

std::string model_json(const std::string& config, double peak_gib, double median_ms, const std::string& losses = "[3.0, 2.0]",
                       const std::string& status = "ok") {
  return write("model_" + config + ".json",
               "{\"config\": \"" + config + "\", \"model\": \"llama8b\", \"status\": \"" + status +
                   "\", \"error\": \"OutOfMemoryError: planted\", \"batch\": 1, \"seq\": 512, \"dtype\": \"bf16\", \"steps\": 20, "
                   "\"warmup_steps\": 3, \"peak_bytes\": " + std::to_string(peak_gib * 1073741824.0) +
                   ", \"median_ms\": " + std::to_string(median_ms) + ", \"step_ms\": [1.0], \"losses\": " + losses + "}");
}

std::string timing_json(const std::string& path, double us_4096, bool fail_14336) {
  std::string runs = "{\"name\": \"forge/" + path + "/4096x4096x512\", \"run_name\": \"forge/" + path +
                     "/4096x4096x512\", \"run_type\": \"iteration\", \"repetitions\": 1, \"repetition_index\": 0, "
                     "\"iterations\": 1, \"real_time\": " + std::to_string(us_4096 * 1e3) + ", \"cpu_time\": 1, \"time_unit\": \"ns\"}";
  if (fail_14336)
    runs += ", {\"name\": \"forge/" + path + "/14336x4096x512\", \"run_name\": \"forge/" + path +
            "/14336x4096x512\", \"run_type\": \"iteration\", \"error_occurred\": true, \"error_message\": \"illegal instruction\"}";
  return write("timing_" + path + ".json", "{\"context\": {}, \"benchmarks\": [" + runs + "]}");
}

fh::ReportData judge(void (*claim)(const fh::VerifyConfig&, fh::Report&, const fh::Progress&),
                     const std::vector<std::string>& model, const std::vector<std::string>& timing = {}) {
  fh::VerifyConfig cfg;
  cfg.external_model = model;
  cfg.external_timing = timing;
  const fh::RunInputs inputs = fh::read_run_inputs(fh::input_paths_of(cfg));  // as forge-verify does, before the claim
  cfg.inputs = &inputs;
  fh::Report report(fh::Meta::unknown());
  claim(cfg, report, fh::Progress{true});
  return report.snapshot();
}

using fh::test::verdict;

TEST(ext_model_memory, HonestMeasurementsPass) {
  const std::vector<std::string> files = {model_json("torch_fused", 60.0, 134.0), model_json("forge", 48.5, 112.0)};
  const auto mem = judge(fh::claim_ext_model_memory, files);
  EXPECT_EQ(verdict(mem, "forge.llama8b", "below_torch_fused"), fh::Verdict::pass);
  EXPECT_EQ(verdict(mem, "forge.llama8b", "matches_readme_peak"), fh::Verdict::pass);
  EXPECT_EQ(verdict(mem, "torch_fused.llama8b", "matches_readme_peak"), fh::Verdict::pass);
  const auto time = judge(fh::claim_ext_model_time, files);
  EXPECT_EQ(verdict(time, "forge.llama8b", "faster_than_torch_fused"), fh::Verdict::pass);
  EXPECT_EQ(verdict(time, "forge.llama8b", "matches_readme_step_time"), fh::Verdict::pass);
  EXPECT_EQ(verdict(time, "forge.llama8b", "losses_finite"), fh::Verdict::pass);
}

// The relation recorded is the one that decided: a ratio of exactly 1 is not below 1.
TEST(ext_model_common, RatioBelowOneRecordsItsStrictBound) {
  const fh::Check at_one = fh::ratio_below_one("r", 1.0, "not below");
  EXPECT_EQ(at_one.verdict, fh::Verdict::fail);
  EXPECT_EQ(at_one.pass_if, fh::PassIf::below);
  const fh::Check below = fh::ratio_below_one("r", 0.9, "not below");
  EXPECT_EQ(below.verdict, fh::Verdict::pass);
  EXPECT_EQ(below.pass_if, fh::PassIf::below);
}

TEST(ext_model_time, PlantedDefectsFail) {
  const std::string torch = model_json("torch_fused", 60.0, 134.0);
  // A peak above torch's and off the README, a slower step outside the README's spread.
  const auto mem = judge(fh::claim_ext_model_memory, {torch, model_json("forge", 61.0, 150.0)});
  EXPECT_EQ(verdict(mem, "forge.llama8b", "below_torch_fused"), fh::Verdict::fail);
  EXPECT_EQ(verdict(mem, "forge.llama8b", "matches_readme_peak"), fh::Verdict::fail);
  const auto time = judge(fh::claim_ext_model_time, {torch, model_json("forge", 48.0, 150.0)});
  EXPECT_EQ(verdict(time, "forge.llama8b", "faster_than_torch_fused"), fh::Verdict::fail);
  EXPECT_EQ(verdict(time, "forge.llama8b", "matches_readme_step_time"), fh::Verdict::fail);
  // A training that went to NaN (null in strict JSON), and a configuration that crashed.
  const auto nan = judge(fh::claim_ext_model_time, {torch, model_json("forge_tma_ws", 48.0, 100.0, "[3.0, null, null]")});
  EXPECT_EQ(verdict(nan, "forge_tma_ws.llama8b", "losses_finite"), fh::Verdict::fail);
  const auto crash = judge(fh::claim_ext_model_memory, {torch, model_json("forge_int8", -1, -1, "[]", "failed")});
  EXPECT_EQ(verdict(crash, "forge_int8.llama8b", "ran"), fh::Verdict::fail);
  // Without the baseline the comparison is not run, never passed.
  const auto alone = judge(fh::claim_ext_model_memory, {model_json("forge", 48.0, 110.0)});
  EXPECT_EQ(verdict(alone, "forge.llama8b", "below_torch_fused"), fh::Verdict::not_run);
  EXPECT_EQ(verdict(judge(fh::claim_ext_model_memory, {}), "all", "ext_model_memory"), fh::Verdict::not_run);
}

TEST(ext_layer_speed, FasterSlowerAndFailedShapes) {
  const std::string torch = timing_json("torch_reference", 200.0, false);
  const auto r = judge(fh::claim_ext_layer_speed, {}, {torch, timing_json("persistent", 180.0, false), timing_json("tma", 220.0, true)});
  EXPECT_EQ(verdict(r, "persistent.4096x4096x512", "faster_than_torch_fused"), fh::Verdict::pass);
  EXPECT_EQ(verdict(r, "tma.4096x4096x512", "faster_than_torch_fused"), fh::Verdict::fail);
  EXPECT_EQ(verdict(r, "tma.14336x4096x512", "ran"), fh::Verdict::fail);
}

// forge-bench's JSON for one layer and config: each variant's single repetition.
std::string bench_json(const std::string& name, const std::map<std::string, double>& us) {
  std::string runs;
  for (const auto& [variant, t] : us) {
    const std::string n = "adamw_fp32_fp32_master/" + variant + "/out4096_in4096_T512/manual_time";
    runs += std::string(runs.empty() ? "" : ", ") + "{\"name\": \"" + n + "\", \"run_name\": \"" + n +
            "\", \"run_type\": \"iteration\", \"repetitions\": 1, \"repetition_index\": 0, \"iterations\": 1, "
            "\"real_time\": " + std::to_string(t) + ", \"cpu_time\": 1, \"time_unit\": \"us\"}";
  }
  return write(name, "{\"context\": {}, \"benchmarks\": [" + runs + "]}");
}

double dataset_value(const fh::ReportData& r, const std::string& cs, const std::string& name, size_t i) {
  const std::vector<double> v = fh::test::dataset(r, cs, name);  // a test failure when absent
  return v.empty() ? 0 : v.at(i);
}

TEST(speed_decomposition, PartsSumToTheGapAndNoiseFails) {
  const auto r = judge(fh::claim_speed_decomposition, {},
                       {bench_json("dec.json", {{"fused", 120}, {"fused_g_roundtrip", 140}, {"order_matched", 210},
                                                {"cublas", 165}, {"gemm_cublas", 48}})});
  const std::string cs = "fp32_fp32_master.4096x4096x512";
  EXPECT_EQ(verdict(r, cs, "roundtrip_costs_time"), fh::Verdict::pass);
  EXPECT_DOUBLE_EQ(dataset_value(r, cs, "parts_us", 0), 20.0);   // G on chip
  EXPECT_DOUBLE_EQ(dataset_value(r, cs, "parts_us", 1), 70.0);   // second launch, G through HBM
  EXPECT_DOUBLE_EQ(dataset_value(r, cs, "parts_us", 2), -45.0);  // cuBLAS's GEMM faster than ours
  EXPECT_DOUBLE_EQ(dataset_value(r, cs, "share", 0) + dataset_value(r, cs, "share", 1) + dataset_value(r, cs, "share", 2), 1.0);
  // Planted: a round trip measured faster than the fused kernel fails; a missing variant is not run.
  const auto noisy = judge(fh::claim_speed_decomposition, {},
                           {bench_json("noisy.json", {{"fused", 120}, {"fused_g_roundtrip", 100}, {"order_matched", 210},
                                                      {"cublas", 165}})});
  EXPECT_EQ(verdict(noisy, cs, "roundtrip_costs_time"), fh::Verdict::fail);
  const auto partial = judge(fh::claim_speed_decomposition, {}, {bench_json("partial.json", {{"fused", 120}, {"cublas", 165}})});
  EXPECT_EQ(verdict(partial, cs, "roundtrip_costs_time"), fh::Verdict::not_run);
  EXPECT_EQ(verdict(judge(fh::claim_speed_decomposition, {}), "all", "speed_decomposition"), fh::Verdict::not_run);
}

TEST(ext_model_memory, BadJsonIsRefused) {
  EXPECT_THROW(fh::read_model_bench_json(write("bad.json", "{\"config\": \"forge\", \"losses\": [NaN]")), std::invalid_argument);
  EXPECT_THROW(fh::read_model_bench_json(write("noconfig.json", "{\"model\": \"x\", \"status\": \"ok\"}")), std::invalid_argument);
  EXPECT_THROW(fh::read_model_bench_json(write("okbutempty.json", "{\"config\": \"forge\", \"model\": \"x\", \"status\": \"ok\"}")),
               std::invalid_argument);
  EXPECT_THROW(fh::read_model_bench_json("/nonexistent/x.json"), std::invalid_argument);
  EXPECT_THROW(fh::read_benchmark_errors(write("nobench.json", "{}")), std::invalid_argument);
}

// Each of these turned a failing verdict into a pass or a not-run, or ended in exit 3: refused
// now by the reader, with the file and the field named.
TEST(ext_model_memory, VerdictFlippingJsonIsRefusedNamingFileAndField) {
  auto expect_refused = [](auto read, const std::string& file, const std::string& field) {
    try {
      read(file);
      ADD_FAILURE() << file << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  const auto timing = [](const std::string& f) { return fh::read_benchmark_json(f); };
  const auto bench = [](const std::string& f) { return fh::read_model_bench_json(f); };
  // A negative time made "slower than torch" pass (ratio -1.35 <= 1).
  expect_refused(timing, timing_json("negative", -200.0, false), "real_time");
  // The last of two "status" keys won: a failed run judged ok.
  expect_refused(bench, write("dup.json", "{\"config\": \"forge\", \"model\": \"llama8b\", \"status\": \"failed\", "
                                          "\"peak_bytes\": 1, \"median_ms\": 1, \"status\": \"ok\"}"),
                 "\"status\" appears twice");
  // A number beyond a double: exit 3 without the file's name before.
  expect_refused(bench, write("overflow.json", "{\"config\": \"forge\", \"model\": \"llama8b\", \"status\": \"ok\", "
                                               "\"peak_bytes\": 1e999, \"median_ms\": 1}"),
                 "number overflow");
  expect_refused(bench, write("layers.json", "{\"config\": \"forge\", \"model\": \"llama8b\", \"status\": \"ok\", "
                                             "\"layers\": 1e300, \"peak_bytes\": 1, \"median_ms\": 1}"),
                 "\"layers\"");
  // forge-model-step's JSON is not forge_model_bench.py's: given as --external-model it passed.
  expect_refused(bench, write("a_step.json", "{\"config\": \"harness_fused_bf16\", \"model\": \"llama31_8b\", "
                                             "\"status\": \"ok\", \"update\": \"fused\", \"layers\": 32, "
                                             "\"peak_bytes\": 1, \"median_ms\": 1}"),
                 "--model-step");
  // Not a regular file: a directory was "not valid JSON"; a FIFO hung; /dev/zero was read until
  // memory ran out.
  const std::string folder = std::filesystem::path(write("x.json", "{}")).parent_path() / "folder.json";
  std::filesystem::create_directories(folder);
  expect_refused(bench, folder, "is a directory");
  const std::string fifo = std::filesystem::path(folder).parent_path() / "fifo.json";
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_refused(bench, fifo, "is a FIFO");
  expect_refused(timing, "/dev/zero", "is a character device");
}

}  // namespace
