// One probe category through the real mma.sync and judged against the CPU model: shared by the
// GPU suite (suites/gpu/test_gpu_mma_model.cu) and forge-verify's gpu_mma_model claim.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>
#include "kernels/gpu/mma_probe_cases.h"

namespace fh::gpu {

// What a plain fp32 fmaf loop would give for output (row, col): the naive model of the MMA.
float probe_fma_loop(const ProbeCase& pc, int row, int col);

struct ProbeJudgement {
  int chain = 0;
  std::vector<ProbeCase> cases;  // the inputs, in instance order
  std::vector<float> hw;         // the hardware outputs, [instance][16][8]
  int64_t outputs = 0, mismatches = 0, fma_misses = 0;
  uint64_t max_ulp = 0;          // largest model-vs-hardware ulp distance (kUlpNaN for NaN)
  std::string first;             // the first mismatch: instance, seed, element, both bit patterns
};

// n instances of `cat`, instance i generated from seed_of(i); runs the GPU and judges on the host.
ProbeJudgement probe_and_judge(ProbeCategory cat, int64_t n, const std::function<uint64_t(int64_t)>& seed_of);

}  // namespace fh::gpu
