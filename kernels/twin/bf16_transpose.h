// [rows, cols] bf16 row-major -> [cols, rows], so that each instruction-model dot product
// (mma_chain_dot) reads contiguous memory: the twin's dgrad and the order-matched references.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/common/bf16.h"

namespace fh {

inline std::vector<bf16> transpose_bf16(const bf16* a, int64_t rows, int64_t cols) {
  std::vector<bf16> t(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[size_t(c * rows + r)] = a[r * cols + c];
  return t;
}

}  // namespace fh
