// INT8 block-quantized optimizer state: blocks of 64 contiguous elements along `in`, one fp32
// absmax per block (DESIGN contract 5: a block never straddles a tile or shard edge; the block at
// a row's end may be shorter). The derivation of everything below is in INT8_CODEC.md next to
// this file; suites/cpu/test_int8_codec.cpp checks it exactly.
//
// Codec (linear, absmax-scaled), L = 127 for signed moments (q in [-127, 127], stored as int8)
// and L = 255 for non-negative moments (q in [0, 255], stored as uint8):
//   absmax: a = max |x_i| over the block (a NaN element makes a, stored as 0x7FC00000)
//   encode: q_i = clamp(rne(fl(fl(x_i / a) * L)), lo, L),   lo = -L or 0
//   decode: x'_i = fl(fl(q_i / L) * a)      (q_i = 0 gives +0 without touching a)
// Each fl is one correctly rounded fp32 operation of the IEEE shim (fh::fdiv, fh::fmul), so
// host and device give the same bits. |fl(q/L)| <= 1, so decode never overflows, and q = +-L
// decodes to +-a exactly.
// Error bound, for a finite block with absmax a and every element x (x >= 0 for the
// non-negative codec), u = 2^-24:
//   |x' - x| <= B(a) = a / (2L) + 4 u a + 2^-150
// (half a quantisation step, two fp32 roundings in encode and two in decode, and half a
// subnormal spacing for a decode that lands in the subnormal range); int8_codec_bound returns B
// rounded up.
// Special blocks:
//   a = 0 (all elements +-0): every q = 0, every element decodes to +0.
//   a = NaN (some element NaN): q = 0, absmax is stored as the one quiet NaN 0x7FC00000
//     (whatever the elements' NaN payloads: kInt8CanonicalNanBits), and every element of this
//     block (only this block) decodes to it.
//   a = inf (some element +-inf, none NaN): +inf -> q = L, -inf -> q = -L (0 for the
//     non-negative codec), every finite element -> q = 0. Decode: +-inf at +-L, +0 elsewhere.
//     The finite elements' values are lost (B(inf) = inf); no other block is affected.
//   negative x in the non-negative codec (never produced by a correct rule): q = 0, decodes
//     to +0; |x| still counts toward a.
// Re-encoding a decoded block reproduces a and q exactly (for every finite a; for the
// non-negative codec, when no element is negative). For a <= L * 2^-149 (a subnormal absmax
// coarser than the step) the codec is even lossless: decode(encode(x)) = x.
#pragma once
#include "kernels/common/ieee_shim.h"

