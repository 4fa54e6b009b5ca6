// What the GPU claims share: the inputs on the device, the parameter of a combination, the
// twin's schedule for the fused kernel's tile, the twin's G on row bands in parallel, shapes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/gpu/cublas_order_probe.h"
#include "kernels/gpu/gpu_api.h"
#include "kernels/twin/fused_twin.h"
#include "oracles/bitwise.h"
#include "reports/report.h"
#include "suites/claims/claim_common.h"

namespace fh {

inline constexpr int64_t kTile = 128;  // the fused kernel's and the twin's tile (the paper's TR = TC)
inline constexpr TileShape kTileEvidence{kTile, kTile};

std::string shape_name(int64_t out, int64_t in, int64_t T);  // "4096x4096.T512"
std::string gpu_attr_text();                                 // "NVIDIA H200 (sm 9.0, 132 SMs)"
void set_gpu_attrs(CaseRecord& cs);                          // attribute "gpu": gpu_attr_text()

// The inputs on the device, one WgradProblem per step.
struct DeviceSteps {
  std::vector<gpu::DeviceBuffer<bf16>> x, dy;
  std::vector<gpu::WgradProblem> prob;
  explicit DeviceSteps(const LayerInputs& li) {
    for (const StepInputs& s : li.steps) {
      x.emplace_back(s.X);
      dy.emplace_back(s.dY);
      prob.push_back({x.back().data(), dy.back().data(), li.T, li.out, li.in});
    }
  }
};

// The parameter of combination `index` of a claim: w0 from the layer inputs, its stochastic
// rounding keyed by (seed, index) (Philox: seed and tensor id).
HostParam make_param(const Combo& c, const LayerInputs& li, uint64_t seed, size_t index);

// The twin's schedule on the kernel's 128 x 128 tile, in `order`.
TwinSchedule twin_schedule(const ReductionOrder& order = fused_kernel_order(64));

// G [out, in] in the twin's order for `order`, the twin run on 128-row bands in parallel (each
// band is the twin on a sub-layer: a G element's order does not depend on the band).
std::vector<float> twin_wgrad_parallel(const std::vector<bf16>& X, const std::vector<bf16>& dY, int64_t T,
                                       int64_t in, int64_t out, const ReductionOrder& order);

struct LayerShape {
  int64_t out, in, T;
};
std::vector<LayerShape> unique_shapes(std::vector<LayerShape> v);  // first occurrence kept
std::string algo_text(const gpu::CublasLtWgradAlgo& a);             // cuBLASLt's heuristic, as text

}  // namespace fh
