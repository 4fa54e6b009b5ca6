// What the host-twin claims (prop1_twin, schedule_invariance, corollary1_cpu,
// nonseparable_falsifier, suite_power_planted_defects) share: the shape cases they run on, their
// rule x state format x weight store combinations, their seeded inputs and twin schedules (the
// bitwise evidence they fold into a case: oracles/param_compare.h's judge_bitwise).
#pragma once
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "kernels/twin/fused_twin.h"
#include "oracles/evidence.h"
#include "oracles/param_compare.h"
#include "reference/case_gen.h"
#include "suites/claims/claim_common.h"

namespace fh {

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

// A combination as the twin claims' case names spell it: "adamw fp32 fp32_master".
std::string combo_name(RuleId r, StateFormat f, WeightStore w);

// The defaults of an empty selection: every state format, every weight store, every rule.
inline const std::vector<StateFormat> kAllFormats{StateFormat::fp32, StateFormat::bf16,
                                                  StateFormat::int8};
inline const std::vector<WeightStore> kAllStores{WeightStore::fp32_master, WeightStore::bf16_rne,
                                                 WeightStore::bf16_sr};
inline std::vector<RuleId> all_rules() {
  return std::vector<RuleId>(std::begin(kAllRules), std::end(kAllRules));
}
template <class T>
std::vector<T> or_default(const std::vector<T>& v, std::vector<T> d) { return v.empty() ? d : v; }
// The rule ids of forge-verify's --rule selection (empty: the runner's default, all rules).
std::vector<RuleId> rule_ids(const VerifyConfig& cfg);

// A shape case's inputs for `steps` steps: make_layer_inputs with the case's distribution (after
// refusing a non-positive tile shape).
LayerInputs make_shape_inputs(uint64_t seed, const TwinShapeCase& s, int steps);

// The twin's schedule for a shape case: its tiles, `visit`, the fused kernel's order (TK = 64).
TwinSchedule schedule_for(const TwinShapeCase& s, TileVisitOrder visit, uint64_t visit_seed,
                          const TwinPlantedDefects& defects);

// The combinations run on shape `shape_index` under the shape's coverage, rules outermost.
std::vector<Combo> combos_for(const TwinShapeCase& s, const std::vector<RuleConfig>& rules,
                              const std::vector<StateFormat>& formats,
                              const std::vector<WeightStore>& stores, int shape_index);

bool int8_fits(const TwinShapeCase& s, int64_t tile_cols);
// A twin claim's case for one combination on one shape: named, announced to the progress line, and
// already not-run (with the reason) when it is INT8 on a tile width that would split INT8 blocks
// (the twin refuses it); the caller pushes a not-run case and goes on.
ClaimCaseResult open_twin_case(const char* claim, std::string case_name, StateFormat f, const TwinShapeCase& shape);

// dX [T, in] of two producers, bit for bit, into ev (nothing when T == 0).
void compare_dx(ParamEvidence& ev, const std::vector<float>& a, const std::vector<float>& b,
                int64_t T, int64_t in, int64_t step, const std::string& where);

}  // namespace fh
