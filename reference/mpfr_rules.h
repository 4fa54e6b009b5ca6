// MPFR-precision twins of the element-wise rules (kernels/rules/rule_list.h).
//
// Each twin takes the same inputs as the fp32 rule (fp32 p, g and state, the rule's double
// hyperparameters and the 1-based step t) and returns the exact new p and states together with
// a bound on how far the fp32 rule (Rule::scalars on the host, then Rule::update) may be from
// them (oracles/rule_bounds.h; derivation per rule in oracles/RULE_BOUNDS.md).
//
// The formulas are torch.optim's documented algorithms, written here independently of
// kernels/rules/*.h; they are arranged in the same operation order as the fp32 rules (same
// operations, same association) so that the bound models the roundings the fp32 rule actually
// performs, while the values are exact. The per-step scalars (bias corrections, NAdam's mu
// schedule and product, RAdam's rho_t and rectification) are computed exactly in MPFR from the
// double hyperparameters, and each one's fp32 value is bounded by modelling the host's double
// evaluation and its one rounding to fp32. mpfr_rule_torch_literal evaluates the documented
// formulas literally (no rearrangement) as a cross-check of the arrangement.
#pragma once
#include <cstdint>
#include <variant>
#include <vector>
#include "kernels/rules/all_rules.h"
#include "exact/tracked.h"

namespace fh {

// The exact per-step scalars of each rule, each with the bound on its fp32 value (fields named
// after what they are, not after the fp32 rule's fields).
namespace mpfr_scalars {
struct AdamW { TrackedF32 decay, beta1, one_minus_beta1, beta2, one_minus_beta2, lr_over_bc1, sqrt_bc2, eps; };
struct NAdam { TrackedF32 decay, wd, beta1, one_minus_beta1, beta2, one_minus_beta2, bc2, eps, coef_grad, coef_avg; };
struct RAdam { TrackedF32 decay, wd, beta1, one_minus_beta1, beta2, one_minus_beta2, coef, eps; bool rectified = false; mpreal rho_t{0, kRefPrec}; };
struct Lion { TrackedF32 decay, lr, beta1, one_minus_beta1, beta2, one_minus_beta2; };
struct RMSprop { TrackedF32 wd, alpha, one_minus_alpha, eps, momentum, lr; };
struct Adagrad { TrackedF32 wd, clr, eps; };
struct SGD { TrackedF32 lr, wd; };
struct SGDMomentum { TrackedF32 lr, wd, momentum, one_minus_dampening; };
}  // namespace mpfr_scalars

// The MPFR scalars type of each rule: a rule in rule_list.h without its mpfr_scalars struct
// does not compile.
template <class Rule> struct MpfrScalarsOf;
#define FH_MPFR_SCALARS_OF(name, Type) \
  template <>                          \
  struct MpfrScalarsOf<::fh::Type> { using type = mpfr_scalars::Type; };
FH_RULES(FH_MPFR_SCALARS_OF)
#undef FH_MPFR_SCALARS_OF
template <class Rule>
using MpfrScalarsOfRule = typename MpfrScalarsOf<Rule>::type;

struct MpfrStepScalars {
  RuleConfig config;
  int64_t t = 1;
  RuleVariant<MpfrScalarsOfRule> s;
};

// Once per (config, step): validates the hyperparameters (std::invalid_argument), t >= 1.
// RAdam's branch rho_t > 5 is decided as the fp32 host decides it, with fh::RAdam::rho_t in
// double (torch also decides it on a Python float); the exact rho_t is kept, and a disagreement
// further than 2^-30 from 5 throws std::logic_error (a defect in the double rho_t).
MpfrStepScalars mpfr_step_scalars(const RuleConfig& config, int64_t t);

// One element. `st` has kMaxStates slots; slots the rule does not keep are ignored.
RuleRefResult mpfr_rule_step(const MpfrStepScalars& scalars, float p, float g, const float* st);
RuleRefResult mpfr_rule_step(const RuleConfig& config, int64_t t, float p, float g, const float* st);

// The exact RAdam rho_t = rho_inf - 2 t b2^t / (1 - b2^t).
mpreal mpfr_radam_rho_t(const RAdam::Hyper& h, int64_t t);

// torch.optim's documented formulas evaluated literally in MPFR (bias-corrected moments
// m/bc1 and v/bc2, sqrt(v/bc2), lerp for the moments, mu_product from its recursion): exact
// values only, for a batch of elements of one (config, step). Every element must be finite.
struct RuleElement { float p = 0, g = 0; float st[kMaxStates] = {}; };
struct RuleExact { mpreal p{0, kRefPrec}; mpreal st[kMaxStates]; bool kept[kMaxStates] = {}; };
std::vector<RuleExact> mpfr_rule_torch_literal(const RuleConfig& config, int64_t t,
                                               const std::vector<RuleElement>& elements);

}  // namespace fh
