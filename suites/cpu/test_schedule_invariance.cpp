// Schedule invariance on the CPU: the fused twin's result is bitwise independent of the tile
// visiting order and of the tile shape over (out, in), for every weight store including
// stochastic rounding (each element's token chain is unchanged; random bits are keyed by
// position), and of the staging chunk TK (16, 64, 256). Changing the ORDER itself (instruction
// grouping k = 32 or 8, split-K 2 or 3) does change bits on random data, and the verdict then
// moves from bitwise to bounded: |G_variant - G_base| <= B_variant + B_base (oracles/dot_bound.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "kernels/twin/fused_twin.h"
#include "suites/claims/schedule_invariance.h"
#include "suites/claims/suite_power_planted_defects.h"
#include "reference/case_gen.h"

namespace {

const std::vector<fh::ClaimCaseResult>& cases() {
  static const std::vector<fh::ClaimCaseResult> rs = [] {
    fh::ScheduleInvarianceConfig cfg;
    cfg.seed = fh::case_seed(cfg.seed);
    std::printf("seed %llu (set FH_SEED to change)\n", (unsigned long long)cfg.seed);
    auto r = fh::run_schedule_invariance_cases(cfg);
    std::printf("%s", fh::format_claim_table(r).c_str());
    return r;
  }();
  return rs;
}

bool is_order_change(const fh::ClaimCaseResult& r) {
  return r.case_name.find("order change") != std::string::npos;
}

void expect_pass(const fh::ClaimCaseResult& r) {
  EXPECT_TRUE(r.pass && !r.not_run)
      << r.case_name << "\n  differing " << r.differing << ", max ulp " << r.max_ulp << ", metric "
      << r.metric << " <= " << r.bound << "\n  first: " << r.first_diff << "\n  note: " << r.note;
}

TEST(schedule_invariance, BitwiseAcrossVisitOrderTileShapeAndStaging) {
  int n = 0;
  for (const auto& r : cases())
    if (!is_order_change(r)) {
      expect_pass(r);
      EXPECT_EQ(r.differing, 0);
      ++n;
    }
  EXPECT_EQ(n, 7 * 3);  // 7 schedule variants x 3 weight stores
}

TEST(schedule_invariance, OrderChangesMoveTheVerdictToBounded) {
  int n = 0;
  for (const auto& r : cases())
    if (is_order_change(r)) {
      expect_pass(r);
      EXPECT_GT(r.differing, 0) << r.case_name << ": a changed order must change bits";
      EXPECT_LE(r.metric, r.bound) << r.case_name;
      ++n;
    }
  EXPECT_EQ(n, 4);
}

TEST(suite_power_planted_defects, PlantedDefectsAreSeen) {
  const auto rs = fh::run_planted_defect_cases("schedule_invariance");
  std::printf("%s", fh::format_claim_table(rs).c_str());
  ASSERT_EQ(rs.size(), 3u);
  for (const auto& r : rs) expect_pass(r);
}

TEST(schedule_invariance, VisitSequencesArePermutations) {
  for (auto v : {fh::TileVisitOrder::row_major, fh::TileVisitOrder::col_major, fh::TileVisitOrder::random}) {
    auto seq = fh::tile_visit_sequence(3, 5, v, 42);
    std::sort(seq.begin(), seq.end());
    std::vector<int64_t> ids(15);
    std::iota(ids.begin(), ids.end(), 0);
    EXPECT_EQ(seq, ids) << fh::tile_visit_order_name(v);
  }
  EXPECT_EQ(fh::tile_visit_sequence(4, 4, fh::TileVisitOrder::col_major, 0)[1], 4);
  EXPECT_EQ(fh::tile_visit_sequence(4, 4, fh::TileVisitOrder::random, 7),
            fh::tile_visit_sequence(4, 4, fh::TileVisitOrder::random, 7));
  EXPECT_NE(fh::tile_visit_sequence(4, 4, fh::TileVisitOrder::random, 7),
            fh::tile_visit_sequence(4, 4, fh::TileVisitOrder::random, 8));
  const fh::TileCoord t = fh::tile_of(130, 70, 200, 192, 128, 64);
  EXPECT_EQ(t.tile_row, 1);
  EXPECT_EQ(t.tile_col, 1);
  EXPECT_EQ(t.id, 1 * 3 + 1);
  EXPECT_EQ(t.r1, 200);
  EXPECT_EQ(t.c1, 128);
}

// Every random visiting order gives the same G, bit for bit, as the G the tiles assemble.
TEST(schedule_invariance, WgradIndependentOfVisitSeed) {
  const auto c = fh::make_wgrad_case(11, 33, 70, 90, fh::CaseDistribution::normal);
  fh::TwinSchedule s;
  s.tile_rows = 32;
  s.tile_cols = 16;
  const auto g0 = fh::twin_wgrad(c.X.data(), c.dY.data(), 33, 70, 90, s);
  s.visit = fh::TileVisitOrder::random;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    s.visit_seed = seed;
    const auto g = fh::twin_wgrad(c.X.data(), c.dY.data(), 33, 70, 90, s);
    EXPECT_EQ(0, std::memcmp(g.data(), g0.data(), g.size() * sizeof(float))) << "seed " << seed;
  }
}

}  // namespace
