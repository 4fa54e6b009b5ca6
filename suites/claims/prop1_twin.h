// prop1_twin (Proposition 1): the fused host twin equals the order-matched two-phase step
// bitwise, W, state and dX, over consecutive steps, for every rule x state format x weight store
// on ragged and seeded random shapes; its G also equals reference/two_phase_host's
// tensor_core_chain G. Producers: kernels/twin/fused_twin, reference/order_matched_host,
// reference/two_phase_host. Oracles: oracles/bitwise, oracles/param_compare.
#pragma once
#include <cstdint>
#include <vector>

#include "suites/claims/twin_cases.h"

namespace fh {

struct Prop1Config {
  uint64_t seed = 0xF0E1D2C3B4A59687ull;
  int steps = 5;
  std::vector<TwinShapeCase> shapes;   // empty: default_prop1_shapes(seed)
  std::vector<RuleId> rules;           // empty: all (kAllRules)
  std::vector<RuleConfig> rule_configs;  // hyperparameters per rule; a rule not listed: defaults
  std::vector<StateFormat> formats;    // empty: fp32, bf16, int8
  std::vector<WeightStore> stores;     // empty: all three
  TileVisitOrder visit = TileVisitOrder::random;
  TwinPlantedDefects defects;          // planted in the twin only
  bool cross_check_reference = true;   // also: twin G == reference tensor_core_chain G
};
std::vector<ClaimCaseResult> run_prop1_cases(const Prop1Config& cfg);

// forge-verify's entry: one shape (--shape), --steps, --seed, --rule/--hyper, --format, --store.
void claim_prop1_twin(const VerifyConfig& cfg, Report& report, const Progress& progress);

}  // namespace fh
