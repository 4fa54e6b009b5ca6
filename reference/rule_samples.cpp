#include "reference/rule_samples.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fh {


// A float with random sign (if signed_), binary exponent uniform in [e_lo, e_hi] and a random
// 23-bit fraction; exponents below -126 give subnormals (ldexp rounds them once, to nearest).
float rand_float(CaseRng& rng, int e_lo, int e_hi, bool signed_) {
  const double frac = 1.0 + double(rng.below(1u << 23)) / double(1u << 23);
  const int e = int(rng.range(e_lo, e_hi));
  float x = float(std::ldexp(frac, e));
  if (signed_ && (rng.next_u64() & 1)) x = -x;
  return x;
}

// Which state slots hold a non-negative quantity (second moments, accumulators).
StateDecls decls_of(const RuleConfig& c) {
  return visit_rule(c.id, [&](auto rule) { return decltype(rule)::states(hyper_of<decltype(rule)>(c)); });
}

// Random states in the rule's domain. RMSprop centered needs square_avg >= grad_avg^2 (torch's
// states always satisfy it); it gets square_avg = grad_avg^2 (1 + x) with x >= 2^-8.
void random_states(CaseRng& rng, const RuleConfig& c, int64_t t, float* st) {
  const StateDecls decls = decls_of(c);
  for (int k = 0; k < kMaxStates; ++k) {
    st[k] = 0.0f;
    if (!decls.slot[k].kept) continue;
    if (t == 1 && (rng.next_u64() & 1)) { st[k] = float(decls.slot[k].initial); continue; }  // torch's start
    st[k] = decls.slot[k].nonnegative ? rand_float(rng, -54, 13, false) : rand_float(rng, -27, 7);
  }
  if (c.id == RuleId::rmsprop && std::get<RMSprop::Hyper>(c.hyper).centered) {
    const double ga = st[2];
    st[0] = float(ga * ga * (1.0 + std::ldexp(1.0, int(rng.range(-8, 3))))) + st[0] * 1e-3f;
  }
}

// The smallest float >= x*x (a square_avg that keeps square_avg >= grad_avg^2 exactly).
static float square_rounded_up(float x) {
  const double sq = double(x) * double(x);  // exact
  float f = float(sq);
  if (double(f) < sq) f = std::nextafter(f, std::numeric_limits<float>::infinity());
  return f;
}

static std::vector<int64_t> steps_of(RuleId id) {
  if (id == RuleId::radam) return {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 100, 10000, 1000000};
  return {1, 2, 3, 10, 100, 10000, 1000000};
}

std::vector<RuleSample> make_rule_samples(CaseRng& rng, const RuleConfig& c, int n_random) {
  std::vector<RuleSample> out;
  const std::vector<int64_t> steps = steps_of(c.id);
  for (int i = 0; i < n_random; ++i) {
    RuleSample e{};
    e.t = steps[rng.below(steps.size())];
    e.p = (rng.below(64) == 0) ? 0.0f : rand_float(rng, -14, 3);
    e.g = (rng.below(64) == 0) ? 0.0f : rand_float(rng, -34, 10);
    random_states(rng, c, e.t, e.st);
    e.adversarial = false;
    out.push_back(e);
  }
  // Adversarial: zeros of both signs, subnormals, tiny and huge (up to 1e18) gradients,
  // subnormal weights and states, zero states, first steps and very late steps.
  const float gs[] = {0.0f, -0.0f, 1e-45f, -1e-40f, 1e-40f, 1e-30f, -1e-30f, 1e-20f, 1.0f, -1.0f,
                      1e10f, 1e18f, -1e18f};
  const float ps[] = {0.0f, -0.0f, 1e-40f, -1e-40f, 1.0f, -2.5f, 1e-30f, 1e20f};
  const float signed_st[] = {0.0f, -0.0f, 1e-40f, 0.25f};
  const float nonneg_st[] = {0.0f, -0.0f, 1e-40f, 0.25f};
  const StateDecls decls = decls_of(c);
  const bool centered = c.id == RuleId::rmsprop && std::get<RMSprop::Hyper>(c.hyper).centered;
  for (int64_t t : {int64_t(1), int64_t(2), int64_t(3), int64_t(10000), int64_t(1000000)})
    for (float g : gs)
      for (float p : ps)
        for (int s = 0; s < 4; ++s) {
          RuleSample e{};
          e.t = t; e.p = p; e.g = g; e.adversarial = true;
          for (int k = 0; k < kMaxStates; ++k)
            if (decls.slot[k].kept) e.st[k] = decls.slot[k].nonnegative ? nonneg_st[s] : signed_st[(s + k) % 4];
          if (centered) e.st[0] = std::max(e.st[0], square_rounded_up(e.st[2]));  // stay in the domain
          out.push_back(e);
        }
  return out;
}

Fp32Step fp32_step(const RuleConfig& c, int64_t t) {
  return visit_rule(c.id, [&](auto rule) -> Fp32Step {
    using Rule = decltype(rule);
    const auto s = Rule::scalars(hyper_of<Rule>(c), t);
    return [s](float& p, float g, float* st) { Rule::update(s, p, g, st); };
  });
}

// ---- hyperparameter sets ----

namespace {
template <class Rule>
NamedRuleConfig cfg(const char* name, typename Rule::Hyper h, RuleId id) {
  return {name, RuleConfig{id, AnyHyper{h}}};
}
}  // namespace

