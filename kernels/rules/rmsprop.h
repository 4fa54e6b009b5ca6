// RMSprop, as torch.optim.RMSprop documents it (optional centered and momentum variants).
//   g <- -g if maximize;  g <- g + wd*p
//   v <- a*v + (1-a)*g*g
//   centered: ga <- a*ga + (1-a)*g;  w = v - ga*ga   else w = v
//   avg = sqrt(w) + eps
//   momentum > 0: b <- mu*b + g/avg;  p <- p - lr*b     else p <- p - lr*(g/avg)
// States: slot 0 square_avg, slot 1 momentum_buffer (momentum > 0), slot 2 grad_avg (centered).
#pragma once
#include "kernels/rules/rule_common.h"

namespace fh {

struct RMSprop {
  static constexpr const char* kName = "rmsprop";
  static constexpr int kStateSlots = 3;
  struct Hyper {
    double lr = 1e-2, alpha = 0.99, eps = 1e-8, weight_decay = 0.0, momentum = 0.0;
    bool centered = false, maximize = false;
    // Each hyperparameter by torch.optim's name, in the order reports print them (hyper_fields.h).
    template <class F>
    void fields(F&& f) {
      f("lr", lr); f("alpha", alpha); f("eps", eps); f("weight_decay", weight_decay);
      f("momentum", momentum); f("centered", centered); f("maximize", maximize);
    }
  };
  struct Scalars {
    float l2, alpha, one_minus_alpha, eps, momentum, lr;
    bool centered, use_momentum, maximize;
  };
  static void validate(const Hyper& h) {
    require_hyper(finite_nonneg(h.lr), kName, "lr must be finite and >= 0");
    require_hyper(std::isfinite(h.alpha) && h.alpha >= 0.0 && h.alpha <= 1.0, kName, "alpha must be in [0, 1]");
    require_hyper(finite_nonneg(h.eps), kName, "eps must be finite and >= 0");
    require_hyper(finite_nonneg(h.weight_decay), kName, "weight_decay must be finite and >= 0");
    require_hyper(finite_nonneg(h.momentum), kName, "momentum must be finite and >= 0");
  }
  static StateDecls states(const Hyper& h) {
    StateDecls d;
    d.slot[0] = {"square_avg", true, true};
    d.slot[1] = {"momentum_buffer", h.momentum > 0.0, false};
    d.slot[2] = {"grad_avg", h.centered, false};
    return d;
  }
  static Scalars scalars(const Hyper& h, int64_t) {
    Scalars s;
    s.l2 = round_scalar(h.weight_decay);
    s.alpha = round_scalar(h.alpha);
    s.one_minus_alpha = round_scalar(1.0 - h.alpha);
    s.eps = round_scalar(h.eps);
    s.momentum = round_scalar(h.momentum);
    s.lr = round_scalar(h.lr);
    s.centered = h.centered;
    s.use_momentum = h.momentum > 0.0;
    s.maximize = h.maximize;
    return s;
  }
  template <class DS = IeeeDivSqrt>
  FH_HD static void update(const Scalars& s, float& p, float g, float* st, DS ds = {}) {
    g = maybe_negate(g, s.maximize);
    g = fadd(g, fmul(s.l2, p));
    float v = fadd(fmul(s.alpha, st[0]), fmul(s.one_minus_alpha, fmul(g, g)));
    float w = v;
    if (s.centered) {
      float ga = fadd(fmul(s.alpha, st[2]), fmul(s.one_minus_alpha, g));
      w = fsub(v, fmul(ga, ga));
      st[2] = ga;
    }
    float avg = fadd(ds.sqrt(w), s.eps);
    if (s.use_momentum) {
      float b = fadd(fmul(s.momentum, st[1]), ds.div(g, avg));
      p = fsub(p, fmul(s.lr, b));
      st[1] = b;
    } else {
      p = fsub(p, fmul(s.lr, ds.div(g, avg)));
    }
    st[0] = v;
  }
};

}  // namespace fh
