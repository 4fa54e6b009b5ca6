#include "kernels/gpu/linear_backward.h"

#include <string>

namespace fh::gpu {

void linear_backward(cublasHandle_t h, const LinearBackwardArgs& a, cudaStream_t stream) {
  if (a.consumers != 1)
    throw std::invalid_argument("linear_backward: the weight is declared with " + std::to_string(a.consumers) +
                                " consumers; the fused update needs exactly one (Remark 1: with several, "
                                "G is a sum the fused kernel never sees whole)");
  if (!a.dx) throw std::invalid_argument("linear_backward: dx must be a device pointer");
  if (!a.param.bf16) throw std::invalid_argument("linear_backward: the weight has no bf16 copy for dX");
  validate_problem(a.problem, "linear_backward");
  // Everything the update will check, checked before dX runs, so a refused step changes nothing.
  validate_param_view(a.rule, a.state_format, a.weight_store, a.param, a.step, "linear_backward");
  if (a.param.rows != a.problem.out || a.param.cols != a.problem.in)
    throw std::invalid_argument("linear_backward: W view shape differs from [out, in]");
  if (!tile_supported(a.tile)) throw std::invalid_argument("linear_backward: unsupported tile shape");
  const auto dgrad = [&] {
    cublas_dgrad(h, a.problem.dy, a.param.bf16, a.problem.tokens, a.problem.out, a.problem.in, a.dx, stream, a.dx_beta);
  };
  const auto update = [&] {
    fused_wgrad_update(a.problem, a.rule, a.state_format, a.weight_store, a.param, a.step, a.tile, stream);
  };
  if (!a.planted_read_after_update) {
    dgrad();   // reads the old W; same stream, so it completes before the update begins
    update();
  } else {
    update();
    dgrad();
  }
}

}  // namespace fh::gpu
