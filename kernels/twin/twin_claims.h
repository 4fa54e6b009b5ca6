// The twin's claims as cases with verdicts and evidence, for the CPU suites and for forge-verify:
//   prop1_twin           the fused twin equals the order-matched two-phase step bitwise
//   schedule_invariance  tile order / tile shape / TK staging change nothing; instruction
//                        grouping or split-K change bits, and the verdict becomes "bounded"
//   corollary1           twin vs the exact-gradient standard step: G within the chain bound,
//                        W fully explained by G
//   nonseparable         a LAMB trust ratio through the twin must differ from its two-phase version
//   planted_defects      each planted defect is seen by the suites (power)
// The runners produce (twin, order-matched host, references) and judge through the oracles
// (oracles/bitwise.h, oracles/dot_bound.h); they never relax a bitwise verdict to a tolerance.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/twin/fused_twin.h"
#include "reference/case_gen.h"

namespace fh {

struct ClaimCaseResult {
  std::string claim, case_name;
  bool pass = false;
  bool not_run = false;    // the case could not run (note says why); pass is then false
  int64_t differing = 0;   // bitwise cases: elements that differ (summed over arrays and steps)
  double max_ulp = 0;      // largest ulp distance among them (+inf when a NaN differs)
  std::string first_diff;  // the first differing coordinate: array, step, element, tile, bits
  // Bounded cases: metric <= bound (> 0) is the verdict. Bitwise cases: bound = 0 and
  // metric = differing. planted_defects cases: metric = failing cases of the claim, bound = 0.
  double metric = 0, bound = 0;
  std::string note;
};

// "claim  case  PASS/FAIL  differing  max_ulp  metric/bound  first_diff/note", one line per case.
std::string format_claim_table(const std::vector<ClaimCaseResult>& results);

// One tensor shape with its tile shape and input distribution, and how much of the rule x state
// format x weight store cross product runs on it (to keep CPU time in check on large shapes):
//   full           every combination
//   rotate_format  every rule x store, the state format rotating
//   rotate_both    every rule once, format and store rotating (all three of each appear)
enum class ComboCoverage : uint8_t { full, rotate_format, rotate_both };
struct TwinShapeCase {
  int64_t out = 0, in = 0, T = 0;
  int64_t tile_rows = 128, tile_cols = 128;
  CaseDistribution dist = CaseDistribution::normal;
  CaseDistParams x_params, dy_params;
  ComboCoverage coverage = ComboCoverage::full;
  std::string label() const;  // "200x192 T=100 tile 128x128 normal"
};

// Ragged fixed shapes plus `n_random` seeded random ones (tile columns a multiple of 64).
std::vector<TwinShapeCase> default_prop1_shapes(uint64_t seed, int n_random = 2);

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

struct NonseparableConfig {
  uint64_t seed = 0x1A3BFA15ULL;
  int steps = 3;
  TwinShapeCase shape{128, 128, 48, 64, 64};
};
std::vector<ClaimCaseResult> run_nonseparable_cases(const NonseparableConfig& cfg);

// Each planted defect (align_bits = 24, a tile's state one row off, dX after the update) run
// through prop1_twin, schedule_invariance and corollary1 on a small case. A case passes when that
// claim's verdict is FAIL (the defect is seen). `claim` selects one claim ("" = all three).
std::vector<ClaimCaseResult> run_planted_defect_cases(const std::string& claim = "",
                                                      uint64_t seed = 0xDEFEC7ULL);

}  // namespace fh
