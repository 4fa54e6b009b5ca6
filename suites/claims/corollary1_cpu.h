// corollary1_cpu (Corollary 1, on the CPU): the fused host twin against the exact-gradient
// standard step. G within the instruction chain's bound of the exact sum; W and state fully
// explained by G (the rule on each producer's own G reproduces it bitwise); dX within the dgrad
// chain bound of dY W_before; with the cuBLAS-order G the standard step equals the twin bitwise.
// Producers: kernels/twin/fused_twin, reference/exact_gradient, reference/two_phase_host.
// Oracles: oracles/bitwise, oracles/param_compare, oracles/dot_bound (tc_chain_dot_bound).
#pragma once
#include <cstdint>
#include <vector>

#include "suites/claims/twin_cases.h"

namespace fh {

struct Corollary1Config {
  uint64_t seed = 0xC0C01A11ULL;
  int steps = 3;
  std::vector<TwinShapeCase> shapes;   // empty: two ragged shapes
  std::vector<RuleId> rules;           // empty: all
  std::vector<RuleConfig> rule_configs;  // hyperparameters per rule; a rule not listed: defaults
  std::vector<WeightStore> stores;     // empty: all
  std::vector<StateFormat> formats;    // empty: fp32 for every rule, plus bf16 and int8 for adamw
  TwinPlantedDefects defects;          // planted in the twin only
};
std::vector<ClaimCaseResult> run_corollary1_cases(const Corollary1Config& cfg);

// forge-verify's entry: honours --seed, --rule/--hyper and --store (fixed shapes, steps and
// formats).
void claim_corollary1_cpu(const VerifyConfig& cfg, Report& report, const Progress& progress);

}  // namespace fh
