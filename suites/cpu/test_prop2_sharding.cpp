// Proposition 2 on simulated ranks: the four claims pass on the honest layer, and each
// fails on its planted defect (rank order swapped in the sequence all-gather, shard origins off
// by a block, a token-partial parameter fused anyway); the layer's own pieces (slice/place,
// collectives, refusals) are checked directly.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "reference/sharding.h"
#include "suites/claims/prop2_common.h"

namespace {

using fh::ClaimCaseResult;

// Small, fast configurations: the claims' shape, fewer steps and degrees.
fh::Prop2Config quick(std::vector<int> degrees = {2, 4, 8}) {
  fh::Prop2Config c;
  c.steps = 2;
  c.degrees = std::move(degrees);
  return c;
}

using fh::first_failure;
int failures(const std::vector<ClaimCaseResult>& rs) { return fh::count_failures(rs); }

// The units of a claim run on the host's cores; what comes back must be a serial run's: the cases
// in unit order, and the tallies folded in unit order (the first difference is unit 0's), whatever
// order the units finish in (here the last unit finishes first).
TEST(run_prop2_units, CasesAndTalliesComeBackInUnitOrder) {
  constexpr int kUnits = 6;
  fh::TwinTally tally;
  fh::Prop2Config cfg = quick();
  cfg.tally = &tally;
  cfg.make_backend = [](fh::TwinTally* t) {
    fh::FusedStepBackend be;
    be.name = "recording";
    be.step = [t](fh::HostParam& w, const fh::bf16*, const fh::bf16*, int64_t, int64_t, const fh::TwinSchedule&) {
      ++t->steps;
      ++t->ev.differing;
      if (t->ev.first_diff.empty()) t->ev.first_diff = "unit " + std::to_string(w.rows);
    };
    return be;
  };
  const auto rs = fh::run_prop2_units(cfg, kUnits, [&](size_t i, const fh::FusedStepBackend& be) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20 * (kUnits - int(i))));
    fh::HostParam w;
    w.rows = int64_t(i);
    be.step(w, nullptr, nullptr, 0, 1, fh::TwinSchedule{});
    std::vector<ClaimCaseResult> cases(2);
    for (size_t k = 0; k < cases.size(); ++k) cases[k].case_name = std::to_string(i) + "." + std::to_string(k);
    return cases;
  });
  ASSERT_EQ(rs.size(), size_t(2 * kUnits));
  for (int i = 0; i < kUnits; ++i)
    for (int k = 0; k < 2; ++k) EXPECT_EQ(rs[size_t(2 * i + k)].case_name, std::to_string(i) + "." + std::to_string(k));
  EXPECT_EQ(tally.steps, kUnits);
  EXPECT_EQ(tally.ev.differing, kUnits);
  EXPECT_EQ(tally.ev.first_diff, "unit 0");
}

TEST(prop2_tp_sharded, ShardsGatherToTheUnshardedUpdateBitForBit) {
  const auto rs = fh::run_prop2_tp_cases(quick());
  EXPECT_EQ(failures(rs), 0) << first_failure(rs);
  int refused = 0;
  for (const auto& r : rs) refused += r.case_name.find("INT8 block across a shard edge") != std::string::npos && r.pass;
  EXPECT_GT(refused, 0) << "in / 8 = 32 splits INT8 blocks: those layouts must be refused";
}

TEST(prop2_tp_sharded, PlantedShardOriginShiftIsCaught) {
  fh::Prop2Config c = quick({2});
  c.defects.shard_origin_shift = true;
  c.stores = {fh::WeightStore::bf16_sr};  // the stochastic-rounding bits belong to other elements
  const auto rs = fh::run_prop2_tp_cases(c);
  EXPECT_GT(failures(rs), 0);
}

TEST(prop2_sp_sharded, MegatronDataflowEqualsTpBitForBit) {
  const auto rs = fh::run_prop2_sp_cases(quick());
  EXPECT_EQ(failures(rs), 0) << first_failure(rs);
}

TEST(prop2_sp_sharded, PlantedRankOrderSwapInTheAllGatherIsCaught) {
  fh::Prop2Config c = quick({2, 4});
  c.defects.gather_permutation = true;
  c.rules = {fh::RuleId::adamw, fh::RuleId::sgd};
  const auto rs = fh::run_prop2_sp_cases(c);
  int swapped_caught = 0;
  for (const auto& r : rs) swapped_caught += !r.pass && !r.not_run;
  EXPECT_GT(swapped_caught, 0);
}

TEST(prop2_referee_dataflow, ObjectionHoldsForItsDataflowNotForMegatrons) {
  const auto rs = fh::run_prop2_referee_cases(quick());
  EXPECT_EQ(failures(rs), 0) << first_failure(rs);
  int differs = 0, restores = 0;
  for (const auto& r : rs) {
    differs += r.case_name.find("objection_dataflow_differs") != std::string::npos && r.pass;
    restores += r.case_name.find("gathering_dy_restores") != std::string::npos && r.pass;
  }
  EXPECT_EQ(differs, 12);   // 2 combos x 3 degrees x 2 kinds
  EXPECT_EQ(restores, 12);
}

TEST(prop2_referee_dataflow, PlantedPermutedGatherBreaksTheRestoration) {
  fh::Prop2Config c = quick({2});
  c.defects.gather_permutation = true;
  EXPECT_GT(failures(fh::run_prop2_referee_cases(c)), 0);
}

