// The falsifier that must fail: a LAMB trust ratio (non-separable: one scalar from a norm over
// the region) run through the fused twin sees one tile at a time, so it MUST differ from its
// two-phase version, which sees the whole tensor. If it did not, the suites could not see a wrong
// fusion. Controls: the same rule with one tile covering the tensor matches (the difference is
// the tiling), and a separable rule (AdamW) on the same data matches bitwise.
// The map past the boundary (LAMB, Adam-mini, Adafactor, SM3-I/II, LARS, Muon): linear-fusion-only
// and the exact fused schedules match their two-phase references bitwise, naive tile fusion
// differs for every rule, and each planted defect of the exact schedules is caught: a cross-tile
// sum in another order than described, a stale statistic, an Adam-mini block off by one row.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <set>
#include <string>

#include "kernels/twin/nonseparable.h"
#include "oracles/bitwise.h"
#include "reference/nonseparable_two_phase.h"
#include "reports/report.h"
#include "suites/claims/registry.h"
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

std::string rule_of(const fh::NsMapCase& c) {
  for (fh::NsRule r : fh::kNsRules)
    if (c.result.case_name.find(std::string("| ") + fh::ns_rule_name(r) + " |") != std::string::npos ||
        c.result.case_name.rfind(std::string(fh::ns_rule_name(r)) + " |", 0) == 0)
      return fh::ns_rule_name(r);
  return {};
}
bool is(const fh::NsMapCase& c, const char* kind) { return c.result.case_name.find(kind) != std::string::npos; }
constexpr const char* kFused = "exact fused schedule";
constexpr const char* kLinear = "linear-fusion-only";
constexpr const char* kNaive = "naive tile fusion";
constexpr const char* kMpfr = "within gamma bound of MPFR";

std::vector<fh::NsMapCase> run_map(const fh::NonseparableMapConfig& cfg) {
  const auto cases = fh::run_nonseparable_map_cases(cfg);
  std::vector<fh::ClaimCaseResult> rs;
  for (const auto& c : cases) rs.push_back(c.result);
  std::printf("%s", fh::format_claim_table(rs).c_str());
  return cases;
}

TEST(nonseparable_map, ExactSchedulesMatchNaiveFusionDiffers) {
  fh::NonseparableMapConfig cfg;
  cfg.seed = fh::case_seed(cfg.seed);
  std::printf("seed %llu (set FH_SEED to change)\n", (unsigned long long)cfg.seed);
  const auto cases = run_map(cfg);
  const size_t n_rules = std::size(fh::kNsRules), n_shapes = cfg.shapes.size();
  ASSERT_EQ(cases.size(), n_shapes * (4 * n_rules + 1));
  std::set<std::string> naive_rules;
  for (const auto& c : cases) {
    const auto& r = c.result;
    EXPECT_FALSE(r.not_run) << r.case_name;
    EXPECT_TRUE(r.pass) << r.case_name << ": " << r.first_diff << " " << r.note;
    if (is(c, kLinear) || is(c, kFused)) {
      EXPECT_EQ(r.differing, 0) << r.case_name << ": " << r.first_diff;
    }
    if (is(c, kNaive)) {
      EXPECT_GT(r.differing, 0) << r.case_name;
      naive_rules.insert(rule_of(c));
      ASSERT_EQ(c.naive_error.size(), 3u) << r.case_name << ": the error size is not recorded";
      EXPECT_GT(c.naive_error[0], 0.0) << r.case_name;
      EXPECT_GT(c.naive_error[2], 0.0) << r.case_name;
    }
  }
  EXPECT_EQ(naive_rules.size(), n_rules) << "every non-separable rule must break under naive tiling";
}

// A planted defect of the exact fused schedule: each rule it applies to must fail on some shape
// (and every case other than its exact fused ones must still pass); the rules it does not apply
// to must still pass.
void expect_caught(const std::function<void(fh::NsPlants&)>& plant, const std::function<bool(fh::NsRule)>& applies,
                   const char* what) {
  fh::NonseparableMapConfig cfg;
  cfg.seed = fh::case_seed(cfg.seed);
  plant(cfg.plants);
  ASSERT_TRUE(cfg.plants.any());
  const auto cases = run_map(cfg);
  for (fh::NsRule rule : fh::kNsRules) {
    int failed = 0;
    for (const auto& c : cases) {
      if (rule_of(c) != fh::ns_rule_name(rule) || !is(c, kFused)) continue;
      if (!c.result.pass) ++failed;
    }
    if (applies(rule))
      EXPECT_GT(failed, 0) << what << ": not caught for " << fh::ns_rule_name(rule);
    else
      EXPECT_EQ(failed, 0) << what << ": " << fh::ns_rule_name(rule) << " does not depend on it, yet failed";
  }
  for (const auto& c : cases)
    if (!is(c, kFused)) {
      EXPECT_TRUE(c.result.pass) << what << " leaked into " << c.result.case_name;
    }
}

