// The eight element-wise rules and their runtime registry.
#pragma once
#include <optional>
#include <string_view>
#include <variant>
#include "kernels/rules/adagrad.h"
#include "kernels/rules/adamw.h"
#include "kernels/rules/lion.h"
#include "kernels/rules/nadam.h"
#include "kernels/rules/radam.h"
#include "kernels/rules/rmsprop.h"
#include "kernels/rules/sgd.h"
#include "kernels/rules/sgd_momentum.h"

namespace fh {

enum class RuleId : uint8_t { adamw, nadam, radam, lion, rmsprop, adagrad, sgd, sgd_momentum };
constexpr RuleId kAllRules[] = {RuleId::adamw, RuleId::nadam, RuleId::radam, RuleId::lion,
                                RuleId::rmsprop, RuleId::adagrad, RuleId::sgd, RuleId::sgd_momentum};

// Calls f(Rule{}) with the rule type for a runtime id; every producer dispatches through here.
template <class F>
decltype(auto) visit_rule(RuleId id, F&& f) {
  switch (id) {
    case RuleId::adamw: return f(AdamW{});
    case RuleId::nadam: return f(NAdam{});
    case RuleId::radam: return f(RAdam{});
    case RuleId::lion: return f(Lion{});
    case RuleId::rmsprop: return f(RMSprop{});
    case RuleId::adagrad: return f(Adagrad{});
    case RuleId::sgd: return f(SGD{});
    case RuleId::sgd_momentum: return f(SGDMomentum{});
  }
  throw std::invalid_argument("unknown rule id");
}

inline const char* rule_name(RuleId id) {
  return visit_rule(id, [](auto r) { return decltype(r)::kName; });
}
inline std::optional<RuleId> parse_rule(std::string_view name) {
  for (RuleId id : kAllRules)
    if (name == rule_name(id)) return id;
  return std::nullopt;
}

// One rule with its hyperparameters, as the harness passes it around.
using AnyHyper = std::variant<AdamW::Hyper, NAdam::Hyper, RAdam::Hyper, Lion::Hyper,
                              RMSprop::Hyper, Adagrad::Hyper, SGD::Hyper, SGDMomentum::Hyper>;
struct RuleConfig {
  RuleId id = RuleId::adamw;
  AnyHyper hyper = AdamW::Hyper{};
};
inline RuleConfig default_rule_config(RuleId id) {
  return visit_rule(id, [&](auto r) { return RuleConfig{id, AnyHyper{typename decltype(r)::Hyper{}}}; });
}
// The typed hyperparameters of a config (throws std::bad_variant_access on a mismatch).
template <class Rule>
const typename Rule::Hyper& hyper_of(const RuleConfig& c) { return std::get<typename Rule::Hyper>(c.hyper); }

}  // namespace fh
