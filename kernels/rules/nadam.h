// NAdam, as torch.optim.NAdam documents it (momentum_decay schedule, optional decoupled decay).
//   g <- -g if maximize;  decoupled: p <- p*(1 - lr*wd)  else g <- g + wd*p
//   mu_t = b1*(1 - 0.5*0.96^(t*psi)),  mu_{t+1} likewise,  prod_t = mu_1*...*mu_t
//   m <- b1*m + (1-b1)*g;   v <- b2*v + (1-b2)*g*g
//   denom = sqrt(v / bc2) + eps
//   p <- p - [lr*(1-mu_t)/(1-prod_t)] * g/denom - [lr*mu_{t+1}/(1-prod_t*mu_{t+1})] * m/denom
#pragma once
#include "kernels/rules/rule_common.h"

namespace fh {

struct NAdam {
  static constexpr const char* kName = "nadam";
  static constexpr int kStateSlots = 2;
  struct Hyper {
    double lr = 2e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
    double momentum_decay = 4e-3;
    bool decoupled_weight_decay = false, maximize = false;
    // Each hyperparameter by torch.optim's name, in the order reports print them (hyper_fields.h).
    template <class F>
    void fields(F&& f) {
      f("lr", lr); f("beta1", beta1); f("beta2", beta2); f("eps", eps); f("weight_decay", weight_decay);
      f("momentum_decay", momentum_decay); f("decoupled_weight_decay", decoupled_weight_decay);
      f("maximize", maximize);
    }
  };
  struct Scalars {
    float decay, l2;        // decoupled: decay = 1 - lr*wd, l2 = 0; else decay = 1, l2 = wd
    bool decoupled;
    float beta1, one_minus_beta1, beta2, one_minus_beta2;
    float bc2, eps;
    float coef_grad, coef_avg;  // the two addcdiv values, positive
    bool maximize;
  };
  static void validate(const Hyper& h) {
    validate_adam_family(kName, h.lr, h.beta1, h.beta2, h.eps, h.weight_decay);
    require_hyper(finite_nonneg(h.momentum_decay), kName, "momentum_decay must be finite and >= 0");
  }
  static StateDecls states(const Hyper&) { return adam_family_states(); }
  static double mu(const Hyper& h, int64_t t) {
    return h.beta1 * (1.0 - 0.5 * std::pow(0.96, double(t) * h.momentum_decay));
  }
  static Scalars scalars(const Hyper& h, int64_t t) {
    double prod = 1.0;  // torch keeps mu_product as state; it is the same product of mu_i
    for (int64_t i = 1; i <= t; ++i) prod *= mu(h, i);
    const double mu_t = mu(h, t), mu_next = mu(h, t + 1);
    Scalars s;
    s.decoupled = h.decoupled_weight_decay;
    s.decay = round_scalar(s.decoupled ? 1.0 - h.lr * h.weight_decay : 1.0);
    s.l2 = round_scalar(s.decoupled ? 0.0 : h.weight_decay);
    s.beta1 = round_scalar(h.beta1);
    s.one_minus_beta1 = round_scalar(1.0 - h.beta1);
    s.beta2 = round_scalar(h.beta2);
    s.one_minus_beta2 = round_scalar(1.0 - h.beta2);
    s.bc2 = round_scalar(1.0 - std::pow(h.beta2, double(t)));
    s.eps = round_scalar(h.eps);
    s.coef_grad = round_scalar(h.lr * (1.0 - mu_t) / (1.0 - prod));
    s.coef_avg = round_scalar(h.lr * mu_next / (1.0 - prod * mu_next));
    s.maximize = h.maximize;
    return s;
  }
  template <class DS = IeeeDivSqrt>
  FH_HD static void update(const Scalars& s, float& p, float g, float* st, DS ds = {}) {
    g = maybe_negate(g, s.maximize);
    if (s.decoupled) p = fmul(p, s.decay);
    else g = fadd(g, fmul(s.l2, p));
    float m = fadd(fmul(s.beta1, st[0]), fmul(s.one_minus_beta1, g));
    float v = fadd(fmul(s.beta2, st[1]), fmul(s.one_minus_beta2, fmul(g, g)));
    float denom = fadd(ds.sqrt(ds.div(v, s.bc2)), s.eps);
    p = fsub(p, fmul(s.coef_grad, ds.div(g, denom)));
    p = fsub(p, fmul(s.coef_avg, ds.div(m, denom)));
    st[0] = m;
    st[1] = v;
  }
};

}  // namespace fh
