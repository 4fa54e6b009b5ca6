// The order guard's judge: cuBLAS's G on the probe (kernels/gpu/cublas_order_probe, the producer)
// compared bit for bit with the predictions of a described ReductionOrder. A claim-side runner
// shared by the GPU suite (suites/gpu/test_gpu_cublas_order.cu) and forge-verify's
// gpu_order_guard claim. A mismatch means "order changed" (re-derive the description), not a
// kernel bug.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/common/reduction_order.h"
#include "kernels/gpu/cublas_order_probe.h"
#include "oracles/param_compare.h"

namespace fh::gpu {

struct OrderProbeResult {
  int64_t out = 0, in = 0, T = 0;
  int64_t pairs = 0;               // distinct pairs probed
  int64_t elements_compared = 0;   // every element of G
  int64_t elements_differing = 0;  // elements != the prediction of their row
  int64_t pairs_differing = 0;     // pairs with at least one differing element
  // "pair (i, j) kind K: row o col c: observed v, predicted p by [order]"
  std::string first_diff;
  std::vector<OrderProbePair> pair_list;
  std::vector<float> predicted;    // per pair
  std::vector<float> observed;     // per pair: G[o][0] of the first column o carrying it

  // The bitwise evidence (differing elements and the first difference) for bitwise_check.
  ParamEvidence evidence() const;
};

// Compares the probe's outputs (G [out, in] row-major, as downloaded) with the predictions.
// Throws std::invalid_argument when G is not out * in elements or pairs is empty.
OrderProbeResult judge_order_probe(const std::vector<float>& g, int64_t out, int64_t in, int64_t T,
                                   const std::vector<OrderProbePair>& pairs, const ReductionOrder& order);

// GPU: the probe's pairs for `predicted` (order_probe_pairs, at most min(max_pairs, out)),
// cuBLAS's G on them (cublas_order_probe_g), judged against `predicted`. Throws
// std::runtime_error on CUDA / cuBLAS errors.
OrderProbeResult run_cublas_order_probe(int64_t out, int64_t in, int64_t T, const ReductionOrder& predicted,
                                        int64_t max_pairs, uint64_t seed);

}  // namespace fh::gpu
