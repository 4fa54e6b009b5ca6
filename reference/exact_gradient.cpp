#include "reference/exact_gradient.h"

#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "kernels/common/bf16.h"

namespace fh {

namespace {

constexpr int kTopDigit = ExactSum::kDigits - 1;

// Carry propagation: digits 0..18 end in [0, 2^32), the top digit keeps the sign.
void propagate(int64_t* d) {
  for (int k = 0; k < kTopDigit; ++k) {
    const int64_t carry = d[k] >> 32;  // floor division by 2^32
    d[k] -= carry * (int64_t(1) << 32);
    d[k + 1] += carry;
  }
}

// A bf16 value as sig * 2^e exactly, sig signed (|sig| < 256); false for inf / NaN.
struct DecodedBf16 {
  int32_t sig;
  int32_t e;
};
inline bool decode_bf16(bf16 v, DecodedBf16& out) {
  const uint16_t x = v.bits;
  const int ex = (x >> 7) & 0xFF, mx = x & 0x7F;
  if (ex == 0xFF) return false;
  const int32_t mag = ex ? (mx | 0x80) : mx;
  out.sig = (x & 0x8000u) ? -mag : mag;
  out.e = (ex ? ex - 127 : -126) - 7;
  return true;
}

}  // namespace

void ExactSum::throw_scaled_range(int64_t m, int e) {
  throw std::invalid_argument("ExactSum::add_scaled: m * 2^e outside the accumulator (m=" +
                              std::to_string(m) + ", e=" + std::to_string(e) + ")");
}

void ExactSum::normalize_if_needed() {
  propagate(d_);
  pending_ = 0;
}

void ExactSum::add_bf16_product(bf16 va, bf16 vb) {
  DecodedBf16 da, db;
  const bool fa = decode_bf16(va, da), fb = decode_bf16(vb, db);
  const uint16_t a = va.bits, b = vb.bits;
  if (!fa || !fb) {
    const bool nan_a = ((a >> 7) & 0xFF) == 0xFF && (a & 0x7F);
    const bool nan_b = ((b >> 7) & 0xFF) == 0xFF && (b & 0x7F);
    const bool zero_a = (a & 0x7FFF) == 0, zero_b = (b & 0x7FFF) == 0;
    if (nan_a || nan_b || zero_a || zero_b) {  // NaN, or inf * 0
      nan_ = true;
      return;
    }
    (((a ^ b) & 0x8000u) ? neg_inf_ : pos_inf_) = true;
    return;
  }
  const int32_t p = da.sig * db.sig;
  if (p != 0) add_scaled(p, da.e + db.e);
}

void ExactSum::add_float(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  const int ex = (u >> 23) & 0xFF;
  const int32_t m = u & 0x7FFFFF;
  if (ex == 0xFF) {
    if (m) nan_ = true;
    else ((u >> 31) ? neg_inf_ : pos_inf_) = true;
    return;
  }
  const int32_t mag = ex ? (m | 0x800000) : m;
  if (mag == 0) return;
  add_scaled((u >> 31) ? -int64_t(mag) : int64_t(mag), (ex ? ex - 127 : -126) - 23);
}

void ExactSum::add(const ExactSum& o) {
  propagate(d_);
  int64_t od[kDigits];
  std::copy(o.d_, o.d_ + kDigits, od);
  propagate(od);
  for (int k = 0; k < kDigits; ++k) d_[k] += od[k];  // each digit below 2^33: no overflow
  pending_ = 1;
  nan_ = nan_ || o.nan_;
  pos_inf_ = pos_inf_ || o.pos_inf_;
  neg_inf_ = neg_inf_ || o.neg_inf_;
}

void ExactSum::negate() {
  for (auto& x : d_) x = -x;
  std::swap(pos_inf_, neg_inf_);
}

bool ExactSum::is_nan() const { return nan_ || (pos_inf_ && neg_inf_); }
bool ExactSum::is_inf() const { return !is_nan() && (pos_inf_ || neg_inf_); }

int ExactSum::sign_finite() const {
  int64_t d[kDigits];
  std::copy(d_, d_ + kDigits, d);
  propagate(d);
  if (d[kTopDigit] < 0) return -1;
  for (int k = 0; k < kDigits; ++k)
    if (d[k]) return 1;
  return 0;
}

int ExactSum::sign() const {
  if (is_nan()) return 0;
  if (pos_inf_) return 1;
  if (neg_inf_) return -1;
  return sign_finite();
}

void ExactSum::round_mag(int prec, int qmin, bool& neg, uint64_t& mant, int& q) const {
  int64_t d[kDigits];
  std::copy(d_, d_ + kDigits, d);
  propagate(d);
  neg = d[kTopDigit] < 0;
  if (neg) {
    for (auto& x : d) x = -x;
    propagate(d);
  }
  // Now every digit is >= 0; digits below the top are < 2^32.
  uint64_t u[kDigits];
  for (int k = 0; k < kDigits; ++k) u[k] = uint64_t(d[k]);
  int lead = -1;  // global bit index of the leading bit
  for (int k = kTopDigit; k >= 0; --k)
    if (u[k]) {
      lead = 32 * k + std::bit_width(u[k]) - 1;
      break;
    }
  mant = 0;
  q = qmin;
  if (lead < 0) return;  // zero
  auto bit = [&](int i) -> uint64_t {
    if (i < 0) return 0;
    const int k = std::min(i >> 5, kTopDigit);
    const int off = i - 32 * k;
    return off >= 64 ? 0 : (u[k] >> off) & 1u;
  };
  auto any_below = [&](int i) -> bool {  // any set bit with index < i
    if (i <= 0) return false;
    const int k = std::min(i >> 5, kTopDigit);
    for (int j = 0; j < k; ++j)
      if (u[j]) return true;
    const int off = i - 32 * k;
    return off >= 64 ? u[k] != 0 : (u[k] & ((uint64_t(1) << off) - 1)) != 0;
  };
  const int lead_exp = lead + kLowExp;
  q = std::max(lead_exp - (prec - 1), qmin);
  const int qi = q - kLowExp;  // bit index of the quantum (may be negative: exact)
  for (int i = lead; i >= qi; --i) mant = (mant << 1) | bit(i);
  const bool round = bit(qi - 1) != 0;
  const bool sticky = any_below(qi - 1);
  if (round && (sticky || (mant & 1u))) ++mant;
  if (mant >> prec) {  // carried into a new binade
    mant >>= 1;
    ++q;
  }
}

float ExactSum::to_float_rne() const {
  if (is_nan()) return std::numeric_limits<float>::quiet_NaN();
  if (pos_inf_) return std::numeric_limits<float>::infinity();
  if (neg_inf_) return -std::numeric_limits<float>::infinity();
  bool neg;
  uint64_t mant;
  int q;
  round_mag(24, -149, neg, mant, q);
  if (mant == 0 && !neg) return 0.0f;
  // mant has <= 24 bits at quantum 2^q: the float conversion is exact, or the value is at least
  // 2^128 and the conversion gives inf (IEEE overflow under round-to-nearest).
  const float mag = static_cast<float>(std::ldexp(double(mant), q));
  return neg ? -mag : mag;
}

double ExactSum::to_double_rne() const {
  if (is_nan()) return std::numeric_limits<double>::quiet_NaN();
  if (pos_inf_) return std::numeric_limits<double>::infinity();
  if (neg_inf_) return -std::numeric_limits<double>::infinity();
  bool neg;
  uint64_t mant;
  int q;
  round_mag(53, -1074, neg, mant, q);
  const double mag = std::ldexp(double(mant), q);  // exact: <= 53 bits, in range
  return neg ? -mag : mag;
}

long double ExactSum::to_long_double_rne() const {
  if (is_nan()) return std::numeric_limits<long double>::quiet_NaN();
  if (pos_inf_) return std::numeric_limits<long double>::infinity();
  if (neg_inf_) return -std::numeric_limits<long double>::infinity();
  constexpr int prec = std::numeric_limits<long double>::digits;
  constexpr int qmin = std::numeric_limits<long double>::min_exponent - prec;
  bool neg;
  uint64_t mant;
  int q;
  static_assert(prec <= 64, "long double wider than 64 bits: use to_mpreal");
  round_mag(prec, qmin, neg, mant, q);
  const long double mag = std::ldexp(static_cast<long double>(mant), q);
  return neg ? -mag : mag;
}

mpfr::mpreal ExactSum::to_mpreal() const {
  constexpr mpfr_prec_t kPrec = 64 * 11;  // more than the 640 + 63 bits the digits can hold
  mpfr::mpreal r(0, kPrec);
  if (is_nan()) {
    mpfr_set_nan(r.mpfr_ptr());
    return r;
  }
  if (pos_inf_ || neg_inf_) {
    mpfr_set_inf(r.mpfr_ptr(), pos_inf_ ? 1 : -1);
    return r;
  }
  int64_t d[kDigits];
  std::copy(d_, d_ + kDigits, d);
  propagate(d);
  for (int k = kTopDigit; k >= 0; --k) {
    mpfr_mul_2ui(r.mpfr_ptr(), r.mpfr_srcptr(), 32, MPFR_RNDN);
    mpfr_add_si(r.mpfr_ptr(), r.mpfr_srcptr(), long(d[k]), MPFR_RNDN);  // exact at kPrec
  }
  mpfr_mul_2si(r.mpfr_ptr(), r.mpfr_srcptr(), kLowExp, MPFR_RNDN);
  return r;
}

namespace {

// Recursive summation of K >= 0 nonnegative doubles with round-to-nearest underestimates the
// sum by at most gamma_{K-1} (Higham 2002, eq. 4.4); this factor covers that and its own rounding.
double abs_sum_upper_from(double computed, int64_t K) {
  return computed * (1.0 + double(2 * K + 4) * 0x1p-53);
}

// 2^e for the product exponents of bf16 pairs (exact doubles, e in [-266, 240]).
struct Pow2Table {
  static constexpr int kLo = -266, kHi = 240;
  double v[kHi - kLo + 1];
  Pow2Table() {
    for (int e = kLo; e <= kHi; ++e) v[e - kLo] = std::ldexp(1.0, e);
  }
  double operator()(int e) const { return v[e - kLo]; }
};
const Pow2Table& pow2_table() {
  static const Pow2Table t;
  return t;
}

void check_shapes(const bf16* X, const bf16* dY, int64_t T, int64_t in, int64_t out,
                  const char* who) {
  if (T < 0 || in < 0 || out < 0)
    throw std::invalid_argument(std::string(who) + ": negative shape (T=" + std::to_string(T) +
                                ", in=" + std::to_string(in) + ", out=" + std::to_string(out) + ")");
  if ((T * in > 0 && !X) || (T * out > 0 && !dY))
    throw std::invalid_argument(std::string(who) + ": null input with nonzero size");
}

// Column t-contiguous copy of a [T, n] bf16 matrix, decoded. `special[c]` marks columns with an
// inf or NaN (those take the slow path through add_bf16_product).
void decode_columns(const bf16* M, int64_t T, int64_t n, std::vector<DecodedBf16>& dec,
                    std::vector<uint8_t>& special) {
  dec.assign(size_t(T * n), DecodedBf16{0, 0});
  special.assign(size_t(n), 0);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < n; ++c) {
      DecodedBf16 d;
      if (decode_bf16(M[t * n + c], d)) dec[size_t(c * T + t)] = d;
      else special[size_t(c)] = 1;
    }
}

}  // namespace

