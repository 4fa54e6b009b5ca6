// Re-checks the tensor-core instruction model (kernels/twin/mma_model.h) against real H200
// outputs recorded by suites/gpu/test_gpu_mma_model.cu and committed as suites/golden/mma_h200.bin
// (mma.sync, FH_GOLDEN_OUT) and suites/golden/wgmma_h200.bin (wgmma m64n128k16, the fused 128 x 128
// tile's instruction, FH_WGMMA_GOLDEN_OUT): inputs regenerate from the stored seeds
// (kernels/gpu/mma_probe_cases.h). Skips while the file does not exist; once it does, any change
// to the model's parameters or code that alters a recorded bit fails here. The test also shows
// that the golden set tells the Hopper model apart from its neighbours (one parameter changed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "kernels/gpu/mma_probe_cases.h"
#include "kernels/twin/mma_model.h"

namespace fh::gpu {
namespace {

// One instruction's golden file: its name under suites/golden, the variable that overrides the
// path, its magic, and the variable the GPU suite writes it to.
struct GoldenFile {
  const char* instruction;
  const char* file;
  const char* path_env;
  const char (*magic)[8];
  const char* record_env;
};
const GoldenFile kGoldenFiles[] = {
    {"mma.sync", "mma_h200.bin", "FH_GOLDEN_MMA", &kGoldenMagic, "FH_GOLDEN_OUT"},
    {"wgmma", "wgmma_h200.bin", "FH_GOLDEN_WGMMA", &kWgmmaGoldenMagic, "FH_WGMMA_GOLDEN_OUT"},
};

std::filesystem::path golden_path(const GoldenFile& gf) {
  if (const char* p = std::getenv(gf.path_env)) return p;
  return std::filesystem::path(__FILE__).parent_path().parent_path() / "golden" / gf.file;
}

// Outputs of the golden set that `params` gets wrong.
int64_t golden_mismatches(const std::vector<GoldenRecord>& golden, const MmaModelParams& params,
                          int64_t* compared, std::string* first) {
  int64_t mis = 0;
  for (const GoldenRecord& g : golden) {
    const ProbeCase pc = make_probe_case(ProbeCategory(g.category), g.seed);
    float d[128];
    std::copy(pc.c.begin(), pc.c.end(), d);
    for (int s = 0; s < pc.chain; ++s) mma_m16n8k16_model(&pc.a[size_t(s) * 256], &pc.b[size_t(s) * 128], d, d, params);
    for (int e = 0; e < 128; ++e) {
      if (compared) ++*compared;
      if (f32_bits(d[e]) != g.d[e]) {
        if (mis == 0 && first) {
          char buf[200];
          std::snprintf(buf, sizeof buf, "%s seed %llu D[%d][%d]: model 0x%08x, H200 0x%08x",
                        probe_category_name(ProbeCategory(g.category)), (unsigned long long)g.seed, e / 8,
                        e % 8, f32_bits(d[e]), g.d[e]);
          *first = buf;
        }
        ++mis;
      }
    }
  }
  return mis;
}

class MmaGolden : public ::testing::TestWithParam<GoldenFile> {
 protected:
  void SetUp() override {
    const GoldenFile& gf = GetParam();
    const auto p = golden_path(gf);
    if (!std::filesystem::exists(p))
      GTEST_SKIP() << "no " << gf.instruction << " golden file yet at " << p.string() << " (record it on the GPU runner: "
                   << gf.record_env << "=<path> test_gpu_mma_model)";
    std::string err;
    ASSERT_TRUE(read_golden_file(p.string(), *gf.magic, golden_, err)) << p.string() << ": " << err;
    ASSERT_FALSE(golden_.empty()) << p.string() << " holds no records";
  }
  std::vector<GoldenRecord> golden_;
};

TEST_P(MmaGolden, InputsRegenerateFromSeeds) {
  int64_t changed = 0;
  for (const GoldenRecord& g : golden_) {
    ASSERT_LT(g.category, uint32_t(kProbeCategories));
    const ProbeCase pc = make_probe_case(ProbeCategory(g.category), g.seed);
    if (probe_case_hash(pc) != g.input_hash || uint32_t(pc.chain) != g.chain) ++changed;
  }
  EXPECT_EQ(changed, 0) << "the probe generators (kernels/gpu/mma_probe_cases.h) changed since the golden "
                           "file was recorded: re-record it on the runner";
}

TEST_P(MmaGolden, HopperModelReproducesH200Bits) {
  int64_t compared = 0;
  std::string first;
  const int64_t mis = golden_mismatches(golden_, kHopperMma, &compared, &first);
  std::printf("[mma golden] %s: %zu records, %lld outputs compared, %lld mismatches\n", GetParam().instruction,
              golden_.size(), (long long)compared, (long long)mis);
  EXPECT_EQ(mis, 0) << "first: " << first;
}

// The golden set must be able to fail: each neighbouring model gets some recorded bit wrong.
TEST_P(MmaGolden, GoldenSetRejectsNeighbouringModels) {
  std::vector<std::pair<const char*, MmaModelParams>> neighbours;
  MmaModelParams p = kHopperMma; p.align_bits = 24; neighbours.push_back({"align_bits 24", p});
  p = kHopperMma; p.align_bits = 26; neighbours.push_back({"align_bits 26", p});
  p = kHopperMma; p.clamp_exp = -126; neighbours.push_back({"clamp_exp -126", p});
  p = kHopperMma; p.clamp_exp = -140; neighbours.push_back({"clamp_exp -140", p});
  p = kHopperMma; p.out_round = MmaModelParams::OutRound::nearest_even; neighbours.push_back({"round to nearest", p});
  for (const auto& [name, params] : neighbours) {
    const int64_t mis = golden_mismatches(golden_, params, nullptr, nullptr);
    std::printf("[mma golden] %s, neighbour model (%s): %lld mismatches\n", GetParam().instruction, name, (long long)mis);
    EXPECT_GT(mis, 0) << "the golden set cannot tell the Hopper model from one with " << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Instructions, MmaGolden, ::testing::ValuesIn(kGoldenFiles),
                         [](const ::testing::TestParamInfo<GoldenFile>& i) {
                           return std::string(i.param.instruction[0] == 'w' ? "wgmma" : "mma_sync");
                         });

}  // namespace
}  // namespace fh::gpu
