// The reduction order of a weight-gradient producer, as data (DESIGN contract 3).
// G[o][i] = sum_t dY[t][o] * X[t][i] is a dot product over the token axis; every producer of G
// (fused kernel, its host twin, the order-matched materializer, cuBLAS) is described by how it
// chains that sum. Two producers with the same description must agree bit for bit.
//
// The order, for one element of G:
//   - the token axis [0, T) is cut into split_k contiguous slices (split_slice_length below);
//   - each slice is summed from +0 as a chain of instructions in token order: acc =
//     mma(k_group products, acc), k_group tokens per instruction, the slice's last instruction
//     zero-padded (zero products are not terms of the instruction, so padding adds nothing);
//   - the slice results are summed in ascending slice order with fp32 round-to-nearest-even adds,
//     starting from slice 0's value (not from +0).
// token_chunk is the staging width (how many tokens a tile loads at once); it does not change
// the order as long as it is a multiple of k_group (an instruction never straddles a chunk), and
// same_order ignores it.
#pragma once
#include <cstdint>
#include <string>
#include "kernels/common/mma_params.h"

namespace fh {

struct ReductionOrder {
  int k_group = 16;           // products per instruction; instr.group must equal it
  int64_t token_chunk = 64;   // TK staging: not part of the order
  int split_k = 1;            // contiguous token slices, each chained from +0
  // Slice length is ceil(T / split_k) rounded up to a multiple of split_round (CUTLASS-style
  // split-K rounds each split to its alignment), so every slice but the last holds whole
  // instructions when split_round is a multiple of k_group. Trailing slices may be short or
  // empty; an empty slice is +0.
  int split_round = 16;
  MmaModelParams instr = kHopperMma;

  // Throws std::invalid_argument with a message on an inconsistent description.
  void validate() const;
  // The instruction parameters this order runs (instr with group = k_group).
  MmaModelParams model_params() const;
  // Length of every slice but possibly the last ones, for T tokens (T >= 0).
  int64_t split_slice_length(int64_t T) const;
  // [begin, end) of slice s (clamped to T; may be empty).
  void slice_bounds(int64_t T, int s, int64_t& begin, int64_t& end) const;

  std::string describe() const;
  // Equal orders: same k_group, split_k, split_round (when split_k > 1) and instruction model.
  // token_chunk is staging only and is ignored.
  bool same_order(const ReductionOrder& other) const;
};

// The FORGE fused kernel's order: one sequential chain of k16 Hopper instructions from t = 0 in
// token order, starting from +0, the last group zero-padded, no split-K. (Our fused kernel splits
// the tokens on layers with too few tiles to fill the GPU: then its order is cublas_wgrad_order(S,
// 64); gpu::fused_order_for says which, per problem.) On the H200 runner this
// is also cuBLAS 13.1's order for the wgrad GEMM (m = in, n = out, k = T) when it does not split.
ReductionOrder fused_kernel_order(int64_t token_chunk = 64);

// cuBLAS's order with `splits` contiguous token slices (splits = 1 equals fused_kernel_order).
ReductionOrder cublas_wgrad_order(int splits = 1, int split_round = 16);

// The same order with a different instruction grouping (k products as one fused sum).
ReductionOrder with_k_group(ReductionOrder order, int k_group);

}  // namespace fh
