// schedule_invariance: the fused host twin's W, state and dX are bitwise independent of the tile
// visiting order, the tile shape and the staging chunk TK; changing the reduction order itself
// (instruction grouping, split-K) changes bits, and the verdict becomes bounded:
// |G_variant - G_base| <= B_variant + B_base. Producers: kernels/twin/fused_twin,
// reference/order_matched_host. Oracles: oracles/bitwise, oracles/param_compare,
// oracles/dot_bound (order_dot_bound).
#pragma once
#include <cstdint>
#include <vector>

#include "suites/claims/twin_cases.h"

namespace fh {

struct ScheduleInvarianceConfig {
  uint64_t seed = 0x5C4ED01EULL;
  int steps = 3;
  TwinShapeCase shape{160, 136, 40, 128, 128};
  // (rule, format, store) triples; empty: adamw on every format x store, plus every other rule
  // on one rotating format x store.
  struct Combo { RuleId rule; StateFormat format; WeightStore store; };
  std::vector<Combo> combos;
  TwinPlantedDefects defects;  // planted in the variant schedules, never in the baseline
};
std::vector<ClaimCaseResult> run_schedule_invariance_cases(const ScheduleInvarianceConfig& cfg);

// forge-verify's entry: honours --seed only (fixed shape, steps and combinations).
void claim_schedule_invariance(const VerifyConfig& cfg, Report& report, const Progress& progress);

}  // namespace fh