ExactDot exact_dot_bf16(const bf16* a, int64_t a_stride, const bf16* b, int64_t b_stride,
                        int64_t K) {
  if (K < 0) throw std::invalid_argument("exact_dot_bf16: negative K");
  if (K > 0 && (!a || !b)) throw std::invalid_argument("exact_dot_bf16: null input");
  ExactDot r;
  const Pow2Table& p2 = pow2_table();
  double abs_sum = 0.0;
  for (int64_t k = 0; k < K; ++k) {
    const bf16 x = a[k * a_stride], y = b[k * b_stride];
    r.sum.add_bf16_product(x, y);
    DecodedBf16 dx, dy;
    if (decode_bf16(x, dx) && decode_bf16(y, dy)) {
      const int32_t p = dx.sig * dy.sig;
      const double m = std::fabs(double(p)) * p2(dx.e + dy.e);  // exact
      abs_sum += m;
      r.tiny_products += (p != 0 && m < 0x1p-126);
    } else {
      abs_sum = std::numeric_limits<double>::infinity();
    }
  }
  r.value = r.sum.to_float_rne();
  r.abs_sum_upper = abs_sum_upper_from(abs_sum, K);
  return r;
}

ExactDot exact_wgrad_element(const bf16* X, const bf16* dY, int64_t T, int64_t in,
                             int64_t out, int64_t o, int64_t i) {
  check_shapes(X, dY, T, in, out, "exact_wgrad_element");
  if (o < 0 || o >= out || i < 0 || i >= in)
    throw std::invalid_argument("exact_wgrad_element: (" + std::to_string(o) + ", " +
                                std::to_string(i) + ") outside [" + std::to_string(out) + ", " +
                                std::to_string(in) + "]");
  return exact_dot_bf16(dY + o, out, X + i, in, T);
}

