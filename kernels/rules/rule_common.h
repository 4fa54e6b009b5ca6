// What every element-wise rule provides (the eight rules of FORGE Proposition 1).
//
// A rule is a struct with
//   static constexpr const char* kName;              // torch-like lower-case name
//   static constexpr int kStateSlots;                // states() keeps only slots below it
//   struct Hyper { ... };                            // torch.optim's hyperparameters, in double
//   struct Scalars { ... };                          // per-step scalars, fp32, trivially copyable
//   static void validate(const Hyper&);              // throws std::invalid_argument
//   static StateDecls states(const Hyper&);          // which state tensors it keeps
//   static Scalars scalars(const Hyper&, int64_t t); // host only: double, rounded once to fp32
//   template <class DS = IeeeDivSqrt>
//   FH_HD static void update(const Scalars&, float& p, float g, float* st, DS ds = {});
// `st` always has kMaxStates slots; a state the rule does not keep is passed as 0 and ignored.
// `t` is the 1-based step count after increment, as torch.optim uses it.
// The per-element update uses only the IEEE shim (kernels/common/ieee_shim.h): no pow/exp/log;
// its divisions and square roots go through ds (ds.div, ds.sqrt), so that the GPU may speculate.
#pragma once
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include "kernels/common/ieee_shim.h"

namespace fh {

constexpr int kMaxStates = 3;

struct StateDecl {
  const char* name = nullptr;  // torch.optim's state key, e.g. "exp_avg"
  bool kept = false;           // false: the rule does not keep this slot for these hyperparameters
  bool nonnegative = false;    // true for second moments / accumulators (INT8 uses the unsigned codec)
  double initial = 0.0;        // the value torch.optim initialises the state with
};
struct StateDecls {
  StateDecl slot[kMaxStates];
  int count() const { int n = 0; for (const auto& s : slot) n += s.kept; return n; }
};

// Host-side helpers for scalars and validation.
inline float round_scalar(double x) { return static_cast<float>(x); }  // the one rounding

inline void require_hyper(bool ok, const char* rule, const char* what) {
  if (!ok) throw std::invalid_argument(std::string(rule) + ": invalid hyperparameter: " + what);
}
inline bool finite_nonneg(double x) { return std::isfinite(x) && x >= 0.0; }
inline bool beta_ok(double b) { return std::isfinite(b) && b >= 0.0 && b < 1.0; }

// The checks and state slots the Adam family (AdamW, NAdam, RAdam) shares.
inline void validate_adam_family(const char* rule, double lr, double beta1, double beta2, double eps,
                                 double weight_decay) {
  require_hyper(finite_nonneg(lr), rule, "lr must be finite and >= 0");
  require_hyper(beta_ok(beta1) && beta_ok(beta2), rule, "betas must be in [0, 1)");
  require_hyper(finite_nonneg(eps), rule, "eps must be finite and >= 0");
  require_hyper(finite_nonneg(weight_decay), rule, "weight_decay must be finite and >= 0");
}
inline StateDecls adam_family_states() {
  StateDecls d;
  d.slot[0] = {"exp_avg", true, false};
  d.slot[1] = {"exp_avg_sq", true, true};
  return d;
}

// maximize: torch negates the gradient first; negation is exact.
FH_HD float maybe_negate(float g, bool maximize) { return maximize ? fneg(g) : g; }

}  // namespace fh
