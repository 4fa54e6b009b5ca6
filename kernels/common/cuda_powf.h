// CUDA's powf, bit for bit, on the host and the device (DESIGN contract 1, compatibility mode).
//
// PyTorch's fused AdamW takes its bias corrections 1 - beta^t from device powf, which is not
// correctly rounded, so a host twin that calls std::pow gets other bits. This is a port of
// libdevice's __nv_powf (CUDA 13.0, nvvm/libdevice/libdevice.10.bc, read with llvm-dis), non-FTZ
// path (__nvvm_reflect("__CUDA_FTZ") == 0: this project builds without -ftz):
//   1. log2|a| as a float-float (__internal_log2_ep): |a| = m * 2^e with m in [sqrt(1/2),
//      sqrt(2)); u = 2(m-1)/(m+1) from an approximate reciprocal, plus the correction term of
//      its residual; log2 m = log2(e) * (u + u^3/12 + ...), an odd polynomial in u, accumulated
//      in float-float with fma.
//   2. b * log2|a| as a float-float product (fma for the low part).
//   3. 2^x: x = n + z, n = rint(hi), a degree-6 polynomial in z, scaled by 2^n in two steps.
//   4. the C99 special cases (0, inf, NaN, negative base, odd integer exponents).
// Every operation below is the one the IR has, in its order, with its constants, and each is one
// correctly rounded IEEE operation of the shim (kernels/common/ieee_shim.h), with fma exactly
// where the IR calls llvm.nvvm.fma.rn.f. The IR has no fast-math flags.
//
// One hardware instruction is not IEEE: the reciprocal is inline PTX rcp.approx.ftz.f32
// (MUFU.RCP), whose exact output NVIDIA does not document (only "at most 1 ulp"). On the device
// the port executes that same instruction, so device port == device powf by construction. On the
// host it is modelled (RcpApproxHostModel): round-to-nearest 1/x, unless a table measured on the
// hardware says otherwise. The reciprocal's input is m + 1 in [1.707, 2.415) and depends on a
// only. Which of the two neighbours of 1/(m+1) the hardware returns changes the final bits
// rarely in the no_fmad build: for the betas 0.9, 0.95, 0.98, 0.99, 0.999, 0.9999 in 53 of the
// 6 * 10^6 pairs (beta, t <= 10^6), none below t = 49, all with results below 2^-7, and in none
// of them do the AdamW bias corrections 1 - beta^t or sqrt(1 - beta^t) change (checked by
// suites/cpu/test_cuda_powf.cpp). cuda_powf_rcp_sensitive says, for any input, whether the
// model can matter at all.
//
// Two builds: nvcc --fmad=false (this project) rounds every libdevice operation separately;
// nvcc's default (--fmad=true, which is how PyTorch is built) leaves plain mul/sub in the PTX and
// ptxas may contract exactly one value-changing pair, f - u with u = (2f) * r, into
// fma(-(2f), r, f) (read from the PTX; whether ptxas does is not visible here, where the toolkit
// has no disassembler). PowfBuild selects which; the torch cross-check (scripts/torch_crosscheck.py)
// decides which one PyTorch's binary has. The fmad build drops the correction of u's rounding,
// so it is less accurate and far more sensitive to the reciprocal's last bit.
//
// NaN results are returned as the canonical NaN 0x7fffffff (what the GPU's arithmetic produces),
// on both targets, so that host and device bits agree.
#pragma once
#include <cstddef>
#include <cstdint>
#include "kernels/common/ieee_shim.h"

