// Plain SGD, as torch.optim.SGD with momentum = 0 documents it.
//   g <- -g if maximize;  g <- g + wd*p;  p <- p - lr*g
#pragma once
#include "kernels/rules/rule_common.h"

namespace fh {

struct SGD {
  static constexpr const char* kName = "sgd";
  static constexpr int kStateSlots = 0;
  struct Hyper {
    double lr = 1e-3, weight_decay = 0.0;
    bool maximize = false;
    // Each hyperparameter by torch.optim's name, in the order reports print them (hyper_fields.h).
    template <class F>
    void fields(F&& f) {
      f("lr", lr); f("weight_decay", weight_decay); f("maximize", maximize);
    }
  };
  struct Scalars { float lr, l2; bool maximize; };
  static void validate(const Hyper& h) {
    require_hyper(finite_nonneg(h.lr), kName, "lr must be finite and >= 0");
    require_hyper(finite_nonneg(h.weight_decay), kName, "weight_decay must be finite and >= 0");
  }
  static StateDecls states(const Hyper&) { return StateDecls{}; }
  static Scalars scalars(const Hyper& h, int64_t) {
    return Scalars{round_scalar(h.lr), round_scalar(h.weight_decay), h.maximize};
  }
  template <class DS = IeeeDivSqrt>
  FH_HD static void update(const Scalars& s, float& p, float g, float*, DS = {}) {
    g = maybe_negate(g, s.maximize);
    g = fadd(g, fmul(s.l2, p));
    p = fsub(p, fmul(s.lr, g));
  }
};

}  // namespace fh
