// The non-separable rules' exact schedules on the GPU (kernels/twin/nonseparable_rules.h is their
// host twin; docs/NONSEPARABLE.md the map). Each pass over G is one launch over the 128 x 128
// tiles: a block gets its tile of G either from the wgrad mainloop (the fused source: G recomputed
// in registers, never held) or from a materialized G [rows, cols] (the two-phase path), puts it in
// shared memory and runs the pass's per-element code and fixed-order tile chains
// (kernels/rules/nonseparable_elements.h); cross-tile partials are added by one thread per
// statistic in ascending tile index; scalars come from the host functions the twin uses. The
// statistics grid is the kernel's tile, 128 x 128, so the twin must run with that tile.
#pragma once
#include <cstdint>

#include "kernels/gpu/gpu_api.h"
#include "kernels/twin/nonseparable_rules.h"

namespace fh::gpu {

inline constexpr int64_t kNsGpuTile = 128;

// A non-separable parameter on the device, fp32, laid out as NsParam (an array the rule has not
// is null): w, m, v [rows, cols]; row_stat [rows] (Adam-mini: [rows / rows_per_block]); col_stat [cols].
struct NsDeviceParam {
  NsRule rule = NsRule::lamb;
  int64_t rows = 0, cols = 0;
  float *w = nullptr, *m = nullptr, *v = nullptr, *row_stat = nullptr, *col_stat = nullptr;
};

// Where each pass's G comes from: g == nullptr: the fused source (the mainloop over prob's X and
// dY, tile by tile); otherwise a materialized G [rows, cols], row-major.
struct NsGpuSource {
  WgradProblem prob;
  const float* g = nullptr;
};

// Defects a suite plants on the GPU path (off by default): the cross-tile partials added in
// DESCENDING tile index; Adam-mini's block boundaries one row lower.
struct NsGpuPlants {
  bool reversed_tile_sum = false;
  bool block_shifted_one_row = false;
};

// The floats of scratch a step of this rule and shape needs (statistic partials, reduced
// statistics, and for Muon Newton-Schulz's working set: 2 P + 2 min(rows, cols)^2 + partials).
int64_t ns_gpu_workspace_floats(NsRule rule, int64_t rows, int64_t cols);

// One step at `step` (1-based) over the whole tensor; returns the passes over G it made. scratch:
// ns_gpu_workspace_floats floats of device memory. Synchronizes the stream where a scalar needs a
// statistic (LAMB, Adafactor, LARS).
int ns_gpu_step(const NsDeviceParam& p, const NsHyper& h, int64_t step, const NsGpuSource& src, float* scratch,
                const NsGpuPlants& plants = {}, cudaStream_t stream = 0);

}  // namespace fh::gpu
