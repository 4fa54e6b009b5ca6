// INT8 block-quantized optimizer state: blocks of 64 contiguous elements along `in`, one fp32
// absmax per block (DESIGN contract 5: a block never straddles a tile or shard edge).
//
// Codec (linear, absmax-scaled, round-to-nearest-even on the integer grid):
//   signed moments      q in [-127, 127],  step = absmax / 127
//   non-negative moments q in [0, 255],    step = absmax / 255
//   encode: q = clamp(rne(x / absmax * L)), L = 127 or 255, evaluated as fl(fl(x / absmax) * L)
//   decode: x' = fl(fl(q * absmax) / L)
// Error bound (derived in reports/SCHEMA.md "INT8 codec bound" and checked exactly by
// suites/cpu/test_int8_codec.cpp): for a finite block with absmax a > 0 and every element x,
//   |x' - x| <= a / (2L) + a * 4u / L * (L + 1) + 2^-149,   u = 2^-24,
// i.e. half a quantisation step plus a few fp32 roundings of size a*u, plus one subnormal ulp.
// Special blocks: absmax = 0 -> every q = 0, decodes to +0 exactly. A NaN anywhere in the block
// makes absmax NaN and the whole block (only that block) decodes to NaN. An infinity makes
// absmax inf: the infinite elements decode to +-inf... see int8_encode for the exact rule.
#pragma once
#include "kernels/common/ieee_shim.h"

namespace fh {

constexpr int kInt8Block = 64;

FH_HD int int8_levels(bool nonnegative) { return nonnegative ? 255 : 127; }

// Round half to even of a finite float in [-256, 256] to an integer, exactly.
FH_HD int rne_small(float y) {
  // Adding and subtracting 1.5*2^23 rounds to an integer with the current (nearest-even) mode.
  const float magic = 12582912.0f;
  return int(fsub(fadd(y, magic), magic));
}

// Encode n <= 64 values of one block. q is int8 storage; for non-negative moments the byte is
// read as unsigned (0..255). Negative inputs to the non-negative codec (never produced by a
// correct rule) clamp to 0.
FH_HD void int8_encode_block(const float* x, int n, bool nonnegative, uint8_t* q, float* absmax) {
  float a = 0.0f;
  for (int i = 0; i < n; ++i) a = fmax_nan(a, fabs_(x[i]));
  *absmax = a;
  const int L = int8_levels(nonnegative);
  const bool special = !(a > 0.0f) || !fisfinite(a);  // zero, NaN or inf absmax
  for (int i = 0; i < n; ++i) {
    int qi = 0;
    if (!special) {
      int r = rne_small(fmul(fdiv(x[i], a), float(L)));
      int lo = nonnegative ? 0 : -L;
      qi = r < lo ? lo : (r > L ? L : r);
    } else if (!fisnan(a) && !(a > 0.0f)) {
      qi = 0;
    } else {
      // inf absmax: infinite elements keep their sign at the extreme level, others go to 0,
      // and decode gives +-inf for them (inf * L / L) and 0 for the rest (0 * inf is avoided
      // in decode). NaN absmax: q is irrelevant, decode returns NaN.
      qi = fisfinite(x[i]) ? 0 : (f2u(x[i]) >> 31 ? -L : L);
      if (nonnegative && qi < 0) qi = 0;
    }
    q[i] = uint8_t(qi & 0xff);
  }
}

FH_HD float int8_decode(uint8_t qbyte, bool nonnegative, float absmax) {
  const int L = int8_levels(nonnegative);
  const int q = nonnegative ? int(qbyte) : int(int8_t(qbyte));
  if (fisnan(absmax)) return absmax;
  if (q == 0) return 0.0f;
  return fdiv(fmul(float(q), absmax), float(L));
}

}  // namespace fh
