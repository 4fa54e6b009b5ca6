// The backward entry point of a FORGE linear layer (DESIGN contract 6, Remark 1): dX = dY W from
// the weights BEFORE the step, then the fused wgrad-plus-update. A weight with more than one
// consumer is refused: its gradient would be the sum of several dY^T X, which the fused kernel
// cannot see whole in one tile.
#pragma once
#include "kernels/gpu/gpu_api.h"

namespace fh::gpu {

struct LinearBackwardArgs {
  WgradProblem problem;             // X [T, in], dY [T, out] (device)
  RuleConfig rule;
  StateFormat state_format = StateFormat::fp32;
  WeightStore weight_store = WeightStore::fp32_master;
  DeviceParamView param;            // W [out, in]; its bf16 copy feeds dX
  int64_t step = 1;
  int consumers = 1;                // how many ops read this weight in the forward pass
  float* dx = nullptr;              // out: dX [T, in] fp32 (device)
  float dx_beta = 0.0f;             // 1: add this layer's dX to what dx holds (layers sharing an input)
  TileShape tile{};
  // Test only: run the update before dX (reads W after updating it), for the suite that shows a
  // read-after-update is caught. Never set outside that test.
  bool planted_read_after_update = false;
};

// Enqueues dX (cuBLAS) then the fused update on `stream`; stream order makes the update start
// only after dX has read every tile of W. Throws std::invalid_argument for consumers != 1 or
// bad shapes.
void linear_backward(cublasHandle_t h, const LinearBackwardArgs& args, cudaStream_t stream = 0);

}  // namespace fh::gpu
