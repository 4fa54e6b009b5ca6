// The one place where per-element arithmetic meets the hardware (DESIGN contract 1).
// Every rule does its per-element arithmetic through these functions, so each operation is one
// correctly rounded IEEE operation on both targets: the __*_rn intrinsics on the device (never
// contracted into an FMA by nvcc), and plain operations on the host, which is built with
// -ffp-contract=off. fma appears only where a rule calls fh::ffma explicitly.
#pragma once
#include <cstdint>
#include <cstring>
#if !defined(__CUDACC__)
#include <cmath>
#endif

#if defined(__CUDACC__)
#define FH_HD __host__ __device__ __forceinline__
#define FH_HD_NOINLINE __host__ __device__
#else
#define FH_HD inline
#define FH_HD_NOINLINE
#endif

namespace fh {

#if defined(__CUDA_ARCH__)
FH_HD float fadd(float a, float b) { return __fadd_rn(a, b); }
FH_HD float fsub(float a, float b) { return __fsub_rn(a, b); }
FH_HD float fmul(float a, float b) { return __fmul_rn(a, b); }
FH_HD float fdiv(float a, float b) { return __fdiv_rn(a, b); }
FH_HD float fsqrt(float a) { return __fsqrt_rn(a); }
FH_HD float ffma(float a, float b, float c) { return __fmaf_rn(a, b, c); }
FH_HD double dadd(double a, double b) { return __dadd_rn(a, b); }
FH_HD double dsub(double a, double b) { return __dsub_rn(a, b); }
FH_HD double dmul(double a, double b) { return __dmul_rn(a, b); }
FH_HD double ddiv(double a, double b) { return __ddiv_rn(a, b); }
FH_HD double dsqrt(double a) { return __dsqrt_rn(a); }
FH_HD double dfma(double a, double b, double c) { return __fma_rn(a, b, c); }
FH_HD float d2f(double a) { return __double2float_rn(a); }
FH_HD uint32_t f2u(float x) { return __float_as_uint(x); }
FH_HD float u2f(uint32_t u) { return __uint_as_float(u); }
#else
// The GPU's fp32 arithmetic returns the one canonical NaN 0x7FFFFFFF whatever the operands' NaN
// payloads (measured on the H200: an INT8 state decoded from the canonical absmax 0x7FC00000
// gives 0x7FFFFFFF weights), while x86 propagates an operand's payload (or makes 0xFFC00000):
// the host canonicalizes every fp32 result likewise, so NaN bits agree too.
inline float fcanon(float r) {
  if (r == r) return r;
  const uint32_t u = 0x7fffffffu;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
inline float fadd(float a, float b) { return fcanon(a + b); }
inline float fsub(float a, float b) { return fcanon(a - b); }
inline float fmul(float a, float b) { return fcanon(a * b); }
inline float fdiv(float a, float b) { return fcanon(a / b); }
inline float fsqrt(float a) { return fcanon(std::sqrt(a)); }
inline float ffma(float a, float b, float c) { return fcanon(std::fmaf(a, b, c)); }
inline double dadd(double a, double b) { return a + b; }
inline double dsub(double a, double b) { return a - b; }
inline double dmul(double a, double b) { return a * b; }
inline double ddiv(double a, double b) { return a / b; }
inline double dsqrt(double a) { return std::sqrt(a); }
inline double dfma(double a, double b, double c) { return std::fma(a, b, c); }
inline float d2f(double a) { return static_cast<float>(a); }
inline uint32_t f2u(float x) { uint32_t u; std::memcpy(&u, &x, 4); return u; }
inline float u2f(uint32_t u) { float x; std::memcpy(&x, &u, 4); return x; }
#endif

// The division and square root a rule calls through a DivSqrt policy (rule_common.h): IeeeDivSqrt
// is fdiv / fsqrt; the GPU element paths speculate with SpeculativeDivSqrt
// (kernels/gpu/speculative_update.cuh).
struct IeeeDivSqrt {
  FH_HD float div(float a, float b) const { return fdiv(a, b); }
  FH_HD float sqrt(float a) const { return fsqrt(a); }
};

#if defined(__CUDACC__)
// nvcc's own fast paths of div.rn.f32 and sqrt.rn.f32 on sm_90 (the SASS of __fdiv_rn and
// __fsqrt_rn), without their per-operation branch to the slow path, so that a rule's elements can
// interleave. `ok` says the operands lie where the fast path is the correctly rounded result, hence
// bit-identical to __fdiv_rn / __fsqrt_rn (checked on the GPU: test_gpu_divsqrt); outside, the
// result is meaningless and the caller redoes the operation with the IEEE path.
// Square root: MUFU.RSQ, two FMUL.FTZ, two FFMA; nvcc's range (bits - 0x0d000000 <= 0x727fffff:
// positive, finite, at least 2^-101).
template <bool kPlantedNoCorrection = false>
__device__ __forceinline__ float fsqrt_fast(float a, bool& ok) {
  ok = __float_as_uint(a) - 0x0d000000u <= 0x727fffffu;
  float r, y, h;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(a));
  asm("mul.ftz.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(r));
  asm("mul.ftz.f32 %0, %1, 0f3F000000;" : "=f"(h) : "f"(r));
  if (kPlantedNoCorrection) return y;  // planted (test_gpu_divsqrt only)
  return __fmaf_rn(__fmaf_rn(-y, y, a), h, y);
}
// Division: MUFU.RCP, one Newton step on the reciprocal, the quotient and one remainder correction
// (five FFMA). The range is ours, narrower than FCHK's: |a| and |b| in [2^-60, 2^61), where every
// intermediate (reciprocal, quotient, exact remainder a - q b) is a normal number.
template <bool kPlantedNoCorrection = false>
__device__ __forceinline__ float fdiv_fast(float a, float b, bool& ok) {
  constexpr uint32_t lo = 0x21800000u, span = 0x5e000000u - 0x21800000u;  // 2^-60 .. 2^61
  ok = ((__float_as_uint(a) & 0x7fffffffu) - lo < span) & ((__float_as_uint(b) & 0x7fffffffu) - lo < span);
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
  r = __fmaf_rn(r, __fmaf_rn(r, -b, 1.0f), r);
  const float q = __fmaf_rn(r, a, 0.0f);
  if (kPlantedNoCorrection) return q;  // planted (test_gpu_divsqrt only)
  return __fmaf_rn(r, __fmaf_rn(q, -b, a), q);
}
// Fast division and square root that record in *bad whether any operation left its range.
struct SpeculativeDivSqrt {
  bool* bad;
  __device__ __forceinline__ float div(float a, float b) const {
    bool ok;
    const float q = fdiv_fast(a, b, ok);
    *bad |= !ok;
    return q;
  }
  __device__ __forceinline__ float sqrt(float a) const {
    bool ok;
    const float s = fsqrt_fast(a, ok);
    *bad |= !ok;
    return s;
  }
};
#endif

FH_HD float fneg(float a) { return u2f(f2u(a) ^ 0x80000000u); }  // exact, also for NaN and 0
FH_HD float fabs_(float a) { return u2f(f2u(a) & 0x7fffffffu); }
FH_HD bool fisnan(float a) { return (f2u(a) & 0x7fffffffu) > 0x7f800000u; }
FH_HD bool fisfinite(float a) { return (f2u(a) & 0x7f800000u) != 0x7f800000u; }
// max of two magnitudes-only helper with NaN propagation (a NaN wins), used by block absmax.
FH_HD float fmax_nan(float a, float b) { return (fisnan(a) || a > b) ? a : b; }

}  // namespace fh
