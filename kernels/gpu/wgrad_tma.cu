#include "kernels/gpu/wgrad_tma.h"

#include <cudaTypedefs.h>

#include <stdexcept>
#include <string>

#include "kernels/gpu/gpu_api.h"
#include "kernels/gpu/wgrad_mainloop.cuh"

namespace fh::gpu {

namespace {
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    cuda_check(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q),
               "wgrad TMA: cudaGetDriverEntryPointByVersion");
    if (q != cudaDriverEntryPointSuccess || !p)
      throw std::runtime_error("wgrad TMA: the driver has no cuTensorMapEncodeTiled");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

// A row-major bf16 [tokens, cols] operand as a 2-D map (cols innermost), 64 x 64 boxes, 128-byte
// swizzle; elements past an edge are zero filled (the chain's padding).
CUtensorMap operand_map(const bf16* base, int64_t cols, int64_t tokens, const char* what) {
  CUtensorMap m;
  const cuuint64_t dims[2] = {cuuint64_t(cols), cuuint64_t(tokens)};
  const cuuint64_t strides[1] = {cuuint64_t(cols) * 2};
  const cuuint32_t box[2] = {kTmaBoxCols, kTmaBoxTokens};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUresult r = tensor_map_encoder()(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<bf16*>(base), dims,
                                          strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                          CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw std::runtime_error(std::string("wgrad TMA: cuTensorMapEncodeTiled refused the ") + what + " map (CUresult " +
                             std::to_string(int(r)) + ")");
  return m;
}
}  // namespace

bool wgrad_tma_usable(const WgradTileArgs& a) { return a.vec_x && a.vec_dy; }

WgradTmaMaps make_wgrad_tma_maps(const WgradTileArgs& a) {
  return WgradTmaMaps{operand_map(a.dy, a.out, a.T, "dY"), operand_map(a.x, a.in, a.T, "X")};
}

}  // namespace fh::gpu
