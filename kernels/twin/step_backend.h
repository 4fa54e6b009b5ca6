// Who executes a fused step in the claims that run both on the host twin (CI) and on the GPU
// runner (the low-precision fidelity claims): the twin by default; kernels/gpu/gpu_step_backend.h makes
// the fused kernel's. A claim written against this interface is the same code on both.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/formats/host_param.h"
#include "kernels/twin/fused_twin.h"

namespace fh {

struct FusedStepBackend {
  std::string name;  // "twin" or "gpu"
  // One fused optimizer step of w with X [T, in], dY [T, out] (bf16 bits) at `step`; sched
  // gives the tile shape (a backend with fixed tile shapes picks its own: bits do not depend on it).
  std::function<void(HostParam& w, const bf16* X, const bf16* dY, int64_t T, int64_t step,
                     const TwinSchedule& sched)>
      step;
  // The same path's fp32 G [out, in] (for claims that apply another update to the fused path's G).
  std::function<std::vector<float>(const bf16* X, const bf16* dY, int64_t T, int64_t in,
                                   int64_t out, const TwinSchedule& sched)>
      wgrad;
};

inline const FusedStepBackend& twin_step_backend() {
  static const FusedStepBackend b{
      "twin",
      [](HostParam& w, const bf16* X, const bf16* dY, int64_t T, int64_t step, const TwinSchedule& sched) {
        fused_twin_step(w, X, dY, T, step, sched);
      },
      [](const bf16* X, const bf16* dY, int64_t T, int64_t in, int64_t out, const TwinSchedule& sched) {
        return twin_wgrad(X, dY, T, in, out, sched);
      }};
  return b;
}

// b, or the twin where b is null.
inline const FusedStepBackend& backend_or_twin(const FusedStepBackend* b) { return b ? *b : twin_step_backend(); }

}  // namespace fh
