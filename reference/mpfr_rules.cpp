// MPFR twins of the eight rules; see mpfr_rules.h. Per-element formulas are torch.optim's
// documented algorithms, arranged in the fp32 rules' operation order and run on Tracked numbers
// (oracles/rule_bounds.h): one pass gives the exact value and the bound on the fp32 value.
#include "reference/mpfr_rules.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace fh {
namespace {

using T32 = TrackedF32;
using T64 = TrackedF64;

T64 d(double x) { return tracked_input64(x); }
T32 f(float x) { return tracked_input(x); }
T32 r32(const T64& x) { return round_to_fp32(x); }
const T64& one64() { static const T64 one = d(1.0); return one; }


// The host's std::pow(b, double(t)) for an integer step t.
T64 host_pow_step(double b, int64_t t) {
  return t_pow64(b, d(double(t)), exact_pow_int(b, t));
}
// 1 - b^t as the host evaluates it (bias correction).
T64 host_bias_correction(double b, int64_t t) { return t_sub(one64(), host_pow_step(b, t)); }

// NAdam's mu_i = b1 * (1 - 0.5 * 0.96^(i * psi)) as the host evaluates it; q_exact = 0.96^(i psi).
T64 host_nadam_mu(const NAdam::Hyper& h, int64_t i, const mpreal& q_exact) {
  const T64 expo = t_mul(d(double(i)), d(h.momentum_decay));
  const T64 q = t_pow64(0.96, expo, q_exact);
  return t_mul(d(h.beta1), t_sub(one64(), t_mul(d(0.5), q)));
}
mpreal exact_nadam_q(const NAdam::Hyper& h, int64_t i) {
  return exact_pow(0.96, ref_real(double(i)) * ref_real(h.momentum_decay));
}

// prod_{i=1..t} mu_i as the host's loop evaluates it. Once the product is below 2^-400 it can
// no longer move 1 - prod (or 1 - prod*mu) at 256 bits: the loop stops, and the remaining
// factors (all in [0, 1]) are covered by widening the bound to cover any value in [0, 3 (v+e)]
// for the double product (each further factor rounds up by at most 2^-52 relative) plus the
// subnormal roundings of the remaining steps.
T64 host_nadam_product(const NAdam::Hyper& h, int64_t t) {
  T64 prod = one64();
  const mpreal q1 = exact_pow(0.96, ref_real(h.momentum_decay));
  mpreal q = q1;  // 0.96^(i psi), kept by multiplication (relative drift i * 2^-256)
  const mpreal tiny = ref_pow2(-400);
  for (int64_t i = 1; i <= t; ++i) {
    prod = t_mul(prod, host_nadam_mu(h, i, q));
    if (prod.exact_zero()) break;  // beta1 = 0: the double product is exactly 0 from here on
    if (i < t && prod.v + prod.e < tiny) {
      prod.e = 3 * (prod.v + prod.e) + ref_real(double(t)) * ref_pow2(-1074);
      break;
    }
    q *= q1;
  }
  return prod;
}

mpfr_scalars::AdamW scalars_of(const AdamW::Hyper& h, int64_t t) {
  mpfr_scalars::AdamW s;
  s.decay = r32(t_sub(one64(), t_mul(d(h.lr), d(h.weight_decay))));
  s.beta1 = r32(d(h.beta1));
  s.one_minus_beta1 = r32(t_sub(one64(), d(h.beta1)));
  s.beta2 = r32(d(h.beta2));
  s.one_minus_beta2 = r32(t_sub(one64(), d(h.beta2)));
  s.lr_over_bc1 = r32(t_div(d(h.lr), host_bias_correction(h.beta1, t)));
  s.sqrt_bc2 = r32(t_sqrt(host_bias_correction(h.beta2, t)));
  s.eps = r32(d(h.eps));
  return s;
}

mpfr_scalars::NAdam scalars_of(const NAdam::Hyper& h, int64_t t) {
  mpfr_scalars::NAdam s;
  const bool dec = h.decoupled_weight_decay;
  s.decay = r32(dec ? t_sub(one64(), t_mul(d(h.lr), d(h.weight_decay))) : one64());
  s.wd = r32(d(dec ? 0.0 : h.weight_decay));
  s.beta1 = r32(d(h.beta1));
  s.one_minus_beta1 = r32(t_sub(one64(), d(h.beta1)));
  s.beta2 = r32(d(h.beta2));
  s.one_minus_beta2 = r32(t_sub(one64(), d(h.beta2)));
  s.bc2 = r32(host_bias_correction(h.beta2, t));
  s.eps = r32(d(h.eps));
  const T64 prod = host_nadam_product(h, t);
  const T64 mu_t = host_nadam_mu(h, t, exact_nadam_q(h, t));
  const T64 mu_next = host_nadam_mu(h, t + 1, exact_nadam_q(h, t + 1));
  // torch: lr * (1 - mu_t) / (1 - mu_product) and lr * mu_next / (1 - mu_product * mu_next)
  s.coef_grad = r32(t_div(t_mul(d(h.lr), t_sub(one64(), mu_t)), t_sub(one64(), prod)));
  s.coef_avg = r32(t_div(t_mul(d(h.lr), mu_next), t_sub(one64(), t_mul(prod, mu_next))));
  return s;
}

// rho_inf = 2 / (1 - b2) - 1 as the host evaluates it.
T64 host_rho_inf(double beta2) { return t_sub(t_div(d(2.0), t_sub(one64(), d(beta2))), one64()); }

mpfr_scalars::RAdam scalars_of(const RAdam::Hyper& h, int64_t t) {
  mpfr_scalars::RAdam s;
  const bool dec = h.decoupled_weight_decay;
  s.decay = r32(dec ? t_sub(one64(), t_mul(d(h.lr), d(h.weight_decay))) : one64());
  s.wd = r32(d(dec ? 0.0 : h.weight_decay));
  s.beta1 = r32(d(h.beta1));
  s.one_minus_beta1 = r32(t_sub(one64(), d(h.beta1)));
  s.beta2 = r32(d(h.beta2));
  s.one_minus_beta2 = r32(t_sub(one64(), d(h.beta2)));
  s.eps = r32(d(h.eps));
  s.rho_t = mpfr_radam_rho_t(h, t);
  // The branch is a discrete decision: take the one the fp32 host takes (double rho_t, as torch
  // takes it on a Python float), so that both sides evaluate the same formula; a double rho_t
  // that falls on the other side of 5 than the exact one by more than rounding is a defect.
  s.rectified = RAdam::rho_t(h, t) > 5.0;
  const bool exact_side = s.rho_t > 5;
  if (s.rectified != exact_side && abs(s.rho_t - 5) > ref_pow2(-30))
    throw std::logic_error("mpfr_step_scalars: fh::RAdam::rho_t decides the rho_t > 5 branch at t = " +
                           std::to_string(t) + " against the exact rho_t " + s.rho_t.toString(20));
  const T64 bc1 = host_bias_correction(h.beta1, t);
  if (s.rectified) {
    const T64 bc2 = host_bias_correction(h.beta2, t);
    const T64 rho_inf = host_rho_inf(h.beta2);
    const T64 b2t = host_pow_step(h.beta2, t);
    // rho_t = rho_inf - 2 t b2^t / (1 - b2^t), evaluated left to right as the host does
    T64 rt = t_sub(rho_inf, t_div(t_mul(t_mul(d(2.0), d(double(t))), b2t), t_sub(one64(), b2t)));
    rt.v = s.rho_t;  // same real value; keep the directly computed one
    const T64 num = t_mul(t_mul(t_sub(rt, d(4.0)), t_sub(rt, d(2.0))), rho_inf);
    const T64 den = t_mul(t_mul(t_sub(rho_inf, d(4.0)), t_sub(rho_inf, d(2.0))), rt);
    const T64 r = t_sqrt(t_div(num, den));
    s.coef = r32(t_div(t_mul(t_mul(d(h.lr), r), t_sqrt(bc2)), bc1));
  } else {
    s.coef = r32(t_div(d(h.lr), bc1));
  }
  return s;
}

mpfr_scalars::Lion scalars_of(const Lion::Hyper& h, int64_t) {
  mpfr_scalars::Lion s;
  s.decay = r32(t_sub(one64(), t_mul(d(h.lr), d(h.weight_decay))));
  s.lr = r32(d(h.lr));
  s.beta1 = r32(d(h.beta1));
  s.one_minus_beta1 = r32(t_sub(one64(), d(h.beta1)));
  s.beta2 = r32(d(h.beta2));
  s.one_minus_beta2 = r32(t_sub(one64(), d(h.beta2)));
  return s;
}

mpfr_scalars::RMSprop scalars_of(const RMSprop::Hyper& h, int64_t) {
  mpfr_scalars::RMSprop s;
  s.wd = r32(d(h.weight_decay));
  s.alpha = r32(d(h.alpha));
  s.one_minus_alpha = r32(t_sub(one64(), d(h.alpha)));
  s.eps = r32(d(h.eps));
  s.momentum = r32(d(h.momentum));
  s.lr = r32(d(h.lr));
  return s;
}

mpfr_scalars::Adagrad scalars_of(const Adagrad::Hyper& h, int64_t t) {
  mpfr_scalars::Adagrad s;
  s.wd = r32(d(h.weight_decay));
  // clr = lr / (1 + (t - 1) * lr_decay)
  s.clr = r32(t_div(d(h.lr), t_add(one64(), t_mul(d(double(t - 1)), d(h.lr_decay)))));
  s.eps = r32(d(h.eps));
  return s;
}

mpfr_scalars::SGD scalars_of(const SGD::Hyper& h, int64_t) {
  return mpfr_scalars::SGD{r32(d(h.lr)), r32(d(h.weight_decay))};
}

mpfr_scalars::SGDMomentum scalars_of(const SGDMomentum::Hyper& h, int64_t) {
  return mpfr_scalars::SGDMomentum{r32(d(h.lr)), r32(d(h.weight_decay)), r32(d(h.momentum)),
                                   r32(t_sub(one64(), d(h.dampening)))};
}

// ---- per element: torch's algorithm, in the fp32 rules' operation order ----

// g <- -g when maximizing (exact).
T32 grad_in(float g, bool maximize) { return maximize ? t_neg(f(g)) : f(g); }
// beta * s + (1 - beta) * x (torch's lerp / mul_().add_(), as two products and a sum)
T32 ema(const T32& beta, const T32& s, const T32& one_minus_beta, const T32& x) {
  return t_add(t_mul(beta, s), t_mul(one_minus_beta, x));
}

void set_kept(RuleRefResult& r, const StateDecls& decls) {
  for (int k = 0; k < kMaxStates; ++k) r.kept[k] = decls.slot[k].kept;
}
void finish(RuleRefResult& r) {
  r.in_range = r.p.status == RefStatus::bounded;
  for (int k = 0; k < kMaxStates; ++k)
    if (r.kept[k] && r.st[k].status != RefStatus::bounded) r.in_range = false;
}

RuleRefResult step_of(const AdamW::Hyper& h, const mpfr_scalars::AdamW& s, float p0, float g0, const float* st) {
  const T32 g = grad_in(g0, h.maximize);
  const T32 m = ema(s.beta1, f(st[0]), s.one_minus_beta1, g);
  const T32 v = ema(s.beta2, f(st[1]), s.one_minus_beta2, t_sq(g));
  // sqrt(v / bc2) + eps, as sqrt(v) / sqrt(bc2) + eps
  const T32 denom = t_add(t_div(t_sqrt(v), s.sqrt_bc2), s.eps);
  // decoupled decay p (1 - lr wd), then p - (lr / bc1) m / denom
  const T32 p = t_sub(t_mul(f(p0), s.decay), t_div(t_mul(s.lr_over_bc1, m), denom));
  RuleRefResult r;
  r.p = ref_output(p);
  r.st[0] = ref_output(m);
  r.st[1] = ref_output(v);
  set_kept(r, AdamW::states(h));
  return r;
}

// L2 (g + wd p) or decoupled (p (1 - lr wd)) weight decay, as NAdam and RAdam take it.
void weight_decay_in(bool decoupled, const T32& decay, const T32& wd, T32& p, T32& g) {
  if (decoupled) p = t_mul(p, decay);
  else g = t_add(g, t_mul(wd, p));
}

RuleRefResult step_of(const NAdam::Hyper& h, const mpfr_scalars::NAdam& s, float p0, float g0, const float* st) {
  T32 g = grad_in(g0, h.maximize);
  T32 p = f(p0);
  weight_decay_in(h.decoupled_weight_decay, s.decay, s.wd, p, g);
  const T32 m = ema(s.beta1, f(st[0]), s.one_minus_beta1, g);
  const T32 v = ema(s.beta2, f(st[1]), s.one_minus_beta2, t_sq(g));
  const T32 denom = t_add(t_sqrt(t_div(v, s.bc2)), s.eps);
  // torch: two addcdiv's, the gradient term first
  p = t_sub(p, t_mul(s.coef_grad, t_div(g, denom)));
  p = t_sub(p, t_mul(s.coef_avg, t_div(m, denom)));
  RuleRefResult r;
  r.p = ref_output(p);
  r.st[0] = ref_output(m);
  r.st[1] = ref_output(v);
  set_kept(r, NAdam::states(h));
  return r;
}

RuleRefResult step_of(const RAdam::Hyper& h, const mpfr_scalars::RAdam& s, float p0, float g0, const float* st) {
  T32 g = grad_in(g0, h.maximize);
  T32 p = f(p0);
  weight_decay_in(h.decoupled_weight_decay, s.decay, s.wd, p, g);
  const T32 m = ema(s.beta1, f(st[0]), s.one_minus_beta1, g);
  const T32 v = ema(s.beta2, f(st[1]), s.one_minus_beta2, t_sq(g));
  if (s.rectified) p = t_sub(p, t_div(t_mul(s.coef, m), t_add(t_sqrt(v), s.eps)));
  else p = t_sub(p, t_mul(s.coef, m));
  RuleRefResult r;
  r.p = ref_output(p);
  r.st[0] = ref_output(m);
  r.st[1] = ref_output(v);
  set_kept(r, RAdam::states(h));
  return r;
}

RuleRefResult step_of(const Lion::Hyper& h, const mpfr_scalars::Lion& s, float p0, float g0, const float* st) {
  const T32 g = grad_in(g0, h.maximize);
  const T32 c = ema(s.beta1, f(st[0]), s.one_minus_beta1, g);
  const T32 p = t_sub(t_mul(f(p0), s.decay), t_mul(s.lr, t_sign(c)));
  const T32 m = ema(s.beta2, f(st[0]), s.one_minus_beta2, g);
  RuleRefResult r;
  r.p = ref_output(p);
  r.st[0] = ref_output(m);
  set_kept(r, Lion::states(h));
  return r;
}

RuleRefResult step_of(const RMSprop::Hyper& h, const mpfr_scalars::RMSprop& s, float p0, float g0, const float* st) {
  T32 g = grad_in(g0, h.maximize);
  const T32 p_in = f(p0);
  g = t_add(g, t_mul(s.wd, p_in));
  const T32 v = ema(s.alpha, f(st[0]), s.one_minus_alpha, t_sq(g));
  RuleRefResult r;
  T32 w = v;
  if (h.centered) {
    const T32 ga = ema(s.alpha, f(st[2]), s.one_minus_alpha, g);
    w = t_sub(v, t_sq(ga));
    r.st[2] = ref_output(ga);
  }
  const T32 avg = t_add(t_sqrt(w), s.eps);
  T32 p;
  if (h.momentum > 0.0) {
    const T32 b = t_add(t_mul(s.momentum, f(st[1])), t_div(g, avg));
    p = t_sub(p_in, t_mul(s.lr, b));
    r.st[1] = ref_output(b);
  } else {
    p = t_sub(p_in, t_mul(s.lr, t_div(g, avg)));
  }
  r.p = ref_output(p);
  r.st[0] = ref_output(v);
  set_kept(r, RMSprop::states(h));
  return r;
}

RuleRefResult step_of(const Adagrad::Hyper& h, const mpfr_scalars::Adagrad& s, float p0, float g0, const float* st) {
  T32 g = grad_in(g0, h.maximize);
  const T32 p_in = f(p0);
  g = t_add(g, t_mul(s.wd, p_in));
  const T32 sum = t_add(f(st[0]), t_sq(g));
  const T32 p = t_sub(p_in, t_mul(s.clr, t_div(g, t_add(t_sqrt(sum), s.eps))));
  RuleRefResult r;
  r.p = ref_output(p);
  r.st[0] = ref_output(sum);
  set_kept(r, Adagrad::states(h));
  return r;
}

RuleRefResult step_of(const SGD::Hyper& h, const mpfr_scalars::SGD& s, float p0, float g0, const float*) {
  T32 g = grad_in(g0, h.maximize);
  const T32 p_in = f(p0);
  g = t_add(g, t_mul(s.wd, p_in));
  RuleRefResult r;
  r.p = ref_output(t_sub(p_in, t_mul(s.lr, g)));
  set_kept(r, SGD::states(h));
  return r;
}

RuleRefResult step_of(const SGDMomentum::Hyper& h, const mpfr_scalars::SGDMomentum& s, int64_t t,
                      float p0, float g0, const float* st) {
  T32 g = grad_in(g0, h.maximize);
  const T32 p_in = f(p0);
  g = t_add(g, t_mul(s.wd, p_in));
  // torch: the first step clones the gradient into the buffer; later steps b = mu b + (1 - tau) g
  const T32 b = t == 1 ? g : t_add(t_mul(s.momentum, f(st[0])), t_mul(s.one_minus_dampening, g));
  const T32 dir = h.nesterov ? t_add(g, t_mul(s.momentum, b)) : b;
  RuleRefResult r;
  r.p = ref_output(t_sub(p_in, t_mul(s.lr, dir)));
  r.st[0] = ref_output(b);
  set_kept(r, SGDMomentum::states(h));
  return r;
}

}  // namespace

