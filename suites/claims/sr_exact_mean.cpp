// sr_exact_mean: bf16 stochastic rounding (kernels/common/bf16.h) is exactly unbiased: the mean
// over all 2^16 random offsets equals x, computed exactly with MPFR, on values of every class.
#include <mpreal.h>

#include <algorithm>
#include <cmath>

#include "kernels/common/bf16.h"
#include "kernels/formats/int8_block.h"
#include "reference/case_gen.h"
#include "suites/claims/claim_common.h"

namespace fh {

namespace {

// Exact mean over all 2^16 offsets: every SR result is one of two neighbouring bf16 values, so
// the sum n_lo*lo + n_hi*hi is exact in double, and so is 65536*x.
bool sr_mean_is_exact(float x, uint32_t bit_mask) {
  double sum = 0;
  for (uint32_t r = 0; r < 65536; ++r) sum += double(bf16_to_float(float_to_bf16_sr(x, r & bit_mask)));
  return sum == 65536.0 * double(x);
}

}  // namespace

void claim_sr_exact_mean(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  CaseRng rng(stream_seed(cfg.seed, "sr_exact_mean/values"));
  struct Class { const char* name; std::vector<float> xs; };
  std::vector<Class> classes(5);
  classes[0].name = "random";
  classes[1].name = "negative";
  classes[2].name = "exact_bf16";
  classes[3].name = "subnormal";
  classes[4].name = "near_bf16_max";
  for (int i = 0; i < 96; ++i) {
    classes[0].xs.push_back(gen_spread_float(rng, -120, 120, true));
    classes[1].xs.push_back(-std::fabs(gen_spread_float(rng, -60, 60, false)));
    classes[2].xs.push_back(bf16_to_float(bf16::from_bits(uint16_t(rng.below(0x7f80u)) | uint16_t(i & 1 ? 0x8000u : 0))));
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
    cs.add_check(judge("mean_exact", "differing", double(inexact), 0, PassIf::at_most, "mean of SR(x) != x")
                     .bitwise(inexact, 0, inexact ? "value class " + std::string(cl.name) : ""));
    if (inexact_8bit_candidates > 0) {
      const double power = double(caught_8bit) / double(inexact_8bit_candidates);
      // A fraction: at least 1 is exactly 1.
      cs.add_check(judge("rejects_8bit_sr", "fraction_rejected", power, 1.0, PassIf::at_least, "planted 8-bit SR not always seen"));
    }
  }
  progress.note("SR: " + std::to_string(classes.size()) + " value classes enumerated over 2^16 offsets");
}

}  // namespace fh
