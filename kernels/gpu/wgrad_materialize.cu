// The order-matched reference, phase 1: the fused kernel's mainloop with an epilogue that stores
// fp32 G. With rule_apply_device after it, the pair has exactly the fused kernel's order.
#include <string>

#include "kernels/gpu/fused_wgrad_update.cuh"

namespace fh::gpu {

namespace {
template <class Cfg>
void launch_materialize(const WgradTileArgs& a, float* g, bool accumulate, cudaStream_t stream) {
  auto kernel = wgrad_materialize_kernel<Cfg>;
  static const bool smem_ok = set_smem_limit(kernel, Cfg::kOperandBytes, "wgrad_materialize: cudaFuncSetAttribute");
  (void)smem_ok;
  kernel<<<wgrad_grid<Cfg>(a), Cfg::kThreads, Cfg::kOperandBytes, stream>>>(a, g, accumulate);
  cuda_check(cudaGetLastError(), "wgrad_materialize: launch");
}
}  // namespace

void wgrad_materialize(const WgradProblem& p, float* g, TileShape tile, cudaStream_t stream) {
  validate_problem(p, "wgrad_materialize");
  if (!g) throw std::invalid_argument("wgrad_materialize: G must be a device pointer");
  const bool big = tile.rows == 128 && tile.cols == 128;
  if (!big && !(tile.rows == 64 && tile.cols == 64))
    throw std::invalid_argument("wgrad_materialize: unsupported tile " + std::to_string(tile.rows) + "x" +
                                std::to_string(tile.cols) + " (128x128 or 64x64)");
  // The fused kernel's order for p: its token slices one after the other, each slice's chain
  // added to G in ascending slice order (fp32 RNE), as the split kernel sums its partials.
  const ReductionOrder order = fused_order_for(p, tile);
  for (int q = 0; q < order.split_k; ++q) {
    int64_t tb = 0, te = p.tokens;
    order.slice_bounds(p.tokens, q, tb, te);
    const WgradProblem slice{p.x + tb * p.in, p.dy + tb * p.out, te - tb, p.out, p.in};
    const WgradTileArgs a = make_tile_args(slice);
    if (big)
      launch_materialize<WgradTileCfg<128, 128>>(a, g, q > 0, stream);
    else
      launch_materialize<WgradTileCfg<64, 64>>(a, g, q > 0, stream);
  }
}

}  // namespace fh::gpu