std::vector<NamedRuleConfig> rule_hyper_sets(RuleId id) {
  std::vector<NamedRuleConfig> out;
  switch (id) {
    case RuleId::adamw: {
      AdamW::Hyper h;
      out.push_back(cfg<AdamW>("defaults", h, id));
      h.lr = 1e-2; h.weight_decay = 0.1;
      out.push_back(cfg<AdamW>("lr1e-2_wd0.1", h, id));
      h = {}; h.maximize = true;
      out.push_back(cfg<AdamW>("maximize", h, id));
      h = {}; h.beta1 = 0.8; h.beta2 = 0.9999; h.eps = 1e-6; h.weight_decay = 0.0;
      out.push_back(cfg<AdamW>("b0.8_0.9999_eps1e-6_wd0", h, id));
      break;
    }
    case RuleId::nadam: {
      NAdam::Hyper h;
      out.push_back(cfg<NAdam>("defaults", h, id));
      h.weight_decay = 0.01;
      out.push_back(cfg<NAdam>("l2_wd0.01", h, id));
      h.weight_decay = 0.1; h.decoupled_weight_decay = true;
      out.push_back(cfg<NAdam>("decoupled_wd0.1", h, id));
      h = {}; h.maximize = true; h.momentum_decay = 0.01;
      out.push_back(cfg<NAdam>("maximize_psi0.01", h, id));
      break;
    }
    case RuleId::radam: {
      RAdam::Hyper h;
      out.push_back(cfg<RAdam>("defaults", h, id));
      h.weight_decay = 0.01;
      out.push_back(cfg<RAdam>("l2_wd0.01", h, id));
      h.weight_decay = 0.1; h.decoupled_weight_decay = true;
      out.push_back(cfg<RAdam>("decoupled_wd0.1", h, id));
      h = {}; h.maximize = true; h.beta2 = 0.99;
      out.push_back(cfg<RAdam>("maximize_b2_0.99", h, id));
      break;
    }
    case RuleId::lion: {
      Lion::Hyper h;
      out.push_back(cfg<Lion>("defaults", h, id));
      h.lr = 3e-4; h.weight_decay = 0.1;
      out.push_back(cfg<Lion>("lr3e-4_wd0.1", h, id));
      h = {}; h.maximize = true;
      out.push_back(cfg<Lion>("maximize", h, id));
      break;
    }
    case RuleId::rmsprop: {
      RMSprop::Hyper h;
      out.push_back(cfg<RMSprop>("defaults", h, id));
      h.weight_decay = 0.01;
      out.push_back(cfg<RMSprop>("wd0.01", h, id));
      h = {}; h.centered = true;
      out.push_back(cfg<RMSprop>("centered", h, id));
      h = {}; h.momentum = 0.9;
      out.push_back(cfg<RMSprop>("momentum0.9", h, id));
      h = {}; h.centered = true; h.momentum = 0.5; h.weight_decay = 0.01; h.maximize = true;
      out.push_back(cfg<RMSprop>("centered_momentum_wd_maximize", h, id));
      // L2 with maximize a second time, plain: with one such configuration an order defect between
      // the two was seen once (mutation catalog: rmsprop_l2_before_maximize).
      h = {}; h.weight_decay = 0.01; h.maximize = true;
      out.push_back(cfg<RMSprop>("wd0.01_maximize", h, id));
      break;
    }
    case RuleId::adagrad: {
      Adagrad::Hyper h;
      out.push_back(cfg<Adagrad>("defaults", h, id));
      h.lr_decay = 0.01; h.initial_accumulator_value = 0.1;
      out.push_back(cfg<Adagrad>("lr_decay0.01_init0.1", h, id));
      h = {}; h.weight_decay = 0.01; h.maximize = true;
      out.push_back(cfg<Adagrad>("wd0.01_maximize", h, id));
      break;
    }
    case RuleId::sgd: {
      SGD::Hyper h;
      out.push_back(cfg<SGD>("defaults", h, id));
      h.weight_decay = 0.01; h.lr = 0.1;
      out.push_back(cfg<SGD>("lr0.1_wd0.01", h, id));
      h = {}; h.maximize = true;
      out.push_back(cfg<SGD>("maximize", h, id));
      // Weight decay a second time (mutation catalog: sgd_l2_from_gradient was seen by
      // lr0.1_wd0.01 alone), with maximize, whose negation comes before the L2 term.
      h.weight_decay = 0.1;
      out.push_back(cfg<SGD>("wd0.1_maximize", h, id));
      break;
    }
    case RuleId::sgd_momentum: {
      SGDMomentum::Hyper h;
      out.push_back(cfg<SGDMomentum>("defaults", h, id));
      h.dampening = 0.1;
      out.push_back(cfg<SGDMomentum>("dampening0.1", h, id));
      // A second dampening (the first step's buffer is undampened; mutation catalog:
      // sgdm_dampening_first_step was seen by dampening0.1 alone).
      h.dampening = 0.5; h.weight_decay = 0.01;
      out.push_back(cfg<SGDMomentum>("dampening0.5_wd0.01", h, id));
      h = {}; h.nesterov = true;
      out.push_back(cfg<SGDMomentum>("nesterov", h, id));
      h = {}; h.weight_decay = 0.01; h.maximize = true; h.momentum = 0.5;
      out.push_back(cfg<SGDMomentum>("wd0.01_maximize_mu0.5", h, id));
      // A second Nesterov configuration: with one, a Nesterov defect was seen by a single
      // configuration (mutation catalog: sgdm_nesterov_old_buffer).
      h.nesterov = true;
      out.push_back(cfg<SGDMomentum>("nesterov_wd0.01_maximize_mu0.5", h, id));
      break;
    }
  }
  return out;
}

}  // namespace fh
