// Seeded inputs for the model step's small kernels, shared by the CPU suite that checks the host
// references (suites/cpu/test_model_kernels_host.cpp) and the GPU suite that checks the kernels
// against them (suites/gpu/test_gpu_model_kernels.cu). Each case says why its values are where
// they are.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/common/bf16.h"
#include "reference/case_gen.h"

namespace fh::model_ref {

inline std::vector<float> uniform_f32(CaseRng& r, size_t n, double lo, double hi) {
  std::vector<float> v(n);
  for (auto& x : v) x = float(lo + (hi - lo) * r.uniform01());
  return v;
}
inline std::vector<bf16> uniform_bf16(CaseRng& r, size_t n, double lo, double hi) {
  std::vector<bf16> v(n);
  for (auto& x : v) x = float_to_bf16_rne(float(lo + (hi - lo) * r.uniform01()));
  return v;
}
inline std::vector<int32_t> uniform_indices(CaseRng& r, size_t n, int64_t bound) {
  std::vector<int32_t> v(n);
  for (auto& x : v) x = int32_t(r.below(uint64_t(bound)));
  return v;
}

// RMSNorm, forward and backward: T tokens of H columns. x in [-3, 3] (RMS near 1.7, so rstd near
// 0.58, far from 1: a dropped rstd factor shows), g in [0.5, 1.5], dh and the incoming dx in [-1, 1].
struct NormCase {
  int64_t T, H;
  std::vector<float> x, dh, dx0;
  std::vector<bf16> g;
};
inline NormCase make_norm_case(uint64_t seed, int64_t T, int64_t H) {
  CaseRng r(seed);
  NormCase c{T, H, {}, {}, {}, {}};
  c.x = uniform_f32(r, size_t(T * H), -3, 3);
  c.dh = uniform_f32(r, size_t(T * H), -1, 1);
  c.dx0 = uniform_f32(r, size_t(T * H), -1, 1);
  c.g = uniform_bf16(r, size_t(H), 0.5, 1.5);
  return c;
}

// Causal softmax: heads x T rows of T scores in [-8, 8]; head 1 (when there is one) is shifted by
// +80, where exp(s) alone would overflow and only the max subtraction keeps it finite.
inline std::vector<float> make_scores(uint64_t seed, int64_t heads, int64_t T) {
  CaseRng r(seed);
  std::vector<float> s = uniform_f32(r, size_t(heads * T * T), -8, 8);
  if (heads > 1)
    for (int64_t k = T * T; k < 2 * T * T; ++k) s[size_t(k)] += 80.0f;
  return s;
}

// The SiLU gate's pre-activations: uniform in [-12, 12] plus the points where silu' crosses zero
// (1 + z (1 - sigmoid z) cancels near z = -1.2785), signed zeros, saturation and a tiny value.
inline std::vector<float> make_gate_inputs(CaseRng& r, size_t n) {
  std::vector<float> z = uniform_f32(r, n, -12, 12);
  for (float extra : {-1.2784645f, -1.2785f, -1.27846f, 0.0f, -0.0f, 20.0f, -20.0f, 1e-6f}) z.push_back(extra);
  return z;
}

// Cross-entropy: T tokens of V logits in [-10, 10]; token 1's are shifted by +60 (exp overflows
// without the max); labels uniform.
struct CrossEntropyCase {
  std::vector<float> logits;
  std::vector<int32_t> labels;
};
inline CrossEntropyCase make_cross_entropy_case(uint64_t seed, int64_t T, int64_t V) {
  CaseRng r(seed);
  CrossEntropyCase c{uniform_f32(r, size_t(T * V), -10, 10), {}};
  if (T > 1)
    for (int64_t j = 0; j < V; ++j) c.logits[size_t(V + j)] += 60.0f;
  c.labels = uniform_indices(r, size_t(T), V);
  return c;
}

}  // namespace fh::model_ref
