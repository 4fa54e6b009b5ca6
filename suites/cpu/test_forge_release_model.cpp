// The host model of the released FORGE package's element-wise AdamW step
// (kernels/rules/adamw_forge_release.h) against its golden outputs recorded on the H200
// (suites/golden/forge_elementwise_h200.bin, scripts/forge_golden.py: the release's
// optimizer_only_adamw on crafted fp32 G, W, m, v, plus the MUFU.RCP / MUFU.SQRT input-output
// pairs measured in the same run).
//   - m and v: bit for bit, with and without the measured tables (no approximate instruction).
//   - W: bit for bit with the tables; with round-to-nearest stand-ins the differing count is
//     printed, and must be non-zero (else the tables would prove nothing).
//   - planted: the measured reciprocals moved by one ulp, and torch's m formula, must each be caught.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/rules/adamw_forge_release.h"
#include "kernels/rules/adamw_torch_fused.h"

namespace fh {
namespace {

struct GoldenSet {
  ForgeReleaseAdamW::Hyper h;
  int64_t step = 0;
  std::vector<uint32_t> g, w0, m0, v0, w1, m1, v1;
};
struct Golden {
  std::vector<GoldenSet> sets;
  std::vector<uint32_t> rcp_in, rcp_out, sqrt_in, sqrt_out;
};

template <class T>
void read_exact(std::ifstream& f, T* dst, size_t n, const std::string& what) {
  f.read(reinterpret_cast<char*>(dst), std::streamsize(n * sizeof(T)));
  if (!f) throw std::runtime_error("forge golden: truncated at " + what);
}

Golden load_golden() {
  const auto path = std::filesystem::path(__FILE__).parent_path().parent_path() / "golden" / "forge_elementwise_h200.bin";
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("forge golden: cannot open " + path.string());
  char magic[8];
  read_exact(f, magic, 8, "magic");
  if (std::string(magic, 8) != "FHFGOLD2") throw std::runtime_error("forge golden: not an FHFGOLD2 file");
  uint32_t n_sets = 0;
  read_exact(f, &n_sets, 1, "set count");
  Golden gd;
  for (uint32_t k = 0; k < n_sets; ++k) {
    GoldenSet s;
    double hp[5];
    int64_t step_n[2];
    read_exact(f, hp, 5, "hyperparameters");
    read_exact(f, step_n, 2, "step and n");
    s.h = {hp[0], hp[1], hp[2], hp[3], hp[4]};
    s.step = step_n[0];
    for (auto* a : {&s.g, &s.w0, &s.m0, &s.v0, &s.w1, &s.m1, &s.v1}) {
      a->resize(size_t(step_n[1]));
      read_exact(f, a->data(), a->size(), "set " + std::to_string(k));
    }
    gd.sets.push_back(std::move(s));
  }
  for (auto [in, out] : {std::pair{&gd.rcp_in, &gd.rcp_out}, std::pair{&gd.sqrt_in, &gd.sqrt_out}}) {
    uint64_t n = 0;
    read_exact(f, &n, 1, "table size");
    in->resize(n);
    out->resize(n);
    read_exact(f, in->data(), n, "table inputs");
    read_exact(f, out->data(), n, "table outputs");
  }
  return gd;
}

struct Differing {
  int64_t w = 0, m = 0, v = 0, n = 0;
};

// The model over every golden element; `update` replaces the release model when planting.
template <class Update>
Differing run_model(const Golden& gd, Update update) {
  Differing d;
  for (const GoldenSet& s : gd.sets) {
    const ForgeReleaseAdamW::Scalars sc = ForgeReleaseAdamW::scalars(s.h, s.step);
    for (size_t i = 0; i < s.g.size(); ++i) {
      float w = u2f(s.w0[i]), m = u2f(s.m0[i]), v = u2f(s.v0[i]);
      update(sc, w, u2f(s.g[i]), m, v);
      d.w += f2u(w) != s.w1[i];
      d.m += f2u(m) != s.m1[i];
      d.v += f2u(v) != s.v1[i];
      ++d.n;
    }
  }
  return d;
}

const Golden& golden() {
  static const Golden g = load_golden();
  return g;
}

TEST(ForgeReleaseModel, GoldenBitForBitWithMeasuredTables) {
  const Golden& gd = golden();
  ASSERT_EQ(gd.sets.size(), 4u);
  ASSERT_GT(gd.rcp_in.size(), 0u);
  ASSERT_GT(gd.sqrt_in.size(), 0u);
  const RcpApproxHostModel rcp{gd.rcp_in.data(), gd.rcp_out.data(), gd.rcp_in.size()};
  const SqrtApproxHostModel sq{gd.sqrt_in.data(), gd.sqrt_out.data(), gd.sqrt_in.size()};
  const Differing d = run_model(gd, [&](const auto& sc, float& w, float g, float& m, float& v) {
    ForgeReleaseAdamW::update(sc, w, g, m, v, rcp, sq);
  });
  std::printf("[forge_release] %lld elements, tables %zu rcp + %zu sqrt pairs: W %lld, m %lld, v %lld differ\n",
              (long long)d.n, gd.rcp_in.size(), gd.sqrt_in.size(), (long long)d.w, (long long)d.m, (long long)d.v);
  EXPECT_EQ(d.w, 0);
  EXPECT_EQ(d.m, 0);
  EXPECT_EQ(d.v, 0);
}

TEST(ForgeReleaseModel, RoundToNearestStandInsExplainMAndVButNotW) {
  const Differing d = run_model(golden(), [](const auto& sc, float& w, float g, float& m, float& v) {
    ForgeReleaseAdamW::update(sc, w, g, m, v);
  });
  std::printf("[forge_release] round-to-nearest MUFU stand-ins: W %lld of %lld differ, m %lld, v %lld\n",
              (long long)d.w, (long long)d.n, (long long)d.m, (long long)d.v);
  EXPECT_EQ(d.m, 0);
  EXPECT_EQ(d.v, 0);
  EXPECT_GT(d.w, 0) << "MUFU.RCP/SQRT agreed with round-to-nearest everywhere: the tables test nothing";
}

TEST(ForgeReleaseModel, PlantedReciprocalTableIsCaught) {
  const Golden& gd = golden();
  std::vector<uint32_t> out = gd.rcp_out;
  for (uint32_t& o : out) o += 1;  // every measured reciprocal one ulp off
  const RcpApproxHostModel rcp{gd.rcp_in.data(), out.data(), gd.rcp_in.size()};
  const SqrtApproxHostModel sq{gd.sqrt_in.data(), gd.sqrt_out.data(), gd.sqrt_in.size()};
  const Differing d = run_model(gd, [&](const auto& sc, float& w, float g, float& m, float& v) {
    ForgeReleaseAdamW::update(sc, w, g, m, v, rcp, sq);
  });
  std::printf("[forge_release] reciprocals one ulp off: W %lld of %lld differ\n", (long long)d.w, (long long)d.n);
  EXPECT_GT(d.w, 0);
}

TEST(ForgeReleaseModel, PlantedTorchMomentFormulaIsCaught) {
  // torch's m = fma(b1, m, fma(-b1, g, g)) in place of the release's fma(1 - b1, g, b1 * m).
  const Differing d = run_model(golden(), [](const auto& sc, float& w, float g, float& m, float& v) {
    const float torch_m = ffma(sc.beta1, m, ffma(fneg(sc.beta1), g, g));
    ForgeReleaseAdamW::update(sc, w, g, m, v);
    m = torch_m;
  });
  std::printf("[forge_release] torch's m formula: m %lld of %lld differ\n", (long long)d.m, (long long)d.n);
  EXPECT_GT(d.m, 0);
}

TEST(ForgeReleaseModel, RejectsAStepBelowOne) {
  EXPECT_THROW(ForgeReleaseAdamW::scalars({}, 0), std::invalid_argument);
}

}  // namespace
}  // namespace fh
