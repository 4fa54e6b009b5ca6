// Inputs for judging the element-wise rules against their MPFR twins: random elements in each
// rule's domain and adversarial ones (zeros of both signs, subnormals, tiny and huge gradients up
// to 1e18, subnormal weights and states, zero states, first and very late steps). Shared by
// suites/cpu/test_rules_vs_mpfr.cpp and forge-verify's rules_vs_mpfr claim.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>
#include "kernels/rules/all_rules.h"
#include "reference/case_gen.h"

namespace fh {

struct RuleSample { float p, g; float st[kMaxStates]; int64_t t; bool adversarial; };

// A float with random sign (if signed_), binary exponent uniform in [e_lo, e_hi] and a random
// 23-bit fraction; exponents below -126 give subnormals (rounded once, to nearest).
float rand_float(CaseRng& rng, int e_lo, int e_hi, bool signed_ = true);

// The rule's state declarations for its hyperparameters.
StateDecls decls_of(const RuleConfig& c);

// Random states in the rule's domain for step t (RMSprop centered keeps square_avg >= grad_avg^2).
void random_states(CaseRng& rng, const RuleConfig& c, int64_t t, float* st);

// The fp32 rule at step t with its per-step scalars computed once (host, double, rounded once):
// call it per element. NAdam's scalars cost O(t), so callers keep one per step.
using Fp32Step = std::function<void(float& p, float g, float* st)>;
Fp32Step fp32_step(const RuleConfig& c, int64_t t);

// n_random random elements followed by the fixed adversarial grid.
std::vector<RuleSample> make_rule_samples(CaseRng& rng, const RuleConfig& c, int n_random);

// The hyperparameter sets each rule is judged under against its MPFR twin
// (suites/cpu/test_rules_vs_mpfr.cpp): its defaults, then its options (weight decay, maximize,
// its own switches). A rule with none here would be judged on no sample at all, so
// test_rule_registry fails for it.
struct NamedRuleConfig { std::string name; RuleConfig config; };
std::vector<NamedRuleConfig> rule_hyper_sets(RuleId id);

}  // namespace fh