namespace fh {

enum class PowfBuild : uint8_t {
  no_fmad = 0,  // nvcc --fmad=false: every operation rounded separately
  fmad = 1,     // nvcc default --fmad=true: f - (2f)*r contracted into one fma
};
inline const char* powf_build_name(PowfBuild b) { return b == PowfBuild::fmad ? "fmad" : "no_fmad"; }

// ---- exact float helpers with PTX cvt semantics, by bits, identical on both targets ----

// cvt.rzi.f32.f32: round toward zero to an integer (keeps the sign of zero; inf/NaN unchanged).
FH_HD float ftrunc_rzi(float x) {
  const uint32_t u = f2u(x);
  const int e = int((u >> 23) & 0xffu) - 127;
  if (e >= 23) return x;                      // already integral, or inf/NaN
  if (e < 0) return u2f(u & 0x80000000u);     // |x| < 1: signed zero
  return u2f(u & ~(0x007fffffu >> e));
}
// cvt.rni.f32.f32: round to nearest integer, ties to even (|x| < 2^23: adding 2^23 rounds the
// fraction away, exactly once, in round-to-nearest-even; the subtraction is exact).
FH_HD float frint_rni(float x) {
  const float ax = fabs_(x);
  if (!(ax < 8388608.0f)) return x;           // >= 2^23 is integral; inf/NaN unchanged
  const float r = fsub(fadd(ax, 8388608.0f), 8388608.0f);
  return u2f(f2u(r) | (f2u(x) & 0x80000000u));
}
// cvt.rmi.f32.f32: round toward minus infinity.
FH_HD float ffloor_rmi(float x) {
  const float t = ftrunc_rzi(x);
  return x < t ? fsub(t, 1.0f) : t;           // only negative non-integers; t - 1 is exact
}
// cvt.rzi.s32.f32: toward zero, saturating, NaN -> 0 (no undefined behaviour on the host).
FH_HD int32_t f2i_rzi_sat(float x) {
  if (fisnan(x)) return 0;
  if (x >= 2147483648.0f) return 2147483647;
  if (x <= -2147483648.0f) return int32_t(-2147483647 - 1);
  return int32_t(ftrunc_rzi(x));
}

// ---- the reciprocal ----

// The two floats next to 1/x for a finite normal x whose reciprocal is normal: rd <= 1/x <= ru.
// When 1/x is a float (x a power of two) both are it. fma(rn, x, -1) is rn*x - 1 rounded once;
// its sign is the sign of rn - 1/x.
FH_HD void rcp_neighbours(float x, float& rd, float& ru) {
  const float rn = fdiv(1.0f, x);
  const float res = ffma(rn, x, -1.0f);
  const bool neg = (f2u(x) >> 31) != 0;
  const float toward_zero = u2f(f2u(rn) - 1u), away = u2f(f2u(rn) + 1u);  // rn is normal here
  if (res == 0.0f) { rd = ru = rn; return; }
  const bool rn_above = res > 0.0f ? !neg : neg;  // rn * x > 1 means |rn| > 1/|x|
  // For positive x, "above" is away from zero; for negative x the order of magnitudes flips.
  if (rn_above) { ru = rn; rd = neg ? away : toward_zero; }
  else { rd = rn; ru = neg ? toward_zero : away; }
}

// A table measured on the GPU (sorted input bits -> the instruction's output bits): finds u.
FH_HD bool approx_table_lookup(const uint32_t* in_bits, const uint32_t* out_bits, size_t count, uint32_t u,
                               uint32_t& out) {
  size_t lo = 0, hi = count;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (in_bits[mid] < u) lo = mid + 1; else hi = mid;
  }
  if (lo < count && in_bits[lo] == u) { out = out_bits[lo]; return true; }
  return false;
}

// Host model of rcp.approx.ftz.f32: round-to-nearest 1/x, with flush-to-zero of subnormal input
// and output, unless the sorted exception table (input bits -> hardware output bits, measured on
// the GPU, e.g. by scripts/torch_crosscheck.py) lists x. Without a table it is a model, not the
// instruction: see cuda_powf_rcp_sensitive.
struct RcpApproxHostModel {
  const uint32_t* in_bits = nullptr;   // ascending
  const uint32_t* out_bits = nullptr;
  size_t count = 0;
  FH_HD float operator()(float x) const {
    uint32_t u = f2u(x);
    if (fisnan(x)) return u2f(0x7fffffffu);
    if ((u & 0x7f800000u) == 0) u &= 0x80000000u;   // ftz input
    uint32_t measured;
    if (approx_table_lookup(in_bits, out_bits, count, u, measured)) return u2f(measured);
    const float r = fdiv(1.0f, u2f(u));
    const uint32_t ru = f2u(r);
    if ((ru & 0x7f800000u) == 0) return u2f(ru & 0x80000000u);  // ftz output
    return r;
  }
};

// The instruction itself on the device; the host model on the host.
struct RcpApproxFtz {
  FH_HD float operator()(float x) const {
#if defined(__CUDA_ARCH__)
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
#else
    return RcpApproxHostModel{}(x);
#endif
  }
};

// Always the given neighbour of 1/x (for the sensitivity check).
struct RcpNeighbour {
  bool up = false;
  FH_HD float operator()(float x) const {
    float rd, ru;
    rcp_neighbours(x, rd, ru);
    return up ? ru : rd;
  }
};

// ---- the port ----

