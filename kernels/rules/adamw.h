// AdamW, as torch.optim.AdamW documents it (amsgrad is not supported: it refuses amsgrad=True
// by not having the option; FORGE's paper uses plain AdamW).
//   g <- -g if maximize
//   p <- p * (1 - lr*wd)
//   m <- b1*m + (1-b1)*g
//   v <- b2*v + (1-b2)*g*g
//   p <- p - (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps),  bc_i = 1 - b_i^t
#pragma once
#include "kernels/rules/rule_common.h"

namespace fh {

struct AdamW {
  static constexpr const char* kName = "adamw";
  static constexpr int kStateSlots = 2;
  struct Hyper {
    double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 1e-2;
    bool maximize = false;
    // Each hyperparameter by torch.optim's name, in the order reports print them (hyper_fields.h).
    template <class F>
    void fields(F&& f) {
      f("lr", lr); f("beta1", beta1); f("beta2", beta2); f("eps", eps); f("weight_decay", weight_decay);
      f("maximize", maximize);
    }
  };
  struct Scalars {
    float decay;            // 1 - lr*wd
    float beta1, one_minus_beta1, beta2, one_minus_beta2;
    float step_size;        // lr / bc1
    float sqrt_bc2;         // sqrt(1 - b2^t)
    float eps;
    bool maximize;
  };
  static void validate(const Hyper& h) {
    validate_adam_family(kName, h.lr, h.beta1, h.beta2, h.eps, h.weight_decay);
  }
  static StateDecls states(const Hyper&) { return adam_family_states(); }
  static Scalars scalars(const Hyper& h, int64_t t) {
    const double bc1 = 1.0 - std::pow(h.beta1, double(t));
    const double bc2 = 1.0 - std::pow(h.beta2, double(t));
    Scalars s;
    s.decay = round_scalar(1.0 - h.lr * h.weight_decay);
    s.beta1 = round_scalar(h.beta1);
    s.one_minus_beta1 = round_scalar(1.0 - h.beta1);
    s.beta2 = round_scalar(h.beta2);
    s.one_minus_beta2 = round_scalar(1.0 - h.beta2);
    s.step_size = round_scalar(h.lr / bc1);
    s.sqrt_bc2 = round_scalar(std::sqrt(bc2));
    s.eps = round_scalar(h.eps);
    s.maximize = h.maximize;
    return s;
  }
  template <class DS = IeeeDivSqrt>
  FH_HD static void update(const Scalars& s, float& p, float g, float* st, DS ds = {}) {
    g = maybe_negate(g, s.maximize);
    float m = fadd(fmul(s.beta1, st[0]), fmul(s.one_minus_beta1, g));
    float v = fadd(fmul(s.beta2, st[1]), fmul(s.one_minus_beta2, fmul(g, g)));
    float denom = fadd(ds.div(ds.sqrt(v), s.sqrt_bc2), s.eps);
    p = fsub(fmul(p, s.decay), ds.div(fmul(s.step_size, m), denom));
    st[0] = m;
    st[1] = v;
  }
};

}  // namespace fh
