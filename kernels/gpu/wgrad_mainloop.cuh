// The wgrad mainloop shared by the fused kernel and the order-matched materializer: one block
// accumulates a TR x TC tile of G = dY^T X in fp32 registers over all T tokens, chaining one
// k16 tensor-core instruction per 16 tokens in token order from +0 (wgmma m64n128k16 for the
// 128 x 128 tile, mma.sync m16n8k16 for 64 x 64; index math: wgrad_tile_layout.h).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kernels/common/bf16.h"
#include "kernels/gpu/wgrad_tile_layout.h"

namespace fh::gpu {

// Kernel arguments of the mainloop (device pointers). vec_*: the operand's rows start on 16-byte
// boundaries (base aligned and row length a multiple of 8), so staging may use 16-byte cp.async.
struct WgradTileArgs {
  const bf16* x;
  const bf16* dy;
  int64_t T, out, in;
  bool vec_x, vec_dy;
};
// The operands are bf16, so a float or 16-bit integer buffer set as X or dY does not compile
// (the type rule: suites/cpu/test_bf16_type.cpp).
static_assert(std::is_same_v<decltype(WgradTileArgs::x), const bf16*> && std::is_same_v<decltype(WgradTileArgs::dy), const bf16*>,
              "the mainloop's operands are bf16");

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte async copy global -> shared; bytes beyond src_bytes (0..16) are zero filled.
__device__ __forceinline__ void cp_async_16_zfill(void* smem_dst, const void* gsrc, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(smem_dst)),
               "l"(gsrc), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const uint16_t* row_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(row_addr))
               : "memory");
}

// d = A * B + d, one m16n8k16 bf16 -> fp32 instruction.
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                               uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// wgmma (sm_90a): the shared-memory matrix descriptor (PTX ISA: start address, leading and
// stride byte offsets in 16-byte units, base offset 0 (atoms 1024-byte aligned), layout type 1 =
// 128-byte swizzle in bits 62-63).
__device__ __forceinline__ uint64_t wgmma_desc_sw128(const void* smem_ptr, int lbo_bytes, int sbo_bytes) {
  const uint64_t addr = smem_u32(smem_ptr);
  return ((addr >> 4) & 0x3FFFull) | (uint64_t((lbo_bytes >> 4) & 0x3FFF) << 16) |
         (uint64_t((sbo_bytes >> 4) & 0x3FFF) << 32) | (1ull << 62);
}
// The dynamic shared memory rounded up to a swizzle atom (the kernels ask for kAlignSlack more).
__device__ __forceinline__ unsigned char* align_to_atom(unsigned char* p) {
  const uint32_t s = smem_u32(p), pad = (kWgmmaAtomBytes - s % kWgmmaAtomBytes) % kWgmmaAtomBytes;
  return p + pad;
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
// Generic-proxy writes to shared memory (cp.async, plain stores) made visible to the tensor
// cores' async proxy: each writing thread, before the barrier that precedes the wgmma.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Ties the accumulators to the surrounding asm so the compiler neither reads them between a
// wgmma and its wait nor moves their writes past the fence.
template <int kNT>
__device__ __forceinline__ void wgmma_fence_operands(float (&d)[kNT][4]) {
#pragma unroll
  for (int j = 0; j < kNT; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) asm volatile("" : "+f"(d[j][i])::"memory");
}
// d[j][i] (n8 block j, the mma.sync C-fragment position i; this warp's 16 of the warpgroup's 64
// rows) += A * B over one k16 step: wgmma.mma_async m64n128k16, fp32 accumulate, A (64 x 16) and
// B (16 x 128) from shared memory, both MN-major (imm-trans-a = imm-trans-b = 1).
__device__ __forceinline__ void wgmma_m64n128k16_ss(float (&d)[16][4], uint64_t adesc, uint64_t bdesc) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1, 1, 1;\n}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]),
        "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]),
        "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]),
        "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]),
        "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),
        "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]),
        "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]),
        "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]),
        "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]),
        "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]),
        "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]),
        "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]),
        "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]),
        "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3])
      : "l"(adesc), "l"(bdesc), "r"(1)
      : "memory");
#else
  (void)d, (void)adesc, (void)bdesc;
  __trap();  // wgmma needs sm_90a (the project builds only that target)
#endif
}

