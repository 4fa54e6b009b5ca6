// AdaGrad, as torch.optim.Adagrad documents it.
//   g <- -g if maximize;  g <- g + wd*p
//   clr = lr / (1 + (t-1)*lr_decay)
//   s <- s + g*g                    (s starts at initial_accumulator_value)
//   p <- p - clr * g / (sqrt(s) + eps)
#pragma once
#include "kernels/rules/rule_common.h"

namespace fh {

struct Adagrad {
  static constexpr const char* kName = "adagrad";
  static constexpr int kStateSlots = 1;
  struct Hyper {
    double lr = 1e-2, lr_decay = 0.0, weight_decay = 0.0, initial_accumulator_value = 0.0;
    double eps = 1e-10;
    bool maximize = false;
    // Each hyperparameter by torch.optim's name, in the order reports print them (hyper_fields.h).
    template <class F>
    void fields(F&& f) {
      f("lr", lr); f("lr_decay", lr_decay); f("weight_decay", weight_decay);
      f("initial_accumulator_value", initial_accumulator_value); f("eps", eps); f("maximize", maximize);
    }
  };
  struct Scalars { float l2, clr, eps; bool maximize; };
  static void validate(const Hyper& h) {
    require_hyper(finite_nonneg(h.lr), kName, "lr must be finite and >= 0");
    require_hyper(finite_nonneg(h.lr_decay), kName, "lr_decay must be finite and >= 0");
    require_hyper(finite_nonneg(h.weight_decay), kName, "weight_decay must be finite and >= 0");
    require_hyper(finite_nonneg(h.initial_accumulator_value), kName,
                  "initial_accumulator_value must be finite and >= 0");
    require_hyper(finite_nonneg(h.eps), kName, "eps must be finite and >= 0");
  }
  static StateDecls states(const Hyper& h) {
    StateDecls d;
    d.slot[0] = {"sum", true, true, h.initial_accumulator_value};
    return d;
  }
  static Scalars scalars(const Hyper& h, int64_t t) {
    Scalars s;
    s.l2 = round_scalar(h.weight_decay);
    s.clr = round_scalar(h.lr / (1.0 + double(t - 1) * h.lr_decay));
    s.eps = round_scalar(h.eps);
    s.maximize = h.maximize;
    return s;
  }
  template <class DS = IeeeDivSqrt>
  FH_HD static void update(const Scalars& s, float& p, float g, float* st, DS ds = {}) {
    g = maybe_negate(g, s.maximize);
    g = fadd(g, fmul(s.l2, p));
    float sum = fadd(st[0], fmul(g, g));
    p = fsub(p, fmul(s.clr, ds.div(g, fadd(ds.sqrt(sum), s.eps))));
    st[0] = sum;
  }
};

}  // namespace fh
