// Format claims (no GPU): the INT8 block codec stays within its derived bound, and stochastic
// rounding to bf16 is exactly unbiased over all 2^16 random offsets.
#include <mpreal.h>

#include <algorithm>
#include <cmath>

#include "kernels/common/bf16.h"
#include "kernels/formats/int8_block.h"
#include "reference/case_gen.h"
#include "suites/forge_verify/verify_config.h"

namespace fh {
namespace {

// A random float with exponent in [e_lo, e_hi] and a random fraction (sign optional).
float spread_float(CaseRng& rng, int e_lo, int e_hi, bool negative_allowed) {
  const double frac = 1.0 + double(rng.below(1u << 23)) / double(1u << 23);
  float x = float(std::ldexp(frac, int(rng.range(e_lo, e_hi))));
  return (negative_allowed && (rng.next_u64() & 1)) ? -x : x;
}

void run_int8_codec(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  using mpfr::mpreal;
  for (bool nonneg : {false, true}) {
    CaseRecord& cs = report.add_case("int8_codec_bound", nonneg ? "nonnegative_u8" : "signed_i8");
    CaseRng rng(cfg.seed ^ (nonneg ? 0x5555u : 0xaaaau));
    const int64_t blocks = 4000;
    int64_t outside = 0, judged = 0;
    double worst_ratio = 0, worst_half_step_frac = 0;
    float x[kInt8Block], a = 0;
    uint8_t q[kInt8Block];
    for (int64_t b = 0; b < blocks; ++b) {
      // Exponent spreads from narrow to 60 binades, centred anywhere from subnormal to huge.
      const int centre = int(rng.range(-140, 100)), spread = int(rng.range(0, 60));
      const int n = (b % 7 == 0) ? int(rng.range(1, kInt8Block)) : kInt8Block;  // short row ends too
      for (int i = 0; i < n; ++i)
        x[i] = spread_float(rng, std::max(-149, centre - spread), std::min(127, centre), !nonneg);
      int8_encode_block(x, n, nonneg, q, &a);
      const double bound = int8_codec_bound(a, nonneg);
      for (int i = 0; i < n; ++i) {
        const float xd = int8_decode(q[i], nonneg, a);
        const mpreal err = abs(mpreal(xd, 512) - mpreal(x[i], 512));  // exact: 512 bits span every fp32
        ++judged;
        if (err > mpreal(bound, 512)) ++outside;
        worst_ratio = std::max(worst_ratio, double(err) / bound);
        worst_half_step_frac = std::max(worst_half_step_frac, double(err) / (double(a) / (2.0 * int8_levels(nonneg))));
      }
    }
    cs.set_attr("codec", nonneg ? "q in [0,255], x' = fl(fl(q/255)*absmax)" : "q in [-127,127], x' = fl(fl(q/127)*absmax)");
    cs.add_i64("counts", {judged, outside}, "elements judged, elements outside the bound");
    cs.add_f64("worst_err_over_half_step", {worst_half_step_frac}, "largest error as a fraction of half a quantisation step (shows the bound is not vacuous)");
    if (outside == 0) cs.add_check(Check::passed("within_bound", "max_err_over_bound", worst_ratio, 1.0));
    else cs.add_check(Check::failed("within_bound", "max_err_over_bound", worst_ratio, 1.0, std::to_string(outside) + " elements outside"));
    progress.note(std::string(nonneg ? "u8" : "i8") + ": " + std::to_string(judged) + " elements, max err/bound " + std::to_string(worst_ratio));
  }
}

// Exact mean over all 2^16 offsets: every SR result is one of two neighbouring bf16 values, so
// the sum n_lo*lo + n_hi*hi is exact in double, and so is 65536*x.
bool sr_mean_is_exact(float x, uint32_t bit_mask) {
  double sum = 0;
  for (uint32_t r = 0; r < 65536; ++r) sum += double(bf16_to_float(float_to_bf16_sr(x, r & bit_mask)));
  return sum == 65536.0 * double(x);
}

void run_sr_mean(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  CaseRng rng(cfg.seed ^ 0x5eedu);
  struct Class { const char* name; std::vector<float> xs; };
  std::vector<Class> classes(5);
  classes[0].name = "random";
  classes[1].name = "negative";
  classes[2].name = "exact_bf16";
  classes[3].name = "subnormal";
  classes[4].name = "near_bf16_max";
  for (int i = 0; i < 96; ++i) {
    classes[0].xs.push_back(spread_float(rng, -120, 120, true));
    classes[1].xs.push_back(-std::fabs(spread_float(rng, -60, 60, false)));
    classes[2].xs.push_back(bf16_to_float(uint16_t(rng.below(0x7f80u)) | uint16_t(i & 1 ? 0x8000u : 0)));
    classes[3].xs.push_back(u2f(uint32_t(1 + rng.below(0x007fffffu)) | (i & 1 ? 0x80000000u : 0u)));
    classes[4].xs.push_back(u2f(0x7f7f0000u - uint32_t(rng.below(1u << 20))) * (i & 1 ? -1.0f : 1.0f));
  }
  classes[3].xs.push_back(u2f(1u));            // the smallest subnormal
  classes[4].xs.push_back(u2f(0x7f7f0000u));   // the largest finite bf16 itself
  for (const Class& cl : classes) {
    CaseRecord& cs = report.add_case("sr_exact_mean", cl.name);
    int64_t inexact = 0, caught_8bit = 0, inexact_8bit_candidates = 0;
    for (float x : cl.xs) {
      if (!sr_mean_is_exact(x, 0xffffu)) ++inexact;
      // Power: the same test must reject SR with only the top 8 random bits wherever x has
      // dropped bits below them (exact bf16 values and 8-bit-representable remainders excepted).
      if (f2u(x) & 0xffu) {
        ++inexact_8bit_candidates;
        if (!sr_mean_is_exact(x, 0xff00u)) ++caught_8bit;
      }
    }
    cs.add_i64("counts", {int64_t(cl.xs.size()), inexact, inexact_8bit_candidates, caught_8bit},
               "values, values whose mean differs, values where 8-bit SR is biased, of those how many the test rejects");
    Check c = inexact == 0 ? Check::passed("mean_exact", "differing", 0, 0)
                           : Check::failed("mean_exact", "differing", double(inexact), 0, "mean of SR(x) != x");
    c.bitwise(inexact, 0, inexact ? "value class " + std::string(cl.name) : "");
    cs.add_check(c);
    if (inexact_8bit_candidates > 0) {
      const double power = double(caught_8bit) / double(inexact_8bit_candidates);
      cs.add_check(power == 1.0 ? Check::passed("rejects_8bit_sr", "fraction_rejected", power, 1.0)
                                : Check::failed("rejects_8bit_sr", "fraction_rejected", power, 1.0, "planted 8-bit SR not always seen"));
    }
  }
  progress.note("SR: " + std::to_string(classes.size()) + " value classes enumerated over 2^16 offsets");
}

}  // namespace

void add_format_claims(std::vector<ClaimSpec>& out) {
  out.push_back({"int8_codec_bound", "INT8 block-64 codec error within its derived bound (exact check)", false, run_int8_codec});
  out.push_back({"sr_exact_mean", "bf16 stochastic rounding: mean over all 2^16 offsets equals x exactly", false, run_sr_mean});
}

}  // namespace fh