std::vector<float> exact_wgrad(const bf16* X, const bf16* dY, int64_t T, int64_t in,
                               int64_t out, std::vector<double>* abs_sum_upper) {
  check_shapes(X, dY, T, in, out, "exact_wgrad");
  std::vector<DecodedBf16> xd, dyd;
  std::vector<uint8_t> xs, dys;
  decode_columns(X, T, in, xd, xs);
  decode_columns(dY, T, out, dyd, dys);
  std::vector<float> G(size_t(out * in));
  if (abs_sum_upper) abs_sum_upper->assign(size_t(out * in), 0.0);
  const Pow2Table& p2 = pow2_table();
  for (int64_t o = 0; o < out; ++o) {
    const DecodedBf16* dcol = dyd.data() + o * T;
    for (int64_t i = 0; i < in; ++i) {
      const size_t gi = size_t(o * in + i);
      if (dys[size_t(o)] || xs[size_t(i)]) {  // an inf or NaN: the general path
        const ExactDot r = exact_dot_bf16(dY + o, out, X + i, in, T);
        G[gi] = r.value;
        if (abs_sum_upper) (*abs_sum_upper)[gi] = r.abs_sum_upper;
        continue;
      }
      const DecodedBf16* xcol = xd.data() + i * T;
      ExactSum s;
      double abs_sum = 0.0;
      for (int64_t t = 0; t < T; ++t) {
        const int32_t p = dcol[t].sig * xcol[t].sig;
        if (p == 0) continue;
        const int e = dcol[t].e + xcol[t].e;
        s.add_scaled(p, e);
        if (abs_sum_upper) abs_sum += std::fabs(double(p)) * p2(e);
      }
      G[gi] = s.to_float_rne();
      if (abs_sum_upper) (*abs_sum_upper)[gi] = abs_sum_upper_from(abs_sum, T);
    }
  }
  return G;
}

std::vector<float> fp32_sequential_wgrad(const bf16* X, const bf16* dY, int64_t T,
                                         int64_t in, int64_t out) {
  check_shapes(X, dY, T, in, out, "fp32_sequential_wgrad");
  // t-contiguous copies so that the inner loop streams.
  std::vector<float> xt(size_t(T * in)), dyt(size_t(T * out));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t c = 0; c < in; ++c) xt[size_t(c * T + t)] = bf16_to_float(X[t * in + c]);
    for (int64_t c = 0; c < out; ++c) dyt[size_t(c * T + t)] = bf16_to_float(dY[t * out + c]);
  }
  std::vector<float> G(size_t(out * in));
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i) {
      const float* a = dyt.data() + o * T;
      const float* b = xt.data() + i * T;
      float acc = 0.0f;
      for (int64_t t = 0; t < T; ++t) acc = fadd(acc, fmul(a[t], b[t]));
      G[size_t(o * in + i)] = acc;
    }
  return G;
}

}  // namespace fh
