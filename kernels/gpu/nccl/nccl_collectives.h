// Real NCCL ranks behind the Collectives interface (kernels/common/collectives.h): one process
// driving p GPUs (ncclCommInitAll over devices 0..p-1), every rank's part uploaded to its own GPU.
//   all_gather_rows / all_gather_cols: ncclAllGather (rank r's block lands at offset r: the order
//     is NCCL's rank order, whatever its ring does);
//   all_reduce_ordered: ncclAllGather of the fp32 parts, then the sum in rank order (bitwise
//     reproducible; ncclAllReduce is not used for a claim, its order depends on message size,
//     algorithm and channels: NVIDIA/nccl GitHub issues 157, 754, 855).
// describe() records the NCCL version and NCCL_ALGO, NCCL_PROTO, NCCL_NVLS_ENABLE as set.
// Built apart from the kernel set (library fh_nccl) so that no other binary needs libnccl.
#pragma once
#include <memory>

#include "kernels/common/collectives.h"

namespace fh {

// GPUs visible to this process (0 without a driver or device).
int nccl_visible_gpus();

class NcclCollectives : public Collectives {
 public:
  // Throws std::runtime_error naming the cause when fewer than p GPUs are visible or NCCL fails.
  explicit NcclCollectives(int p);
  ~NcclCollectives() override;
  int ranks() const override { return p_; }
  std::string describe() const override;
  std::vector<bf16> all_gather_rows(const std::vector<std::vector<bf16>>& parts, int64_t cols) const override;
  std::vector<float> all_gather_cols(const std::vector<std::vector<float>>& parts, int64_t rows) const override;
  std::vector<float> all_reduce_ordered(const std::vector<std::vector<float>>& parts) const override;

 private:
  // Every rank sends `bytes` bytes; returns the p * bytes every rank receives (rank 0's copy).
  std::vector<uint8_t> all_gather_bytes(const std::vector<const void*>& parts, size_t bytes) const;
  int p_ = 0;
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace fh