mpreal mpfr_radam_rho_t(const RAdam::Hyper& h, int64_t t) {
  const mpreal b2 = ref_real(h.beta2);
  const mpreal rho_inf = 2 / (1 - b2) - 1;
  const mpreal b2t = exact_pow_int(h.beta2, t);
  return rho_inf - 2 * ref_real(double(t)) * b2t / (1 - b2t);
}

MpfrStepScalars mpfr_step_scalars(const RuleConfig& config, int64_t t) {
  if (t < 1) throw std::invalid_argument("mpfr_step_scalars: the step t must be >= 1 (got " + std::to_string(t) + ")");
  MpfrStepScalars out;
  out.config = config;
  out.t = t;
  visit_rule(config.id, [&](auto rule) {
    using Rule = decltype(rule);
    const auto& h = hyper_of<Rule>(config);
    Rule::validate(h);
    out.s = scalars_of(h, t);
  });
  return out;
}

RuleRefResult mpfr_rule_step(const MpfrStepScalars& sc, float p, float g, const float* st) {
  RuleRefResult r = visit_rule(sc.config.id, [&](auto rule) {
    using Rule = decltype(rule);
    const auto& h = hyper_of<Rule>(sc.config);
    const auto& s = std::get<decltype(scalars_of(h, 1))>(sc.s);
    if constexpr (std::is_same_v<Rule, SGDMomentum>) return step_of(h, s, sc.t, p, g, st);
    else return step_of(h, s, p, g, st);
  });
  finish(r);
  return r;
}