// Stage `rows` x `width` bf16 of a row-major [nrows_total, ld] operand, starting at (r0, c0),
// into shared memory; out-of-range elements are +0. group_at(idx) gives 16-byte group idx's
// staged (row, col) and its element offset in dst: row-major with a padded stride for ldmatrix
// operands, the 128-byte swizzled layout for wgmma's (wgmma_sw128_offset_bytes).
// vec: 16-byte cp.async with zero fill (rows 16-byte aligned); otherwise plain loads and stores.
template <int kRows, int kWidth, int kThreads, class GroupAt>
__device__ __forceinline__ void stage_operand(uint16_t* dst, GroupAt group_at, const bf16* src, int64_t ld,
                                              int64_t nrows_total, int64_t r0, int64_t c0, bool vec,
                                              int tid) {
  constexpr int kGroups = kRows * kWidth / 8;
  static_assert(kGroups % kThreads == 0, "staging groups must divide evenly among threads");
#pragma unroll
  for (int it = 0; it < kGroups / kThreads; ++it) {
    int dst_off;
    const FragCoord gc = group_at(tid + it * kThreads, dst_off);
    uint16_t* d = dst + dst_off;
    const int64_t r = r0 + gc.row, c = c0 + gc.col;
    const int n_ok = staging_valid_count(r, c, nrows_total, ld);
    if (vec) {
      const bf16* s = n_ok ? src + r * ld + c : src;  // a valid address even when nothing is read
      cp_async_16_zfill(d, s, 2 * n_ok);
    } else {
      uint32_t w[4];
#pragma unroll
      for (int e = 0; e < 8; e += 2) {
        const bf16 lo = e < n_ok ? src[r * ld + c + e] : bf16::from_bits(0);
        const bf16 hi = e + 1 < n_ok ? src[r * ld + c + e + 1] : bf16::from_bits(0);
        w[e / 2] = bf16_pack2(lo, hi);
      }
      *reinterpret_cast<uint4*>(d) = make_uint4(w[0], w[1], w[2], w[3]);
    }
  }
}

// The fast path of stage_operand for the wgmma tile: a chunk wholly inside the operand
// (every row present, every group 8 valid elements, rows 16-byte aligned), staged with 16-byte
// cp.async at constant steps (Sw128StagingSteps). The same groups and destinations as
// stage_operand with the swizzled group_at.
template <int kRows, int kWidth, int kThreads>
__device__ __forceinline__ void stage_operand_whole_sw128(uint16_t* dst, const bf16* src, int64_t ld, int64_t r0,
                                                          int64_t c0, int tid) {
  using Steps = Sw128StagingSteps<kWidth, kThreads>;
  constexpr int kGroups = kRows * kWidth / 8;
  static_assert(kGroups % kThreads == 0, "staging groups must divide evenly among threads");
  const FragCoord g = staging_group(tid, kWidth);
  const bf16* s = src + (r0 + g.row) * ld + (c0 + g.col);
  unsigned char* d = reinterpret_cast<unsigned char*>(dst) + wgmma_sw128_offset_bytes(g.row, g.col, kWidth);
  const int64_t src_step = int64_t(Steps::kRowsPerStep) * ld;
#pragma unroll
  for (int k = 0; k < kGroups / kThreads; ++k) cp_async_16_zfill(d + k * Steps::kDstStepBytes, s + k * src_step, 16);
}

// One warp's view of a staged chunk for mma_chunk_schedule (wgrad_tile_layout.h): ldmatrix from
// the slot being read, mma.sync into the warp's accumulators.
template <class Cfg>
struct WarpMmaOps {
  struct AFrag {
    uint32_t r[4];
  };
  struct BPair {
    uint32_t r[4];  // b-registers 0, 1 of n-tile 2 np, then of n-tile 2 np + 1
  };
  const uint16_t* sA;
  const uint16_t* sB;
  int lane;
  FragCoord wo;
  float (&acc)[Cfg::kMT][Cfg::kNT][4];

