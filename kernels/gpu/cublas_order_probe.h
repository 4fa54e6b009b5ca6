// The order guard: a crafted-input probe of cuBLAS's wgrad reduction order (FPRev,
// arXiv 2411.00442), and a host-side predictor of what the probe must show under a
// ReductionOrder (kernels/common/reduction_order.h). A mismatch means cuBLAS's order no longer
// equals its description ("order changed"), not a kernel bug.
//
// How the probe reads the order. X is all ones, so G[o][c] = sum_t dY[t][o] for every c: column
// o of dY is one probe. Its tokens are 1 except +2^40 at token i and -2^40 at token j (i < j).
//   - Inside one k16 instruction every term aligns to the largest exponent and is truncated to
//     25 fractional bits (DESIGN contract 2): next to +-2^40 a 1 (or an accumulator below 2^15)
//     vanishes. So a chain that meets +2^40 holds exactly 2^40 until the instruction holding
//     -2^40 cancels it to 0, and only the ones AFTER that instruction survive: the output is
//     the number of ones after the end of j's instruction group.
//   - Split-K slices are chained from +0 and summed with fp32 adds: if i and j fall in
//     different slices, slice(i) yields +2^40 and slice(j) -2^40, the ones of every slice in
//     between are absorbed (fp32 spacing at 2^40 is 2^17), and only the later slices' ones
//     survive. So the output tells where slices begin and in what order partials are added.
// The predictor runs the order description itself (mma_chain_dot per slice, fp32 adds of the
// partials), so a CPU test can check it against the twin (twin_wgrad) on tiny probes.
// This file only produces (pairs, inputs, predictions, cuBLAS's G, the heuristic's choice); the
// comparison of G with the predictions lives claim-side, in suites/claims/order_probe_judge.h.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/common/bf16.h"
#include "kernels/common/reduction_order.h"

namespace fh::gpu {

// +2^40 at token i, -2^40 at token j, ones elsewhere (0 <= i < j < T). kind says why the pair
// was chosen ("same_group", "adjacent_groups", "far_apart", "split_boundary", ...).
struct OrderProbePair {
  int64_t i = 0, j = 0;
  std::string kind;
};

// The bf16 bits of the probe's big term, 2^40 (exact in bf16).
inline constexpr bf16 kOrderProbeBigBf16 = bf16::from_bits(uint16_t((127 + 40) << 7));
inline constexpr bf16 kOrderProbeOneBf16 = bf16::from_bits(0x3F80);

// Pairs for T tokens: first the crafted ones (same instruction group, adjacent groups, far
// apart, the ragged tail, every slice boundary of `predicted`, and the boundaries that splits of
// 2, 3, 4 and 8 would have, so that an undescribed split shows), then seeded random pairs, up to
// max_pairs in all (crafted pairs are kept first when max_pairs is smaller). Throws
// std::invalid_argument for T < 2 or max_pairs < 1.
std::vector<OrderProbePair> order_probe_pairs(int64_t T, const ReductionOrder& predicted,
                                              int64_t max_pairs, uint64_t seed);

// The probe's inputs for a wgrad problem of `out` x `in` with T tokens: X [T, in] all ones,
// dY [T, out] with column o carrying pairs[o % pairs.size()]. Throws on a bad pair or shape.
std::vector<bf16> order_probe_x(int64_t T, int64_t in);
std::vector<bf16> order_probe_dy(int64_t T, int64_t out, const std::vector<OrderProbePair>& pairs);

// What a producer following `order` outputs for one probe column (every element of that row of
// G), computed with the instruction model (mma_chain_dot per slice, ascending fp32 adds).
float predict_order_probe(int64_t T, const OrderProbePair& pair, const ReductionOrder& order);

// The same with the closed form of the comment above (ones after the end of j's group, or after
// j's slice when i and j are in different slices); a second derivation the CPU test compares
// against the model-based predictor.
int64_t predict_order_probe_closed_form(int64_t T, const OrderProbePair& pair, const ReductionOrder& order);

// GPU: G [out, in] row-major, as downloaded, of fh::gpu::cublas_wgrad (the cuBLAS reference's
// own call) on the probe of this shape: X = order_probe_x(T, in), dY = order_probe_dy(T, out,
// pairs). Values only; suites/claims/order_probe_judge.h compares them with the predictions.
// Throws std::invalid_argument on a bad shape or pair, std::runtime_error on CUDA / cuBLAS errors.
std::vector<float> cublas_order_probe_g(int64_t out, int64_t in, int64_t T, const std::vector<OrderProbePair>& pairs);

// cuBLAS's default workspace on Hopper (the cuBLAS documentation recommends 32 MiB for sm_90 and
// the handle's default pool is that size); the split-K query below assumes it.
inline constexpr size_t kCublasHopperWorkspaceBytes = size_t(32) << 20;

// What the cuBLASLt heuristic picks for the wgrad call's problem (m = in, n = out, k = T, bf16
// A = X op N, B = dY op T, fp32 C/D, fp32 compute). ok = false (note says why) when the query
// failed; split_k = 1 when the algorithm does not split.
struct CublasLtWgradAlgo {
  bool ok = false;
  std::string note;
  int split_k = 1;
  int reduction_scheme = 0;  // cublasLtReductionScheme_t of the top candidate
  int algo_id = -1;
  int candidates = 0;        // heuristic results returned
  size_t workspace_bytes = 0;
};
CublasLtWgradAlgo cublaslt_wgrad_algo(int64_t out, int64_t in, int64_t T,
                                      size_t workspace_bytes = kCublasHopperWorkspaceBytes);

// The order cuBLAS is described to use for this shape: cublas_wgrad_order(split_k of the
// heuristic), or the unsplit order when the query failed (the probe then says whether that holds).
ReductionOrder described_cublas_order(const CublasLtWgradAlgo& algo);

}  // namespace fh::gpu
