// The falsifier that must fail: a LAMB trust ratio (non-separable: one scalar from a norm over
// the region) run through the fused twin sees one tile at a time, so it MUST differ from its
// two-phase version, which sees the whole tensor. If it did not, the suites could not see a wrong
// fusion. Controls: the same rule with one tile covering the tensor matches (the difference is
// the tiling), and a separable rule (AdamW) on the same data matches bitwise.
#include <gtest/gtest.h>

#include <cstdio>

#include "kernels/twin/nonseparable.h"
#include "suites/claims/nonseparable_falsifier.h"
#include "reference/case_gen.h"

namespace {

void check(const fh::NonseparableConfig& cfg) {
  const auto rs = fh::run_nonseparable_cases(cfg);
  std::printf("%s", fh::format_claim_table(rs).c_str());
  ASSERT_EQ(rs.size(), 3u);
  for (const auto& r : rs) EXPECT_TRUE(r.pass) << r.case_name << ": " << r.first_diff << " " << r.note;
  EXPECT_GT(rs[0].differing, 0) << "the non-separable update matched its two-phase version";
  EXPECT_EQ(rs[1].differing, 0) << rs[1].first_diff;
  EXPECT_EQ(rs[2].differing, 0) << rs[2].first_diff;
}

TEST(nonseparable_falsifier, TileLocalTrustRatioMustDiffer) {
  fh::NonseparableConfig cfg;
  cfg.seed = fh::case_seed(cfg.seed);
  std::printf("seed %llu (set FH_SEED to change)\n", (unsigned long long)cfg.seed);
  check(cfg);
}

TEST(nonseparable_falsifier, RaggedTilesToo) {
  fh::NonseparableConfig cfg;
  cfg.seed = fh::stream_seed(fh::case_seed(cfg.seed), "test_nonseparable_falsifier/ragged_tiles");
  cfg.shape = {100, 200, 37, 64, 128};
  check(cfg);
}

TEST(nonseparable_falsifier, RefusesBadInput) {
  fh::NonseparableConfig one_tile;
  one_tile.shape = {64, 64, 16, 64, 64};  // a single tile cannot show a tiling difference
  EXPECT_THROW(fh::run_nonseparable_cases(one_tile), std::invalid_argument);
  EXPECT_THROW(fh::LambParam::make(2, 2, std::vector<float>(3)), std::invalid_argument);
  fh::LambParam p = fh::LambParam::make(2, 2, std::vector<float>(4, 1.0f));
  const float g[4] = {1, 1, 1, 1};
  fh::LambHyper h;
  EXPECT_THROW(fh::lamb_update_region(p, h, 0, g, 2, 0, 2, 0, 2), std::invalid_argument);
  EXPECT_THROW(fh::lamb_update_region(p, h, 1, g, 2, 0, 3, 0, 2), std::invalid_argument);
  h.beta1 = 1.0;
  EXPECT_THROW(fh::lamb_update_region(p, h, 1, g, 2, 0, 2, 0, 2), std::invalid_argument);
}

}  // namespace
