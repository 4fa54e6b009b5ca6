// tp_microbatch (suites/claims/tp_microbatch.cpp): one tensor-parallel rank's shard, its accounting
// and its micro-batch capacity. The rank's shard is Megatron-LM's (heads, KV heads, the intermediate
// size and the padded vocabulary split); the claim's per-H200 verdicts come from the model alone;
// measured rank runs (forge-model-step --tp JSON, here written from the model's own numbers, then
// planted) pass when they agree and fail when a peak is 5% off, a capacity three micro-batches off,
// or the accounting leaves the collectives' buffers out (FH_PLANT_TP_NO_COLLECTIVES=1).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "inputs/run_inputs.h"
#include "reference/memory_model.h"
#include "suites/claims/claim_entries.h"
#include "suites/cpu/claim_test_util.h"

namespace {

using fh::test::dataset;
using fh::test::verdict;

fh::ReportData judge(const std::vector<std::string>& runs) {
  fh::VerifyConfig cfg;
  cfg.tp_rank_run = runs;
  const fh::RunInputs inputs = fh::read_run_inputs(fh::input_paths_of(cfg));
  cfg.inputs = &inputs;
  fh::Report report(fh::Meta::unknown());
  fh::claim_tp_microbatch(cfg, report, fh::Progress{true});
  return report.snapshot();
}

// A forge-model-step --tp measurement of 2 layers at TP 4 (the fields the reader needs), its pool
// peak `peak` and the collectives' bytes it allocated.
std::string rank_run(const std::string& name, double peak, int64_t collectives) {
  const std::string t =
      "{\"config\": \"harness_fused_bf16_tp4_b2\", \"model\": \"llama31_8b\", \"status\": \"ok\", \"batch\": 2, "
      "\"seq\": 512, \"steps\": 3, \"warmup_steps\": 1, \"dtype\": \"bf16\", \"device\": \"test\", \"update\": \"fused\", "
      "\"state\": \"bf16\", \"store\": \"bf16_rne\", \"layers\": 2, \"tied\": false, \"tp\": 4, "
      "\"collective_bytes_modeled\": 134217728, \"collective_bytes_allocated\": " + std::to_string(collectives) +
      ", \"device_total_bytes\": 85000000000, \"device_used_at_start\": 600000000, \"peak_bytes\": " +
      std::to_string(int64_t(peak)) + ", \"median_ms\": 10.0, \"step_ms\": [10, 10, 10], \"losses\": [1, 1, 1], "
      "\"nonfinite_losses\": 0, \"tag_peaks\": {\"weights\": 1}, \"timeline\": [], "
      "\"memory_model\": {\"terms\": [], \"total\": 1, \"activation_bytes\": 1}, \"dx_digests_step1\": [], "
      "\"weight_digests\": [], \"state_digests\": []}";
  return fh::test::write_scratch("fh_tp_microbatch_", name, t);
}

std::string capacity_run(const std::string& name, int64_t fit) {
  const std::string t =
      "{\"config\": \"harness_standard_bf16_tp8_capacity_batch\", \"model\": \"llama31_8b\", \"status\": \"ok\", "
      "\"batch\": 1, \"seq\": 512, \"steps\": 8, \"warmup_steps\": 3, \"dtype\": \"bf16\", \"device\": \"test\", "
      "\"update\": \"standard\", \"state\": \"bf16\", \"store\": \"bf16_rne\", \"layers\": 32, \"tied\": false, "
      "\"tp\": 8, \"device_total_bytes\": 85000000000, \"device_used_at_start\": 600000000, "
      "\"capacity_batch_max_tried\": 256, \"max_batch_fit\": " + std::to_string(fit) + ", \"attempts\": []}";
  return fh::test::write_scratch("fh_tp_microbatch_", name, t);
}

TEST(tp_microbatch, RankShardIsMegatronsLayout) {
  const fh::ModelShape s = fh::model_shape("llama31_8b");
  const fh::ModelShape r8 = fh::tp_rank_shape(s, 8);
  EXPECT_EQ(r8.heads, 4);
  EXPECT_EQ(r8.kv_heads, 1);
  EXPECT_EQ(r8.intermediate, 1792);
  EXPECT_EQ(r8.vocab, 129024 / 8);  // 128256 padded to a multiple of 128 x 8
  EXPECT_EQ(r8.hidden, 4096);       // replicated
  EXPECT_EQ(fh::tp_rank_shape(s, 1).vocab, 128256);
  EXPECT_THROW(fh::tp_rank_shape(s, 3), std::invalid_argument);
  EXPECT_THROW(fh::tp_rank_shape(s, 16), std::invalid_argument);  // 8 KV heads
  EXPECT_EQ(fh::tp_collective_bytes(1), 0);
  EXPECT_EQ(fh::tp_collective_bytes(4), int64_t(16) * 2 * (4 << 20));
}

TEST(tp_microbatch, PerH200VerdictsFromTheModel) {
  const auto r = judge({});
  for (const char* c : {"h200.tp2", "h200.tp4", "h200.tp8"}) {
    const auto fused = dataset(r, c, "max_microbatch_fused"), standard = dataset(r, c, "max_microbatch_standard");
    ASSERT_EQ(fused.size(), 3u) << c;
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_GE(fused[i], standard[i]) << c;  // FORGE never holds more
      EXPECT_GT(standard[i], 0) << c;
    }
    EXPECT_NE(verdict(r, c, "four_times_microbatch"), fh::Verdict::not_run) << c;
    EXPECT_NE(verdict(r, c, "saving_20_to_55pct"), fh::Verdict::not_run) << c;
  }
}