namespace fh {

constexpr int kInt8Block = 64;

FH_HD int int8_levels(bool nonnegative) { return nonnegative ? 255 : 127; }

// Round half to even of a float in [-2^22, 2^22] to an integer, exactly: adding 1.5*2^23 lands
// in [2^23, 2^24), where the fp32 spacing is 1, so the addition rounds to an integer (RNE) and
// the subtraction is exact.
FH_HD int rne_small(float y) {
  const float magic = 12582912.0f;
  return int(fsub(fadd(y, magic), magic));
}

// The one quiet NaN a NaN block's absmax is stored as. The max over a block is exact and
// independent of the order the elements are visited in, except for which NaN payload wins; fixing
// the stored NaN makes the absmax order independent too, so the GPU's warp reduction and the
// host's sequential loop store the same bits.
constexpr uint32_t kInt8CanonicalNanBits = 0x7fc00000u;

// One step of the block absmax: a = max(a, |x|), a NaN on either side making a NaN. Start from
// +0; any visiting order gives the same result up to the NaN payload (see int8_canonical_absmax).
FH_HD float int8_absmax_step(float a, float x) { return fmax_nan(a, fabs_(x)); }
FH_HD float int8_canonical_absmax(float a) { return fisnan(a) ? u2f(kInt8CanonicalNanBits) : a; }

// The absmax of n <= 64 values of one block, as stored (NaN canonical).
FH_HD float int8_block_absmax(const float* x, int n) {
  float a = 0.0f;
  for (int i = 0; i < n; ++i) a = int8_absmax_step(a, x[i]);
  return int8_canonical_absmax(a);
}

// The byte of one element x of a block whose stored absmax is a (int8 for signed moments, uint8
// for non-negative ones). D: the division (IeeeDivSqrt; the fused epilogue speculates with the
// GPU's branch-free one and redoes out-of-range elements with IeeeDivSqrt, so the same bits).
template <class D = IeeeDivSqrt>
FH_HD uint8_t int8_encode_value(float x, float a, bool nonnegative, const D& d = D{}) {
  const int L = int8_levels(nonnegative);
  const int lo = nonnegative ? 0 : -L;
  int qi = 0;
  if (a > 0.0f && fisfinite(a)) {  // regular block (false for 0, NaN and inf)
    // |x / a| <= 1, so the rounding cannot leave [-L, L]; the clamp is for the non-negative
    // codec's negative inputs (and keeps bad input from wrapping a byte).
    qi = rne_small(fmul(d.div(x, a), float(L)));
  } else if (a > 0.0f && !fisfinite(x)) {  // infinite block (a = inf): only +-inf keep a level
    qi = (f2u(x) >> 31) ? -L : L;
  }
  qi = qi < lo ? lo : (qi > L ? L : qi);
  return uint8_t(qi & 0xff);
}

// Encode n <= 64 values of one block. q is the byte storage: int8 for signed moments, uint8 for
// non-negative ones.
FH_HD void int8_encode_block(const float* x, int n, bool nonnegative, uint8_t* q, float* absmax) {
  const float a = int8_block_absmax(x, n);
  *absmax = a;
  for (int i = 0; i < n; ++i) q[i] = int8_encode_value(x[i], a, nonnegative);
}

// q / L, correctly rounded, for |q| <= 255 and L = int8_levels: the rounded reciprocal R, one
// multiply and one correction step with the exact remainder q - q0 L (an FMA); no division, no
// branch. The same bits as fdiv(q, L) for every q and both L (test_int8_codec checks all 1022).
FH_HD float int8_level_quotient(int q, bool nonnegative) {
  const float L = float(int8_levels(nonnegative));
  const float R = nonnegative ? 0x1.010102p-8f : 0x1.020408p-7f;  // RN(1/255), RN(1/127)
  const float x = float(q), q0 = fmul(x, R);
  return ffma(ffma(fneg(q0), L, x), R, q0);
}

// A code's value: q / L times the block's absmax; +0 for q = 0 (also where absmax is infinite:
// 0 * inf would be NaN), the NaN for a NaN block. Selects rather than branches, so a lane's
// decodes interleave.
FH_HD float int8_decode(uint8_t qbyte, bool nonnegative, float absmax) {
  const int q = nonnegative ? int(qbyte) : int(int8_t(qbyte));
  const float v = fmul(int8_level_quotient(q, nonnegative), absmax);
  return fisnan(absmax) ? absmax : (q == 0 ? 0.0f : v);
}

// B(a) = a/(2L) + 4*2^-24*a + 2^-150, rounded up (host only; the bound is a verdict's threshold,
// never used by a producer). Each double operation below errs by at most 2^-53 relatively and
// every term is >= 2^-150 (no underflow), so the computed sum is >= B(1 - 2^-53)^3; the final
// factor (1 + 2^-50), itself rounded, more than makes up for it. NaN gives NaN, inf gives inf.
inline double int8_codec_bound(float absmax, bool nonnegative) {
  const double a = double(absmax);
  const double half_step = a / double(2 * int8_levels(nonnegative));
  const double roundings = a * 0x1p-22;  // 4u*a, exact
  const double subnormal = 0x1p-150;
  return ((half_step + roundings) + subnormal) * (1.0 + 0x1p-50);
}

}  // namespace fh
