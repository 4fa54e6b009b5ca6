// Proposition 2 on simulated ranks with the fused kernel (on the H200 runner): the
// runners of suites/claims/prop2_common.h (the code the CPU suite test_prop2_sharding runs on the
// twin) with every fused step, unsharded and on each rank, on the GPU. Each GPU step is also run
// by the twin and compared bit for bit (the tally, suites/claims/twin_tally.h): a shard's origin
// must reach the kernel (stochastic-rounding bits and INT8 blocks of the global element).
// Planted: the rank order of the sequence all-gather swapped, shard origins a block off, a
// token-partial parameter fused anyway; in the kernel, tile-local random bits are a kernel mutant
// (suites/mutation/kernel_catalog.json) the tally must kill.
#include <gtest/gtest.h>

#include <cstdio>

#include "kernels/gpu/gpu_api.h"
#include "suites/claims/fidelity_common.h"
#include "suites/claims/prop2_common.h"
#include "suites/gpu/gpu_suite_util.h"

namespace {

using fh::ClaimCaseResult;

struct OnGpu {
  fh::TwinTally tally;
  fh::Prop2Config cfg(std::vector<int> degrees = {2, 4, 8}) {
    fh::Prop2Config c;
    c.make_backend = fh::gpu_backend_with_twin_tally;
    c.tally = &tally;
    c.degrees = std::move(degrees);
    return c;
  }
  void print(const char* what) const {
    std::printf("[prop2 %s] GPU == twin: %lld steps, %lld stored values compared, %lld differ %s\n", what,
                (long long)tally.steps, (long long)tally.ev.values, (long long)tally.ev.differing,
                tally.ev.first_diff.c_str());
  }
};

using fh::first_failure;
int failures(const std::vector<ClaimCaseResult>& rs) { return fh::count_failures(rs); }

void expect_clean(const std::vector<ClaimCaseResult>& rs, const OnGpu& g, const char* what) {
  g.print(what);
  std::printf("%s", fh::format_claim_table(rs).c_str());
  EXPECT_EQ(failures(rs), 0) << first_failure(rs);
  EXPECT_TRUE(g.tally.clean()) << g.tally.ev.first_diff;
}

TEST(prop2_tp_sharded_gpu, ShardsOnTheKernelGatherToTheUnshardedUpdate) {
  FH_REQUIRE_GPU();
  OnGpu g;
  expect_clean(fh::run_prop2_tp_cases(g.cfg()), g, "tp");
}

TEST(prop2_tp_sharded_gpu, PlantedShardOriginShiftIsCaught) {
  FH_REQUIRE_GPU();
  OnGpu g;
  fh::Prop2Config c = g.cfg({2});
  c.defects.shard_origin_shift = true;
  c.stores = {fh::WeightStore::bf16_sr};
  EXPECT_GT(failures(fh::run_prop2_tp_cases(c)), 0);
}

TEST(prop2_sp_sharded_gpu, MegatronDataflowOnTheKernelEqualsTp) {
  FH_REQUIRE_GPU();
  OnGpu g;
  expect_clean(fh::run_prop2_sp_cases(g.cfg()), g, "sp");
}

TEST(prop2_sp_sharded_gpu, PlantedRankOrderSwapInTheAllGatherIsCaught) {
  FH_REQUIRE_GPU();
  OnGpu g;
  fh::Prop2Config c = g.cfg({2, 4});
  c.defects.gather_permutation = true;
  c.rules = {fh::RuleId::adamw, fh::RuleId::sgd};
  EXPECT_GT(failures(fh::run_prop2_sp_cases(c)), 0);
}

TEST(prop2_referee_dataflow_gpu, ObjectionHoldsForItsDataflowNotForMegatrons) {
  FH_REQUIRE_GPU();
  OnGpu g;
  const auto rs = fh::run_prop2_referee_cases(g.cfg());
  expect_clean(rs, g, "referee");
  int differs = 0;
  for (const auto& r : rs) differs += r.case_name.find("objection_dataflow_differs") != std::string::npos && r.pass;
  EXPECT_EQ(differs, 12);
}

TEST(prop2_token_partial_gpu, RefusedWrongWhenFusedAndExactByTheFallback) {
  FH_REQUIRE_GPU();
  OnGpu g;
  expect_clean(fh::run_prop2_token_partial_cases(g.cfg()), g, "token_partial");
}

TEST(prop2_token_partial_gpu, PlantedSkippedRefusalIsCaught) {
  FH_REQUIRE_GPU();
  OnGpu g;
  fh::Prop2Config c = g.cfg({2});
  c.defects.skip_refusal = true;
  const auto rs = fh::run_prop2_token_partial_cases(c);
  int ran = 0;
  for (const auto& r : rs) ran += r.case_name.find("| refused") != std::string::npos && !r.pass;
  EXPECT_EQ(ran, 3);
}

TEST(prop2_block_stack_gpu, TwoBlocksOnTheKernelFusedEqualsUnfusedAndSpEqualsTp) {
  FH_REQUIRE_GPU();
  OnGpu g;
  expect_clean(fh::run_prop2_block_stack_cases(g.cfg({2, 4, 8})), g, "block stack");
}

TEST(prop2_block_stack_gpu, PlantedDxAfterUpdateIsCaught) {
  FH_REQUIRE_GPU();
  OnGpu g;
  fh::Prop2Config c = g.cfg({2});
  c.rules = {fh::RuleId::adamw};
  c.defects.dx_after_update = true;
  EXPECT_GT(failures(fh::run_prop2_block_stack_cases(c)), 0);
}

}  // namespace
