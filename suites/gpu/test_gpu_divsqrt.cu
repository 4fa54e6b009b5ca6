// The fast division and square root (kernels/common/ieee_shim.h: fsqrt_fast, fdiv_fast, used by
// SpeculativeDivSqrt in kernels/gpu/speculative_update.cuh) proved on the GPU:
//   sqrt: all 2^32 inputs; where `ok`, fast == __fsqrt_rn bit for bit, and `ok` holds on exactly
//     the positive finite inputs >= 2^-101 (nvcc's own fast range);
//   div: 2^34 random pairs (exponents around and past the range, and raw random bits) and 2^31
//     crafted pairs (every divisor mantissa against 256 dividend mantissas, exponents at the
//     range's edges); where `ok`, fast == __fdiv_rn;
//   planted: the fast paths without their last correction, and the division with its range
//     ignored, give mismatches (the comparisons can fail);
//   the speculative element update == the host rule (every rule, fp32 and bf16 state) on special
//     values through the rule kernel, and through the fused kernel on zero-gradient rows (the
//     quads that leave the fast range and are redone); the kernel mutant gpu_speculation_never_redone
//     (suites/mutation/kernel_catalog.json) shows that comparison can fail.
#include <cinttypes>

#include "kernels/common/ieee_shim.h"
#include "kernels/gpu/gpu_api.h"
#include "kernels/gpu/rule_family_built.h"
#include "kernels/twin/fused_twin.h"
#include "suites/gpu/gpu_suite_util.h"

namespace fh::gpu {
namespace {

struct Counts {
  unsigned long long ok = 0, mismatch = 0, range_wrong = 0;
};

__device__ void add_counts(Counts* c, unsigned long long ok, unsigned long long mis, unsigned long long wrong) {
  atomicAdd(&c->ok, ok);
  atomicAdd(&c->mismatch, mis);
  atomicAdd(&c->range_wrong, wrong);
}

template <bool kPlant>
__global__ void sqrt_sweep_kernel(Counts* out) {
  unsigned long long ok = 0, mis = 0, wrong = 0;
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t u = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < (uint64_t(1) << 32); u += stride) {
    const float x = __uint_as_float(uint32_t(u));
    bool k;
    const float f = fsqrt_fast<kPlant>(x, k);
    ok += k;
    mis += k && __float_as_uint(f) != __float_as_uint(__fsqrt_rn(x));
    wrong += k != (u >= 0x0d000000u && u < 0x7f800000u);
  }
  add_counts(out, ok, mis, wrong);
}

// Random operand: 1/4 raw bits, else a random sign and mantissa with the biased exponent in
// [50, 205] (the range is [67, 188)).
__device__ float random_operand(uint64_t r) {
  if ((r & 3) == 0) return __uint_as_float(uint32_t(r >> 32));
  const uint32_t e = 50 + uint32_t((r >> 2) % 156);
  return __uint_as_float((uint32_t(r >> 10) & 0x80000000u) | (e << 23) | (uint32_t(r >> 11) & 0x7fffffu));
}
// Crafted pair i: divisor mantissa i mod 2^23; one of 256 dividend mantissas (the extremes, their
// neighbours, the divisor's own and random ones); exponents from the range's edges and its middle.
__device__ void crafted_pair(uint64_t i, float& a, float& b) {
  constexpr uint32_t kEdges[] = {67, 68, 126, 127, 128, 186, 187};
  const uint32_t mb = uint32_t(i & 0x7fffffu), j = uint32_t(i >> 23);
  const uint64_t r = splitmix64_mix(i * 0x9e3779b97f4a7c15ull + 17);
  uint32_t ma;
  switch (j & 7) {
    case 0: ma = 0; break;
    case 1: ma = 0x7fffffu; break;
    case 2: ma = mb; break;
    case 3: ma = (mb + 1) & 0x7fffffu; break;
    case 4: ma = (mb - 1) & 0x7fffffu; break;
    default: ma = uint32_t(r) & 0x7fffffu;
  }
  const uint32_t ea = kEdges[(r >> 24) % 7], eb = kEdges[(r >> 32) % 7];
  a = __uint_as_float((uint32_t(r >> 40) & 0x80000000u) | (ea << 23) | ma);
  b = __uint_as_float((uint32_t(r >> 41) & 0x80000000u) | (eb << 23) | mb);
}

// mode 0: random pairs, 1: crafted pairs. ignore_range (planted): every pair counts as ok.
template <bool kPlant>
__global__ void div_sweep_kernel(Counts* out, int mode, uint64_t n, uint64_t stream, bool ignore_range) {
  unsigned long long ok = 0, mis = 0;
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    float a, b;
    if (mode == 0) {
      a = random_operand(stream_draw(stream, 2 * i));
      b = random_operand(stream_draw(stream, 2 * i + 1));
    } else {
      crafted_pair(i, a, b);
    }
    bool k;
    const float q = fdiv_fast<kPlant>(a, b, k);
    k = k || ignore_range;
    ok += k;
    mis += k && __float_as_uint(q) != __float_as_uint(__fdiv_rn(a, b));
  }
  add_counts(out, ok, mis, 0);
}