  __device__ __forceinline__ void load_a(int mt, int ks, AFrag& f) const {
    const FragCoord ra = ldsm_a_row_address(lane, wo.row + 16 * mt, 16 * ks);
    ldmatrix_x4_trans(f.r, sA + ra.row * Cfg::kLdA + ra.col);
  }
  __device__ __forceinline__ void load_b(int np, int ks, BPair& f) const {
    const FragCoord rb = ldsm_b_row_address(lane, 16 * ks, wo.col + 16 * np);
    ldmatrix_x4_trans(f.r, sB + rb.row * Cfg::kLdB + rb.col);
  }
  __device__ __forceinline__ void mma(int mt, int nt, const AFrag& a, const BPair& b) const {
    mma_bf16_16816(acc[mt][nt], a.r, b.r[2 * (nt & 1)], b.r[2 * (nt & 1) + 1]);
  }
};

// One warp's view of a staged chunk for wgmma_chunk_schedule (wgrad_tile_layout.h): A and B
// through descriptors of the slot's swizzled layouts; k-step ks starts two 8-token groups (2 SBO)
// further, the warpgroup's rows at swizzle atom wg.row / 64.
template <class Cfg>
struct WarpgroupWgmmaOps {
  const uint16_t* sA;
  const uint16_t* sB;
  FragCoord wg;  // the warpgroup's origin in the tile
  float (&acc)[Cfg::kMT][Cfg::kNT][4];

  __device__ __forceinline__ void fence() const {
    wgmma_fence_operands<Cfg::kNT>(acc[0]);
    wgmma_fence();
  }
  __device__ __forceinline__ void wgmma(int ks) const {
    constexpr int sbo_a = wgmma_sbo_bytes<Cfg::TR>(), sbo_b = wgmma_sbo_bytes<Cfg::TC>();
    // k-step ks: 8-token groups 2 ks, 2 ks + 1; the warpgroup's rows / columns from atom wg / 64.
    const unsigned char* a = reinterpret_cast<const unsigned char*>(sA) + 2 * ks * sbo_a + (wg.row / 64) * kWgmmaAtomBytes;
    const unsigned char* b = reinterpret_cast<const unsigned char*>(sB) + 2 * ks * sbo_b + (wg.col / 64) * kWgmmaAtomBytes;
    wgmma_m64n128k16_ss(acc[0], wgmma_desc_sw128(a, kWgmmaAtomBytes, sbo_a), wgmma_desc_sw128(b, kWgmmaAtomBytes, sbo_b));
  }
  __device__ __forceinline__ void commit_and_wait() const {
    wgmma_commit();
    wgmma_wait_all();
    wgmma_fence_operands<Cfg::kNT>(acc[0]);
  }
};

// A mainloop caller's hook, called with each chunk's index and the chunk count before the chunk
// is multiplied (the fused kernel's early epilogue prefetch); the default does nothing.
struct NoChunkHook {
  __device__ __forceinline__ void operator()(int64_t, int64_t) const {}
};

// The block's side of mainloop_schedule (wgrad_tile_layout.h): cp.async staging into ring slots,
// barriers, and each warp's mma_chunk_schedule (or wgmma_chunk_schedule) over a landed slot.
template <class Cfg, class Hook>
struct BlockMainloopOps {
  const WgradTileArgs& a;
  int64_t o0, i0;
  uint16_t* smem;
  float (&acc)[Cfg::kMT][Cfg::kNT][4];
  int tid, lane;
  FragCoord wo;
  const Hook& hook;
  int64_t nchunks;

