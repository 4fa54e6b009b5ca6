// One probe category through the real mma.sync and wgmma (kernels/gpu/mma_probe, the producer) judged
// against the CPU model (kernels/twin/mma_model): a claim-side runner shared by the
// GPU suite (suites/gpu/test_gpu_mma_model.cu) and forge-verify's gpu_mma_model claim.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>
#include "kernels/gpu/mma_probe_cases.h"
#include "kernels/twin/mma_model.h"

namespace fh::gpu {

// What a plain fp32 fmaf loop would give for output (row, col): the naive model of the MMA, over
// A of case pa, B and C of case pb (the same case for mma.sync; the wgmma probe mixes cases).
float probe_fma_loop(const ProbeCase& pa, const ProbeCase& pb, int row, int col);

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

// The same judgement on wgmma m64n128k16 (the fused kernel's instruction, kernels/gpu/mma_probe.cu):
// instance i takes 16 consecutive cases 16 i .. 16 i + 15 of `cat`; warp row block w (rows
// 16 w ..) of A is case 16 i + w's A, column block j (n8 block j) of B is case 16 i + j's B, and
// C block (w, j) is case 16 i + j's C, so the diagonal blocks w = j < 4 are exactly cases
// 16 i .. 16 i + 3 and the others mix the category's inputs. Each block's model is the chain of
// mma_m16n8k16_model over its A, B and C (with `params`: the suite also judges with a wrong model
// to show the comparison can fail). n: cases (a multiple of 16); hw is [instance][64][128].
ProbeJudgement probe_and_judge_wgmma(ProbeCategory cat, int64_t n, const std::function<uint64_t(int64_t)>& seed_of,
                                     const MmaModelParams& params = kHopperMma);

}  // namespace fh::gpu
