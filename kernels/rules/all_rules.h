// The element-wise rules (kernels/rules/rule_list.h) and their runtime registry, derived from
// that one list.
#pragma once
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <variant>
#include "kernels/rules/rule_list.h"

namespace fh {

#define FH_RULE_ENUMERATOR(name, Type) name,
enum class RuleId : uint8_t { FH_RULES(FH_RULE_ENUMERATOR) };
#undef FH_RULE_ENUMERATOR
#define FH_RULE_ID(name, Type) RuleId::name,
constexpr RuleId kAllRules[] = {FH_RULES(FH_RULE_ID)};
#undef FH_RULE_ID

// The list's name is the rule's own kName, so parse_rule, file stems and RuleId agree.
#define FH_RULE_NAME_MATCHES(name, Type) \
  static_assert(std::string_view(Type::kName) == #name, #Type "::kName differs from its name in rule_list.h");
FH_RULES(FH_RULE_NAME_MATCHES)
#undef FH_RULE_NAME_MATCHES

// The rule type of a RuleId.
template <RuleId> struct RuleOf;
#define FH_RULE_OF(name, Type) \
  template <>                  \
  struct RuleOf<RuleId::name> { using type = Type; };
FH_RULES(FH_RULE_OF)
#undef FH_RULE_OF

// std::variant<Of<Rule>...> over every rule in RuleId's order (RuleId counts from 0 in list order).
template <template <class> class Of, std::size_t... I>
std::variant<Of<typename RuleOf<RuleId(I)>::type>...> rule_variant_of(std::index_sequence<I...>);
template <template <class> class Of>
using RuleVariant = decltype(rule_variant_of<Of>(std::make_index_sequence<std::size(kAllRules)>{}));

// Calls f(Rule{}) with the rule type for a runtime id; every producer dispatches through here.
template <class F>
decltype(auto) visit_rule(RuleId id, F&& f) {
  switch (id) {
#define FH_VISIT_RULE_CASE(name, Type) \
  case RuleId::name: return f(Type{});
    FH_RULES(FH_VISIT_RULE_CASE)
#undef FH_VISIT_RULE_CASE
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
template <class Rule>
using HyperOf = typename Rule::Hyper;
using AnyHyper = RuleVariant<HyperOf>;
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
