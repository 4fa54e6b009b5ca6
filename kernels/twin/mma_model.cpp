// Bit-exact integer model of the Hopper bf16 -> fp32 tensor-core instruction (DESIGN contract 2).
// Integer arithmetic only: float bit patterns are decoded, never computed with.
#include "kernels/twin/mma_model.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

namespace fh {

namespace {

constexpr uint32_t kPosInfBits = 0x7F800000u;
constexpr uint32_t kNegInfBits = 0xFF800000u;

// Significand fraction bits: a bf16 product has 14, an fp32 C has 23.
constexpr int kProductFrac = 14;
constexpr int kCFrac = 23;

// Exact sum S (on the grid 2^base) rounded to fp32 bits. Truncation or RNE at the fp32 quantum,
// keeping subnormals; zero and underflow give +0; a magnitude reaching 2^128 gives inf.
uint32_t round_to_fp32(int64_t s, int base, MmaModelParams::OutRound mode) {
  if (s == 0) return 0u;
  const uint32_t sign = s < 0 ? 0x80000000u : 0u;
  const uint64_t m = s < 0 ? uint64_t(0) - uint64_t(s) : uint64_t(s);
  const int lead = std::bit_width(m) - 1 + base;  // exponent of the leading bit
  int q = std::max(lead - 23, -149);              // exponent of the fp32 quantum
  const int sh = q - base;
  uint64_t mant;
  if (sh <= 0) {
    mant = m << -sh;  // exact: the result has at most 24 bits (-sh <= 23)
  } else if (sh >= 64) {
    return 0u;  // below half the smallest quantum (m < 2^63): +0 under both modes
  } else {
    mant = m >> sh;
    if (mode == MmaModelParams::OutRound::nearest_even) {
      const uint64_t rest = m & ((uint64_t(1) << sh) - 1);
      const uint64_t half = uint64_t(1) << (sh - 1);
      if (rest > half || (rest == half && (mant & 1u))) ++mant;
    }
  }
  if (mant == 0) return 0u;  // underflow: +0 whatever the sign
  if (mant >> 24) {          // RNE carried into a new binade
    mant >>= 1;
    ++q;
  }
  if (mant < (uint64_t(1) << 23)) return sign | uint32_t(mant);  // subnormal (q == -149)
  const int biased = q + 23 + 127;
  if (biased >= 255) return sign | kPosInfBits;
  return sign | (uint32_t(biased) << 23) | (uint32_t(mant) & 0x7FFFFFu);
}

// Exponent given to a zero product: far below any clamp, so it never sets E_max and always
// shifts out (its significand is 0 anyway). Keeps the loops free of data-dependent branches.
constexpr int kZeroTermExp = -(1 << 20);

// Some a or b in the group is inf or NaN: the finite terms cannot matter any more.
uint32_t special_group(const bf16* a, int64_t as, const bf16* b, int64_t bs, int n,
                       uint32_t c) {
  bool pos_inf = false, neg_inf = false;
  for (int i = 0; i < n; ++i) {
    const uint32_t x = a[i * as].bits, y = b[i * bs].bits;
    const bool nan_x = (x & 0x7FFFu) > 0x7F80u, nan_y = (y & 0x7FFFu) > 0x7F80u;
    const bool inf_x = (x & 0x7FFFu) == 0x7F80u, inf_y = (y & 0x7FFFu) == 0x7F80u;
    const bool zero_x = (x & 0x7FFFu) == 0, zero_y = (y & 0x7FFFu) == 0;
    if (nan_x || nan_y || (inf_x && zero_y) || (inf_y && zero_x)) return kMmaNaNBits;
    if (inf_x || inf_y) (((x ^ y) & 0x8000u) ? neg_inf : pos_inf) = true;
  }
  if ((c & 0x7FFFFFFFu) > kPosInfBits) return kMmaNaNBits;
  if ((c & 0x7FFFFFFFu) == kPosInfBits) ((c >> 31) ? neg_inf : pos_inf) = true;
  if (pos_inf && neg_inf) return kMmaNaNBits;
  return pos_inf ? kPosInfBits : kNegInfBits;
}

// Alignment exponent of the unnormalized product x * y (significand in [1,4)), not
// renormalized; subnormals count as exponent -126 = max(field, 1) - 127. Zero products are not
// terms (kZeroTermExp).
inline int32_t product_exp(uint32_t x, uint32_t y) {
  const uint32_t fx = (x >> 7) & 0xFFu, fy = (y >> 7) & 0xFFu;
  const bool zero = (x & 0x7FFFu) == 0 || (y & 0x7FFFu) == 0;
  return zero ? kZeroTermExp : int32_t(std::max(fx, 1u) + std::max(fy, 1u)) - 254;
}
// The larger exponent field of x and y (0xFF: one is inf or NaN).
inline uint32_t field_max_of(uint32_t x, uint32_t y) { return std::max((x >> 7) & 0xFFu, (y >> 7) & 0xFFu); }
// Subnormals have no hidden bit: a 0.xxx significand, no flush.
inline uint32_t bf16_significand(uint32_t x) { return (x & 0x7Fu) | uint32_t((x & 0x7F80u) != 0) << 7; }
// A non-zero, finite C on the grid 2^(emax - align_bits), truncated toward zero.
inline int64_t c_term(uint32_t c, int emax, int align_bits) {
  const uint32_t ec = (c >> 23) & 0xFFu;
  const uint64_t sig = (c & 0x7FFFFFu) | uint64_t(ec != 0) << 23;
  const int sh = int(std::max(ec, 1u)) - 127 - emax + align_bits - kCFrac;  // may be either sign
  const uint64_t mag = sh >= 0 ? sig << sh : (sh <= -63 ? 0 : sig >> -sh);
  return (c >> 31) ? -int64_t(mag) : int64_t(mag);
}

// One instruction: C (fp32 bits) + sum_{i<n} a[i*as] * b[i*bs]. Params already checked.
uint32_t group_core_any(const bf16* a, int64_t as, const bf16* b, int64_t bs, int n,
                        uint32_t c, const MmaModelParams& p) {
  // Pass 1: alignment exponents, E_max, and whether any operand is inf/NaN.
  int exps[kMmaMaxGroup];
  int emax = p.clamp_exp;
  uint32_t field_max = 0;  // 0xFF: some operand is inf or NaN
  for (int i = 0; i < n; ++i) {
    const uint32_t x = a[i * as].bits, y = b[i * bs].bits;
    field_max = std::max(field_max, field_max_of(x, y));
    exps[i] = product_exp(x, y);
    emax = std::max(emax, exps[i]);
  }
  const uint32_t ec = (c >> 23) & 0xFFu, mc = c & 0x7FFFFFu;
  if (field_max == 0xFFu || ec == 0xFFu) [[unlikely]] {
    if (field_max == 0xFFu) return special_group(a, as, b, bs, n, c);
    return mc ? kMmaNaNBits : c;  // C alone is NaN or an infinity
  }
  const bool has_c = (c & 0x7FFFFFFFu) != 0;  // a zero C is not a term
  const int e_c = int(std::max(ec, 1u)) - 127;
  if (has_c) emax = std::max(emax, e_c);

  // Pass 2: align every term to the grid 2^(emax - align_bits), truncating its magnitude
  // (toward zero), and sum exactly. A product P * 2^(e - 14) lands at
  // (P << (align_bits - 14)) >> (emax - e); the shift is capped at 63, enough to clear any term
  // (P << (align_bits - 14) < 2^(align_bits + 2) <= 2^50).
  const int base = emax - p.align_bits;
  const int lift_p = p.align_bits - kProductFrac;  // >= 0 only when align_bits >= 14
  int64_t sum = 0;
  if (lift_p >= 0) {
    for (int i = 0; i < n; ++i) {
      const uint32_t x = a[i * as].bits, y = b[i * bs].bits;
      const uint32_t sx = bf16_significand(x), sy = bf16_significand(y);
      const int r = std::min(emax - exps[i], 63);
      const uint64_t mag = (uint64_t(sx * sy) << lift_p) >> r;
      const uint64_t neg = uint64_t(0) - uint64_t(((x ^ y) >> 15) & 1u);  // 0 or all ones
      sum += int64_t((mag ^ neg) - neg);
    }
  } else {  // narrow alignments (other architectures' models): shift right only
    for (int i = 0; i < n; ++i) {
      const uint32_t x = a[i * as].bits, y = b[i * bs].bits;
      const uint32_t sx = bf16_significand(x), sy = bf16_significand(y);
      const int r = std::min(emax - exps[i] - lift_p, 63);
      const uint64_t mag = uint64_t(sx * sy) >> r;
      const uint64_t neg = uint64_t(0) - uint64_t(((x ^ y) >> 15) & 1u);
      sum += int64_t((mag ^ neg) - neg);
    }
  }
  if (has_c) sum += c_term(c, emax, p.align_bits);
  return round_to_fp32(sum, base, p.out_round);
}

// group_core_any for 16 products with unit strides, finite operands and align_bits in [14, 25],
// the case of every Hopper twin and reference: each term's magnitude P << (align_bits - 14) < 2^27
// fits 32 bits (the shift is capped at 31), so the loops are branch-free 32-bit lanes the compiler
// vectorizes (an AVX2 clone where the host has it). The same arithmetic: the same bits.
// Returns false (nothing computed) when an operand or C is inf or NaN.
constexpr int kFastMaxAlignBits = 25;
__attribute__((target_clones("avx2", "default")))
bool group16_fast(const bf16* a, const bf16* b, uint32_t c, const MmaModelParams& p, uint32_t& out) {
  int32_t exps[16];
  uint32_t field_max = 0;
  int32_t emax = p.clamp_exp;
  for (int i = 0; i < 16; ++i) {
    field_max = std::max(field_max, field_max_of(a[i].bits, b[i].bits));
    exps[i] = product_exp(a[i].bits, b[i].bits);
    emax = std::max(emax, exps[i]);
  }
  const uint32_t ec = (c >> 23) & 0xFFu;
  if (field_max == 0xFFu || ec == 0xFFu) return false;
  const bool has_c = (c & 0x7FFFFFFFu) != 0;
  if (has_c) emax = std::max(emax, int(std::max(ec, 1u)) - 127);
  const int lift_p = p.align_bits - kProductFrac;
  int64_t sum = 0;
  for (int i = 0; i < 16; ++i) {
    const uint32_t x = a[i].bits, y = b[i].bits;
    const uint32_t r = uint32_t(std::min(emax - exps[i], 31));
    const uint32_t mag = ((bf16_significand(x) * bf16_significand(y)) << lift_p) >> r;
    const uint32_t neg = uint32_t(0) - ((x ^ y) >> 15 & 1u);
    sum += int32_t((mag ^ neg) - neg);
  }
  if (has_c) sum += c_term(c, emax, p.align_bits);
  out = round_to_fp32(sum, emax - p.align_bits, p.out_round);
  return true;
}

uint32_t group_core(const bf16* a, int64_t as, const bf16* b, int64_t bs, int n,
                    uint32_t c, const MmaModelParams& p) {
  uint32_t out;
  if (n == 16 && as == 1 && bs == 1 && p.align_bits >= kProductFrac && p.align_bits <= kFastMaxAlignBits &&
      group16_fast(a, b, c, p, out))
    return out;
  return group_core_any(a, as, b, bs, n, c, p);
}

uint32_t chain_core(const bf16* a, int64_t as, const bf16* b, int64_t bs, int64_t K,
                    uint32_t acc, const MmaModelParams& p) {
  const int64_t g = p.group;
  for (int64_t k = 0; k < K; k += g) {
    const int n = int(std::min(g, K - k));  // the last group is zero padded
    acc = group_core(a + k * as, as, b + k * bs, bs, n, acc, p);
  }
  return acc;
}

}  // namespace


float mma_group_dot(const bf16* a, const bf16* b, int n, float c,
                    const MmaModelParams& params) {
  mma_check_params(params);
  if (n < 0 || n > params.group)
    throw std::invalid_argument("mma_group_dot: n " + std::to_string(n) + " outside [0, " +
                                std::to_string(params.group) + "]");
  return std::bit_cast<float>(group_core(a, 1, b, 1, n, std::bit_cast<uint32_t>(c), params));
}

float mma_chain_dot(const bf16* a, const bf16* b, int64_t K, float c0,
                    const MmaModelParams& params) {
  return mma_chain_dot_strided(a, 1, b, 1, K, c0, params);
}

float mma_chain_dot_strided(const bf16* a, int64_t a_stride, const bf16* b,
                            int64_t b_stride, int64_t K, float c0,
                            const MmaModelParams& params) {
  mma_check_params(params);
  if (K < 0) throw std::invalid_argument("mma_chain_dot: negative K");
  return std::bit_cast<float>(
      chain_core(a, a_stride, b, b_stride, K, std::bit_cast<uint32_t>(c0), params));
}

void mma_m16n8k16_model(const bf16* A, const bf16* B_nk, const float* C, float* D,
                        const MmaModelParams& params) {
  mma_check_params(params);
  if (params.group != 16)
    throw std::invalid_argument("mma_m16n8k16_model: params.group must be 16");
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 8; ++j) {
      // Read C[i][j] before writing D[i][j]: element-wise, so D may alias C.
      const uint32_t c = std::bit_cast<uint32_t>(C[i * 8 + j]);
      D[i * 8 + j] = std::bit_cast<float>(group_core(A + i * 16, 1, B_nk + j * 16, 1, 16, c, params));
    }
  }
}

}  // namespace fh
