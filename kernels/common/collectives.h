// Collectives of p ranks over host buffers, one interface for the simulated ranks
// (reference/sharding.h: SimCollectives, explicit concatenations and sums) and for real NCCL
// ranks (kernels/gpu/nccl/nccl_collectives.h: one process driving p GPUs). Every part is one
// rank's buffer; the results are what every rank holds afterwards.
//   all_gather_rows     rank parts [rows_r, cols] stacked in rank order (sequence all-gather);
//   all_gather_cols     rank parts [rows, cols_r] side by side in rank order;
//   all_reduce_ordered  the elementwise sum rank 0 + rank 1, then + rank 2, ..., each an fp32
//                       round-to-nearest add: bitwise reproducible (an all-gather, then the sum in
//                       fixed rank order, as Megatron's ordered reduce-scatter does), unlike a
//                       ring all-reduce whose order depends on message size and algorithm.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/common/bf16.h"

namespace fh {

class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual int ranks() const = 0;
  virtual std::string describe() const = 0;  // implementation, version and settings
  virtual std::vector<bf16> all_gather_rows(const std::vector<std::vector<bf16>>& parts, int64_t cols) const = 0;
  virtual std::vector<float> all_gather_cols(const std::vector<std::vector<float>>& parts, int64_t rows) const = 0;
  virtual std::vector<float> all_reduce_ordered(const std::vector<std::vector<float>>& parts) const = 0;
};

}  // namespace fh
