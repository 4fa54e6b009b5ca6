// Re-checks the tensor-core instruction model (kernels/twin/mma_model.h) against real H200
// outputs recorded by suites/gpu/test_gpu_mma_model.cu (FH_GOLDEN_OUT) and committed as
// suites/golden/mma_h200.bin: inputs regenerate from the stored seeds
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

std::filesystem::path golden_path() {
  if (const char* p = std::getenv("FH_GOLDEN_MMA")) return p;
  return std::filesystem::path(__FILE__).parent_path().parent_path() / "golden" / "mma_h200.bin";
}

bool read_golden(const std::filesystem::path& p, std::vector<GoldenRecord>& out, std::string& err) {
  std::ifstream f(p, std::ios::binary);
  if (!f) { err = "cannot open"; return false; }
  char magic[8];
  uint32_t count = 0, reserved = 0;
  f.read(magic, 8);
  f.read(reinterpret_cast<char*>(&count), 4);
  f.read(reinterpret_cast<char*>(&reserved), 4);
  if (!f || std::memcmp(magic, kGoldenMagic, 8) != 0) { err = "bad magic (not an FHMMAGL1 file)"; return false; }
  out.resize(count);
  for (GoldenRecord& g : out) {
    f.read(reinterpret_cast<char*>(&g.category), 4);
    f.read(reinterpret_cast<char*>(&g.chain), 4);
    f.read(reinterpret_cast<char*>(&g.seed), 8);
    f.read(reinterpret_cast<char*>(&g.input_hash), 8);
    f.read(reinterpret_cast<char*>(g.d), 512);
  }
  if (!f) { err = "truncated (" + std::to_string(count) + " records announced)"; return false; }
  return true;
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

class MmaGolden : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto p = golden_path();
    if (!std::filesystem::exists(p))
      GTEST_SKIP() << "no golden file yet at " << p.string()
                   << " (record it on the GPU runner: FH_GOLDEN_OUT=<path> test_gpu_mma_model)";
    std::string err;
    ASSERT_TRUE(read_golden(p, golden_, err)) << p.string() << ": " << err;
    ASSERT_FALSE(golden_.empty()) << p.string() << " holds no records";
  }
  std::vector<GoldenRecord> golden_;
};

TEST_F(MmaGolden, InputsRegenerateFromSeeds) {
  int64_t changed = 0;
  for (const GoldenRecord& g : golden_) {
    ASSERT_LT(g.category, uint32_t(kProbeCategories));
    const ProbeCase pc = make_probe_case(ProbeCategory(g.category), g.seed);
    if (probe_case_hash(pc) != g.input_hash || uint32_t(pc.chain) != g.chain) ++changed;
  }
  EXPECT_EQ(changed, 0) << "the probe generators (kernels/gpu/mma_probe_cases.h) changed since the golden "
                           "file was recorded: re-record it on the runner";
}

TEST_F(MmaGolden, HopperModelReproducesH200Bits) {
  int64_t compared = 0;
  std::string first;
  const int64_t mis = golden_mismatches(golden_, kHopperMma, &compared, &first);
  std::printf("[mma golden] %zu records, %lld outputs compared, %lld mismatches\n", golden_.size(),
              (long long)compared, (long long)mis);
  EXPECT_EQ(mis, 0) << "first: " << first;
}

// The golden set must be able to fail: each neighbouring model gets some recorded bit wrong.
TEST_F(MmaGolden, GoldenSetRejectsNeighbouringModels) {
  std::vector<std::pair<const char*, MmaModelParams>> neighbours;
  MmaModelParams p = kHopperMma; p.align_bits = 24; neighbours.push_back({"align_bits 24", p});
  p = kHopperMma; p.align_bits = 26; neighbours.push_back({"align_bits 26", p});
  p = kHopperMma; p.clamp_exp = -126; neighbours.push_back({"clamp_exp -126", p});
  p = kHopperMma; p.clamp_exp = -140; neighbours.push_back({"clamp_exp -140", p});
  p = kHopperMma; p.out_round = MmaModelParams::OutRound::nearest_even; neighbours.push_back({"round to nearest", p});
  for (const auto& [name, params] : neighbours) {
    const int64_t mis = golden_mismatches(golden_, params, nullptr, nullptr);
    std::printf("[mma golden] neighbour model (%s): %lld mismatches\n", name, (long long)mis);
    EXPECT_GT(mis, 0) << "the golden set cannot tell the Hopper model from one with " << name;
  }
}

}  // namespace
}  // namespace fh::gpu