TEST(nonseparable_map, PlantedCrossTileSumInAnotherOrderIsCaught) {
  // SM3-I's maxima are order-free: the reversed order must leave it exact.
  expect_caught([](fh::NsPlants& p) { p.reversed_tile_sum = true; }, fh::ns_rule_sums, "reversed tile sum");
}

TEST(nonseparable_map, PlantedStaleStatisticIsCaught) {
  expect_caught([](fh::NsPlants& p) { p.stale_statistic = true; }, fh::ns_rule_has_current_statistic,
                "stale statistic");
}

TEST(nonseparable_map, PlantedAdamMiniBlockOffByOneRowIsCaught) {
  expect_caught([](fh::NsPlants& p) { p.block_shifted_one_row = true; },
                [](fh::NsRule r) { return r == fh::NsRule::adam_mini; }, "Adam-mini block off by one row");
}

TEST(nonseparable_map, PlantedTwinAlignmentIsCaughtByEveryMaterializedAndFusedPath) {
  // A wrong alignment width in the twin's instruction model changes G: linear-fusion-only and the
  // exact fused schedule must then differ from the two-phase reference for every rule.
  fh::NonseparableMapConfig cfg;
  cfg.seed = fh::case_seed(cfg.seed);
  cfg.shapes.resize(1);
  cfg.twin_defects.align_bits = 20;
  const auto cases = run_map(cfg);
  std::set<std::string> caught_linear, caught_fused;
  for (const auto& c : cases) {
    if (c.result.pass) continue;
    if (is(c, kLinear)) caught_linear.insert(rule_of(c));
    if (is(c, kFused)) caught_fused.insert(rule_of(c));
  }
  EXPECT_EQ(caught_linear.size(), std::size(fh::kNsRules));
  EXPECT_EQ(caught_fused.size(), std::size(fh::kNsRules));
}

TEST(nonseparable_map, PlantedLowPrecisionStatisticFailsTheMpfrBound) {
  fh::NonseparableMapConfig cfg;
  cfg.seed = fh::case_seed(cfg.seed);
  cfg.shapes.resize(1);
  cfg.rules = {fh::NsRule::lamb};
  cfg.plant_statistic_in_bf16 = true;
  const auto cases = run_map(cfg);
  int mpfr_cases = 0;
  for (const auto& c : cases)
    if (is(c, kMpfr)) {
      ++mpfr_cases;
      EXPECT_FALSE(c.result.pass) << "a bf16 statistic passed the fp32 bound: " << c.result.metric;
    }
  EXPECT_EQ(mpfr_cases, 1);
}

TEST(nonseparable_map, NaiveFusionWithOneTileMatchesTheOneTileReference) {
  // The falsifier's difference comes from the tiling: with one tile covering the tensor, naive
  // fusion is the exact step over a one-tile grid, bit for bit, for every rule.
  const fh::TwinShapeCase shape{48, 80, 24, 48, 80};
  const fh::LayerInputs inp = fh::make_shape_inputs(fh::case_seed(7), shape, 2);
  const fh::TwinSchedule sched = fh::schedule_for(shape, fh::TileVisitOrder::row_major, 0, {});
  const fh::NsGrid one = fh::NsGrid::whole(shape.out, shape.in, shape.out, shape.in);
  const fh::NsHyper h;
  for (fh::NsRule rule : fh::kNsRules) {
    fh::NsParam naive = fh::NsParam::make(rule, shape.out, shape.in, inp.w0, h), ref = naive;
    for (int k = 0; k < 2; ++k) {
      const auto& s = inp.steps[size_t(k)];
      fh::ns_naive_fused_step(naive, h, s.X.data(), s.dY.data(), shape.T, k + 1, sched);
      fh::ns_two_phase_step(ref, h, s.X.data(), s.dY.data(), shape.T, k + 1, sched.order, one);
    }
    auto same_bits = [&](const std::vector<float>& a, const std::vector<float>& b, const char* what) {
      ASSERT_EQ(a.size(), b.size());
      if (a.empty()) return;
      EXPECT_EQ(fh::compare_bitwise(a, b, 1, int64_t(a.size())).n_differ, 0) << fh::ns_rule_name(rule) << " " << what;
    };
    same_bits(naive.w, ref.w, "W");
    same_bits(naive.m, ref.m, "m");
    same_bits(naive.v, ref.v, "v");
    same_bits(naive.row_stat, ref.row_stat, "row statistic");
    same_bits(naive.col_stat, ref.col_stat, "column statistic");
  }
}