TEST(tp_microbatch, MeasuredRanksAgreeAndPlantedOnesFail) {
  fh::ModelShape rank = fh::model_shape("llama31_8b");
  rank.layers = 2;
  rank = fh::tp_rank_shape(rank, 4);
  const double predicted = fh::step_peak_bytes(rank, true, 2, 512, 1, 4);
  const int64_t coll = fh::tp_collective_bytes(4);
  // The capacity the model gives the test's GPU (85 GB, 0.6 GB in use), standard path at TP 8.
  fh::ModelShape r8 = fh::tp_rank_shape(fh::model_shape("llama31_8b"), 8);
  int64_t cap = 0;
  while (fh::step_peak_bytes(r8, false, cap + 1, 512, 1, 4) + double(fh::tp_collective_bytes(8)) <= 84.4e9) ++cap;
  ASSERT_GT(cap, 3);
  const auto good = judge({rank_run("good.json", predicted * 1.01, coll), capacity_run("cap.json", cap - 1)});
  EXPECT_EQ(verdict(good, "rank.tp4.fused.b2", "peak_within_3pct"), fh::Verdict::pass);
  EXPECT_EQ(verdict(good, "rank.tp4.fused.b2", "collectives_accounted"), fh::Verdict::pass);
  EXPECT_EQ(verdict(good, "capacity.tp8.standard", "capacity_within_one_microbatch"), fh::Verdict::pass);
  const auto off = judge({rank_run("off.json", predicted * 1.05, coll), capacity_run("cap3.json", cap - 3)});
  EXPECT_EQ(verdict(off, "rank.tp4.fused.b2", "peak_within_3pct"), fh::Verdict::fail);
  EXPECT_EQ(verdict(off, "capacity.tp8.standard", "capacity_within_one_microbatch"), fh::Verdict::fail);
  // Planted: the per-rank accounting without the collectives' buffers.
  setenv("FH_PLANT_TP_NO_COLLECTIVES", "1", 1);
  const auto planted = judge({rank_run("good2.json", predicted * 1.01, coll)});
  unsetenv("FH_PLANT_TP_NO_COLLECTIVES");
  EXPECT_EQ(verdict(planted, "rank.tp4.fused.b2", "collectives_accounted"), fh::Verdict::fail);
}

// The runner's own measurements (docs/model_step/tp_rank, an H100, 2026-12-07): every rank step
// within 3% of the model and both TP-8 capacities exactly the model's.
TEST(tp_microbatch, ValidatedAgainstTheRunnersRanks) {
  const std::string dir = std::string(FH_SOURCE_DIR) + "/docs/model_step/tp_rank/";
  std::vector<std::string> runs;
  for (const char* tp : {"2", "4", "8"})
    for (const char* u : {"fused", "standard"})
      for (const char* b : {"1", "4"}) runs.push_back(dir + "tp" + tp + "_" + u + "_b" + b + ".json");
  runs.push_back(dir + "tp8_fused_capacity.json");
  runs.push_back(dir + "tp8_standard_capacity.json");
  const auto r = judge(runs);
  int judged = 0;
  for (const auto& cl : r.claims)
    for (const auto& cs : cl.cases)
      for (const auto& ch : cs.checks)
        if (ch.name == "peak_within_3pct" || ch.name == "capacity_within_one_microbatch" ||
            ch.name == "collectives_accounted") {
          EXPECT_EQ(ch.verdict, fh::Verdict::pass) << cs.name << " " << ch.name;
          ++judged;
        }
  EXPECT_EQ(judged, 12 * 2 + 2);
  EXPECT_EQ(dataset(r, "capacity.tp8.fused", "capacity_batch"), (std::vector<double>{61, 61}));
}

TEST(tp_microbatch, RankRunsStayOutOfModelStep) {
  fh::VerifyConfig cfg;
  cfg.model_step = {rank_run("misplaced.json", 1e9, 0)};
  EXPECT_THROW(fh::read_run_inputs(fh::input_paths_of(cfg)), std::invalid_argument);
}

}  // namespace
