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

// Every term is held as sig * 2^(exp - 23) with sig < 2^25: a C significand as it is (23
// fraction bits), a bf16 product significand (14 fraction bits) shifted up by 9. One shift rule
// then aligns both kinds.
constexpr int kTermFrac = 23;
constexpr int kProductUp = kTermFrac - 14;

struct Terms {
  uint32_t sig[kMmaMaxGroup + 1];
  int exp[kMmaMaxGroup + 1];
  uint32_t neg[kMmaMaxGroup + 1];  // 0 or ~0: lets the sum negate without a branch
};

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

// One instruction: C (fp32 bits) + sum_{i<n} a[i*as] * b[i*bs]. Params already checked.
uint32_t group_core(const uint16_t* a, int64_t as, const uint16_t* b, int64_t bs, int n,
                    uint32_t c, const MmaModelParams& p) {
  Terms t;
  int nt = 0;
  int emax = p.clamp_exp;
  bool pos_inf = false, neg_inf = false;

  for (int i = 0; i < n; ++i) {
    const uint32_t x = a[i * as], y = b[i * bs];
    const uint32_t ex = (x >> 7) & 0xFFu, ey = (y >> 7) & 0xFFu;
    const uint32_t mx = x & 0x7Fu, my = y & 0x7Fu;
    const uint32_t neg = ((x ^ y) & 0x8000u) ? ~0u : 0u;
    if (ex == 0xFFu || ey == 0xFFu) [[unlikely]] {
      if ((ex == 0xFFu && mx) || (ey == 0xFFu && my)) return kMmaNaNBits;
      const bool zero_x = ex == 0 && mx == 0, zero_y = ey == 0 && my == 0;
      if (zero_x || zero_y) return kMmaNaNBits;  // inf * 0
      (neg ? neg_inf : pos_inf) = true;
      continue;
    }
    // Subnormals keep exponent -126 and a 0.xxx significand: no normalization, no flush.
    const uint32_t sx = ex ? (mx | 0x80u) : mx, sy = ey ? (my | 0x80u) : my;
    const uint32_t prod = sx * sy;
    if (prod == 0) continue;  // zero products are not terms
    // Alignment exponent of the unnormalized product (significand in [1,4)), not renormalized.
    const int e = (ex ? int(ex) - 127 : -126) + (ey ? int(ey) - 127 : -126);
    t.sig[nt] = prod << kProductUp;
    t.exp[nt] = e;
    t.neg[nt] = neg;
    ++nt;
    emax = std::max(emax, e);
  }

  const uint32_t ec = (c >> 23) & 0xFFu, mc = c & 0x7FFFFFu;
  if (ec == 0xFFu) {
    if (mc) return kMmaNaNBits;
    ((c >> 31) ? neg_inf : pos_inf) = true;
  } else if (ec || mc) {  // a zero C is not a term
    const int e = ec ? int(ec) - 127 : -126;
    t.sig[nt] = ec ? (mc | 0x800000u) : mc;
    t.exp[nt] = e;
    t.neg[nt] = (c >> 31) ? ~0u : 0u;
    ++nt;
    emax = std::max(emax, e);
  }

  if (pos_inf && neg_inf) return kMmaNaNBits;
  if (pos_inf) return kPosInfBits;
  if (neg_inf) return kNegInfBits;

  // Align every term to the grid 2^(emax - align_bits), truncating its magnitude (toward zero),
  // then sum exactly. Term i lands at sig * 2^(exp - 23 - base) = sig << (exp - emax + up).
  const int base = emax - p.align_bits;
  const int up = p.align_bits - kTermFrac;
  int64_t sum = 0;
  for (int i = 0; i < nt; ++i) {
    const int sh = t.exp[i] - emax + up;
    uint64_t mag;
    if (sh >= 0) {
      mag = uint64_t(t.sig[i]) << sh;
    } else {
      mag = sh <= -32 ? 0 : uint64_t(t.sig[i] >> -sh);
    }
    const uint64_t m = int64_t(int32_t(t.neg[i]));  // 0 or all ones
    sum += int64_t((mag ^ m) - m);
  }
  return round_to_fp32(sum, base, p.out_round);
}

uint32_t chain_core(const uint16_t* a, int64_t as, const uint16_t* b, int64_t bs, int64_t K,
                    uint32_t acc, const MmaModelParams& p) {
  const int64_t g = p.group;
  for (int64_t k = 0; k < K; k += g) {
    const int n = int(std::min(g, K - k));  // the last group is zero padded
    acc = group_core(a + k * as, as, b + k * bs, bs, n, acc, p);
  }
  return acc;
}

}  // namespace

void mma_check_params(const MmaModelParams& p) {
  if (p.group < 1 || p.group > kMmaMaxGroup)
    throw std::invalid_argument("mma model: group " + std::to_string(p.group) +
                                " outside [1, " + std::to_string(kMmaMaxGroup) + "]");
  if (p.align_bits < 1 || p.align_bits > kMmaMaxAlignBits)
    throw std::invalid_argument("mma model: align_bits " + std::to_string(p.align_bits) +
                                " outside [1, " + std::to_string(kMmaMaxAlignBits) + "]");
  if (p.clamp_exp < -10000 || p.clamp_exp > 10000)
    throw std::invalid_argument("mma model: clamp_exp " + std::to_string(p.clamp_exp) +
                                " outside [-10000, 10000]");
  if (p.out_round != MmaModelParams::OutRound::toward_zero &&
      p.out_round != MmaModelParams::OutRound::nearest_even)
    throw std::invalid_argument("mma model: unknown out_round");
}

float mma_group_dot(const uint16_t* a, const uint16_t* b, int n, float c,
                    const MmaModelParams& params) {
  mma_check_params(params);
  if (n < 0 || n > params.group)
    throw std::invalid_argument("mma_group_dot: n " + std::to_string(n) + " outside [0, " +
                                std::to_string(params.group) + "]");
  return std::bit_cast<float>(group_core(a, 1, b, 1, n, std::bit_cast<uint32_t>(c), params));
}

float mma_chain_dot(const uint16_t* a, const uint16_t* b, int64_t K, float c0,
                    const MmaModelParams& params) {
  return mma_chain_dot_strided(a, 1, b, 1, K, c0, params);
}

float mma_chain_dot_strided(const uint16_t* a, int64_t a_stride, const uint16_t* b,
                            int64_t b_stride, int64_t K, float c0,
                            const MmaModelParams& params) {
  mma_check_params(params);
  if (K < 0) throw std::invalid_argument("mma_chain_dot: negative K");
  return std::bit_cast<float>(
      chain_core(a, a_stride, b, b_stride, K, std::bit_cast<uint32_t>(c0), params));
}

void mma_m16n8k16_model(const uint16_t* A, const uint16_t* B_nk, const float* C, float* D,
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
