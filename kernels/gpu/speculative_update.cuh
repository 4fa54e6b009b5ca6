// The GPU's element updates for fp32 / bf16 state (fused epilogue, rule kernel): a group of N
// elements is updated with the fast division and square root (SpeculativeDivSqrt, ieee_shim.h),
// which carry no per-operation branch, so the N elements' operations interleave. If any division
// or square root of any of them left its fast range, reload() restores the N elements' inputs
// and Rule::update redoes them with the IEEE path. Either way every element gets the bits of
// Rule::update with IeeeDivSqrt (the host's); the GPU suites check both branches.
#pragma once
#include "kernels/formats/formats.h"

namespace fh::gpu {

template <class Rule, int N, class Reload>
__device__ __forceinline__ void update_speculative(const typename Rule::Scalars& s, ElementValues (&e)[N],
                                                   const float (&g)[N], Reload reload) {
  bool bad = false;
#pragma unroll
  for (int b = 0; b < N; ++b) Rule::update(s, e[b].p, g[b], e[b].st, SpeculativeDivSqrt{&bad});
  if (bad) {
    reload(e);
#pragma unroll
    for (int b = 0; b < N; ++b) Rule::update(s, e[b].p, g[b], e[b].st);
  }
}

}  // namespace fh::gpu
