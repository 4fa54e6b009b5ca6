// Proposition 1 on the CPU: the host twin of the fused kernel (tile by tile, the update applied
// to each finished G tile) equals the order-matched two-phase step (full G, then the rule on the
// whole tensor) BITWISE, for every rule x state format x weight store, over 5 consecutive steps
// in which each producer keeps its own weights and state, on ragged and seeded random shapes.
// Zero differing elements is the only pass. FH_SEED overrides the seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>
#include <tuple>

#include "kernels/twin/fused_twin.h"
#include "reference/order_matched_host.h"
#include "reference/two_phase_host.h"
#include "suites/claims/prop1_twin.h"
#include "suites/claims/suite_power_planted_defects.h"
#include "reference/case_gen.h"

namespace {

void expect_all_pass(const std::vector<fh::ClaimCaseResult>& rs) {
  for (const auto& r : rs)
    EXPECT_TRUE(r.pass && !r.not_run)
        << r.claim << " | " << r.case_name << "\n  differing " << r.differing << ", max ulp "
        << r.max_ulp << "\n  first: " << r.first_diff << "\n  note: " << r.note;
}

TEST(prop1_twin, TwinEqualsOrderMatchedTwoPhaseBitwise) {
  fh::Prop1Config cfg;
  cfg.seed = fh::case_seed(cfg.seed);
  std::printf("seed %llu (set FH_SEED to change)\n", (unsigned long long)cfg.seed);
  ASSERT_GE(cfg.steps, 5);
  const auto rs = fh::run_prop1_cases(cfg);
  std::printf("%s", fh::format_claim_table(rs).c_str());
  expect_all_pass(rs);

  // The cross product is really covered: every rule x format x store, and ragged shapes.
  std::set<std::string> combos;
  for (const auto& r : rs) {
    const auto bar = r.case_name.rfind(" | ");
    combos.insert(r.case_name.substr(bar + 3));
  }
  int covered = 0;
  for (fh::RuleId rule : fh::kAllRules)
    for (auto f : {fh::StateFormat::fp32, fh::StateFormat::bf16, fh::StateFormat::int8})
      for (auto w : {fh::WeightStore::fp32_master, fh::WeightStore::bf16_rne, fh::WeightStore::bf16_sr})
        covered += combos.count(std::string(fh::rule_name(rule)) + " " + fh::state_format_name(f) +
                                " " + fh::weight_store_name(w));
  EXPECT_EQ(covered, 8 * 3 * 3);
}

// The suite's power: each planted defect in the twin makes some Proposition 1 case fail.
TEST(suite_power_planted_defects, PlantedDefectsAreSeen) {
  const auto rs = fh::run_planted_defect_cases("prop1_twin");
  std::printf("%s", fh::format_claim_table(rs).c_str());
  ASSERT_EQ(rs.size(), 3u);
  expect_all_pass(rs);
}

TEST(prop1_twin, ReductionOrderIsData) {
  const fh::ReductionOrder fused = fh::fused_kernel_order(64);
  EXPECT_TRUE(fused.same_order(fh::cublas_wgrad_order(1)));
  EXPECT_TRUE(fused.same_order(fh::fused_kernel_order(256)));  // staging only
  EXPECT_FALSE(fused.same_order(fh::with_k_group(fused, 32)));
  EXPECT_FALSE(fused.same_order(fh::cublas_wgrad_order(2)));
  fh::ReductionOrder wrong_align = fused;
  wrong_align.instr.align_bits = 24;
  EXPECT_FALSE(fused.same_order(wrong_align));
  EXPECT_NE(fused.describe().find("k16"), std::string::npos);

  fh::ReductionOrder bad = fused;
  bad.token_chunk = 40;  // an instruction would straddle two chunks
  EXPECT_THROW(bad.validate(), std::invalid_argument);
  bad = fused;
  bad.k_group = 32;  // instr.group still 16
  EXPECT_THROW(bad.validate(), std::invalid_argument);
  bad = fused;
  bad.split_k = 0;
  EXPECT_THROW(bad.validate(), std::invalid_argument);

  // Split rule: ceil(T / splits) rounded up to 16; trailing slices may be short or empty.
  const fh::ReductionOrder s3 = fh::cublas_wgrad_order(3);
  int64_t b, e;
  s3.slice_bounds(40, 0, b, e); EXPECT_EQ(b, 0);  EXPECT_EQ(e, 16);
  s3.slice_bounds(40, 1, b, e); EXPECT_EQ(b, 16); EXPECT_EQ(e, 32);
  s3.slice_bounds(40, 2, b, e); EXPECT_EQ(b, 32); EXPECT_EQ(e, 40);
  s3.slice_bounds(10, 1, b, e); EXPECT_EQ(b, 10); EXPECT_EQ(e, 10);
  EXPECT_THROW(s3.slice_bounds(10, 3, b, e), std::invalid_argument);
}

// The split fused kernel (kernels/gpu/fused_wgrad_coop_split.cuh) cuts the T tokens' ceil(T / 64)
// chunks into slices of ceil(chunks / S) whole chunks; its described order, cublas_wgrad_order(S, 64)
// (gpu::fused_order_for), cuts ceil(T / S) tokens rounded up to 64. They are the same slices
// (ceil(ceil(x / a) / b) = ceil(x / (a b))), so every slice but the last is whole chunks.
TEST(prop1_twin, SplitOrderSlicesAreTheKernelsWholeChunks) {
  for (int S = 2; S <= 16; ++S) {
    const fh::ReductionOrder order = fh::cublas_wgrad_order(S, 64);
    for (int64_t T = 1; T <= 20000; T += (T < 300 ? 1 : 37)) {
      const int64_t chunks = (T + 63) / 64, slice = (chunks + S - 1) / S;
      for (int q = 0; q < S; ++q) {
        int64_t b, e;
        order.slice_bounds(T, q, b, e);
        const int64_t c0 = std::min(chunks, int64_t(q) * slice), c1 = std::min(chunks, c0 + slice);
        ASSERT_EQ(b, std::min(T, c0 * 64)) << "T " << T << " S " << S << " slice " << q;
        ASSERT_EQ(e, std::min(T, c1 * 64)) << "T " << T << " S " << S << " slice " << q;
      }
    }
  }
}

TEST(prop1_twin, RefusesBadInput) {
  const auto c = fh::make_wgrad_case(1, 20, 96, 40, fh::CaseDistribution::normal);
  const auto rule = fh::default_rule_config(fh::RuleId::adamw);
  fh::HostParam w = fh::HostParam::make(rule, fh::StateFormat::int8, fh::WeightStore::fp32_master,
                                        40, 96, c.w0);
  fh::TwinSchedule s;
  s.tile_cols = 32;  // int8 blocks of 64 would straddle the tile edge at column 32
  EXPECT_THROW(fh::fused_twin_step(w, c.X.data(), c.dY.data(), 20, 1, s), std::invalid_argument);
  s = fh::TwinSchedule{};
  s.tile_rows = 0;
  EXPECT_THROW(fh::fused_twin_step(w, c.X.data(), c.dY.data(), 20, 1, s), std::invalid_argument);
  s = fh::TwinSchedule{};
  EXPECT_THROW(fh::fused_twin_step(w, c.X.data(), c.dY.data(), 20, 0, s), std::invalid_argument);
  s.defects.state_row_offset_tile = 0;  // 40 rows, one tile row: no row below tile 0
  EXPECT_THROW(fh::fused_twin_step(w, c.X.data(), c.dY.data(), 20, 1, s), std::invalid_argument);
  EXPECT_THROW(fh::fused_twin_step(w, nullptr, c.dY.data(), 20, 1, fh::TwinSchedule{}), std::invalid_argument);
  std::vector<float> G_wrong(10);
  EXPECT_THROW(fh::apply_two_phase_update(w, G_wrong, 1), std::invalid_argument);
}

// Proposition 3's premise: the twin holds one tile of G (plus a split-K partial), never a full G,
// and runs one instruction per element per k-step of every staged chunk.
TEST(prop1_twin, HoldsOneTileOfG) {
  const int64_t T = 100, in = 200, out = 150;
  const auto c = fh::make_wgrad_case(2, T, in, out, fh::CaseDistribution::normal);
  fh::TwinSchedule s;  // 128 x 128, TK 64
  int64_t tiles_seen = 0;
  const fh::TwinStats st = fh::twin_for_each_g_tile(
      c.X.data(), c.dY.data(), T, in, out, s,
      [&](const fh::TileCoord& tc, const float*, int64_t ldg) {
        EXPECT_EQ(ldg, 128);
        EXPECT_LE(tc.r1 - tc.r0, 128);
        EXPECT_LE(tc.c1 - tc.c0, 128);
        ++tiles_seen;
      });
  EXPECT_EQ(st.tiles, 4);
  EXPECT_EQ(tiles_seen, 4);
  EXPECT_EQ(st.g_buffer_floats, 128 * 128);
  EXPECT_EQ(st.instructions, out * in * 2 * (64 / 16));  // 2 chunks of 64 tokens, 4 k-steps each
  s.order = fh::cublas_wgrad_order(2);
  EXPECT_EQ(fh::twin_for_each_g_tile(c.X.data(), c.dY.data(), T, in, out, s,
                                     [](const fh::TileCoord&, const float*, int64_t) {}).g_buffer_floats,
            2 * 128 * 128);
}

// The twin's performance requirement: out = in = T = 256 well under a second.
TEST(prop1_twin, Wgrad256IsFast) {
  const auto c = fh::make_wgrad_case(3, 256, 256, 256, fh::CaseDistribution::normal);
  const auto t0 = std::chrono::steady_clock::now();
  const auto G = fh::twin_wgrad(c.X.data(), c.dY.data(), 256, 256, 256, fh::TwinSchedule{});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("twin_wgrad 256 x 256 x T=256: %.3f s\n", s);
  EXPECT_EQ(G.size(), size_t(256 * 256));
  EXPECT_LT(s, 1.0);
}

}  // namespace
