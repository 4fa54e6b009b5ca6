// RAdam, as torch.optim.RAdam documents it (rectification when rho_t > 5, optional decoupled decay).
//   g <- -g if maximize;  decoupled: p <- p*(1 - lr*wd)  else g <- g + wd*p
//   m <- b1*m + (1-b1)*g;   v <- b2*v + (1-b2)*g*g
//   rho_inf = 2/(1-b2) - 1,  rho_t = rho_inf - 2 t b2^t / (1 - b2^t)
//   rho_t > 5: p <- p - [lr * r_t * sqrt(bc2) / bc1] * m / (sqrt(v) + eps)
//   else:      p <- p - [lr / bc1] * m
// The branch and the bracketed coefficient are per-step scalars (host, double, rounded once).
#pragma once
#include "kernels/rules/rule_common.h"

namespace fh {

struct RAdam {
  static constexpr const char* kName = "radam";
  static constexpr int kStateSlots = 2;
  struct Hyper {
    double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
    bool decoupled_weight_decay = false, maximize = false;
    // Each hyperparameter by torch.optim's name, in the order reports print them (hyper_fields.h).
    template <class F>
    void fields(F&& f) {
      f("lr", lr); f("beta1", beta1); f("beta2", beta2); f("eps", eps); f("weight_decay", weight_decay);
      f("decoupled_weight_decay", decoupled_weight_decay); f("maximize", maximize);
    }
  };
  struct Scalars {
    float decay, l2;
    bool decoupled;
    float beta1, one_minus_beta1, beta2, one_minus_beta2;
    bool rectified;
    float coef;  // lr*r_t*sqrt(bc2)/bc1 when rectified, lr/bc1 otherwise
    float eps;
    bool maximize;
  };
  static void validate(const Hyper& h) {
    validate_adam_family(kName, h.lr, h.beta1, h.beta2, h.eps, h.weight_decay);
  }
  static StateDecls states(const Hyper&) { return adam_family_states(); }
  // rho_t and the rectification term, shared with the references so the branch is the same.
  static double rho_t(const Hyper& h, int64_t t) {
    const double rho_inf = 2.0 / (1.0 - h.beta2) - 1.0;
    const double b2t = std::pow(h.beta2, double(t));
    return rho_inf - 2.0 * double(t) * b2t / (1.0 - b2t);
  }
  static Scalars scalars(const Hyper& h, int64_t t) {
    const double bc1 = 1.0 - std::pow(h.beta1, double(t));
    const double bc2 = 1.0 - std::pow(h.beta2, double(t));
    const double rho_inf = 2.0 / (1.0 - h.beta2) - 1.0;
    const double rt = rho_t(h, t);
    Scalars s;
    s.decoupled = h.decoupled_weight_decay;
    s.decay = round_scalar(s.decoupled ? 1.0 - h.lr * h.weight_decay : 1.0);
    s.l2 = round_scalar(s.decoupled ? 0.0 : h.weight_decay);
    s.beta1 = round_scalar(h.beta1);
    s.one_minus_beta1 = round_scalar(1.0 - h.beta1);
    s.beta2 = round_scalar(h.beta2);
    s.one_minus_beta2 = round_scalar(1.0 - h.beta2);
    s.rectified = rt > 5.0;
    if (s.rectified) {
      const double r = std::sqrt((rt - 4.0) * (rt - 2.0) * rho_inf /
                                 ((rho_inf - 4.0) * (rho_inf - 2.0) * rt));
      s.coef = round_scalar(h.lr * r * std::sqrt(bc2) / bc1);
    } else {
      s.coef = round_scalar(h.lr / bc1);
    }
    s.eps = round_scalar(h.eps);
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
    if (s.rectified) p = fsub(p, ds.div(fmul(s.coef, m), fadd(ds.sqrt(v), s.eps)));
    else p = fsub(p, fmul(s.coef, m));
    st[0] = m;
    st[1] = v;
  }
};

}  // namespace fh
