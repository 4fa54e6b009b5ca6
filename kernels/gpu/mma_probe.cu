// The raw tensor-core instruction, for proving the CPU model (kernels/twin/mma_model.h): each
// warp loads one instance's fragments straight from global memory in the PTX ISA's documented
// layout (wgrad_tile_layout.h: mma_a_coord / mma_b_coord / mma_c_coord), runs a chain of
// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32, and stores D in the same layout.
#include "kernels/gpu/gpu_api.h"
#include "kernels/gpu/wgrad_mainloop.cuh"

namespace fh::gpu {

namespace {

__global__ void __launch_bounds__(256)
    mma_probe_kernel(const uint16_t* a, const uint16_t* b, const float* c, float* d, int64_t n, int chain) {
  const int lane = threadIdx.x & 31;
  const int64_t warps_total = int64_t(gridDim.x) * (blockDim.x >> 5);
  for (int64_t inst = int64_t(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5); inst < n;
       inst += warps_total) {
    float acc[4];
    for (int i = 0; i < 4; ++i) {
      const FragCoord cc = mma_c_coord(lane, i);
      acc[i] = c[inst * 128 + cc.row * 8 + cc.col];
    }
    for (int s = 0; s < chain; ++s) {
      const uint16_t* A = a + (inst * chain + s) * 256;  // [16][16] row-major
      const uint16_t* B = b + (inst * chain + s) * 128;  // [8][16]: B[k][n] at B[n * 16 + k]
      uint32_t ar[4];
      for (int r = 0; r < 4; ++r) {
        const FragCoord lo = mma_a_coord(lane, r, 0), hi = mma_a_coord(lane, r, 1);
        ar[r] = uint32_t(A[lo.row * 16 + lo.col]) | (uint32_t(A[hi.row * 16 + hi.col]) << 16);
      }
      uint32_t br[2];
      for (int r = 0; r < 2; ++r) {
        const FragCoord lo = mma_b_coord(lane, r, 0), hi = mma_b_coord(lane, r, 1);
        br[r] = uint32_t(B[lo.col * 16 + lo.row]) | (uint32_t(B[hi.col * 16 + hi.row]) << 16);
      }
      mma_bf16_16816(acc, ar, br[0], br[1]);
    }
    for (int i = 0; i < 4; ++i) {
      const FragCoord cc = mma_c_coord(lane, i);
      d[inst * 128 + cc.row * 8 + cc.col] = acc[i];
    }
  }
}

}  // namespace

void mma_probe(const uint16_t* a, const uint16_t* b, const float* c, float* d, int64_t n, int chain,
               cudaStream_t stream) {
  if (!a || !b || !c || !d) throw std::invalid_argument("mma_probe: null pointer");
  if (n < 1 || chain < 1) throw std::invalid_argument("mma_probe: need n >= 1 instances and chain >= 1");
  const int64_t blocks64 = (n + 7) / 8;
  const unsigned blocks = unsigned(blocks64 < 65535 ? blocks64 : 65535);
  mma_probe_kernel<<<blocks, 256, 0, stream>>>(a, b, c, d, n, chain);
  cuda_check(cudaGetLastError(), "mma_probe: launch");
}

}  // namespace fh::gpu