template <class Launch>
Counts run_counts(Launch launch) {
  DeviceBuffer<Counts> c(std::vector<Counts>(1));
  launch(c.data());
  cuda_check(cudaGetLastError(), "divsqrt sweep launch");
  cuda_check(cudaDeviceSynchronize(), "divsqrt sweep");
  return c.download()[0];
}

constexpr unsigned kGrid = 132 * 16, kBlock = 256;

TEST(GpuDivSqrt, FastSqrtEqualsIeeeOnEveryInput) {
  FH_REQUIRE_GPU();
  const Counts c = run_counts([](Counts* p) { sqrt_sweep_kernel<false><<<kGrid, kBlock>>>(p); });
  const Counts planted = run_counts([](Counts* p) { sqrt_sweep_kernel<true><<<kGrid, kBlock>>>(p); });
  std::printf("[divsqrt] sqrt: 2^32 inputs, %llu in the fast range, %llu differ from __fsqrt_rn, %llu range "
              "misclassified; planted no-correction: %llu differ (must be > 0)\n",
              c.ok, c.mismatch, c.range_wrong, planted.mismatch);
  EXPECT_EQ(c.ok, 0x7f800000ull - 0x0d000000ull);
  EXPECT_EQ(c.mismatch, 0u);
  EXPECT_EQ(c.range_wrong, 0u);
  EXPECT_GT(planted.mismatch, 0u);
}

TEST(GpuDivSqrt, FastDivisionEqualsIeeeInItsRange) {
  FH_REQUIRE_GPU();
  const uint64_t kRandom = uint64_t(1) << 34, kCrafted = uint64_t(1) << 31;
  const uint64_t seed = case_seed(12345);
  const uint64_t random_pairs = stream_state(seed, "test_gpu_divsqrt/random_pairs");
  const uint64_t planted_pairs = stream_state(seed, "test_gpu_divsqrt/planted_pairs");
  const Counts r = run_counts([&](Counts* p) { div_sweep_kernel<false><<<kGrid, kBlock>>>(p, 0, kRandom, random_pairs, false); });
  const Counts c = run_counts([&](Counts* p) { div_sweep_kernel<false><<<kGrid, kBlock>>>(p, 1, kCrafted, 0, false); });
  const Counts p1 = run_counts([&](Counts* p) { div_sweep_kernel<true><<<kGrid, kBlock>>>(p, 0, uint64_t(1) << 26, planted_pairs, false); });
  const Counts p2 = run_counts([&](Counts* p) { div_sweep_kernel<false><<<kGrid, kBlock>>>(p, 0, uint64_t(1) << 26, planted_pairs, true); });
  std::printf("[divsqrt] div: %llu random pairs, %llu in range, %llu differ from __fdiv_rn; %llu crafted pairs, "
              "%llu in range, %llu differ; planted no-correction %llu differ, planted range ignored %llu differ "
              "(both must be > 0)\n",
              (unsigned long long)kRandom, r.ok, r.mismatch, (unsigned long long)kCrafted, c.ok, c.mismatch,
              p1.mismatch, p2.mismatch);
  EXPECT_EQ(r.mismatch, 0u);
  EXPECT_EQ(c.mismatch, 0u);
  EXPECT_GT(r.ok, kRandom / 8);
  EXPECT_GT(c.ok, kCrafted / 4);
  EXPECT_GT(p1.mismatch, 0u);
  EXPECT_GT(p2.mismatch, 0u);
}

