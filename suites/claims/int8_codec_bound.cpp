// int8_codec_bound: the INT8 block-64 codec (kernels/formats/int8_block.h, the producer) stays
// within its derived bound (kernels/formats/INT8_CODEC.md), judged exactly with MPFR against
// each block's absmax, on blocks whose exponents spread from narrow to 60 binades.
#include <mpreal.h>

#include <algorithm>
#include <cmath>

#include "kernels/common/bf16.h"
#include "kernels/formats/int8_block.h"
#include "reference/case_gen.h"
#include "suites/claims/claim_common.h"

namespace fh {

void claim_int8_codec_bound(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  using mpfr::mpreal;
  for (bool nonneg : {false, true}) {
    CaseRecord& cs = report.add_case("int8_codec_bound", nonneg ? "nonnegative_u8" : "signed_i8");
    CaseRng rng(stream_seed(cfg.seed, nonneg ? "int8_codec_bound/nonnegative_blocks" : "int8_codec_bound/signed_blocks"));
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
        x[i] = gen_spread_float(rng, std::max(-149, centre - spread), std::min(127, centre), !nonneg);
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
    // Judged exactly element by element (outside); the metric shows the worst rounded ratio.
    cs.add_check(judge_and("within_bound", "max_err_over_bound", worst_ratio, 1.0, PassIf::at_most, outside == 0,
                           std::to_string(outside) + " elements outside"));
    progress.note(std::string(nonneg ? "u8" : "i8") + ": " + std::to_string(judged) + " elements, max err/bound " + std::to_string(worst_ratio));
  }
}

}  // namespace fh
