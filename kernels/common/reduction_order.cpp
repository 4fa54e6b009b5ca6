#include "kernels/common/reduction_order.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace fh {

void ReductionOrder::validate() const {
  if (k_group < 1 || k_group > kMmaMaxGroup)
    throw std::invalid_argument("ReductionOrder: k_group " + std::to_string(k_group) +
                                " outside [1, " + std::to_string(kMmaMaxGroup) + "]");
  if (instr.group != k_group)
    throw std::invalid_argument("ReductionOrder: instr.group " + std::to_string(instr.group) +
                                " differs from k_group " + std::to_string(k_group) +
                                " (use with_k_group to change both)");
  if (token_chunk < 1 || token_chunk % k_group != 0)
    throw std::invalid_argument("ReductionOrder: token_chunk " + std::to_string(token_chunk) +
                                " must be a positive multiple of k_group " +
                                std::to_string(k_group) +
                                " (an instruction must not straddle a staged chunk)");
  if (split_k < 1) throw std::invalid_argument("ReductionOrder: split_k must be >= 1");
  if (split_round < 1) throw std::invalid_argument("ReductionOrder: split_round must be >= 1");
  mma_check_params(instr);
}

MmaModelParams ReductionOrder::model_params() const {
  MmaModelParams p = instr;
  p.group = k_group;
  return p;
}

int64_t ReductionOrder::split_slice_length(int64_t T) const {
  if (T < 0) throw std::invalid_argument("ReductionOrder: negative T");
  if (split_k == 1) return T;
  const int64_t even = (T + split_k - 1) / split_k;
  return (even + split_round - 1) / split_round * split_round;
}

void ReductionOrder::slice_bounds(int64_t T, int s, int64_t& begin, int64_t& end) const {
  if (s < 0 || s >= split_k) throw std::invalid_argument("ReductionOrder: slice index out of range");
  const int64_t len = split_slice_length(T);
  begin = std::min<int64_t>(T, int64_t(s) * len);
  end = std::min<int64_t>(T, int64_t(s + 1) * len);
}

std::string ReductionOrder::describe() const {
  std::ostringstream os;
  os << "chain of k" << k_group << " instructions in token order from +0"
     << " (align_bits=" << instr.align_bits << ", clamp_exp=" << instr.clamp_exp << ", out_round="
     << (instr.out_round == MmaModelParams::OutRound::toward_zero ? "rz" : "rne") << ")";
  if (split_k == 1)
    os << ", no split-K";
  else
    os << ", split-K " << split_k << " contiguous slices of ceil(T/" << split_k
       << ") rounded up to " << split_round << ", partials summed ascending with fp32 RNE adds";
  os << "; staged in chunks of " << token_chunk << " tokens (not part of the order)";
  return os.str();
}

bool ReductionOrder::same_order(const ReductionOrder& o) const {
  const MmaModelParams a = model_params(), b = o.model_params();
  if (k_group != o.k_group || split_k != o.split_k) return false;
  if (split_k > 1 && split_round != o.split_round) return false;
  return a.group == b.group && a.align_bits == b.align_bits && a.clamp_exp == b.clamp_exp &&
         a.out_round == b.out_round;
}

ReductionOrder fused_kernel_order(int64_t token_chunk) {
  ReductionOrder r;
  r.token_chunk = token_chunk;
  r.validate();
  return r;
}

ReductionOrder cublas_wgrad_order(int splits, int split_round) {
  ReductionOrder r;
  r.split_k = splits;
  r.split_round = split_round;
  r.validate();
  return r;
}

ReductionOrder with_k_group(ReductionOrder order, int k_group) {
  order.k_group = k_group;
  order.instr.group = k_group;
  // Keep the staging chunk a multiple of the new group.
  if (order.token_chunk % k_group != 0)
    order.token_chunk = (order.token_chunk + k_group - 1) / k_group * k_group;
  return order;
}

}  // namespace fh
