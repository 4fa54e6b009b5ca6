// two_phase_exact_vs_seq: the two-phase standard step with an exact G against an fp32 sequential
// G. G within the sequential dot-product bound (oracles/dot_bound), W deviation per step as data,
// and on small-integer inputs (both G exact) W and state bit for bit (oracles/bitwise,
// oracles/param_compare). Producers: reference/exact_gradient, reference/two_phase_host.
#include <algorithm>
#include <cmath>
#include <map>

#include "kernels/formats/host_param.h"
#include "kernels/rules/hyper_fields.h"
#include "oracles/bitwise.h"
#include "oracles/dot_bound.h"
#include "oracles/param_compare.h"
#include "oracles/ulp.h"
#include "reference/case_gen.h"
#include "reference/exact_gradient.h"
#include "reference/mpfr_rules.h"
#include "reference/two_phase_host.h"
#include "reference/rule_samples.h"
#include "suites/claims/claim_common.h"

namespace fh {

void claim_two_phase_exact_vs_seq(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  // G once per input distribution; the rule cases reuse it.
  const WgradCase normal = make_wgrad_case(stream_seed(cfg.seed, "two_phase_exact_vs_seq/normal_inputs"), cfg.tokens, cfg.in, cfg.out, CaseDistribution::normal);
  const WgradCase ints = make_wgrad_case(stream_seed(cfg.seed, "two_phase_exact_vs_seq/integer_inputs"), cfg.tokens, cfg.in, cfg.out, CaseDistribution::small_integer);
  const uint64_t sr_key = stream_seed(cfg.seed, "two_phase_exact_vs_seq/sr_key");
  std::vector<double> abs_sum;
  const auto g_exact = exact_wgrad(normal.X.data(), normal.dY.data(), cfg.tokens, cfg.in, cfg.out, &abs_sum);
  const auto g_seq = fp32_sequential_wgrad(normal.X.data(), normal.dY.data(), cfg.tokens, cfg.in, cfg.out);
  double worst_ratio = 0;
  int64_t outside = 0;
  for (size_t i = 0; i < g_exact.size(); ++i) {
    // G_exact is the exact sum rounded once, so the sequential sum may be half an ulp further.
    const double bound = seq_fp32_dot_bound(cfg.tokens, abs_sum[i]) + 0.5 * ulp_f32(g_exact[i]);
    const double err = std::fabs(double(g_seq[i]) - double(g_exact[i]));
    if (err > bound) ++outside;
    if (bound > 0) worst_ratio = std::max(worst_ratio, err / bound);
  }
  const auto gi_exact = exact_wgrad(ints.X.data(), ints.dY.data(), cfg.tokens, cfg.in, cfg.out);
  const auto gi_seq = fp32_sequential_wgrad(ints.X.data(), ints.dY.data(), cfg.tokens, cfg.in, cfg.out);
  const BitwiseReport gi_cmp = compare_bitwise(gi_exact, gi_seq, cfg.out, cfg.in, {"G small-integer"});

  for (const RuleConfig& rc : cfg.rules)
    for (StateFormat sf : cfg.formats)
      for (WeightStore ws : cfg.stores) {
        CaseRecord& cs = report.add_case("two_phase_exact_vs_seq", case_name(rc.id, sf, ws));
        progress_set_case(cs.name());
        cs.set_attr("rule", rule_name(rc.id)).set_attr("state_format", state_format_name(sf))
          .set_attr("weight_store", weight_store_name(ws)).set_attr("hyper", describe_hyper(rc))
          .set_attr("shape", std::to_string(cfg.out) + "x" + std::to_string(cfg.in) + "x" + std::to_string(cfg.tokens));
        // Judged element by element (outside); the metric shows the worst ratio.
        cs.add_check(judge_and("G_within_dot_bound", "max_err_over_bound", worst_ratio, 1.0, PassIf::at_most, outside == 0,
                               std::to_string(outside) + " elements of G outside the bound"));
        // W after cfg.steps steps from the two gradients, on normal data: the deviation is data.
        HostParam w_exact = HostParam::make(rc, sf, ws, cfg.out, cfg.in, normal.w0, sr_key, 1);
        HostParam w_seq = w_exact;
        std::vector<double> w_dev_ulps;
        for (int64_t step = 1; step <= cfg.steps; ++step) {
          apply_two_phase_update(w_exact, g_exact, step);
          apply_two_phase_update(w_seq, g_seq, step);
          uint64_t worst = 0;
          for (int64_t i = 0; i < cfg.out * cfg.in; ++i) {
            const uint64_t d = ulp_distance_f32(w_exact.weight(i), w_seq.weight(i));
            if (d != kUlpNaN) worst = std::max(worst, d);
          }
          w_dev_ulps.push_back(double(worst));
        }
        cs.add_f64("w_max_dev_ulps_per_step", w_dev_ulps, "largest |W(exact G) - W(fp32 sequential G)| in ulps, per step");
        // Small-integer inputs: both G are exact, so both steps must agree bit for bit.
        HostParam a = HostParam::make(rc, sf, ws, cfg.out, cfg.in, ints.w0, sr_key, 1);
        HostParam b = a;
        apply_two_phase_update(a, gi_exact, 1);
        apply_two_phase_update(b, gi_seq, 1);
        ParamEvidence ev;
        ev.add(gi_cmp);
        compare_params(ev, a, b, 1, {}, "W and state, small-integer inputs");
        cs.add_check(judge("exact_inputs_bitwise", "differing", double(ev.differing), 0, PassIf::at_most, ev.first_diff)
                         .bitwise(ev.differing, ev.max_ulp, ev.first_diff));
      }
  progress.note("G: " + std::to_string(outside) + " elements outside the dot bound, max err/bound " + std::to_string(worst_ratio));
}

}  // namespace fh