TEST(nonseparable_map, AStepOnARegionEqualsTheStepOnThatRegionAlone) {
  // Naive fusion runs each rule on a tile's region inside the tensor: that must be the same
  // arithmetic as the rule on a tensor holding only that region (offsets, strides, state indices).
  const int64_t rows = 48, cols = 80, r0 = 16, r1 = 48, c0 = 32, c1 = 80, sr = r1 - r0, sc = c1 - c0;
  std::vector<float> w0(size_t(rows * cols)), G(w0.size());
  for (size_t i = 0; i < w0.size(); ++i) {
    w0[i] = 0.01f * float(int(i * 7 % 23) - 11);
    G[i] = 0.125f * float(int(i * 13 % 17) - 8) + 0.03125f;
  }
  std::vector<float> w_sub(size_t(sr * sc)), G_sub(w_sub.size());
  for (int64_t r = 0; r < sr; ++r)
    for (int64_t c = 0; c < sc; ++c) {
      w_sub[size_t(r * sc + c)] = w0[size_t((r0 + r) * cols + c0 + c)];
      G_sub[size_t(r * sc + c)] = G[size_t((r0 + r) * cols + c0 + c)];
    }
  const fh::NsHyper h;
  const fh::NsGrid region{r0, r1, c0, c1, 16, 16};
  const fh::NsGrid alone = fh::NsGrid::whole(sr, sc, 16, 16);
  for (fh::NsRule rule : fh::kNsRules) {
    fh::NsParam full = fh::NsParam::make(rule, rows, cols, w0, h);
    fh::NsParam sub = fh::NsParam::make(rule, sr, sc, w_sub, h);
    for (int64_t k = 1; k <= 2; ++k) {
      fh::ns_step(full, h, k, region, fh::ns_materialized_source(G, rows, cols, region));
      fh::ns_step(sub, h, k, alone, fh::ns_materialized_source(G_sub, sr, sc, alone));
    }
    int64_t differ = 0;
    for (int64_t r = 0; r < sr; ++r)
      for (int64_t c = 0; c < sc; ++c) {
        const size_t i = size_t((r0 + r) * cols + c0 + c), j = size_t(r * sc + c);
        differ += fh::compare_bitwise_f32(&full.w[i], &sub.w[j], 1, 1).n_differ;
        if (!full.m.empty()) differ += fh::compare_bitwise_f32(&full.m[i], &sub.m[j], 1, 1).n_differ;
      }
    EXPECT_EQ(differ, 0) << fh::ns_rule_name(rule);
    // Outside the region nothing moves.
    EXPECT_EQ(full.w[0], w0[0]) << fh::ns_rule_name(rule);
  }
}

TEST(nonseparable_map, NewtonSchulzOrthogonalises) {
  // Jordan's quintic drives the singular values into roughly [0.7, 1.2]: X X^T stays near I.
  const int64_t rows = 8, cols = 24;
  std::vector<float> B(size_t(rows * cols));
  for (size_t i = 0; i < B.size(); ++i) B[i] = float((i * 37 % 11)) - 5.0f + 0.25f * float(i % 3);
  const std::vector<float> O = fh::newton_schulz5(B.data(), cols, rows, cols, 5, 4, 8);
  for (int64_t i = 0; i < rows; ++i) {
    double d = 0;
    for (int64_t k = 0; k < cols; ++k) d += double(O[size_t(i * cols + k)]) * O[size_t(i * cols + k)];
    EXPECT_GT(d, 0.4) << "row " << i;
    EXPECT_LT(d, 1.5) << "row " << i;
  }
  // The tall case is the transpose of the wide one.
  std::vector<float> Bt(B.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t k = 0; k < cols; ++k) Bt[size_t(k * rows + i)] = B[size_t(i * cols + k)];
  const std::vector<float> Ot = fh::newton_schulz5(Bt.data(), rows, cols, rows, 5, 4, 8);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t k = 0; k < cols; ++k) EXPECT_EQ(Ot[size_t(k * rows + i)], O[size_t(i * cols + k)]);
}

TEST(nonseparable_map, MapFiguresAtTheLlamaMlpShape) {
  // One extra wgrad GEMM at 14336 x 4096: 2 T P FLOPs.
  const auto& lars = fh::ns_map_row(fh::NsRule::lars);
  EXPECT_DOUBLE_EQ(fh::ns_extra_gemm_flops(lars, 14336, 4096, 512), 2.0 * 512 * 14336 * 4096);
  EXPECT_DOUBLE_EQ(fh::ns_extra_gemm_flops(fh::ns_map_row(fh::NsRule::adafactor), 14336, 4096, 8192),
                   2.0 * 2.0 * 8192 * 14336 * 4096);
  EXPECT_DOUBLE_EQ(fh::ns_extra_gemm_flops(fh::ns_map_row(fh::NsRule::sm3_ii), 14336, 4096, 8192), 0.0);
  EXPECT_DOUBLE_EQ(fh::ns_newton_schulz_flops(14336, 4096, 5), 5.0 * (4.0 * 4096.0 * 4096 * 14336 + 2.0 * 4096.0 * 4096 * 4096));
  for (fh::NsRule r : fh::kNsRules) EXPECT_NO_THROW(fh::ns_map_row(r)) << fh::ns_rule_name(r);
}

