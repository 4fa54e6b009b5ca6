// Distances in units in the last place, for the bitwise oracle's evidence and for tolerances.
// The distance between two values of one format is the number of representable values one must
// step over to go from one to the other: map each bit pattern to an integer that is monotone in
// the value (sign-magnitude -> two's complement, +0 and -0 both to 0) and subtract. Infinities
// are the ends of the line: the distance from FLT_MAX to +inf is 1.
// NaN: any comparison with a NaN operand (including NaN vs the same NaN) has distance
// kUlpNaN, which is larger than any distance between non-NaN values. Callers that want
// "identical NaN bits are equal" compare bits first, as the bitwise oracle does.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/common/bf16.h"

namespace fh {

inline constexpr uint64_t kUlpNaN = std::numeric_limits<uint64_t>::max();

// Monotone integer key of an fp32 value (not NaN): -0 and +0 share key 0.
inline int64_t fp32_order_key(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  const int64_t mag = int64_t(u & 0x7FFFFFFFu);
  return (u >> 31) ? -mag : mag;
}
inline int64_t bf16_order_key(bf16 v) {
  const int64_t mag = int64_t(v.bits & 0x7FFFu);
  return (v.bits >> 15) ? -mag : mag;
}
inline bool fp32_bits_isnan(uint32_t u) { return (u & 0x7FFFFFFFu) > 0x7F800000u; }
inline bool bf16_bits_isnan(uint16_t b) { return (b & 0x7FFFu) > 0x7F80u; }
inline bool bf16_bits_isnan(bf16 v) { return bf16_bits_isnan(v.bits); }

inline uint64_t ulp_distance_f32(float a, float b) {
  if (fp32_bits_isnan(std::bit_cast<uint32_t>(a)) || fp32_bits_isnan(std::bit_cast<uint32_t>(b)))
    return kUlpNaN;
  const int64_t ka = fp32_order_key(a), kb = fp32_order_key(b);
  return uint64_t(ka > kb ? ka - kb : kb - ka);
}

inline uint64_t ulp_distance_bf16(bf16 a, bf16 b) {
  if (bf16_bits_isnan(a) || bf16_bits_isnan(b)) return kUlpNaN;
  const int64_t ka = bf16_order_key(a), kb = bf16_order_key(b);
  return uint64_t(ka > kb ? ka - kb : kb - ka);
}

// ulp(x) for fp32: the spacing of the fp32 grid at |x|, i.e. 2^(max(e, -126) - 23) with
// e = floor(log2 |x|) (the gap above |x| in its binade). ulp(0) = 2^-149 (the subnormal
// spacing), ulp(+-FLT_MAX) = 2^104, ulp(+-inf) = +inf, ulp(NaN) = NaN. Exact (returned as double).
inline double ulp_f32(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x) & 0x7FFFFFFFu;
  if (u > 0x7F800000u) return std::numeric_limits<double>::quiet_NaN();
  if (u == 0x7F800000u) return std::numeric_limits<double>::infinity();
  const int biased = int(u >> 23);
  return std::ldexp(1.0, (biased ? biased - 127 : -126) - 23);
}

}  // namespace fh
