// bf16 as a storage type of its own, identical on host and device (no dependence on cuda_bf16.h
// conversions). Widening is exact. Narrowing is round-to-nearest-even or stochastic rounding
// (DESIGN contract 4).
#pragma once
#include "kernels/common/ieee_shim.h"

namespace fh {

// One bf16 value: its 16 bits, nothing else (standard layout, 2 bytes, trivially copyable, so
// that arrays of it may be copied as bytes, uploaded, and read as raw 16-bit words by the kernels'
// vector loads). It is made only from its bits, explicitly (bf16::from_bits) or by the rounding
// functions below: a float, an int or a uint16_t read as bf16 does not compile
// (suites/cpu/test_bf16_type.cpp holds the rule). Equal means equal bits (+0 != -0, NaN == NaN
// with the same bits), as the bitwise oracles compare.
struct bf16 {
  uint16_t bits;
  bf16() = default;  // user-declared: not an aggregate, so bf16{u} and bf16 b = {u} do not compile
  FH_HD static constexpr bf16 from_bits(uint16_t b) {
    bf16 v{};
    v.bits = b;
    return v;
  }
  friend FH_HD constexpr bool operator==(bf16 a, bf16 b) { return a.bits == b.bits; }
  friend FH_HD constexpr bool operator!=(bf16 a, bf16 b) { return a.bits != b.bits; }
};
static_assert(sizeof(bf16) == 2 && alignof(bf16) == 2, "bf16 is its 16 bits");

// Two bf16 in one 32-bit word, the lower address in the low half, as a vector load or store of
// consecutive elements holds them: the kernels' one bridge between typed values and raw words.
FH_HD uint32_t bf16_pack2(bf16 lo, bf16 hi) { return uint32_t(lo.bits) | (uint32_t(hi.bits) << 16); }
FH_HD bf16 bf16_low(uint32_t w) { return bf16::from_bits(uint16_t(w)); }
FH_HD bf16 bf16_high(uint32_t w) { return bf16::from_bits(uint16_t(w >> 16)); }

FH_HD float bf16_to_float(bf16 b) { return u2f(uint32_t(b.bits) << 16); }

// Round-to-nearest-even, keeping subnormals; NaN stays a quiet NaN with its sign; values that
// round above the largest finite bf16 become infinity (IEEE overflow under RNE). On raw bits: the
// one place the rounding is written; float_to_bf16_rne below gives it as a bf16.
FH_HD uint16_t float_to_bf16_rne_bits(float x) {
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
// with the same probabilities. NaN gives a quiet NaN with its sign; +-inf stays +-inf. On raw
// bits, as float_to_bf16_rne_bits.
FH_HD uint16_t float_to_bf16_sr_bits(float x, uint32_t r) {
  uint32_t u = f2u(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);
  if ((u & 0x7fffffffu) == 0x7f800000u) return uint16_t(u >> 16);
  u += (r & 0xffffu);
  return uint16_t(u >> 16);
}

FH_HD bf16 float_to_bf16_rne(float x) { return bf16::from_bits(float_to_bf16_rne_bits(x)); }
FH_HD bf16 float_to_bf16_sr(float x, uint32_t r) { return bf16::from_bits(float_to_bf16_sr_bits(x, r)); }

}  // namespace fh