TEST(nonseparable_map, PlantedMpfrStepMismatchIsCaught) {
  // The reference's lr 0.1% off: every rule's MPFR step case must fail, and nothing else.
  fh::NonseparableMapConfig cfg;
  cfg.seed = fh::case_seed(cfg.seed);
  cfg.shapes.resize(1);
  cfg.plant_mpfr_lr_off = true;
  std::set<std::string> failed;
  for (const auto& c : run_map(cfg)) {
    const bool mpfr = c.result.case_name.find("MPFR step") != std::string::npos;
    if (!mpfr) EXPECT_TRUE(c.result.pass) << c.result.case_name;
    if (mpfr && !c.result.pass) failed.insert(rule_of(c));
  }
  EXPECT_EQ(failed.size(), std::size(fh::kNsRules)) << "the MPFR step check missed a 0.1% error in some rule's step";
}

TEST(nonseparable_map, ClaimEntryRecordsTheMapInTheReport) {
  fh::Report report(fh::Meta::unknown());
  // Declared as forge-verify declares it: from the registry row (the report refuses a dataset
  // the row does not declare).
  for (const fh::ClaimInfo& c : fh::claim_registry())
    if (c.id == "nonseparable_falsifier") report.declare_claim(c.id, c.datasets);
  fh::VerifyConfig cfg;
  fh::claim_nonseparable_falsifier(cfg, report, fh::Progress{true}, fh::ClaimVariant{fh::ClaimBackend::twin, "nonseparable_falsifier"});
  // The map's figures ride on the GPU variant's map cases (ns_map_attrs).
  bool flops = false;
  for (const auto& [k, v] : fh::ns_map_attrs(fh::NsRule::lars, fh::NsHyper{}))
    flops |= k == "extra_gemm_flops_14336x4096_T512" && v == fh::num(2.0 * 512 * 14336 * 4096);
  EXPECT_TRUE(flops) << "the map's extra FLOPs are not in its attributes";
  const fh::CaseRecord* naive = report.find_case(
      "nonseparable_falsifier", "48x80 T=24 tile 16x32 normal | muon | naive tile fusion (tile-local statistics) MUST differ");
  ASSERT_NE(naive, nullptr);
  ASSERT_EQ(naive->datasets().size(), 1u);
  EXPECT_EQ(naive->datasets()[0].name, fh::kNaiveErrorDataset);
}

TEST(nonseparable_map, RefusesBadInput) {
  fh::NsHyper h;
  EXPECT_THROW(fh::NsParam::make(fh::NsRule::lamb, 2, 2, std::vector<float>(3), h), std::invalid_argument);
  EXPECT_THROW(fh::NsParam::make(fh::NsRule::adam_mini, 20, 4, std::vector<float>(80), h), std::invalid_argument);
  h.decay_rate = 0.5;
  EXPECT_THROW(h.validate(), std::invalid_argument);
  fh::NsHyper ok;
  fh::NsParam p = fh::NsParam::make(fh::NsRule::lars, 4, 4, std::vector<float>(16, 1.0f), ok);
  const std::vector<float> G(16, 1.0f);
  const fh::NsGrid grid = fh::NsGrid::whole(4, 4, 2, 2);
  EXPECT_THROW(fh::ns_step(p, ok, 0, grid, fh::ns_materialized_source(G, 4, 4, grid)), std::invalid_argument);
  const fh::NsGrid too_big{0, 5, 0, 4, 2, 2};
  EXPECT_THROW(fh::ns_step(p, ok, 1, too_big, fh::ns_materialized_source(G, 4, 4, grid)), std::invalid_argument);
  // A source whose tiles are not the grid's is refused, not silently mis-indexed.
  const fh::NsGrid other = fh::NsGrid::whole(4, 4, 3, 3);
  EXPECT_THROW(fh::ns_step(p, ok, 1, grid, fh::ns_materialized_source(G, 4, 4, other)), std::invalid_argument);
  fh::NonseparableMapConfig one_step;
  one_step.steps = 1;
  EXPECT_THROW(fh::run_nonseparable_map_cases(one_step), std::invalid_argument);
  fh::NonseparableMapConfig one_tile;
  one_tile.shapes = {{64, 64, 16, 64, 64}};
  EXPECT_THROW(fh::run_nonseparable_map_cases(one_tile), std::invalid_argument);
}

}  // namespace
