// The exact weight gradient G = dY^T X of a linear layer with bf16 inputs, rounded ONCE to fp32,
// and the fp32 sequential reference that rounds after every add.
// bf16 * bf16 products are exact (8-bit significands give 16-bit products), so the only thing
// between the inputs and G_exact is one round-to-nearest-even at the end: this is the yardstick
// every producer's reduction order is measured against (DESIGN contract 3).
// Layout: X [T, in], dY [T, out], G [out, in], all row-major; G[o][i] = sum_t dY[t][o] * X[t][i].
#pragma once
#include <mpreal.h>

#include <cstdint>
#include <vector>

#include "kernels/common/bf16.h"

namespace fh {

// An exact sum of bf16 products and fp32 values: a fixed-point integer over 2^-288 .. 2^352
// held as 20 signed 32-bit "digits" in int64 words (carries are deferred, so an add touches two
// words). Products span 2^-266 (two smallest subnormals) to below 2^256, fp32 values 2^-149 to
// below 2^128; 2^31 adds fit before any digit could overflow, and the accumulator renormalizes
// itself long before that. Infinities and NaNs are tracked beside the finite part with IEEE
// meaning: NaN input, inf * 0, or +inf with -inf give NaN; otherwise an infinity wins.
class ExactSum {
 public:
  static constexpr int kDigits = 20;
  static constexpr int kLowExp = -288;  // weight of bit 0

  void add_bf16_product(bf16 a, bf16 b);
  void add_float(float x);
  // Adds m * 2^e exactly. Needs |m| < 2^24 and kLowExp <= e <= 300 (throws otherwise).
  void add_scaled(int64_t m, int e) {
    const int pos = e - kLowExp;
    if (m <= -(int64_t(1) << 24) || m >= (int64_t(1) << 24) || pos < 0 || pos > 300 - kLowExp)
      throw_scaled_range(m, e);
    const int64_t neg = m >> 63;                      // 0 or -1
    const uint64_t v = uint64_t((m ^ neg) - neg) << (pos & 31);  // |m| << sh, below 2^55
    const int k = pos >> 5;
    d_[k] += (int64_t(v & 0xFFFFFFFFu) ^ neg) - neg;
    d_[k + 1] += (int64_t(v >> 32) ^ neg) - neg;
    if (++pending_ >= kMaxPending) normalize_if_needed();
  }
  void add(const ExactSum& other);
  void negate();

  bool is_nan() const;        // NaN, or +inf together with -inf
  bool is_inf() const;        // exactly one infinite sign, no NaN
  int sign() const;           // of the finite part (or of the infinity): -1, 0, +1; 0 for NaN
  bool finite_is_zero() const { return sign_finite() == 0; }

  // Rounded once, round-to-nearest-even, subnormals kept, overflow to inf (IEEE). An exact zero
  // gives +0 (the sum starts from +0, like acc = 0.0f); a nonzero sum that rounds to zero keeps
  // its sign.
  float to_float_rne() const;
  double to_double_rne() const;
  long double to_long_double_rne() const;
  // The finite part exactly (704-bit MPFR); NaN / inf give NaN / inf.
  mpfr::mpreal to_mpreal() const;

 private:
  static constexpr uint32_t kMaxPending = 1u << 30;
  [[noreturn]] static void throw_scaled_range(int64_t m, int e);
  int sign_finite() const;
  void normalize_if_needed();
  // Rounds |finite part| to `prec` bits with quantum at least 2^qmin: value = mant * 2^q.
  void round_mag(int prec, int qmin, bool& neg, uint64_t& mant, int& q) const;

  int64_t d_[kDigits] = {};
  uint32_t pending_ = 0;  // adds since the last carry propagation
  bool nan_ = false, pos_inf_ = false, neg_inf_ = false;
};

// One dot product of bf16 vectors a[k*a_stride], b[k*b_stride], k < K, summed exactly.
struct ExactDot {
  ExactSum sum;               // the exact value
  float value = 0.0f;         // sum rounded once to fp32 (RNE)
  double abs_sum_upper = 0;   // an upper bound on sum_k |a_k b_k| (within 2^-50 relative)
  int64_t tiny_products = 0;  // nonzero products below 2^-126 (may be inexact in fp32)
};
ExactDot exact_dot_bf16(const bf16* a, int64_t a_stride, const bf16* b, int64_t b_stride,
                        int64_t K);

// G_exact for the whole layer ([out, in] fp32, row-major). abs_sum_upper, when given, receives
// the per-element upper bound on sum_t |dY[t][o] X[t][i]| ([out, in]). Throws
// std::invalid_argument on negative shapes or null inputs with nonzero size.
std::vector<float> exact_wgrad(const bf16* X, const bf16* dY, int64_t T, int64_t in,
                               int64_t out, std::vector<double>* abs_sum_upper = nullptr);
// One element G_exact[o][i], with its exact sum.
ExactDot exact_wgrad_element(const bf16* X, const bf16* dY, int64_t T, int64_t in,
                             int64_t out, int64_t o, int64_t i);

// The fp32 sequential reference: acc = +0; for t = 0..T-1: acc = fl(acc + fl(dy * x)), every
// operation through the IEEE shim (the product is exact unless it under- or overflows fp32).
std::vector<float> fp32_sequential_wgrad(const bf16* X, const bf16* dY, int64_t T,
                                         int64_t in, int64_t out);

}  // namespace fh
