#include "suites/claims/gpu_claim_common.h"

#include <algorithm>

#include "kernels/common/host_parallel.h"
#include "kernels/gpu/device_info.h"

namespace fh {

std::string shape_name(int64_t out, int64_t in, int64_t T) {
  return std::to_string(out) + "x" + std::to_string(in) + ".T" + std::to_string(T);
}

std::string gpu_attr_text() {
  const DeviceInfo& d = query_device_info();
  return d.name + " (sm " + d.compute_capability + ", " + std::to_string(d.sm_count) + " SMs)";
}

void set_gpu_attrs(CaseRecord& cs) { cs.set_attr("gpu", gpu_attr_text()); }

HostParam make_param(const Combo& c, const LayerInputs& li, uint64_t seed, size_t index) {
  return HostParam::make(c.rule, c.format, c.store, li.out, li.in, li.w0, seed,
                         uint32_t(index));
}

TwinSchedule twin_schedule(const ReductionOrder& order) {
  TwinSchedule s;
  s.tile_rows = kTile;
  s.tile_cols = kTile;
  s.order = order;
  return s;
}

// G [out, in] in the twin's order for `order`, the twin run on 128-row bands in parallel (each
// band is the twin on a sub-layer: a G element's order does not depend on the band).
std::vector<float> twin_wgrad_parallel(const std::vector<bf16>& X, const std::vector<bf16>& dY, int64_t T,
                                       int64_t in, int64_t out, const ReductionOrder& order) {
  std::vector<float> G(size_t(out * in));
  const TwinSchedule sched = twin_schedule(order);
  const int64_t bands = (out + kTile - 1) / kTile;
  parallel_for(bands, [&](int64_t b) {
    const int64_t r0 = b * kTile, r1 = std::min(out, r0 + kTile), rows = r1 - r0;
    std::vector<bf16> dy_band(size_t(T * rows));
    for (int64_t t = 0; t < T; ++t)
      std::copy(dY.begin() + t * out + r0, dY.begin() + t * out + r1, dy_band.begin() + t * rows);
    const std::vector<float> g = twin_wgrad(X.data(), dy_band.data(), T, in, rows, sched);
    std::copy(g.begin(), g.end(), G.begin() + r0 * in);
  });
  return G;
}

std::vector<LayerShape> unique_shapes(std::vector<LayerShape> v) {
  std::vector<LayerShape> out;
  for (const LayerShape& s : v) {
    bool dup = false;
    for (const LayerShape& o : out) dup |= o.out == s.out && o.in == s.in && o.T == s.T;
    if (!dup) out.push_back(s);
  }
  return out;
}

std::string algo_text(const gpu::CublasLtWgradAlgo& a) {
  if (!a.ok) return "heuristic query failed: " + a.note + " (assumed no split)";
  return "split_k=" + std::to_string(a.split_k) + " reduction_scheme=" + std::to_string(a.reduction_scheme) +
         " algo_id=" + std::to_string(a.algo_id) + " candidates=" + std::to_string(a.candidates) +
         " workspace=" + std::to_string(a.workspace_bytes) + " B";
}

}  // namespace fh
