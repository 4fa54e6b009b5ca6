// The non-separable map on the GPU (suites/claims/nonseparable_gpu_cases.h): every rule's exact
// schedule on the GPU, fused (G recomputed by the mainloop for each pass) and two-phase (G
// materialized), bit for bit against the twin's exact schedule; the measurement path on a small
// shape (the fused path holds no gradient). Planted on the GPU's fused path: the cross-tile
// partials added in descending tile index (caught for every summed statistic, not for SM3's
// order-free maxima) and Adam-mini's blocks one row lower.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "suites/claims/nonseparable_gpu_cases.h"
#include "suites/gpu/gpu_suite_util.h"

namespace {

using namespace fh;

fh::NonseparableGpuConfig bitwise_only() {
  fh::NonseparableGpuConfig cfg;
  cfg.seed = case_seed(cfg.seed);
  cfg.measure_tokens.clear();
  return cfg;
}

std::string rule_in(const std::string& case_name) {
  for (NsRule r : kNsRules)
    if (case_name.find(std::string("| ") + ns_rule_name(r) + " |") != std::string::npos) return ns_rule_name(r);
  return {};
}

TEST(nonseparable_falsifier_gpu, EveryRuleTwinEqualsGpuFusedAndTwoPhase) {
  FH_REQUIRE_GPU();
  const auto cases = run_nonseparable_gpu_cases(bitwise_only());
  ASSERT_EQ(cases.size(), 2 * std::size(kNsRules));
  for (const auto& c : cases) {
    EXPECT_TRUE(c.result.pass && !c.result.not_run) << c.result.case_name << ": " << c.result.first_diff << " "
                                                    << c.result.note;
  }
}

// The rules that fail under a plant.
std::set<std::string> failing_rules(const fh::NonseparableGpuConfig& cfg) {
  std::set<std::string> failed;
  for (const auto& c : run_nonseparable_gpu_cases(cfg))
    if (!c.result.pass) failed.insert(rule_in(c.result.case_name));
  return failed;
}

TEST(nonseparable_falsifier_gpu, PlantedReversedTileSumIsCaught) {
  FH_REQUIRE_GPU();
  auto cfg = bitwise_only();
  cfg.plants.reversed_tile_sum = true;
  const std::set<std::string> failed = failing_rules(cfg);
  // Every rule whose update reads a summed cross-tile statistic directly must see the order.
  for (const char* r : {"lamb", "adam_mini", "adafactor", "lars"}) EXPECT_TRUE(failed.count(r)) << r;
  // SM3's maxima are order-free: the plant cannot change them, and must not be reported. (Muon's
  // only summed statistic is its Frobenius norm over a few tiles, taken through a square root
  // and a division: on the H100 run of the default seed its bits did not move, so it is not
  // required either way.)
  EXPECT_FALSE(failed.count("sm3_i"));
  EXPECT_FALSE(failed.count("sm3_ii"));
}

TEST(nonseparable_falsifier_gpu, PlantedAdamMiniBlockShiftIsCaught) {
  FH_REQUIRE_GPU();
  auto cfg = bitwise_only();
  cfg.plants.block_shifted_one_row = true;
  EXPECT_EQ(failing_rules(cfg), std::set<std::string>{"adam_mini"});
}

TEST(nonseparable_falsifier_gpu, MeasurementHoldsNoGradientOnTheFusedPath) {
  FH_REQUIRE_GPU();
  fh::NonseparableGpuConfig cfg;
  cfg.seed = case_seed(cfg.seed);
  cfg.shapes.clear();
  cfg.measure_out = 512;
  cfg.measure_in = 384;
  cfg.measure_tokens = {96};
  cfg.timed_steps = 2;
  const auto cases = run_nonseparable_gpu_cases(cfg);
  ASSERT_EQ(cases.size(), std::size(kNsRules));
  for (const auto& c : cases) {
    EXPECT_TRUE(c.result.pass) << c.result.case_name << ": " << c.result.first_diff << " " << c.result.note;
    std::string fused_g, two_g;
    for (const auto& [k, v] : c.attrs) {
      if (k == "fused_gradient_bytes_T96") fused_g = v;
      if (k == "two_phase_gradient_bytes_T96") two_g = v;
    }
    EXPECT_EQ(fused_g, "0") << c.result.case_name;
    EXPECT_EQ(two_g, std::to_string(512 * 384 * 4)) << c.result.case_name;
  }
}

TEST(nonseparable_falsifier_gpu, RefusesAProblemOfAnotherShape) {
  FH_REQUIRE_GPU();
  NsHyper h;
  gpu::DeviceBuffer<float> w(64 * 64), m(64 * 64), scratch(size_t(gpu::ns_gpu_workspace_floats(NsRule::muon, 64, 64)));
  gpu::DeviceBuffer<bf16> x(16 * 64), dy(16 * 32);
  gpu::NsDeviceParam p;
  p.rule = NsRule::muon;
  p.rows = p.cols = 64;
  p.w = w.data();
  p.m = m.data();
  const gpu::NsGpuSource src{gpu::WgradProblem{x.data(), dy.data(), 16, 32, 64}, nullptr};
  EXPECT_THROW(gpu::ns_gpu_step(p, h, 1, src, scratch.data()), std::invalid_argument);
  p.m = nullptr;
  EXPECT_THROW(gpu::ns_gpu_step(p, h, 1, gpu::NsGpuSource{gpu::WgradProblem{x.data(), dy.data(), 16, 64, 64}, nullptr},
                                scratch.data()),
               std::invalid_argument);
}

}  // namespace
