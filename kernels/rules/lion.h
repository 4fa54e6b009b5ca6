// Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"; not in torch.optim,
// so it follows the paper's algorithm with torch-style names and decoupled weight decay).
//   g <- -g if maximize
//   c = b1*m + (1-b1)*g
//   p <- p*(1 - lr*wd) - lr*sign(c)      (sign(0) = 0, sign(NaN) = NaN)
//   m <- b2*m + (1-b2)*g
#pragma once
#include "kernels/rules/rule_common.h"

namespace fh {

struct Lion {
  static constexpr const char* kName = "lion";
  static constexpr int kStateSlots = 1;
  struct Hyper {
    double lr = 1e-4, beta1 = 0.9, beta2 = 0.99, weight_decay = 0.0;
    bool maximize = false;
    // Each hyperparameter by torch.optim's name, in the order reports print them (hyper_fields.h).
    template <class F>
    void fields(F&& f) {
      f("lr", lr); f("beta1", beta1); f("beta2", beta2); f("weight_decay", weight_decay);
      f("maximize", maximize);
    }
  };
  struct Scalars {
    float decay, lr;
    float beta1, one_minus_beta1, beta2, one_minus_beta2;
    bool maximize;
  };
  static void validate(const Hyper& h) {
    require_hyper(finite_nonneg(h.lr), kName, "lr must be finite and >= 0");
    require_hyper(beta_ok(h.beta1) && beta_ok(h.beta2), kName, "betas must be in [0, 1)");
    require_hyper(finite_nonneg(h.weight_decay), kName, "weight_decay must be finite and >= 0");
  }
  static StateDecls states(const Hyper&) {
    StateDecls d;
    d.slot[0] = {"exp_avg", true, false};
    return d;
  }
  static Scalars scalars(const Hyper& h, int64_t) {
    Scalars s;
    s.decay = round_scalar(1.0 - h.lr * h.weight_decay);
    s.lr = round_scalar(h.lr);
    s.beta1 = round_scalar(h.beta1);
    s.one_minus_beta1 = round_scalar(1.0 - h.beta1);
    s.beta2 = round_scalar(h.beta2);
    s.one_minus_beta2 = round_scalar(1.0 - h.beta2);
    s.maximize = h.maximize;
    return s;
  }
  FH_HD static float sign(float c) { return c > 0.0f ? 1.0f : (c < 0.0f ? -1.0f : (fisnan(c) ? c : 0.0f)); }
  template <class DS = IeeeDivSqrt>
  FH_HD static void update(const Scalars& s, float& p, float g, float* st, DS = {}) {
    g = maybe_negate(g, s.maximize);
    float c = fadd(fmul(s.beta1, st[0]), fmul(s.one_minus_beta1, g));
    p = fsub(fmul(p, s.decay), fmul(s.lr, sign(c)));
    st[0] = fadd(fmul(s.beta2, st[0]), fmul(s.one_minus_beta2, g));
  }
};

}  // namespace fh
