// Which rule families this build compiled: all of them, unless CMake's FH_GPU_RULE_FAMILY chose some
// (the kernel mutants' builds, scripts/mutate_gpu.py: one or two nvcc translation units a mutant instead of
// eight). The dispatchers launch only a built family and refuse the others; the GPU suites skip them.
#pragma once
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/rules/all_rules.h"

namespace fh::gpu {

#ifdef FH_GPU_RULE_FAMILIES_BUILT
constexpr bool rule_family_listed(RuleId id) {
  for (RuleId built : {FH_GPU_RULE_FAMILIES_BUILT})
    if (built == id) return true;
  return false;
}
#endif

template <class Rule>
constexpr bool rule_family_built() {
#ifdef FH_GPU_RULE_FAMILIES_BUILT
#define FH_GPU_BUILT_CASE(name, Type) \
  if constexpr (std::is_same_v<Rule, Type>) return rule_family_listed(RuleId::name);
  FH_RULES(FH_GPU_BUILT_CASE)
#undef FH_GPU_BUILT_CASE
  return false;
#else
  return true;
#endif
}

inline bool gpu_rule_built(RuleId id) {
  return visit_rule(id, [](auto r) { return rule_family_built<decltype(r)>(); });
}

template <class Rule>
[[noreturn]] void refuse_unbuilt_family(const char* who) {
  throw std::invalid_argument(std::string(who) + ": rule " + Rule::kName +
                              " is not in this build (CMake FH_GPU_RULE_FAMILY compiled other families)");
}

}  // namespace fh::gpu