RuleRefResult mpfr_rule_step(const RuleConfig& config, int64_t t, float p, float g, const float* st) {
  return mpfr_rule_step(mpfr_step_scalars(config, t), p, g, st);
}

// ---- the literal documented formulas (exact values only) ----
namespace {

mpreal R(double x) { return ref_real(x); }
mpreal sign_of(const mpreal& x) { return R(double(sgn(x))); }

void literal(const AdamW::Hyper& h, int64_t t, const RuleElement& e, RuleExact& o) {
  const mpreal g = h.maximize ? -R(e.g) : R(e.g);
  const mpreal bc1 = 1 - exact_pow_int(h.beta1, t), bc2 = 1 - exact_pow_int(h.beta2, t);
  const mpreal p = R(e.p) * (1 - R(h.lr) * R(h.weight_decay));         // theta - lr*lambda*theta
  const mpreal m = R(e.st[0]) + (g - R(e.st[0])) * (1 - R(h.beta1));   // exp_avg.lerp_(g, 1-b1)
  const mpreal v = R(e.st[1]) * R(h.beta2) + (1 - R(h.beta2)) * g * g;
  const mpreal m_hat = m / bc1, v_hat = v / bc2;
  o.p = p - R(h.lr) * m_hat / (sqrt(v_hat) + R(h.eps));
  o.st[0] = m;
  o.st[1] = v;
}

mpreal literal_nadam_mu(const NAdam::Hyper& h, int64_t i) {
  return R(h.beta1) * (1 - R(0.5) * exact_nadam_q(h, i));
}
void literal(const NAdam::Hyper& h, int64_t t, const RuleElement& e, RuleExact& o) {
  mpreal g = h.maximize ? -R(e.g) : R(e.g);
  mpreal p = R(e.p);
  if (h.decoupled_weight_decay) p = p * (1 - R(h.lr) * R(h.weight_decay));
  else g = g + R(h.weight_decay) * p;
  mpreal prod_t = R(1.0);
  for (int64_t i = 1; i <= t; ++i) prod_t = prod_t * literal_nadam_mu(h, i);
  const mpreal mu_t = literal_nadam_mu(h, t), mu_next = literal_nadam_mu(h, t + 1);
  const mpreal prod_next = prod_t * mu_next;
  const mpreal m = R(e.st[0]) + (g - R(e.st[0])) * (1 - R(h.beta1));
  const mpreal v = R(e.st[1]) * R(h.beta2) + (1 - R(h.beta2)) * g * g;
  const mpreal m_hat = mu_next * m / (1 - prod_next) + (1 - mu_t) * g / (1 - prod_t);
  const mpreal v_hat = v / (1 - exact_pow_int(h.beta2, t));
  o.p = p - R(h.lr) * m_hat / (sqrt(v_hat) + R(h.eps));
  o.st[0] = m;
  o.st[1] = v;
}

void literal(const RAdam::Hyper& h, int64_t t, const RuleElement& e, RuleExact& o) {
  mpreal g = h.maximize ? -R(e.g) : R(e.g);
  mpreal p = R(e.p);
  if (h.decoupled_weight_decay) p = p * (1 - R(h.lr) * R(h.weight_decay));
  else g = g + R(h.weight_decay) * p;
  const mpreal m = R(e.st[0]) + (g - R(e.st[0])) * (1 - R(h.beta1));
  const mpreal v = R(e.st[1]) * R(h.beta2) + (1 - R(h.beta2)) * g * g;
  const mpreal bc1 = 1 - exact_pow_int(h.beta1, t), bc2 = 1 - exact_pow_int(h.beta2, t);
  const mpreal m_hat = m / bc1;
  const mpreal rho_inf = 2 / (1 - R(h.beta2)) - 1;
  const mpreal rho = mpfr_radam_rho_t(h, t);
  if (RAdam::rho_t(h, t) > 5.0) {  // the branch as torch (and the fp32 host) decide it
    const mpreal l = sqrt(bc2) / (sqrt(v) + R(h.eps));
    const mpreal r = sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho));
    o.p = p - R(h.lr) * m_hat * r * l;
  } else {
    o.p = p - R(h.lr) * m_hat;
  }
  o.st[0] = m;
  o.st[1] = v;
}

