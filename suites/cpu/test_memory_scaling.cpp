// memory_scaling (suites/claims/memory_scaling.cpp): the memory model carried past one GPU, validated
// against the runner's own measurements committed in docs/model_step/json (the Llama-3.1-8B fused
// step's pool peak, the Qwen3-14B capacities per path). Planted: a measured peak 5% off and a
// capacity two layers off fail their contracts.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "inputs/run_inputs.h"
#include "reference/memory_model.h"
#include "suites/claims/claim_entries.h"
#include "suites/cpu/claim_test_util.h"

namespace {

using fh::test::verdict;

const std::string kJson = std::string(FH_SOURCE_DIR) + "/docs/model_step/json/";

fh::ReportData judge(const std::vector<std::string>& steps) {
  fh::VerifyConfig cfg;
  cfg.model_step = steps;
  const fh::RunInputs inputs = fh::read_run_inputs(fh::input_paths_of(cfg));
  cfg.inputs = &inputs;
  fh::Report report(fh::Meta::unknown());
  fh::claim_memory_scaling(cfg, report, fh::Progress{true});
  return report.snapshot();
}

using fh::test::dataset;

std::string attr(const fh::ReportData& r, const std::string& case_name, const std::string& key) {
  for (const auto& cl : r.claims)
    for (const auto& cs : cl.cases)
      if (cs.name == case_name)
        for (const auto& [k, v] : cs.attrs)
          if (k == key) return v;
  ADD_FAILURE() << "no attribute " << key << " in " << case_name;
  return {};
}

// A copy of a committed measurement with one text replaced (the planted defect).
std::string planted(const std::string& file, const std::string& from, const std::string& to) {
  std::ifstream in(kJson + file);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string t = ss.str();
  const size_t at = t.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) t.replace(at, from.size(), to);
  return fh::test::write_scratch("fh_memory_scaling_", "planted_" + file, t);
}

TEST(memory_scaling, ValidatedAgainstTheRunnersMeasurements) {
  const auto r = judge({kJson + "harness_fused_bf16.json", kJson + "capacity_fused_bf16.json",
                        kJson + "capacity_standard_bf16.json"});
  EXPECT_EQ(verdict(r, "validation.llama31_8b.L32", "prediction_within_3pct"), fh::Verdict::pass);
  // The prediction itself: 2P + 4P + the activations with the fp32 logits and per-token losses beside
  // them at the forward pass's end + the tile workspace (Llama-3.1-8B, fp32 G held only for the
  // embedding and norms, which the activations outweigh), and only the one plain fused step is
  // validated (not the capacity runs).
  EXPECT_EQ(dataset(r, "validation.llama31_8b.L32", "predicted_peak_bytes"),
            (std::vector<double>{6.0 * 8030261248.0 + 4170582016.0 + 512.0 * 128256 * 4 + 512.0 * 4 +
                                 128.0 * 128 * 4 * 132}));
  int validations = 0;
  for (const auto& cl : r.claims)
    for (const auto& cs : cl.cases) validations += cs.name.rfind("validation.", 0) == 0;
  EXPECT_EQ(validations, 1);
  EXPECT_EQ(verdict(r, "capacity.fused", "capacity_within_one_layer"), fh::Verdict::pass);
  EXPECT_EQ(verdict(r, "capacity.standard", "capacity_within_one_layer"), fh::Verdict::pass);
  EXPECT_EQ(dataset(r, "capacity.fused", "capacity_layers"), (std::vector<double>{65, 65}));
  EXPECT_EQ(dataset(r, "capacity.standard", "capacity_layers"), (std::vector<double>{40, 40}));
  // The saving is the gradients the standard step holds over the larger of them and the activations:
  // largest at the shortest sequence and the smallest batch, gone once the activations dominate.
  EXPECT_EQ(verdict(r, "saving_vs_sequence.llama31_8b", "saving_largest_at_short_sequence"), fh::Verdict::pass);
  EXPECT_EQ(verdict(r, "saving_vs_batch.llama31_8b", "saving_largest_at_small_batch"), fh::Verdict::pass);
  const auto s = dataset(r, "saving_vs_sequence.llama31_8b", "saving_fraction");
  ASSERT_EQ(s.size(), 4u);
  EXPECT_GT(s[0], 0.2);
  EXPECT_LT(std::abs(s[3]), 0.001);
  // 70B-shaped layers on 1, 2, 4 H200s: FORGE fits more (25 / 19, 50 / 41, 95 / 85); on 8 the
  // activations of 166 layers outgrow the sharded gradients and both fit the same (refuted there).
  const std::vector<std::vector<double>> layers = {{25, 19}, {50, 41}, {95, 85}, {166, 166}};
  for (int i = 0; i < 4; ++i) {
    const std::string c = "fit.gpus" + std::to_string(1 << i);
    EXPECT_EQ(dataset(r, c, "llama70b_shaped_layers"), layers[size_t(i)]) << c;
    EXPECT_EQ(verdict(r, c, "forge_fits_more_parameters"), i < 3 ? fh::Verdict::pass : fh::Verdict::fail) << c;
    EXPECT_EQ(dataset(r, c, "per_gpu_bytes_fused").size(), 7u) << c;
    EXPECT_EQ(dataset(r, c, "per_gpu_bytes_standard").size(), 7u) << c;
  }
  // The ladder's whole models: Qwen3-14B on 1 and 2 H200s for both, Llama-3.1-70B on 4 and 8.
  for (const char* path : {"largest_fused", "largest_standard"}) {
    EXPECT_EQ(attr(r, "fit.gpus1", path), "qwen3_14b") << path;
    EXPECT_EQ(attr(r, "fit.gpus4", path), "llama31_70b") << path;
  }
}

TEST(memory_scaling, PlantedMeasurementsFailAndNoneIsNotRun) {
  const auto off = judge({planted("harness_fused_bf16.json", "\"peak_bytes\": 52648380168", "\"peak_bytes\": 55280799176"),
                          planted("capacity_fused_bf16.json", "\"max_layers_fit\": 65", "\"max_layers_fit\": 63")});
  EXPECT_EQ(verdict(off, "validation.llama31_8b.L32", "prediction_within_3pct"), fh::Verdict::fail);
  EXPECT_EQ(verdict(off, "capacity.fused", "capacity_within_one_layer"), fh::Verdict::fail);
  const auto none = judge({});
  EXPECT_EQ(verdict(none, "validation.llama31_8b", "prediction_within_3pct"), fh::Verdict::not_run);
}

}  // namespace
