// The model step's small kernels (kernels/gpu/model_kernels.cuh, launched through
// kernels/gpu/model_kernels_api.h) against their host references (reference/model_kernels_host.h)
// on small shapes: row lengths below, at and above the block's 256 threads, so that idle threads,
// one and several elements per thread all occur in the reduction trees; grid-stride loops that
// wrap.
//
// Verdicts:
//   - bitwise, every kernel: the references reproduce the kernels' operation order and trees, and
//     where a kernel calls expf, logf or rsqrtf the reference is handed the device's own value for
//     each argument it meets (DeviceTabulatedFns: evaluated on the device by the same library
//     code, compiled with the same flags). A difference is a fault of the reference or the kernel.
//   - the device functions within their documented error (expf 2, logf 1, rsqrtf 2 ulp) plus one
//     ulp of the correctly rounded value on every argument met: the bound the references state for
//     their correctly rounded mode, which the CPU suite uses.
//   - that stated bound itself: the references with correctly rounded functions within one bf16
//     ulp of the device on the outputs where reference/model_kernels_host.h says so (RMSNorm's h,
//     the softmax, the gate's m and dup); the other outputs' distances are printed.
//   - planted: the host reference's planted RMSNorm backward disagrees with the kernel.
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "kernels/gpu/model_kernels_api.h"
#include "oracles/bitwise.h"
#include "oracles/ulp.h"
#include "reference/case_gen.h"
#include "reference/model_kernel_cases.h"
#include "reference/model_kernels_host.h"
#include "suites/gpu/gpu_suite_util.h"

namespace fh::gpu {
namespace {

namespace api = fh::gpu::model_api;
namespace ref = fh::model_ref;

uint64_t suite_seed() {
  static const uint64_t seed = announce_seed("test_gpu_model_kernels", 0x6770756d6b65726eull);
  return seed;
}
uint64_t seed_for(uint64_t k) { return stream_seed(suite_seed(), "test_gpu_model_kernels/cases", k); }

const ref::CorrectlyRoundedFns kCorrectlyRounded;

// The device's expf / logf / rsqrtf as a table keyed by the argument's bits. A lookup that misses
// records the argument and answers the correctly rounded value; fill() evaluates the misses on the
// device. A reference run whose later arguments depend on earlier values (log z after the sum of
// exps) therefore needs a second or third pass; host_with_device_fns runs them.
class DeviceTabulatedFns final : public ref::ElementaryFns {
 public:
  float exp(float x) const override { return look(api::DeviceFn::exp, x); }
  float log(float x) const override { return look(api::DeviceFn::log, x); }
  float rsqrt(float x) const override { return look(api::DeviceFn::rsqrt, x); }

  // Says whether any argument was missing (then the reference must run again).
  bool fill() {
    bool any = false;
    for (int k = 0; k < kFns; ++k) {
      if (missing_[k].empty()) continue;
      any = true;
      std::vector<float> args;
      for (uint32_t b : missing_[k]) args.push_back(u2f(b));
      const std::vector<float> vals = api::elementary(api::DeviceFn(k), args);
      for (size_t i = 0; i < args.size(); ++i) table_[k][f2u(args[i])] = vals[i];
      missing_[k].clear();
    }
    return any;
  }

  // Every tabulated device value within the documented error + 1 ulp of the correctly rounded
  // one (the device is within d ulp of the exact value, the correctly rounded one within 1/2).
  void expect_within_documented_error() const {
    const char* names[kFns] = {"expf", "logf", "rsqrtf"};
    const uint64_t documented[kFns] = {ref::kDeviceExpUlp, ref::kDeviceLogUlp, ref::kDeviceRsqrtUlp};
    for (int k = 0; k < kFns; ++k) {
      uint64_t worst = 0;
      int64_t differ = 0, outside = 0;
      for (const auto& [bits, dev] : table_[k]) {
        const float cr = correctly_rounded(api::DeviceFn(k), u2f(bits));
        const uint64_t d = ulp_distance_f32(dev, cr);
        if (fp32_bits_isnan(f2u(dev)) && fp32_bits_isnan(f2u(cr))) continue;
        differ += d != 0;
        outside += d > documented[k] + 1;
        worst = std::max(worst, d);
      }
      if (table_[k].empty()) continue;
      std::printf("  device %s on %zu arguments: %" PRId64 " differ from correctly rounded, max %" PRIu64 " ulp\n",
                  names[k], table_[k].size(), differ, worst);
      EXPECT_EQ(outside, 0) << names[k] << " beyond its documented " << documented[k] << " ulp + 1";
    }
  }

