// TMA tensor maps of the wgrad operands: the warp-specialized kernel (fused_wgrad_pingpong.cuh)
// loads each 64-token chunk of dY [T, out] and X [T, in] (bf16, row-major) with the Tensor Memory
// Accelerator in 64-column x 64-token boxes, 128-byte swizzled; a box past an edge is zero filled.
#pragma once
#include <cuda.h>  // CUtensorMap (types only: the encoder is reached through the runtime)

#include <cstdint>

namespace fh::gpu {

struct WgradTileArgs;

// Columns and tokens of one TMA box: 64 bf16 = 128 bytes, the widest row the 128-byte swizzle
// allows, and one mainloop chunk of tokens.
inline constexpr int kTmaBoxCols = 64;
inline constexpr int kTmaBoxTokens = 64;
inline constexpr int kTmaBoxBytes = kTmaBoxCols * kTmaBoxTokens * 2;

struct WgradTmaMaps {
  CUtensorMap dy;  // dims (out, T)
  CUtensorMap x;   // dims (in, T)
};

// Can the operands be loaded by TMA? Both row-major with 16-byte aligned rows (base aligned and
// row length a multiple of 8: the tensor map's stride rule), i.e. WgradTileArgs::vec_x / vec_dy.
bool wgrad_tma_usable(const WgradTileArgs& a);

// Encodes both maps (cuTensorMapEncodeTiled through cudaGetDriverEntryPointByVersion); throws
// std::runtime_error when the driver refuses.
WgradTmaMaps make_wgrad_tma_maps(const WgradTileArgs& a);

}  // namespace fh::gpu