  __device__ __forceinline__ void stage(int64_t chunk, int slot) const {
    uint16_t* sA = smem + slot * Cfg::kStageElems;
    uint16_t* sB = sA + Cfg::TK * Cfg::kLdA;
    const int64_t t0 = chunk * Cfg::TK;
    auto row_major = [](int width, int ld) {
      return [width, ld](int idx, int& off) {
        const FragCoord g = staging_group(idx, width);
        off = g.row * ld + g.col;
        return g;
      };
    };
    if constexpr (Cfg::kWgmma) {
      // The chunk and the tile wholly inside both operands: the fast path (same copies).
      if (a.vec_dy && a.vec_x && t0 + Cfg::TK <= a.T && o0 + Cfg::TR <= a.out && i0 + Cfg::TC <= a.in) {
        stage_operand_whole_sw128<Cfg::TK, Cfg::TR, Cfg::kThreads>(sA, a.dy, a.out, t0, o0, tid);
        stage_operand_whole_sw128<Cfg::TK, Cfg::TC, Cfg::kThreads>(sB, a.x, a.in, t0, i0, tid);
        return;
      }
      auto swizzled = [](int width) {  // row-major groups, stored swizzled
        return [width](int idx, int& off) {
          const FragCoord g = staging_group(idx, width);
          off = wgmma_sw128_offset_bytes(g.row, g.col, width) / 2;
          return g;
        };
      };
      stage_operand<Cfg::TK, Cfg::TR, Cfg::kThreads>(sA, swizzled(Cfg::TR), a.dy, a.out, a.T, t0, o0, a.vec_dy, tid);
      stage_operand<Cfg::TK, Cfg::TC, Cfg::kThreads>(sB, swizzled(Cfg::TC), a.x, a.in, a.T, t0, i0, a.vec_x, tid);
    } else {
      stage_operand<Cfg::TK, Cfg::TR, Cfg::kThreads>(sA, row_major(Cfg::TR, Cfg::kLdA), a.dy, a.out, a.T, t0, o0, a.vec_dy, tid);
      stage_operand<Cfg::TK, Cfg::TC, Cfg::kThreads>(sB, row_major(Cfg::TC, Cfg::kLdB), a.x, a.in, a.T, t0, i0, a.vec_x, tid);
    }
  }
  __device__ __forceinline__ void commit() const { cp_async_commit(); }
  template <int N>
  __device__ __forceinline__ void wait() const {
    cp_async_wait<N>();
    if constexpr (Cfg::kWgmma) fence_proxy_async_shared();  // before the barrier that follows
  }
  __device__ __forceinline__ void barrier() const { __syncthreads(); }
  __device__ __forceinline__ void compute(int64_t chunk, int slot) const {
    hook(chunk, nchunks);
    const uint16_t* sA = smem + slot * Cfg::kStageElems;
    const int ksteps = chunk_ksteps(a.T, chunk * Cfg::TK, Cfg::kKSteps);
    if constexpr (Cfg::kWgmma) {
      const FragCoord wg{wo.row - wo.row % 64, wo.col};
      WarpgroupWgmmaOps<Cfg> ops{sA, sA + Cfg::TK * Cfg::kLdA, wg, acc};
      if (ksteps == Cfg::kKSteps)
        wgmma_chunk_schedule<Cfg, true>(ops, ksteps);
      else
        wgmma_chunk_schedule<Cfg, false>(ops, ksteps);
    } else {
      WarpMmaOps<Cfg> ops{sA, sA + Cfg::TK * Cfg::kLdA, lane, wo, acc};
      if (ksteps == Cfg::kKSteps)
        mma_chunk_schedule<Cfg, true>(ops, ksteps);  // straight-line: every chunk but a ragged last
      else
        mma_chunk_schedule<Cfg, false>(ops, ksteps);
    }
  }
};

// The mainloop. smem: Cfg::kOperandBytes of dynamic shared memory (16-byte aligned; 1024-byte
// aligned for the wgmma tile, whose swizzle atoms must be). On return
// acc holds the tile's G values for this thread (acc_tile_coord gives their positions) and every
// thread has passed a final __syncthreads, so the caller may reuse smem.
// A kStages-deep cp.async ring with one barrier per chunk (mainloop_schedule), so that a chunk's
// copies have kStages - 1 chunks of compute to land, and each chunk's instructions from
// mma_chunk_schedule (fragments software pipelined across k-steps) or, for the wgmma tile,
// wgmma_chunk_schedule.
template <class Cfg, class Hook = NoChunkHook>
__device__ __forceinline__ void wgrad_mainloop(const WgradTileArgs& a, int64_t o0, int64_t i0,
                                               uint16_t* smem, float (&acc)[Cfg::kMT][Cfg::kNT][4],
                                               const Hook& hook = Hook{}) {
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
#pragma unroll
  for (int mt = 0; mt < Cfg::kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < Cfg::kNT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[mt][nt][i] = 0.0f;  // +0: the chain's start

  const int64_t nchunks = (a.T + Cfg::TK - 1) / Cfg::TK;
  BlockMainloopOps<Cfg, Hook> ops{a, o0, i0, smem, acc, tid, lane, warp_origin<Cfg>(warp), hook, nchunks};
  mainloop_schedule<Cfg::kStages>(nchunks, ops);
}

// Host side: can operand rows be staged with 16-byte copies?
inline bool rows_16b_aligned(const void* base, int64_t row_len) {
  return (reinterpret_cast<uintptr_t>(base) % 16 == 0) && (row_len % 8 == 0);
}

}  // namespace fh::gpu