void literal(const Lion::Hyper& h, int64_t, const RuleElement& e, RuleExact& o) {
  const mpreal g = h.maximize ? -R(e.g) : R(e.g);
  const mpreal c = R(h.beta1) * R(e.st[0]) + (1 - R(h.beta1)) * g;
  const mpreal p = R(e.p);
  o.p = p - R(h.lr) * (sign_of(c) + R(h.weight_decay) * p);
  o.st[0] = R(h.beta2) * R(e.st[0]) + (1 - R(h.beta2)) * g;
}

void literal(const RMSprop::Hyper& h, int64_t, const RuleElement& e, RuleExact& o) {
  mpreal g = h.maximize ? -R(e.g) : R(e.g);
  const mpreal p = R(e.p);
  if (h.weight_decay != 0) g = g + R(h.weight_decay) * p;
  const mpreal v = R(h.alpha) * R(e.st[0]) + (1 - R(h.alpha)) * g * g;
  mpreal v_tilde = v;
  if (h.centered) {
    const mpreal ga = R(h.alpha) * R(e.st[2]) + (1 - R(h.alpha)) * g;
    v_tilde = v - ga * ga;
    o.st[2] = ga;
  }
  if (h.momentum > 0) {
    const mpreal b = R(h.momentum) * R(e.st[1]) + g / (sqrt(v_tilde) + R(h.eps));
    o.p = p - R(h.lr) * b;
    o.st[1] = b;
  } else {
    o.p = p - R(h.lr) * g / (sqrt(v_tilde) + R(h.eps));
  }
  o.st[0] = v;
}

