// bf16 as raw bits, identical on host and device (no dependence on cuda_bf16.h conversions).
// Widening is exact. Narrowing is round-to-nearest-even or stochastic rounding (DESIGN contract 4).
#pragma once
#include "kernels/common/ieee_shim.h"

namespace fh {

struct bf16_bits { uint16_t bits; };

FH_HD float bf16_to_float(uint16_t b) { return u2f(uint32_t(b) << 16); }

// Round-to-nearest-even, keeping subnormals; NaN stays a quiet NaN with its sign; values that
// round above the largest finite bf16 become infinity (IEEE overflow under RNE).
FH_HD uint16_t float_to_bf16_rne(float x) {
  uint32_t u = f2u(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);
  uint32_t lsb = (u >> 16) & 1u;
  u += 0x7fffu + lsb;
  return uint16_t(u >> 16);
}

// Stochastic rounding with 16 random bits r (only the low 16 bits of r are used): add r to the
// 16 bits that bf16 drops, then truncate. The magnitude rounds up with probability equal to the
// dropped fraction, so E[SR(x)] = x exactly for every finite x whose rounding cannot overflow
// (|x| <= largest finite bf16, 0x7f7f). Larger finite x round to the largest bf16 or to infinity,
// with the same probabilities. NaN gives a quiet NaN with its sign; +-inf stays +-inf.
FH_HD uint16_t float_to_bf16_sr(float x, uint32_t r) {
  uint32_t u = f2u(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);
  if ((u & 0x7fffffffu) == 0x7f800000u) return uint16_t(u >> 16);
  u += (r & 0xffffu);
  return uint16_t(u >> 16);
}

}  // namespace fh
