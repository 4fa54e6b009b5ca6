// SGD with momentum (and Nesterov), as torch.optim.SGD with momentum > 0 documents it.
//   g <- -g if maximize;  g <- g + wd*p
//   t == 1: b <- g       else b <- mu*b + (1-dampening)*g
//   d = nesterov ? g + mu*b : b
//   p <- p - lr*d
#pragma once
#include "kernels/rules/rule_common.h"

namespace fh {

struct SGDMomentum {
  static constexpr const char* kName = "sgd_momentum";
  static constexpr int kStateSlots = 1;
  struct Hyper {
    double lr = 1e-3, momentum = 0.9, dampening = 0.0, weight_decay = 0.0;
    bool nesterov = false, maximize = false;
    // Each hyperparameter by torch.optim's name, in the order reports print them (hyper_fields.h).
    template <class F>
    void fields(F&& f) {
      f("lr", lr); f("momentum", momentum); f("dampening", dampening); f("weight_decay", weight_decay);
      f("nesterov", nesterov); f("maximize", maximize);
    }
  };
  struct Scalars { float lr, l2, momentum, one_minus_dampening; bool first_step, nesterov, maximize; };
  static void validate(const Hyper& h) {
    require_hyper(finite_nonneg(h.lr), kName, "lr must be finite and >= 0");
    require_hyper(std::isfinite(h.momentum) && h.momentum > 0.0, kName, "momentum must be finite and > 0");
    require_hyper(std::isfinite(h.dampening), kName, "dampening must be finite");
    require_hyper(finite_nonneg(h.weight_decay), kName, "weight_decay must be finite and >= 0");
    require_hyper(!h.nesterov || h.dampening == 0.0, kName, "nesterov requires dampening = 0");
  }
  static StateDecls states(const Hyper&) {
    StateDecls d;
    d.slot[0] = {"momentum_buffer", true, false};
    return d;
  }
  static Scalars scalars(const Hyper& h, int64_t t) {
    return Scalars{round_scalar(h.lr), round_scalar(h.weight_decay), round_scalar(h.momentum),
                   round_scalar(1.0 - h.dampening), t == 1, h.nesterov, h.maximize};
  }
  template <class DS = IeeeDivSqrt>
  FH_HD static void update(const Scalars& s, float& p, float g, float* st, DS = {}) {
    g = maybe_negate(g, s.maximize);
    g = fadd(g, fmul(s.l2, p));
    float b = s.first_step ? g : fadd(fmul(s.momentum, st[0]), fmul(s.one_minus_dampening, g));
    float d = s.nesterov ? fadd(g, fmul(s.momentum, b)) : b;
    p = fsub(p, fmul(s.lr, d));
    st[0] = b;
  }
};

}  // namespace fh
