// The instruction model proved on the real instruction (DESIGN contract 2): >= 10^7 outputs of
// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 from random and adversarial seeded inputs
// (kernels/gpu/mma_probe_cases.h) against fh::mma_m16n8k16_model, bit for bit; also counts how
// many a plain fp32 fmaf loop would have missed. With FH_GOLDEN_OUT set, writes the golden file
// (seeds + hardware outputs) that suites/cpu/test_mma_golden.cpp re-checks in every CI run.
#include <cstdlib>
#include <fstream>

#include "kernels/gpu/gpu_api.h"
#include "kernels/gpu/mma_probe_run.h"
#include "kernels/twin/mma_model.h"
#include "suites/gpu/gpu_suite_util.h"

namespace fh::gpu {
namespace {

constexpr int64_t kInstancesPerCategory = 6656;  // 12 categories x 6656 x 128 = 1.02e7 outputs
constexpr int kGoldenPerCategory = 16;

struct CategoryResult {
  int64_t outputs = 0, mismatches = 0, fma_misses = 0;
  std::string first;
};


// The fused kernel's 128 x 128 tile multiplies with wgmma.mma_async m64n128k16 (v6+): the same
// model, proved on that instruction with the kernel's own shared-memory layout and descriptors.
TEST(GpuMmaModel, WgmmaModelEqualsHardwareOnTenMillionOutputs) {
  FH_REQUIRE_GPU();
  constexpr int64_t kCasesPerCategory = 16 * 102;  // 12 categories x 102 instances x 8192 = 1.003e7 outputs
  int64_t total = 0, total_mis = 0, total_fma = 0;
  for (int ci = 0; ci < kProbeCategories; ++ci) {
    const ProbeCategory cat = ProbeCategory(ci);
    // Seeds past the mma.sync sweep's, so these are new inputs.
    const ProbeJudgement j = probe_and_judge_wgmma(
        cat, kCasesPerCategory, [&](int64_t i) { return probe_seed(cat, uint64_t(kInstancesPerCategory + i)); });
    std::printf("[wgmma model] %-24s chain %d: %lld outputs, %lld model mismatches, %lld fp32-fma-loop misses%s%s\n",
                probe_category_name(cat), j.chain, (long long)j.outputs, (long long)j.mismatches,
                (long long)j.fma_misses, j.first.empty() ? "" : "; first: ", j.first.c_str());
    EXPECT_EQ(j.mismatches, 0) << probe_category_name(cat) << ": " << j.first;
    total += j.outputs;
    total_mis += j.mismatches;
    total_fma += j.fma_misses;
  }
  std::printf("[wgmma model] SUMMARY: %lld outputs compared, %lld model mismatches, %lld (%.1f%%) a plain fp32 fmaf loop would have missed\n",
              (long long)total, (long long)total_mis, (long long)total_fma, 100.0 * double(total_fma) / double(total));
  EXPECT_GE(total, 10000000);
  // Planted: the same hardware outputs judged with a model that rounds to nearest instead of
  // toward zero must show mismatches, or the comparison could not fail.
  MmaModelParams wrong = kHopperMma;
  wrong.out_round = MmaModelParams::OutRound::nearest_even;
  const ProbeJudgement p = probe_and_judge_wgmma(
      ProbeCategory::random_normal, 16 * 8, [](int64_t i) { return probe_seed(ProbeCategory::random_normal, uint64_t(i)); }, wrong);
  std::printf("[wgmma model] planted nearest-even model: %lld of %lld outputs differ (must be > 0)\n",
              (long long)p.mismatches, (long long)p.outputs);
  EXPECT_GT(p.mismatches, 0);
}

TEST(GpuMmaModel, ModelEqualsHardwareOnTenMillionOutputs) {
  FH_REQUIRE_GPU();
  std::vector<GoldenRecord> golden;
  int64_t total = 0, total_mis = 0, total_fma = 0;
  for (int ci = 0; ci < kProbeCategories; ++ci) {
    const ProbeCategory cat = ProbeCategory(ci);
    const int chain = probe_chain_length(cat);
    const int64_t n = kInstancesPerCategory;
    const ProbeJudgement j = probe_and_judge(cat, n, [&](int64_t i) { return probe_seed(cat, uint64_t(i)); });
    const std::vector<ProbeCase>& cases = j.cases;
    const std::vector<float>& hw = j.hw;
    CategoryResult r;
    r.outputs = j.outputs;
    r.mismatches = j.mismatches;
    r.fma_misses = j.fma_misses;
    r.first = j.first;
    // More clamp-region records: a clamp off by a few exponents shows in few outputs.
    const int golden_n = cat == ProbeCategory::clamp_region ? 4 * kGoldenPerCategory : kGoldenPerCategory;
    for (int i = 0; i < golden_n; ++i) {
      GoldenRecord g;
      g.category = uint32_t(ci);
      g.chain = uint32_t(chain);
      g.seed = probe_seed(cat, uint64_t(i));
      g.input_hash = probe_case_hash(cases[size_t(i)]);
      for (int e = 0; e < 128; ++e) g.d[e] = f32_bits(hw[size_t(i * 128 + e)]);
      golden.push_back(g);
    }
    std::printf("[mma model] %-24s chain %d: %lld outputs, %lld model mismatches, %lld fp32-fma-loop misses%s%s\n",
                probe_category_name(cat), chain, (long long)r.outputs, (long long)r.mismatches,
                (long long)r.fma_misses, r.first.empty() ? "" : "; first: ", r.first.c_str());
    EXPECT_EQ(r.mismatches, 0) << probe_category_name(cat) << ": " << r.first;
    total += r.outputs;
    total_mis += r.mismatches;
    total_fma += r.fma_misses;
  }
  std::printf("[mma model] SUMMARY: %lld outputs compared, %lld model mismatches, %lld (%.1f%%) a plain fp32 fmaf loop would have missed\n",
              (long long)total, (long long)total_mis, (long long)total_fma, 100.0 * double(total_fma) / double(total));
  EXPECT_GE(total, 10000000);

  if (const char* path = std::getenv("FH_GOLDEN_OUT")) {
    std::ofstream f(path, std::ios::binary);
    ASSERT_TRUE(f) << "cannot write " << path;
    const uint32_t count = uint32_t(golden.size()), reserved = 0;
    f.write(kGoldenMagic, 8);
    f.write(reinterpret_cast<const char*>(&count), 4);
    f.write(reinterpret_cast<const char*>(&reserved), 4);
    for (const GoldenRecord& g : golden) {
      f.write(reinterpret_cast<const char*>(&g.category), 4);
      f.write(reinterpret_cast<const char*>(&g.chain), 4);
      f.write(reinterpret_cast<const char*>(&g.seed), 8);
      f.write(reinterpret_cast<const char*>(&g.input_hash), 8);
      f.write(reinterpret_cast<const char*>(g.d), 512);
    }
    ASSERT_TRUE(f.good()) << "write failed: " << path;
    std::printf("[mma model] golden set: %u records written to %s\n", count, path);
  }
}

}  // namespace
}  // namespace fh::gpu
