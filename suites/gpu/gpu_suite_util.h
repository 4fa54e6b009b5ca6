// Helpers shared by the GPU suites: skip without a GPU, seeded bf16 data, bitwise comparison of
// whole HostParams (weights, bf16 copy, every state slot and absmax), a parallel for.
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

// Skips the current test (with the reason) on a machine without a usable GPU.
#define FH_REQUIRE_GPU()                                                                 \
  do {                                                                                   \
    const fh::DeviceInfo& fh_dev_ = fh::query_device_info();                             \
    if (!fh_dev_.available) GTEST_SKIP() << "no GPU: " << fh_dev_.reason;                \
  } while (0)

namespace fh::gpu::test {

// bf16 values with random sign, exponent in [-e, e] around 2^bias, random mantissa; 1/32 zeros.
inline std::vector<uint16_t> random_bf16_vec(size_t n, uint64_t seed, int spread = 6, int bias = 0) {
  std::vector<uint16_t> v(n);
  uint64_t s = seed;
  for (auto& x : v) {
    const uint64_t r = splitmix64_next(s);
    if ((r & 31) == 0) { x = 0; continue; }
    const uint32_t sign = (r >> 5) & 1;
    const int e = bias - spread + int((r >> 8) % uint64_t(2 * spread + 1));
    x = uint16_t((sign << 15) | (uint32_t(e + 127) << 7) | ((r >> 32) & 0x7f));
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

struct BitDiff {
  int64_t compared = 0, differing = 0;
  std::string first;  // "<array>[index]" of the first difference
  void add(const char* what, const void* a, const void* b, size_t n, size_t elem) {
    const unsigned char* pa = static_cast<const unsigned char*>(a);
    const unsigned char* pb = static_cast<const unsigned char*>(b);
    for (size_t i = 0; i < n; ++i) {
      ++compared;
      if (std::memcmp(pa + i * elem, pb + i * elem, elem) != 0) {
        if (differing == 0) first = std::string(what) + "[" + std::to_string(i) + "]";
        ++differing;
      }
    }
  }
  template <class T>
  void add_vec(const char* what, const std::vector<T>& a, const std::vector<T>& b) {
    if (a.size() != b.size()) {
      ++differing;
      if (first.empty()) first = std::string(what) + " (sizes differ)";
      return;
    }
    add(what, a.data(), b.data(), a.size(), sizeof(T));
  }
};

// Every stored bit of two params of the same shape and format.
inline BitDiff compare_params(const HostParam& a, const HostParam& b) {
  BitDiff d;
  d.add_vec("master", a.master, b.master);
  d.add_vec("bf16", a.bf16, b.bf16);
  for (int k = 0; k < kMaxStates; ++k) {
    d.add_vec("state_f32", a.st_f32[k], b.st_f32[k]);
    d.add_vec("state_bf16", a.st_bf16[k], b.st_bf16[k]);
    d.add_vec("state_i8", a.st_i8[k], b.st_i8[k]);
    d.add_vec("state_absmax", a.st_absmax[k], b.st_absmax[k]);
  }
  return d;
}

inline BitDiff compare_floats(const char* what, const std::vector<float>& a, const std::vector<float>& b) {
  BitDiff d;
  d.add_vec(what, a, b);
  return d;
}

}  // namespace fh::gpu::test