TEST(prop2_token_partial, RefusedWrongWhenFusedAndExactByTheFallback) {
  const auto rs = fh::run_prop2_token_partial_cases(quick());
  EXPECT_EQ(failures(rs), 0) << first_failure(rs);
}

TEST(prop2_token_partial, PlantedSkippedRefusalIsCaught) {
  fh::Prop2Config c = quick({2});
  c.defects.skip_refusal = true;  // DP without a reduction, a norm weight fused under SP
  const auto rs = fh::run_prop2_token_partial_cases(c);
  int ran = 0;
  for (const auto& r : rs) ran += r.case_name.find("| refused") != std::string::npos && !r.pass;
  EXPECT_EQ(ran, 3);  // the DP weight, the bias and the norm weight
}

TEST(prop2_block_stack, FusedEqualsUnfusedAndSpEqualsTpOverTwoBlocks) {
  fh::Prop2Config c = quick({2, 4});
  const auto rs = fh::run_prop2_block_stack_cases(c);
  EXPECT_EQ(failures(rs), 0) << first_failure(rs);
  int sp_tp = 0, norm_grads = 0;
  for (const auto& r : rs) {
    sp_tp += r.case_name.find("SP == TP") != std::string::npos && r.pass;
    norm_grads += r.case_name.find("norm gradients within the summation bound") != std::string::npos && r.pass;
  }
  EXPECT_GE(sp_tp, 8);
  EXPECT_GE(norm_grads, 16);  // TP and SP for each case (mutation catalog: sharding_sp_norm_grad_from_token_zero)
}

TEST(prop2_block_stack, PlantedDxAfterUpdateAndRankOrderSwapAreCaught) {
  fh::Prop2Config c = quick({2});
  c.rules = {fh::RuleId::adamw};
  c.defects.dx_after_update = true;  // Remark 1 broken in the fused layers: upstream dY changes
  auto rs = fh::run_prop2_block_stack_cases(c);
  int caught = 0;
  for (const auto& r : rs) caught += r.case_name.find("fused == unfused") != std::string::npos && !r.pass;
  EXPECT_EQ(caught, 2);  // TP and SP
  c.defects = {};
  c.defects.gather_permutation = true;
  rs = fh::run_prop2_block_stack_cases(c);
  caught = 0;
  for (const auto& r : rs) caught += r.case_name.find("SP == TP") != std::string::npos && !r.pass;
  EXPECT_EQ(caught, 1);
}

TEST(prop2_tp_sharded, SliceAndPlaceRoundTripAndRefuseSplitBlocks) {
  const fh::RuleConfig adamw = fh::config_for(fh::RuleId::adamw, {});
  std::vector<float> w0(size_t(4 * 256));
  for (size_t i = 0; i < w0.size(); ++i) w0[i] = float(i) * 1e-4f;
  const fh::HostParam full = fh::HostParam::make(adamw, fh::StateFormat::int8, fh::WeightStore::bf16_rne, 4, 256, w0);
  fh::HostParam copy = full;
  const fh::HostParam s = full.slice(1, 3, 64, 192);
  EXPECT_EQ(s.origin_row, 1);
  EXPECT_EQ(s.origin_col, 64);
  EXPECT_EQ(s.origin_global_cols, 256);
  copy.place(s);
  EXPECT_EQ(copy.bf16, full.bf16);
  EXPECT_EQ(copy.st_absmax[0], full.st_absmax[0]);
  EXPECT_THROW(full.slice(0, 4, 32, 256), std::invalid_argument);  // a block across the edge
  EXPECT_THROW(full.slice(0, 5, 0, 64), std::invalid_argument);    // outside
}

TEST(prop2_tp_sharded, CollectivesAreOrderedAndChecked) {
  fh::SimCollectives c;
  c.p = 3;
  const std::vector<std::vector<float>> parts{{1.0f, 1e8f}, {1e-8f, -1e8f}, {2.0f, 1.0f}};
  const auto sum = c.all_reduce_ordered(parts);
  EXPECT_EQ(sum[0], (1.0f + 1e-8f) + 2.0f);
  EXPECT_EQ(sum[1], (1e8f + -1e8f) + 1.0f);
  auto bv = [](std::initializer_list<uint16_t> bits) {  // bf16 values by their bits
    std::vector<fh::bf16> v;
    for (uint16_t u : bits) v.push_back(fh::bf16::from_bits(u));
    return v;
  };
  const auto rows = c.all_gather_rows({bv({1, 2}), bv({3, 4}), bv({5, 6})}, 2);
  EXPECT_EQ(rows, bv({1, 2, 3, 4, 5, 6}));
  c.gather_order = {0, 2, 1};
  EXPECT_EQ(c.all_gather_rows({bv({1, 2}), bv({3, 4}), bv({5, 6})}, 2), bv({1, 2, 5, 6, 3, 4}));
  c.gather_order = {0, 1};
  EXPECT_THROW(c.all_gather_rows({bv({1}), bv({2}), bv({3})}, 1), std::invalid_argument);
  int64_t a, b;
  EXPECT_THROW(fh::even_share(10, 3, 0, a, b, "test"), std::invalid_argument);
  EXPECT_THROW(fh::check_fusable(fh::Dataflow::dp, false, "W"), std::invalid_argument);
  EXPECT_NO_THROW(fh::check_fusable(fh::Dataflow::sp_megatron, false, "W"));
}

}  // namespace
