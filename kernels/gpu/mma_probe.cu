// The raw tensor-core instruction, for proving the CPU model (kernels/twin/mma_model.h): each
// warp loads one instance's fragments straight from global memory in the PTX ISA's documented
// layout (wgrad_tile_layout.h: mma_a_coord / mma_b_coord / mma_c_coord), runs a chain of
// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32, and stores D in the same layout.
#include "kernels/gpu/gpu_api.h"
#include "kernels/gpu/wgrad_mainloop.cuh"

namespace fh::gpu {

namespace {

__global__ void __launch_bounds__(256)
    mma_probe_kernel(const bf16* a, const bf16* b, const float* c, float* d, int64_t n, int chain) {
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
      const bf16* A = a + (inst * chain + s) * 256;  // [16][16] row-major
      const bf16* B = b + (inst * chain + s) * 128;  // [8][16]: B[k][n] at B[n * 16 + k]
      uint32_t ar[4];
      for (int r = 0; r < 4; ++r) {
        const FragCoord lo = mma_a_coord(lane, r, 0), hi = mma_a_coord(lane, r, 1);
        ar[r] = uint32_t(A[lo.row * 16 + lo.col].bits) | (uint32_t(A[hi.row * 16 + hi.col].bits) << 16);
      }
      uint32_t br[2];
      for (int r = 0; r < 2; ++r) {
        const FragCoord lo = mma_b_coord(lane, r, 0), hi = mma_b_coord(lane, r, 1);
        br[r] = uint32_t(B[lo.col * 16 + lo.row].bits) | (uint32_t(B[hi.col * 16 + hi.row].bits) << 16);
      }
      mma_bf16_16816(acc, ar, br[0], br[1]);
    }
    for (int i = 0; i < 4; ++i) {
      const FragCoord cc = mma_c_coord(lane, i);
      d[inst * 128 + cc.row * 8 + cc.col] = acc[i];
    }
  }
}

// One instance per block of 128 threads (one warpgroup): each chain step is staged into shared
// memory with the fused kernel's layout functions (wgmma_sw128_offset_bytes, A as [k][m] of width
// 64, B as [k][n] of width 128), then one wgmma through the kernel's descriptors; the
// accumulators start from C and end in D in the mma C-fragment layout per n8 block.
__global__ void __launch_bounds__(128)
    wgmma_probe_kernel(const bf16* a, const bf16* b, const float* c, float* d, int chain) {
  extern __shared__ __align__(16) unsigned char probe_smem[];
  unsigned char* base = align_to_atom(probe_smem);
  uint16_t* sA = reinterpret_cast<uint16_t*>(base);                        // 2 atoms: 16 x 64
  uint16_t* sB = reinterpret_cast<uint16_t*>(base + 2 * kWgmmaAtomBytes);  // 4 atoms: 16 x 128
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int64_t inst = blockIdx.x;
  float acc[16][4];
  for (int j = 0; j < 16; ++j)
    for (int i = 0; i < 4; ++i) {
      const FragCoord cc = mma_c_coord(lane, i);
      acc[j][i] = c[inst * 8192 + (16 * warp + cc.row) * 128 + 8 * j + cc.col];
    }
  for (int s = 0; s < chain; ++s) {
    const bf16* A = a + (inst * chain + s) * 1024;  // [64][16]
    const bf16* B = b + (inst * chain + s) * 2048;  // [16][128]
    for (int e = tid; e < 1024; e += 128) {
      const int m = e / 16, k = e % 16;
      sA[wgmma_sw128_offset_bytes(k, m, 64) / 2] = A[e].bits;
    }
    for (int e = tid; e < 2048; e += 128) {
      const int k = e / 128, n = e % 128;
      sB[wgmma_sw128_offset_bytes(k, n, 128) / 2] = B[e].bits;
    }
    fence_proxy_async_shared();
    __syncthreads();
    wgmma_fence_operands<16>(acc);
    wgmma_fence();
    wgmma_m64n128k16_ss(acc, wgmma_desc_sw128(sA, kWgmmaAtomBytes, wgmma_sbo_bytes<64>()),
                        wgmma_desc_sw128(sB, kWgmmaAtomBytes, wgmma_sbo_bytes<128>()));
    wgmma_commit();
    wgmma_wait_all();
    wgmma_fence_operands<16>(acc);
    __syncthreads();  // before the next step overwrites the operands
  }
  for (int j = 0; j < 16; ++j)
    for (int i = 0; i < 4; ++i) {
      const FragCoord cc = mma_c_coord(lane, i);
      d[inst * 8192 + (16 * warp + cc.row) * 128 + 8 * j + cc.col] = acc[j][i];
    }
}

}  // namespace

void wgmma_probe(const bf16* a, const bf16* b, const float* c, float* d, int64_t n, int chain,
                 cudaStream_t stream) {
  if (!a || !b || !c || !d) throw std::invalid_argument("wgmma_probe: null pointer");
  if (n < 1 || n > 2147483647 || chain < 1) throw std::invalid_argument("wgmma_probe: need 1 <= n < 2^31 instances and chain >= 1");
  constexpr size_t smem = 6 * kWgmmaAtomBytes + kWgmmaAtomBytes;  // operands + alignment slack
  wgmma_probe_kernel<<<unsigned(n), 128, smem, stream>>>(a, b, c, d, chain);
  cuda_check(cudaGetLastError(), "wgmma_probe: launch");
}

void mma_probe(const bf16* a, const bf16* b, const float* c, float* d, int64_t n, int chain,
               cudaStream_t stream) {
  if (!a || !b || !c || !d) throw std::invalid_argument("mma_probe: null pointer");
  if (n < 1 || chain < 1) throw std::invalid_argument("mma_probe: need n >= 1 instances and chain >= 1");
  const int64_t blocks64 = (n + 7) / 8;
  const unsigned blocks = unsigned(blocks64 < 65535 ? blocks64 : 65535);
  mma_probe_kernel<<<blocks, 256, 0, stream>>>(a, b, c, d, n, chain);
  cuda_check(cudaGetLastError(), "mma_probe: launch");
}

}  // namespace fh::gpu
