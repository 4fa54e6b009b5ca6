// Helpers shared by the GPU suites: skip without a GPU or as not applicable, seeded bf16 data,
// bitwise comparison of whole HostParams (weights, bf16 copy, every state slot and absmax), a
// parallel for.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kernels/common/bf16.h"
#include "kernels/common/splitmix64.h"
#include "kernels/formats/host_param.h"
#include "kernels/gpu/device_info.h"
#include "kernels/common/host_parallel.h"
#include "oracles/bitwise.h"
#include "oracles/param_compare.h"
#include "reference/case_gen.h"  // case_seed, stream_seed: the run seed and its named streams

// Skips the current test (with the reason) on a machine without a usable GPU.
#define FH_REQUIRE_GPU()                                                                 \
  do {                                                                                   \
    const fh::DeviceInfo& fh_dev_ = fh::query_device_info();                             \
    if (!fh_dev_.available) GTEST_SKIP() << "no GPU: " << fh_dev_.reason;                \
  } while (0)

// Skips the current test because this machine lacks what it needs (two GPUs on a one-GPU
// runner); stream the need after it: FH_NOT_APPLICABLE() << "needs 2 GPUs, 1 visible".
// scripts/gpu_runner.sh lists such a skip by this fixed prefix without failing the run; any
// other skip on the GPU runner (FH_REQUIRE_GPU's "no GPU") fails it.
#define FH_NOT_APPLICABLE() GTEST_SKIP() << "not applicable: "

namespace fh::gpu::test {

// bf16 values with random sign, exponent in [-e, e] around 2^bias, random mantissa; 1/32 zeros.
inline std::vector<bf16> random_bf16_vec(size_t n, uint64_t seed, int spread = 6, int bias = 0) {
  std::vector<bf16> v(n);
  uint64_t s = seed;
  for (auto& x : v) {
    const uint64_t r = splitmix64_next(s);
    if ((r & 31) == 0) { x = bf16::from_bits(0); continue; }
    const uint32_t sign = (r >> 5) & 1;
    const int e = bias - spread + int((r >> 8) % uint64_t(2 * spread + 1));
    x = bf16::from_bits(uint16_t((sign << 15) | (uint32_t(e + 127) << 7) | ((r >> 32) & 0x7f)));
  }
  return v;
}

inline std::vector<float> random_weights(size_t n, uint64_t seed) {
  std::vector<float> w(n);
  uint64_t s = seed;
  for (auto& x : w) x = float(int64_t(splitmix64_next(s) >> 40) - (int64_t(1) << 23)) / float(1 << 23) * 0.5f;
  return w;
}

using fh::parallel_for;  // kernels/common/host_parallel.h

// Every stored array of two params of the same shape and format, bit for bit (the oracle's
// compare_params: values counts the elements compared, first_diff names the first difference).
inline ParamEvidence compare_params(const HostParam& a, const HostParam& b) {
  ParamEvidence ev;
  fh::compare_params(ev, a, b, -1, fh::TileShape{}, "");
  return ev;
}

inline ParamEvidence compare_floats(const char* what, const std::vector<float>& a, const std::vector<float>& b) {
  ParamEvidence ev;
  BitwiseContext ctx;
  ctx.name = what;
  if (a.size() != b.size()) {
    ev.differing = 1;
    ev.first_diff = std::string(what) + " (sizes differ)";
    return ev;
  }
  ev.add(compare_bitwise(a, b, 1, int64_t(a.size()), ctx));
  return ev;
}

}  // namespace fh::gpu::test