template <PowfBuild kBuild, class Rcp>
FH_HD float cuda_powf_with(float a, float b, const Rcp& rcp) {
  // b is an odd integer iff |b - 2 trunc(b/2)| == 1 (false for inf and NaN).
  const float half_b = ftrunc_rzi(fmul(0.5f, b));
  const bool b_odd = fabs_(fsub(b, fadd(half_b, half_b))) == 1.0f;

  // 1. log2|a| = l_hi + l_lo.
  float ax = fabs_(a);
  float expo = 0.0f;
  if (ax < u2f(0x00800000u)) {          // subnormal |a|: scale by 2^24 (the non-FTZ path)
    ax = fmul(ax, 16777216.0f);
    expo = -24.0f;
  }
  const uint32_t abits = f2u(ax);
  const uint32_t ebits = (abits - 0x3F3504F3u) & 0xFF800000u;  // exponent that puts m in [0.7071, 1.4142)
  const float m = u2f(abits - ebits);
  const float e = ffma(float(int32_t(ebits)), u2f(0x34000000u) /* 2^-23 */, expo);
  const float f = fadd(m, -1.0f);
  const float m_plus_1 = fadd(m, 1.0f);
  const float r = rcp(m_plus_1);
  const float f2 = fadd(f, f);
  const float u = fmul(f2, r);          // 2f/(m+1), the atanh argument
  const float uu = fmul(u, u);
  const float f_minus_u = kBuild == PowfBuild::fmad ? ffma(fneg(f2), r, f) : fsub(f, u);
  const float twice = fadd(f_minus_u, f_minus_u);
  const float resid = ffma(fneg(u), f, twice);  // 2f - u(2 + f)
  const float u_lo = fmul(r, resid);            // the correction: u + u_lo ~ 2f/(2 + f)
  float p = ffma(u2f(0x3A2C32E4u), uu, u2f(0x3B52E7DBu));
  p = ffma(p, uu, u2f(0x3C93BB73u));
  p = ffma(p, uu, u2f(0x3DF6384Fu));
  const float q = fmul(p, uu);                  // (log2(e) u^2/12 + ...)
  const float log2e_hi = u2f(0x3FB8AA3Bu), log2e_lo = u2f(0x32A55E34u);
  const float hi = ffma(u, log2e_hi, e);
  float lo = ffma(u, log2e_hi, fsub(e, hi));
  lo = ffma(u_lo, log2e_hi, lo);
  lo = ffma(u, log2e_lo, lo);
  lo = ffma(fmul(q, 3.0f), u_lo, lo);
  lo = ffma(q, u, lo);
  const float l_hi = fadd(hi, lo);              // fast two-sum
  const float l_lo = fadd(lo, fneg(fadd(l_hi, fneg(hi))));

  // 2. b * log2|a| = ph + pl.
  const float ph = fmul(l_hi, b);
  float pl = ffma(l_hi, b, fneg(ph));
  pl = ffma(l_lo, b, pl);

  // 3. 2^(ph + pl).
  const float n = frint_rni(ph);
  const float z = fadd(fsub(ph, n), pl);
  float w = ffma(u2f(0x391FCB8Eu), z, u2f(0x3AAF85EDu));
  w = ffma(w, z, u2f(0x3C1D9856u));
  w = ffma(w, z, u2f(0x3D6357BBu));
  w = ffma(w, z, u2f(0x3E75FDECu));
  w = ffma(w, z, u2f(0x3F317218u));
  w = ffma(w, z, 1.0f);
  const int32_t ni = f2i_rzi_sat(n);
  const uint32_t bias = n > 0.0f ? 0u : 0x83000000u;     // two scale steps keep each factor normal
  float t = fmul(fmul(w, u2f(0x7F000000u + bias)), u2f((uint32_t(ni) << 23) - bias));
  if (fabs_(ph) > 152.0f) t = ph < 0.0f ? 0.0f : u2f(0x7F800000u);

  // 4. special cases, in the IR's order.
  float result;
  if (a == 1.0f || b == 0.0f) {
    result = 1.0f;
  } else if (fisnan(a) || fisnan(b)) {
    result = fadd(a, b);
  } else if (a == 0.0f || fabs_(a) == u2f(0x7F800000u)) {
    uint32_t bits = f2u(fadd(a, a));                      // +-0 or +-inf, sign kept
    if (b < 0.0f) bits ^= 0x7F800000u;                    // 0 <-> inf
    if (!b_odd) bits &= 0x7FFFFFFFu;
    result = u2f(bits);
  } else if (a == -1.0f && fabs_(b) == u2f(0x7F800000u)) {
    result = 1.0f;
  } else if (a < 0.0f) {
    result = b_odd ? fneg(t) : t;
    if (b != ffloor_rmi(b)) result = u2f(0x7FFFFFFFu);   // negative base, non-integer exponent
  } else {
    result = t;
  }
  return fisnan(result) ? u2f(0x7FFFFFFFu) : result;
}

// powf as this project's nvcc (--fmad=false) compiles it; on the host with the reciprocal model.
FH_HD float cuda_powf(float a, float b) { return cuda_powf_with<PowfBuild::no_fmad>(a, b, RcpApproxFtz{}); }
// powf as nvcc's default (--fmad=true) may compile it (see the header comment).
FH_HD float cuda_powf_fmad(float a, float b) { return cuda_powf_with<PowfBuild::fmad>(a, b, RcpApproxFtz{}); }
FH_HD float cuda_powf_build(PowfBuild build, float a, float b) {
  return build == PowfBuild::fmad ? cuda_powf_fmad(a, b) : cuda_powf(a, b);
}

// True when the result depends on which neighbour of 1/(m+1) rcp.approx returns (the hardware's
// "at most 1 ulp" allows either), i.e. where the host model, not the algorithm, decides the bits.
FH_HD bool cuda_powf_rcp_sensitive(PowfBuild build, float a, float b) {
  float lo, hi;
  if (build == PowfBuild::fmad) {
    lo = cuda_powf_with<PowfBuild::fmad>(a, b, RcpNeighbour{false});
    hi = cuda_powf_with<PowfBuild::fmad>(a, b, RcpNeighbour{true});
  } else {
    lo = cuda_powf_with<PowfBuild::no_fmad>(a, b, RcpNeighbour{false});
    hi = cuda_powf_with<PowfBuild::no_fmad>(a, b, RcpNeighbour{true});
  }
  return f2u(lo) != f2u(hi);
}

}  // namespace fh
