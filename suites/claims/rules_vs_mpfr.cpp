// rules_vs_mpfr: each fp32 rule (the one definition host and device share) against its MPFR
// twin, on random elements of the rule's domain and an adversarial grid, within the per-rule
// bound derived in oracles/RULE_BOUNDS.md. Producers: kernels/rules (fp32), reference/mpfr_rules
// and reference/rule_samples; oracle: oracles/rule_bounds (check_rule_element).
#include <algorithm>
#include <cmath>
#include <map>

#include "kernels/formats/host_param.h"
#include "kernels/rules/hyper_fields.h"
#include "oracles/bitwise.h"
#include "oracles/dot_bound.h"
#include "oracles/param_compare.h"
#include "oracles/rule_bounds.h"
#include "oracles/ulp.h"
#include "reference/case_gen.h"
#include "reference/exact_gradient.h"
#include "reference/mpfr_rules.h"
#include "reference/two_phase_host.h"
#include "reference/rule_samples.h"
#include "suites/claims/claim_common.h"

namespace fh {

void claim_rules_vs_mpfr(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  for (const RuleConfig& rc : cfg.rules) {
    CaseRecord& cs = report.add_case("rules_vs_mpfr", rule_name(rc.id));
    progress_set_case(rule_name(rc.id));
    cs.set_attr("rule", rule_name(rc.id)).set_attr("hyper", describe_hyper(rc));
    double worst_ratio = 0, worst_ulps = 0;
    int64_t judged = 0, failures = 0, out_of_range = 0;
    std::string first_failure;
    // Two input classes: random elements in the rule's domain, and the adversarial grid.
    std::vector<double> class_ulps(2, 0.0), class_ratio(2, 0.0);
    const std::vector<std::string> class_names{"random", "adversarial"};
    CaseRng rng(stream_seed(cfg.seed, "rules_vs_mpfr/samples", uint64_t(rc.id)));
    // Both sides' per-step scalars once per step, as the rule's users compute them.
    std::map<int64_t, std::pair<MpfrStepScalars, Fp32Step>> steps;
    for (const RuleSample& s : make_rule_samples(rng, rc, int(cfg.rule_samples))) {
      auto it = steps.find(s.t);
      if (it == steps.end())
        it = steps.emplace(s.t, std::make_pair(mpfr_step_scalars(rc, s.t), fp32_step(rc, s.t))).first;
      const RuleRefResult ref = mpfr_rule_step(it->second.first, s.p, s.g, s.st);
      float p = s.p, st[kMaxStates];
      std::copy(s.st, s.st + kMaxStates, st);
      it->second.second(p, s.g, st);
      const RuleCheck ck = check_rule_element(ref, p, st);
      if (!ck.judged) ++out_of_range;
      ++judged;
      const int cls = s.adversarial ? 1 : 0;
      auto fold = [&](const OutputCheck& o) {
        if (!o.judged || o.was_nan || !std::isfinite(o.err)) return;
        class_ulps[cls] = std::max(class_ulps[cls], o.err_ulps);
        class_ratio[cls] = std::max(class_ratio[cls], o.ratio);
      };
      fold(ck.p);
      for (int k = 0; k < kMaxStates; ++k) fold(ck.st[k]);
      if (!ck.pass) {
        ++failures;
        if (first_failure.empty())
          first_failure = class_names[cls] + " t=" + std::to_string(s.t) + " output " + ck.first_failure;
      }
    }
    worst_ulps = std::max(class_ulps[0], class_ulps[1]);
    worst_ratio = std::max(class_ratio[0], class_ratio[1]);
    std::string classes;
    for (const auto& n : class_names) classes += (classes.empty() ? "" : ",") + n;
    cs.set_attr("input_classes", classes);
    cs.add_f64("max_err_ulps", class_ulps, "per input class: largest |fp32 - exact| in ulps of the exact value");
    cs.add_f64("max_err_over_bound", class_ratio, "per input class: largest |fp32 - exact| / bound");
    cs.add_i64("counts", {judged, failures, out_of_range}, "elements, elements outside the bound, elements with an output outside fp32's range (IEEE inf/NaN, judged by the suite, not bounded)");
    // Judged element by element (check_rule_element); the metric shows the worst finite ratio.
    cs.add_check(judge_and("within_bound", "max_err_over_bound", worst_ratio, 1.0, PassIf::at_most, failures == 0 && judged > 0,
                           std::to_string(failures) + " elements outside the bound; first: " + first_failure));
    // Shown, not gated: any finite ulp count is within +inf (fold keeps finite errors only).
    cs.add_check(judge("max_err_ulps", "max_err_ulps", worst_ulps, INFINITY, PassIf::at_most));
    progress.note(std::string(rule_name(rc.id)) + ": " + std::to_string(judged) + " elements, max " +
                  std::to_string(worst_ulps) + " ulp, max err/bound " + std::to_string(worst_ratio));
  }
}

}  // namespace fh
