// The non-separable map on the GPU (kernels/gpu/nonseparable_gpu.h), for the
// nonseparable_falsifier claim and the GPU suite test_gpu_nonseparable:
//   - per shape and rule: the GPU's exact fused schedule (the mainloop recomputes G for every
//     pass) == the twin's exact fused schedule (kernels/twin/nonseparable_rules.h, the kernel's
//     128 x 128 grid) == the GPU's two-phase path (G materialized by wgrad_materialize, the same
//     passes reading it), bit for bit after every step, and the passes over G the map's;
//   - per rule, at the Llama-3.1-8B MLP shape (14336 x 4096) and T = 512 and 8192: the fused and
//     the two-phase path on the GPU bit for bit after the timed steps, each path's peak from the
//     tagged pool (the fused path must hold no gradient: tag "gradients" stays 0) and its median
//     step time (CUDA events around each step, after one warm-up step).
// Producers: kernels/gpu/nonseparable_gpu, kernels/twin/nonseparable_rules, wgrad_materialize.
// Oracles: oracles/bitwise (compare_ns), the tagged pool's counts.
#pragma once
#include <cstdint>
#include <iterator>
#include <vector>

#include "kernels/gpu/nonseparable_gpu.h"
#include "suites/claims/nonseparable_falsifier.h"

namespace fh {

struct NonseparableGpuConfig {
  uint64_t seed = 0x1A3BFA15ULL;
  int steps = 3;
  // Ragged in rows, columns and tokens (rows a multiple of Adam-mini's 16-row blocks); the grid
  // is the kernel's 128 x 128 tile whatever the shape's tile fields say.
  std::vector<TwinShapeCase> shapes{{208, 300, 80}, {256, 512, 128}};
  std::vector<NsRule> rules{std::begin(kNsRules), std::end(kNsRules)};
  NsHyper hyper;
  gpu::NsGpuPlants plants;  // planted on the GPU's fused path only (tests)
  // The map's measurement (measure_tokens empty: none): timed steps after one warm-up.
  int64_t measure_out = 14336, measure_in = 4096;
  std::vector<int64_t> measure_tokens{512, 8192};
  int timed_steps = 3;
};

// Bitwise cases per shape and rule, then one map case per rule named ns_gpu_map_case_name(rule)
// with its measurements as attributes. Needs a GPU (throws without one).
std::vector<NsMapCase> run_nonseparable_gpu_cases(const NonseparableGpuConfig& cfg);

}  // namespace fh
