// Running error analysis (Tracked arithmetic); see tracked.h.
#include "exact/tracked.h"

#include <cmath>

namespace fh {
namespace {

// The constants of a format, computed once: unit roundoff u = 2^-p, eta = 2^(min_exp - 1) (half
// the smallest subnormal: the largest error of a rounding there) and the overflow threshold
// 2^max_exp - 2^(max_exp - p - 1) (the smallest real that rounds to infinity).
template <class F>
struct FormatConsts {
  mpreal u = ref_pow2(-F::kBits);
  mpreal eta = ref_pow2(F::kMinExp - 1);
  mpreal overflow = ref_pow2(F::kMaxExp) - ref_pow2(F::kMaxExp - F::kBits - 1);
};
template <class F>
const FormatConsts<F>& consts() {
  static const FormatConsts<F> c;
  return c;
}

mpreal zero() { return ref_real(0.0); }

template <class F>
void merge_flags(Tracked<F>& out, const Tracked<F>& a) {
  out.out_of_range |= a.out_of_range;
  out.unbounded |= a.unbounded;
  out.nan_allowed |= a.nan_allowed;
}

// One rounding of an exact-operation result whose distance from v_out is at most prop.
template <class F>
void round_once(Tracked<F>& out, const mpreal& prop) {
  const auto& c = consts<F>();
  const mpreal mag = abs(out.v) + prop;  // bounds the magnitude of the real result before rounding
  if (mag >= c.overflow) out.out_of_range = true;
  out.e = prop + c.u * mag + c.eta;
  if (out.nonneg) out.lo = max(out.lo, out.v - out.e);
  else out.lo = zero();
}

// A lower bound on fl(x) for a real x >= lo >= 0: fl(x) >= x - (u x + eta).
template <class F>
mpreal rounded_down(const mpreal& lo) {
  const auto& c = consts<F>();
  const mpreal r = lo * (1 - c.u) - c.eta;
  return r > 0 ? r : ref_real(0.0);
}

}  // namespace

mpreal ref_pow2(long k) {
  mpreal x(1, kRefPrec);
  mpfr_mul_2si(x.mpfr_ptr(), x.mpfr_srcptr(), k, MPFR_RNDN);  // exact
  return x;
}

TrackedF32 tracked_input(float x) {
  TrackedF32 t;
  if (!std::isfinite(x)) { t.out_of_range = true; return t; }
  t.v = ref_real(x);
  t.nonneg = !(x < 0.0f);
  if (t.nonneg) t.lo = abs(t.v);
  return t;
}
TrackedF64 tracked_input64(double x) {
  TrackedF64 t;
  if (!std::isfinite(x)) { t.out_of_range = true; return t; }
  t.v = ref_real(x);
  t.nonneg = !(x < 0.0);
  if (t.nonneg) t.lo = abs(t.v);
  return t;
}

TrackedF32 round_to_fp32(const TrackedF64& s) {
  TrackedF32 t;
  t.v = s.v;
  t.out_of_range = s.out_of_range;
  t.unbounded = s.unbounded;
  t.nan_allowed = s.nan_allowed;
  const auto& c = consts<Fp32Format>();
  if (s.e == 0) {
    // s is a double computed exactly: its fp32 rounding is known, and so is the error.
    const float f = mpfr_get_flt(s.v.mpfr_srcptr(), MPFR_RNDN);
    if (!std::isfinite(f)) t.out_of_range = true;
    t.e = abs(ref_real(f) - s.v);
    t.nonneg = !(f < 0.0f);
    if (t.nonneg) t.lo = ref_real(f);
    return t;
  }
  const mpreal mag = abs(s.v) + s.e;
  if (mag >= c.overflow) t.out_of_range = true;
  t.e = s.e + c.u * mag + c.eta + ref_pow2(-48) * abs(s.v);
  t.nonneg = s.v - s.e >= 0;
  if (t.nonneg) t.lo = max(zero(), s.v - t.e);
  return t;
}

template <class F>
Tracked<F> t_add(const Tracked<F>& a, const Tracked<F>& b) {
  // x + (+-0) = x exactly in IEEE (for x = +-0 the result is a zero too): no rounding.
  if (b.exact_zero()) { Tracked<F> r = a; merge_flags(r, b); r.nonneg = a.nonneg; return r; }
  if (a.exact_zero()) { Tracked<F> r = b; merge_flags(r, a); r.nonneg = b.nonneg; return r; }
  Tracked<F> r;
  merge_flags(r, a);
  merge_flags(r, b);
  r.v = a.v + b.v;
  r.nonneg = a.nonneg && b.nonneg;
  const mpreal prop = a.e + b.e;
  if (prop == 0 && r.v == 0) { r.e = zero(); return r; }  // exact cancellation is exact in IEEE
  if (r.nonneg) r.lo = rounded_down<F>(a.lo + b.lo);
  round_once(r, prop);
  return r;
}

template <class F>
Tracked<F> t_sub(const Tracked<F>& a, const Tracked<F>& b) {
  if (b.exact_zero()) { Tracked<F> r = a; merge_flags(r, b); return r; }
  return t_add(a, t_neg(b));
}

template <class F>
Tracked<F> t_neg(const Tracked<F>& a) {
  Tracked<F> r = a;
  r.v = -a.v;
  r.nonneg = a.exact_zero();
  return r;
}

template <class F>
Tracked<F> t_mul(const Tracked<F>& a, const Tracked<F>& b) {
  Tracked<F> r;
  merge_flags(r, a);
  merge_flags(r, b);
  r.nonneg = a.nonneg && b.nonneg;
  // An exact zero times a finite computed value is an exact zero.
  if (a.exact_zero() || b.exact_zero()) { r.nonneg = true; return r; }
  // An exact 1 (e.g. decay = 1 - lr*0) leaves the other operand's computed value unchanged.
  if (a.e == 0 && a.v == 1) { Tracked<F> z = b; merge_flags(z, a); return z; }
  if (b.e == 0 && b.v == 1) { Tracked<F> z = a; merge_flags(z, b); return z; }
  r.v = a.v * b.v;
  const mpreal prop = abs(a.v) * b.e + abs(b.v) * a.e + a.e * b.e;
  if (r.nonneg) r.lo = rounded_down<F>(a.lo * b.lo);
  round_once(r, prop);
  return r;
}

template <class F>
Tracked<F> t_sq(const Tracked<F>& a) {
  Tracked<F> r = t_mul(a, a);
  if (!r.nonneg) {  // a's sign unknown: its square is still >= 0
    r.nonneg = true;
    r.lo = max(zero(), r.v - r.e);
  }
  return r;
}

template <class F>
Tracked<F> t_div(const Tracked<F>& a, const Tracked<F>& b) {
  Tracked<F> r;
  merge_flags(r, a);
  merge_flags(r, b);
  r.nonneg = a.nonneg && b.nonneg;
  const mpreal bmag = abs(b.v);
  if (bmag == 0) { r.out_of_range = true; return r; }  // the exact quotient is not finite
  // The smallest magnitude the computed divisor can have.
  mpreal bmin = bmag - b.e;
  if (b.nonneg && b.lo > bmin) bmin = b.lo;
  if (bmin <= 0) { r.unbounded = true; r.v = a.v / b.v; return r; }
  if (a.exact_zero()) return r;  // 0 / (nonzero) = 0 exactly
  r.v = a.v / b.v;
  // |a'/b' - a/b| = |a' b - a b'| / |b b'| <= (e_a |b| + |a| e_b) / (|b| bmin)
  const mpreal prop = (a.e * bmag + abs(a.v) * b.e) / (bmag * bmin);
  round_once(r, prop);
  return r;
}

template <class F>
Tracked<F> t_sqrt(const Tracked<F>& a) {
  Tracked<F> r;
  merge_flags(r, a);
  r.nonneg = true;
  if (a.v < 0) { r.out_of_range = true; return r; }  // the real sqrt does not exist
  // A computed argument that may be negative gives NaN in IEEE; a non-negative one is bounded.
  if (!a.nonneg && a.v - a.e < 0) r.nan_allowed = true;
  if (a.exact_zero()) return r;  // sqrt(+-0) = +-0 exactly
  r.v = sqrt(a.v);
  if (a.nonneg) r.lo = sqrt(a.lo) * (1 - consts<F>().u);  // sqrt never underflows
  mpreal prop = zero();
  if (a.e > 0) {
    // |sqrt(a') - sqrt(a)| <= min(sqrt|a' - a|, |a' - a| / sqrt(a)) for a, a' >= 0
    prop = sqrt(a.e);
    if (a.v > 0) prop = min(prop, a.e / r.v);
  }
  round_once(r, prop);
  return r;
}

template <class F>
Tracked<F> t_fma(const Tracked<F>& a, const Tracked<F>& b, const Tracked<F>& c) {
  Tracked<F> r;
  merge_flags(r, a);
  merge_flags(r, b);
  merge_flags(r, c);
  r.nonneg = a.nonneg && b.nonneg && c.nonneg;
  if (a.exact_zero() || b.exact_zero()) {  // 0*x + c = c exactly (one rounding of an exact c)
    Tracked<F> z = c;
    merge_flags(z, r);
    return z;
  }
  r.v = a.v * b.v + c.v;
  const mpreal prop = abs(a.v) * b.e + abs(b.v) * a.e + a.e * b.e + c.e;
  if (prop == 0 && r.v == 0) return r;
  round_once(r, prop);
  return r;
}

TrackedF32 t_sign(const TrackedF32& c) {
  TrackedF32 r;
  merge_flags(r, c);
  if (c.exact_zero()) return r;
  const int s = sgn(c.v);
  r.v = ref_real(double(s));
  if (abs(c.v) > c.e) return r;                // the computed c has the exact c's sign
  r.e = ref_real(c.v == 0 ? 1.0 : 2.0);        // the computed sign may be anything
  return r;
}

TrackedF64 t_pow64(double base, const TrackedF64& x, const mpreal& exact) {
  TrackedF64 r;
  merge_flags(r, x);
  r.nonneg = true;
  if (x.exact_zero()) { r.v = ref_real(1.0); return r; }  // pow(b, 0) = 1 exactly
  if (!(base >= 0.0 && base < 1.0) || x.v - x.e <= 0)
    throw std::invalid_argument("t_pow64: models base in [0, 1) with a positive exponent only");
  if (base == 0.0) return r;  // pow(0, x > 0) = +0 exactly
  const auto& c = consts<Fp64Format>();
  r.v = exact;
  // d/dx b^x = ln(b) b^x: an exponent off by e_x moves the value by at most b^x (b^-e_x - 1).
  const mpreal lnb = abs(log(ref_real(base)));
  const mpreal prop = x.e > 0 ? exact * (exp(lnb * x.e) - 1) : zero();
  // glibc's pow is accurate to 1 ulp (<= 2u relative, 2 eta in the subnormal range).
  r.e = prop + 2 * c.u * (abs(r.v) + prop) + 2 * c.eta;
  return r;
}

#define FH_INSTANTIATE_TRACKED(F)                                                   \
  template Tracked<F> t_add(const Tracked<F>&, const Tracked<F>&);                  \
  template Tracked<F> t_sub(const Tracked<F>&, const Tracked<F>&);                  \
  template Tracked<F> t_mul(const Tracked<F>&, const Tracked<F>&);                  \
  template Tracked<F> t_sq(const Tracked<F>&);                                      \
  template Tracked<F> t_div(const Tracked<F>&, const Tracked<F>&);                  \
  template Tracked<F> t_sqrt(const Tracked<F>&);                                    \
  template Tracked<F> t_fma(const Tracked<F>&, const Tracked<F>&, const Tracked<F>&); \
  template Tracked<F> t_neg(const Tracked<F>&);
FH_INSTANTIATE_TRACKED(Fp32Format)
FH_INSTANTIATE_TRACKED(Fp64Format)
#undef FH_INSTANTIATE_TRACKED

const char* ref_status_name(RefStatus s) {
  switch (s) {
    case RefStatus::bounded: return "bounded";
    case RefStatus::out_of_range: return "out_of_range";
    case RefStatus::unbounded: return "unbounded";
  }
  return "?";
}

RefOutput ref_output(const TrackedF32& x) {
  RefOutput o;
  o.exact = x.v;
  o.bound = x.e * (1 + ref_pow2(-20));
  o.status = x.out_of_range ? RefStatus::out_of_range
                            : (x.unbounded ? RefStatus::unbounded : RefStatus::bounded);
  o.nan_allowed = x.nan_allowed;
  return o;
}

mpreal fp32_ulp_of_real(const mpreal& x) {
  if (x == 0) return ref_pow2(-149);
  long e = long(mpfr_get_exp(x.mpfr_srcptr())) - 1;  // x = m 2^exp with m in [1/2, 1)
  if (e < -126) e = -126;
  if (e > 127) e = 127;
  return ref_pow2(e - 23);
}

}  // namespace fh