 private:
  static constexpr int kFns = 3;
  static float correctly_rounded(api::DeviceFn fn, float x) {
    return fn == api::DeviceFn::exp ? kCorrectlyRounded.exp(x)
           : fn == api::DeviceFn::log ? kCorrectlyRounded.log(x)
                                      : kCorrectlyRounded.rsqrt(x);
  }
  float look(api::DeviceFn fn, float x) const {
    const int k = int(fn);
    const auto it = table_[k].find(f2u(x));
    if (it != table_[k].end()) return it->second;
    missing_[k].insert(f2u(x));
    return correctly_rounded(fn, x);
  }
  std::unordered_map<uint32_t, float> table_[kFns];
  mutable std::set<uint32_t> missing_[kFns];
};

// The reference run with the device's functions, repeated until it met no argument without a
// device value; then the functions are checked against their documented error.
template <class Run>
auto host_with_device_fns(Run run) {
  DeviceTabulatedFns fns;
  auto out = run(static_cast<const ref::ElementaryFns&>(fns));
  for (int pass = 1; fns.fill(); ++pass) {
    if (pass > 4) throw std::runtime_error("host_with_device_fns: arguments still missing after 4 passes");
    out = run(static_cast<const ref::ElementaryFns&>(fns));
  }
  fns.expect_within_documented_error();
  return out;
}

template <class T>
void expect_bitwise(const std::string& what, const std::vector<T>& device, const std::vector<T>& host) {
  ASSERT_EQ(device.size(), host.size()) << what;
  BitwiseContext ctx;
  ctx.name = what + " (device vs host reference)";
  const BitwiseReport r = compare_bitwise(device, host, 1, int64_t(device.size()), ctx);
  std::printf("  %s: %zu elements, %" PRId64 " differ, max ulp %" PRIu64 "\n", what.c_str(), device.size(), r.n_differ,
              r.max_ulp);
  EXPECT_TRUE(r.equal()) << r.to_string() << " (seed 0x" << std::hex << suite_seed() << ")";
}

// The correctly rounded reference's bf16 outputs against the device's: the largest distance in
// bf16 ulp, required to be at most `bound` unless bound < 0 (printed only).
void expect_bf16_within(const std::string& what, const std::vector<bf16>& device, const std::vector<bf16>& host,
                        int64_t bound) {
  ASSERT_EQ(device.size(), host.size()) << what;
  uint64_t worst = 0;
  int64_t differ = 0;
  for (size_t i = 0; i < device.size(); ++i) {
    const uint64_t d = ulp_distance_bf16(device[i], host[i]);
    differ += d != 0;
    worst = std::max(worst, d);
  }
  std::printf("  %s, correctly rounded functions: %" PRId64 " of %zu differ, max %" PRIu64 " bf16 ulp%s\n",
              what.c_str(), differ, device.size(), worst, bound < 0 ? " (no bound stated)" : "");
  if (bound >= 0) EXPECT_LE(worst, uint64_t(bound)) << what;
}

const int64_t kNormShapes[][2] = {{3, 1}, {4, 200}, {3, 256}, {4, 300}, {2, 1000}};
const int64_t kSoftmaxShapes[][2] = {{2, 1}, {2, 7}, {2, 256}, {2, 300}};

TEST(GpuModelKernels, EmbeddingBitwise) {
  FH_REQUIRE_GPU();
  const int64_t V = 50, H = 300, T = 40;
  CaseRng r(seed_for(1));
  const std::vector<bf16> e = ref::uniform_bf16(r, size_t(V * H), -1, 1);
  const std::vector<int32_t> tok = ref::uniform_indices(r, size_t(T), V);
  expect_bitwise("embedding", api::embedding(e, tok, T, H), ref::embedding(e, tok, T, H));
}

TEST(GpuModelKernels, RmsnormForwardBitwise) {
  FH_REQUIRE_GPU();
  for (auto [T, H] : kNormShapes) {
    const ref::NormCase c = ref::make_norm_case(seed_for(2), T, H);
    std::vector<bf16> h;
    std::vector<float> rstd;
    api::rmsnorm_fwd(c.x, c.g, T, H, h, rstd);
    const ref::RmsnormFwdOut want =
        host_with_device_fns([&](const ref::ElementaryFns& f) { return ref::rmsnorm_fwd(c.x, c.g, T, H, f); });
    const std::string at = " H=" + std::to_string(H);
    expect_bitwise("rmsnorm_fwd rstd" + at, rstd, want.rstd);
    expect_bitwise("rmsnorm_fwd h" + at, h, want.h);
    expect_bf16_within("rmsnorm_fwd h" + at, h, ref::rmsnorm_fwd(c.x, c.g, T, H, kCorrectlyRounded).h, 1);
  }
}

// rstd from the device's forward, as in the step; dx accumulates into a nonzero incoming dx.
TEST(GpuModelKernels, RmsnormBackwardBitwiseAndPlantedCaught) {
  FH_REQUIRE_GPU();
  for (auto [T, H] : kNormShapes) {
    const ref::NormCase c = ref::make_norm_case(seed_for(3), T, H);
    std::vector<bf16> h;
    std::vector<float> rstd;
    api::rmsnorm_fwd(c.x, c.g, T, H, h, rstd);
    std::vector<float> dx = c.dx0, want = c.dx0, planted = c.dx0;
    api::rmsnorm_bwd_dx(c.x, c.g, rstd, c.dh, dx, T, H);
    ref::rmsnorm_bwd_dx(c.x, c.g, rstd, c.dh, want, T, H);
    const std::string at = " H=" + std::to_string(H);
    expect_bitwise("rmsnorm_bwd_dx" + at, dx, want);
    expect_bitwise("rmsnorm_bwd_dg" + at, api::rmsnorm_bwd_dg(c.x, rstd, c.dh, T, H),
                   ref::rmsnorm_bwd_dg(c.x, rstd, c.dh, T, H));
    // The planted reference (projection term without rstd) must not match the kernel.
    ref::rmsnorm_bwd_dx<true>(c.x, c.g, rstd, c.dh, planted, T, H);
    BitwiseContext ctx;
    ctx.name = "planted rmsnorm_bwd_dx";
    const BitwiseReport r = compare_bitwise(dx, planted, 1, int64_t(dx.size()), ctx);
    std::printf("  PLANTED rmsnorm_bwd_dx%s: %" PRId64 " of %zu differ from the kernel\n", at.c_str(), r.n_differ,
                dx.size());
    EXPECT_GT(r.n_differ, int64_t(dx.size()) / 2) << "the planted reference agrees with the kernel";
  }
}

TEST(GpuModelKernels, CausalSoftmaxAndBackwardBitwise) {
  FH_REQUIRE_GPU();
  for (auto [heads, T] : kSoftmaxShapes) {
    const std::vector<float> s = ref::make_scores(seed_for(4), heads, T);
    const int64_t rows = heads * T;
    const std::vector<bf16> p = api::causal_softmax(s, rows, T);
    const std::vector<bf16> want =
        host_with_device_fns([&](const ref::ElementaryFns& f) { return ref::causal_softmax(s, rows, T, f); });
    const std::string at = " T=" + std::to_string(T);
    expect_bitwise("causal_softmax" + at, p, want);
    expect_bf16_within("causal_softmax" + at, p, ref::causal_softmax(s, rows, T, kCorrectlyRounded), 1);
    // The backward on the device's own P, as in the step.
    CaseRng r(seed_for(5));
    const std::vector<float> dp = ref::uniform_f32(r, size_t(rows * T), -2, 2);
    const float scale = 1.0f / std::sqrt(48.0f);
    expect_bitwise("softmax_bwd" + at, api::softmax_bwd(p, dp, rows, T, scale),
                   ref::softmax_bwd(p, dp, rows, T, scale));
  }
}

TEST(GpuModelKernels, GroupedKvBitwise) {
  FH_REQUIRE_GPU();
  const int64_t T = 37, d = 64;
  for (auto [heads, kvh] : {std::pair<int64_t, int64_t>{4, 4}, {6, 2}, {8, 2}, {8, 1}}) {
    CaseRng r(seed_for(6));
    const std::vector<bf16> kv = ref::uniform_bf16(r, size_t(T * kvh * d), -4, 4);
    const std::vector<float> dx = ref::uniform_f32(r, size_t(T * heads * d), -3, 3);
    const std::string at = " heads=" + std::to_string(heads) + " kv=" + std::to_string(kvh);
    expect_bitwise("expand_kv" + at, api::expand_kv(kv, T, heads, kvh, d), ref::expand_kv(kv, T, heads, kvh, d));
    expect_bitwise("reduce_kv" + at, api::reduce_kv(dx, T, heads, kvh, d), ref::reduce_kv(dx, T, heads, kvh, d));
  }
}

TEST(GpuModelKernels, GateBitwise) {
  FH_REQUIRE_GPU();
  CaseRng r(seed_for(7));
  const std::vector<float> z = ref::make_gate_inputs(r, 5000);
  const std::vector<float> up = ref::uniform_f32(r, z.size(), -2, 2), dm = ref::uniform_f32(r, z.size(), -1, 1);
  const std::vector<bf16> m = api::gate_fwd(z, up);
  expect_bitwise("gate_fwd", m,
                 host_with_device_fns([&](const ref::ElementaryFns& f) { return ref::gate_fwd(z, up, f); }));
  expect_bf16_within("gate_fwd", m, ref::gate_fwd(z, up, kCorrectlyRounded), 1);
  std::vector<bf16> dgate, dup;
  api::gate_bwd(z, up, dm, dgate, dup);
  const ref::GateBwdOut want =
      host_with_device_fns([&](const ref::ElementaryFns& f) { return ref::gate_bwd(z, up, dm, f); });
  expect_bitwise("gate_bwd dgate", dgate, want.dgate);
  expect_bitwise("gate_bwd dup", dup, want.dup);
  const ref::GateBwdOut cr = ref::gate_bwd(z, up, dm, kCorrectlyRounded);
  expect_bf16_within("gate_bwd dgate", dgate, cr.dgate, -1);  // cancels near z = -1.28
  expect_bf16_within("gate_bwd dup", dup, cr.dup, 1);
}

TEST(GpuModelKernels, CrossEntropyBitwise) {
  FH_REQUIRE_GPU();
  for (auto [T, V] : {std::pair<int64_t, int64_t>{4, 1}, {8, 100}, {6, 256}, {5, 1000}}) {
    const ref::CrossEntropyCase c = ref::make_cross_entropy_case(seed_for(8), T, V);
    std::vector<float> loss;
    std::vector<bf16> dlogits;
    api::cross_entropy(c.logits, c.labels, T, V, loss, dlogits);
    const ref::CrossEntropyOut want = host_with_device_fns(
        [&](const ref::ElementaryFns& f) { return ref::cross_entropy(c.logits, c.labels, T, V, f); });
    const std::string at = " V=" + std::to_string(V);
    expect_bitwise("cross_entropy loss" + at, loss, want.loss);
    expect_bitwise("cross_entropy dlogits" + at, dlogits, want.dlogits);
    expect_bf16_within("cross_entropy dlogits" + at, dlogits,
                       ref::cross_entropy(c.logits, c.labels, T, V, kCorrectlyRounded).dlogits, -1);
  }
}

// Repeated tokens (V small against T), so several tokens accumulate into one row in token order.
TEST(GpuModelKernels, EmbeddingBackwardBitwise) {
  FH_REQUIRE_GPU();
  const int64_t V = 7, H = 300, T = 64;
  CaseRng r(seed_for(9));
  const std::vector<int32_t> tok = ref::uniform_indices(r, size_t(T), V);
  const std::vector<float> dx = ref::uniform_f32(r, size_t(T * H), -1, 1);
  const std::vector<float> de0 = ref::uniform_f32(r, size_t(V * H), -1, 1);
  std::vector<float> de = de0, want = de0;
  api::embedding_bwd(dx, tok, de, T, H);
  ref::embedding_bwd(dx, tok, want, T, H);
  expect_bitwise("embedding_bwd", de, want);
}

TEST(GpuModelKernels, ToBf16Bitwise) {
  FH_REQUIRE_GPU();
  CaseRng r(seed_for(10));
  std::vector<float> x = ref::uniform_f32(r, 10000, -1e4, 1e4);
  for (uint32_t bits : {0x3f808000u, 0x3f818000u, 0xbf808000u, 0x00008000u, 0x7f7fffffu, 0x7fc00001u, 0xff800000u})
    x.push_back(u2f(bits));  // ties, a subnormal tie, overflow, a NaN payload, -inf
  expect_bitwise("to_bf16", api::to_bf16(x), ref::to_bf16(x));
}

}  // namespace
}  // namespace fh::gpu