// Special values through the rule kernel's speculative update (every rule; fp32 state + fp32
// master, bf16 state + bf16 weights), three steps, against the host rule.
TEST(GpuDivSqrt, SpeculativeUpdateEqualsHostOnSpecialValues) {
  FH_REQUIRE_GPU();
  const int64_t rows = 8, cols = 4096;
  const float specials[] = {0.0f, -0.0f, 1e-45f, -3e-39f, 1e-30f, 1e-20f, 1e20f, 3e38f, -3e38f,
                            INFINITY, -INFINITY, NAN, 1.0f, -0.5f, 1e-3f, 7e-19f};
  auto crafted = [&](uint64_t seed) {
    std::vector<float> v(size_t(rows * cols));
    uint64_t s = seed;
    for (auto& x : v) {
      const uint64_t r = splitmix64_next(s);
      x = (r & 3) == 0 ? specials[(r >> 8) % 16] : float(int64_t(r >> 40) - (int64_t(1) << 23)) / float(1 << 20);
    }
    return v;
  };
  const uint64_t seed = case_seed(5);
  int64_t compared = 0, differing = 0;
  for (RuleId r : kAllRules)
    for (auto [sf, ws] : {std::pair{StateFormat::fp32, WeightStore::fp32_master},
                          std::pair{StateFormat::bf16, WeightStore::bf16_rne}}) {
      HostParam host = HostParam::make(default_rule_config(r), sf, ws, rows, cols,
                                       crafted(stream_seed(seed, "test_gpu_divsqrt/special_weights", uint64_t(r))), 5, 1);
      HostParam dev_h = host;
      DeviceParam dev(host);
      for (int st = 1; st <= 3; ++st) {
        const std::vector<float> g = crafted(stream_seed(seed, "test_gpu_divsqrt/special_grads", uint64_t(st) << 32 | uint64_t(r)));
        DeviceBuffer<float> dg(g);
        rule_apply_device(host.rule, sf, ws, dev.view(), st, dg.data(), cols);
        apply_rule_region(host.rule, sf, ws, host.view(), st, g.data(), cols, 0, rows, 0, cols);
      }
      dev.download_into(dev_h);
      const ParamEvidence e = test::compare_params(dev_h, host);
      compared += e.values;
      differing += e.differing;
      EXPECT_EQ(e.differing, 0) << rule_name(r) << "/" << state_format_name(sf) << ": first " << e.first_diff;
    }
  std::printf("[divsqrt] rule kernel on special values: %lld values, %lld differ from the host rule\n",
              (long long)compared, (long long)differing);
}

// The fused kernel's redo path: out rows whose dY column is zero have G = 0, so at step 1 the
// first moment (and AdamW's numerator) is 0 and every such quad leaves the fast range; with INT8
// state, in columns whose X is zero too, so a regular block encodes zeros (out of the fast
// division's range: the lane's encodes are redone). Fused == host twin (the kernel mutant
// gpu_speculation_never_redone shows it can fail).
TEST(GpuDivSqrt, FusedRedoPathEqualsTwin) {
  FH_REQUIRE_GPU();
  const int64_t out = 256, in = 256, T = 64;
  std::vector<bf16> X = test::random_bf16_vec(size_t(T * in), 31), dY = test::random_bf16_vec(size_t(T * out), 32, 6, -8);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t o = 0; o < out; o += 3) dY[size_t(t * out + o)] = bf16::from_bits(0);
    for (int64_t i = 0; i < in; i += 5) X[size_t(t * in + i)] = bf16::from_bits(0);
  }
  DeviceBuffer<bf16> dX(X), ddY(dY);
  const WgradProblem prob{dX.data(), ddY.data(), T, out, in};
  int64_t compared = 0, differing = 0;
  for (RuleId r : kAllRules)
    for (auto [sf, ws] : {std::pair{StateFormat::fp32, WeightStore::fp32_master},
                          std::pair{StateFormat::bf16, WeightStore::bf16_rne},
                          std::pair{StateFormat::fp32, WeightStore::bf16_sr},
                          std::pair{StateFormat::int8, WeightStore::fp32_master},
                          std::pair{StateFormat::int8, WeightStore::bf16_sr}}) {
      if (!gpu_rule_built(r)) continue;  // a kernel mutant's build (one family)
      const HostParam hp0 = HostParam::make(default_rule_config(r), sf, ws, out, in,
                                            test::random_weights(size_t(out * in), uint64_t(r) + 9), 3, 2);
      HostParam twin = hp0, fused_h = hp0;
      DeviceParam fused(hp0);
      for (int st = 1; st <= 2; ++st) {
        fused_wgrad_update(prob, hp0.rule, sf, ws, fused.view(), st);
        fused_twin_step(twin, X.data(), dY.data(), T, st, TwinSchedule{});
      }
      fused.download_into(fused_h);
      const ParamEvidence e = test::compare_params(fused_h, twin);
      compared += e.values;
      differing += e.differing;
      EXPECT_EQ(e.differing, 0) << rule_name(r) << "/" << state_format_name(sf) << "/" << weight_store_name(ws)
                                << ": first " << e.first_diff;
    }
  std::printf("[divsqrt] fused with zero-gradient rows and columns: %lld values, %lld differ from the twin\n",
              (long long)compared, (long long)differing);
}

}  // namespace
}  // namespace fh::gpu