void literal(const Adagrad::Hyper& h, int64_t t, const RuleElement& e, RuleExact& o) {
  mpreal g = h.maximize ? -R(e.g) : R(e.g);
  const mpreal p = R(e.p);
  if (h.weight_decay != 0) g = g + R(h.weight_decay) * p;
  const mpreal clr = R(h.lr) / (1 + R(double(t - 1)) * R(h.lr_decay));
  const mpreal sum = R(e.st[0]) + g * g;
  o.p = p - clr * g / (sqrt(sum) + R(h.eps));
  o.st[0] = sum;
}

void literal(const SGD::Hyper& h, int64_t, const RuleElement& e, RuleExact& o) {
  mpreal g = h.maximize ? -R(e.g) : R(e.g);
  if (h.weight_decay != 0) g = g + R(h.weight_decay) * R(e.p);
  o.p = R(e.p) - R(h.lr) * g;
}

void literal(const SGDMomentum::Hyper& h, int64_t t, const RuleElement& e, RuleExact& o) {
  mpreal g = h.maximize ? -R(e.g) : R(e.g);
  if (h.weight_decay != 0) g = g + R(h.weight_decay) * R(e.p);
  const mpreal b = t == 1 ? g : R(h.momentum) * R(e.st[0]) + (1 - R(h.dampening)) * g;
  const mpreal dir = h.nesterov ? g + R(h.momentum) * b : b;
  o.p = R(e.p) - R(h.lr) * dir;
  o.st[0] = b;
}

}  // namespace

std::vector<RuleExact> mpfr_rule_torch_literal(const RuleConfig& config, int64_t t,
                                               const std::vector<RuleElement>& elements) {
  if (t < 1) throw std::invalid_argument("mpfr_rule_torch_literal: the step t must be >= 1");
  std::vector<RuleExact> out(elements.size());
  visit_rule(config.id, [&](auto rule) {
    using Rule = decltype(rule);
    const auto& h = hyper_of<Rule>(config);
    Rule::validate(h);
    const StateDecls decls = Rule::states(h);
    for (size_t i = 0; i < elements.size(); ++i) {
      const RuleElement& e = elements[i];
      bool finite = std::isfinite(e.p) && std::isfinite(e.g);
      for (float s : e.st) finite = finite && std::isfinite(s);
      if (!finite) throw std::invalid_argument("mpfr_rule_torch_literal: element " + std::to_string(i) + " is not finite");
      for (int k = 0; k < kMaxStates; ++k) { out[i].kept[k] = decls.slot[k].kept; out[i].st[k] = R(0.0); }
      literal(h, t, e, out[i]);
    }
  });
  return out;
}

}  // namespace fh
