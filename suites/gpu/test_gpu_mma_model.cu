// The instruction model proved on the real instruction (DESIGN contract 2): >= 10^7 outputs of
// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 from random and adversarial seeded inputs
// (kernels/gpu/mma_probe_cases.h) against fh::mma_m16n8k16_model, bit for bit; also counts how
// many a plain fp32 fmaf loop would have missed. With FH_GOLDEN_OUT (mma.sync) and
// FH_WGMMA_GOLDEN_OUT (wgmma) set, writes the golden files (seeds + hardware outputs) that
// suites/cpu/test_mma_golden.cpp re-checks in every CI run.
#include <cstdlib>

#include "kernels/gpu/gpu_api.h"
#include "suites/claims/mma_probe_judge.h"
#include "kernels/twin/mma_model.h"
#include "suites/gpu/gpu_suite_util.h"

namespace fh::gpu {
namespace {

constexpr int64_t kInstancesPerCategory = 6656;  // 12 categories x 6656 x 128 = 1.02e7 outputs
constexpr int kGoldenPerCategory = 16;

// Writes `golden` to the file an environment variable names, if it names one.
void write_golden_if_asked(const char* env, const char (&magic)[8], const std::vector<GoldenRecord>& golden,
                           const char* tag) {
  const char* path = std::getenv(env);
  if (!path) return;
  std::string err;
  ASSERT_TRUE(write_golden_file(path, magic, golden, err)) << path << ": " << err;
  std::printf("[%s] golden set: %zu records written to %s\n", tag, golden.size(), path);
}

// More clamp-region records: a clamp off by a few exponents shows in few outputs.
int golden_records_for(ProbeCategory cat) {
  return cat == ProbeCategory::clamp_region ? 4 * kGoldenPerCategory : kGoldenPerCategory;
}

// Per-category lines and the sweep's totals, for both instructions.
struct ProbeTotals {
  const char* tag;
  int64_t outputs = 0, mismatches = 0, fma_misses = 0;
  void add(ProbeCategory cat, const ProbeJudgement& j) {
    std::printf("[%s] %-24s chain %d: %lld outputs, %lld model mismatches, %lld fp32-fma-loop misses%s%s\n", tag,
                probe_category_name(cat), j.chain, (long long)j.outputs, (long long)j.mismatches,
                (long long)j.fma_misses, j.first.empty() ? "" : "; first: ", j.first.c_str());
    EXPECT_EQ(j.mismatches, 0) << probe_category_name(cat) << ": " << j.first;
    outputs += j.outputs;
    mismatches += j.mismatches;
    fma_misses += j.fma_misses;
  }
  void summary() const {
    std::printf("[%s] SUMMARY: %lld outputs compared, %lld model mismatches, %lld (%.1f%%) a plain fp32 fmaf loop "
                "would have missed\n",
                tag, (long long)outputs, (long long)mismatches, (long long)fma_misses,
                100.0 * double(fma_misses) / double(outputs));
    EXPECT_GE(outputs, 10000000);
  }
};

// The fused kernel's 128 x 128 tile multiplies with wgmma.mma_async m64n128k16: the same
// model, proved on that instruction with the kernel's own shared-memory layout and descriptors.
TEST(gpu_mma_model, WgmmaModelEqualsHardwareOnTenMillionOutputs) {
  FH_REQUIRE_GPU();
  constexpr int64_t kCasesPerCategory = 16 * 102;  // 12 categories x 102 instances x 8192 = 1.003e7 outputs
  ProbeTotals totals{"wgmma model"};
  std::vector<GoldenRecord> golden;
  for (int ci = 0; ci < kProbeCategories; ++ci) {
    const ProbeCategory cat = ProbeCategory(ci);
    // Seeds past the mma.sync sweep's, so these are new inputs.
    auto seed_of = [&](int64_t i) { return probe_seed(cat, uint64_t(kInstancesPerCategory + i)); };
    const ProbeJudgement j = probe_and_judge_wgmma(cat, kCasesPerCategory, seed_of);
    // Golden records: the diagonal blocks (w, w) of the first instances, each exactly case 16 q + w.
    for (int r = 0; r < golden_records_for(cat); ++r) {
      const int64_t q = r / 4, w = r % 4, ci16 = 16 * q + w;
      GoldenRecord g;
      g.category = uint32_t(ci);
      g.chain = uint32_t(j.chain);
      g.seed = seed_of(ci16);
      g.input_hash = probe_case_hash(j.cases[size_t(ci16)]);
      for (int e = 0; e < 128; ++e) g.d[e] = f32_bits(j.hw[size_t(q * 8192 + (16 * w + e / 8) * 128 + 8 * w + e % 8)]);
      golden.push_back(g);
    }
    totals.add(cat, j);
  }
  totals.summary();
  write_golden_if_asked("FH_WGMMA_GOLDEN_OUT", kWgmmaGoldenMagic, golden, "wgmma model");
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

TEST(gpu_mma_model, ModelEqualsHardwareOnTenMillionOutputs) {
  FH_REQUIRE_GPU();
  std::vector<GoldenRecord> golden;
  ProbeTotals totals{"mma model"};
  for (int ci = 0; ci < kProbeCategories; ++ci) {
    const ProbeCategory cat = ProbeCategory(ci);
    const int chain = probe_chain_length(cat);
    const ProbeJudgement j = probe_and_judge(cat, kInstancesPerCategory, [&](int64_t i) { return probe_seed(cat, uint64_t(i)); });
    for (int i = 0; i < golden_records_for(cat); ++i) {
      GoldenRecord g;
      g.category = uint32_t(ci);
      g.chain = uint32_t(chain);
      g.seed = probe_seed(cat, uint64_t(i));
      g.input_hash = probe_case_hash(j.cases[size_t(i)]);
      for (int e = 0; e < 128; ++e) g.d[e] = f32_bits(j.hw[size_t(i * 128 + e)]);
      golden.push_back(g);
    }
    totals.add(cat, j);
  }
  totals.summary();
  write_golden_if_asked("FH_GOLDEN_OUT", kGoldenMagic, golden, "mma model");
}

}  // namespace
}  // namespace fh::gpu
