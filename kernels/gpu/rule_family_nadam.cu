// The fused kernel and the standalone rule kernel for NAdam, every state format x weight store
// x tile shape (one translation unit per rule, so the families compile in parallel).
#include "kernels/gpu/fused_wgrad_update.cuh"
#include "kernels/gpu/rule_kernel.cuh"

namespace fh::gpu {
FH_GPU_INSTANTIATE_RULE_FAMILY(NAdam)
}  // namespace fh::gpu
