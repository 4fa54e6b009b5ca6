// Running error analysis in MPFR (Tracked arithmetic): the numerics that the MPFR references
// (reference/mpfr_rules.h, which produce exact values with bounds) and the judges
// (oracles/rule_bounds.h, oracles/fidelity.h) share. Its own layer above core, so that the
// kernels and the twin do not link MPFR.
//
// A Tracked<Format> number carries two MPFR values: `v`, the exact real value of an expression
// (exact per-step scalars, exact arithmetic), and `e`, an upper bound on |computed - v| where
// `computed` is what the same sequence of IEEE operations in Format (fp32 for the rules, fp64
// for the host's per-step scalars) produces, round to nearest, subnormals kept. Each arithmetic
// function below models exactly ONE IEEE rounding (the standard model):
//     e_out = prop + u*(|v_out| + prop) + eta
// with prop the error propagated from the operands, u = 2^-p the unit roundoff and eta half
// the smallest subnormal (the absolute error of a rounding in the subnormal range). A reference
// formula written once on Tracked therefore gives the exact value and the bound in one pass.
// The derivation and the per-rule shape of the bound are in oracles/RULE_BOUNDS.md.
#pragma once
#include <mpreal.h>
#include <cstdint>
#include <string>
#include "kernels/rules/rule_common.h"

namespace fh {

using mpfr::mpreal;

// Working precision of every exact value and bound. 256 bits keeps the exact values of the
// rules' formulas (sqrt, divisions, powers) within 2^-250 relative, far below the 2^-20
// relative slack that the final bound carries; MPFR's exponent range covers fp32 subnormals,
// double underflow and products of them.
constexpr mpfr_prec_t kRefPrec = 256;

// An exact mpreal from a double (or float), at kRefPrec.
inline mpreal ref_real(double x) { return mpreal(x, kRefPrec); }
// 2^k, exactly, at kRefPrec.
mpreal ref_pow2(long k);
// b^k (k >= 0 an integer) and b^x, correctly rounded at kRefPrec.
inline mpreal exact_pow_int(double b, int64_t k) {
  mpreal r(0, kRefPrec);
  mpfr_pow_ui(r.mpfr_ptr(), ref_real(b).mpfr_srcptr(), static_cast<unsigned long>(k), MPFR_RNDN);
  return r;
}
inline mpreal exact_pow(double b, const mpreal& x) {
  mpreal r(0, kRefPrec);
  mpfr_pow(r.mpfr_ptr(), ref_real(b).mpfr_srcptr(), x.mpfr_srcptr(), MPFR_RNDN);
  return r;
}

// An IEEE binary format: p significand bits, smallest subnormal 2^min_exp, largest finite value
// below 2^max_exp.
struct Fp32Format { static constexpr int kBits = 24, kMinExp = -149, kMaxExp = 128; static constexpr const char* kName = "fp32"; };
struct Fp64Format { static constexpr int kBits = 53, kMinExp = -1074, kMaxExp = 1024; static constexpr const char* kName = "fp64"; };

template <class Format>
struct Tracked {
  mpreal v{0, kRefPrec};       // exact value
  mpreal e{0, kRefPrec};       // bound on |computed - v|
  bool nonneg = false;         // the computed value is known to be >= 0 or -0 (e.g. a square)
  mpreal lo{0, kRefPrec};      // when nonneg: a lower bound on the computed value (e.g. sqrt(v)
                               // + eps >= eps even where v's own bound is vacuous)
  bool out_of_range = false;   // an input was not finite, an operation may overflow, or a real
                               // operation left its domain (sqrt of a negative exact value)
  bool unbounded = false;      // a divisor's interval reaches 0: no bound exists
  bool nan_allowed = false;    // a sqrt argument may be computed negative: NaN is a possible
                               // (correct) fp32 outcome; a non-NaN outcome is still bounded
  bool exact_zero() const { return e == 0 && v == 0; }
};
using TrackedF32 = Tracked<Fp32Format>;
using TrackedF64 = Tracked<Fp64Format>;

// Inputs.
TrackedF32 tracked_input(float x);    // an fp32 value the rule receives: exact, e = 0
TrackedF64 tracked_input64(double x); // a double value the host receives: exact, e = 0
// The fp32 rounding of a host double scalar s (round_scalar): exact value s.v, bound
// s.e + u32*(|s.v| + s.e) + eta32 + 2^-48*|s.v| (the last term allows a reassociation of the
// host's double expression); when s is an exact double (s.e = 0) the error |float(s) - s| is
// computed exactly instead.
TrackedF32 round_to_fp32(const TrackedF64& s);

// One IEEE operation each (one rounding), in the Format of the operands.
template <class F> Tracked<F> t_add(const Tracked<F>& a, const Tracked<F>& b);
template <class F> Tracked<F> t_sub(const Tracked<F>& a, const Tracked<F>& b);
template <class F> Tracked<F> t_mul(const Tracked<F>& a, const Tracked<F>& b);
template <class F> Tracked<F> t_sq(const Tracked<F>& a);  // a*a, one rounding, known >= 0
template <class F> Tracked<F> t_div(const Tracked<F>& a, const Tracked<F>& b);
template <class F> Tracked<F> t_sqrt(const Tracked<F>& a);
template <class F> Tracked<F> t_fma(const Tracked<F>& a, const Tracked<F>& b, const Tracked<F>& c);
template <class F> Tracked<F> t_neg(const Tracked<F>& a);  // exact
// sign(c) as Lion takes it: exact when the sign of the computed c is certain, else it may be
// anything in {-1, 0, 1} (error 2, or 1 when the exact c is 0).
TrackedF32 t_sign(const TrackedF32& c);
// std::pow(base, x) on the host with an exact double base in [0, 1) and a computed exponent x:
// `exact` is base^x.v (supplied so that a loop can compute it incrementally); the bound covers
// the exponent's error and an error of at most 1 ulp of glibc's pow.
TrackedF64 t_pow64(double base, const TrackedF64& x, const mpreal& exact);

// ---- what a reference returns ----

enum class RefStatus : uint8_t {
  bounded,       // the bound applies
  out_of_range,  // an exact intermediate (or its fp32 interval) leaves the fp32 range, an input
                 // is not finite, or a real operation leaves its domain: fp32 follows IEEE
                 // (inf/NaN) there, and the bound does not apply
  unbounded,     // a divisor may be computed as 0 (e.g. eps = 0 and v = 0)
};
const char* ref_status_name(RefStatus s);

struct RefOutput {
  mpreal exact{0, kRefPrec};
  mpreal bound{0, kRefPrec};  // already carries the (1 + 2^-20) slack
  RefStatus status = RefStatus::bounded;
  bool nan_allowed = false;
};
// The final bound of a Tracked output: e * (1 + 2^-20), with its status.
RefOutput ref_output(const TrackedF32& x);

struct RuleRefResult {
  RefOutput p;
  RefOutput st[kMaxStates];
  bool kept[kMaxStates] = {};
  bool in_range = true;  // every output (p and kept states) has status bounded
};

// The fp32 spacing at a real x, with oracles/ulp.h's definition: 2^(max(e,-126)-23) with
// e = floor(log2|x|); 2^-149 at 0; saturates at 2^104 beyond FLT_MAX.
mpreal fp32_ulp_of_real(const mpreal& x);

}  // namespace fh
