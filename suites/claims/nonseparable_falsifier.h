// nonseparable_falsifier: Proposition 1's boundary and the map past it.
// The falsifier: a non-separable update (LAMB's trust ratio, one scalar from a norm over the
// region) run through the fused twin sees one tile at a time, so it MUST differ from its two-phase
// version; controls: one tile covering the tensor matches, and separable AdamW on the same data
// matches bitwise.
// The map (docs/NONSEPARABLE.md): for LAMB, Adam-mini, Adafactor, SM3-I, SM3-II, LARS and Muon,
//   - linear-fusion-only (the twin's G materialized, then the standard step) == two-phase, bitwise;
//   - the exact fused schedule (G recomputed tile by tile per pass, tiles in a random order,
//     cross-tile statistics in the fixed order) == two-phase with the same order, bitwise;
//   - naive tile fusion (tile-local statistics) MUST differ, with its error's size as metrics;
//   - the fixed-order fp32 norm and row-sum statistics within a stated bound of MPFR;
//   - on the GPU (the _gpu variant, suites/claims/nonseparable_gpu_cases.h): each exact schedule
//     against the twin bitwise, and its memory and time against the two-phase path.
// Producers: kernels/twin/nonseparable, kernels/twin/nonseparable_rules, kernels/twin/fused_twin,
// reference/order_matched_host, reference/nonseparable_two_phase. Oracles: oracles/bitwise,
// oracles/param_compare.
#pragma once
#include <cstdint>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "kernels/twin/nonseparable_rules.h"
#include "oracles/param_compare.h"
#include "suites/claims/twin_cases.h"

namespace fh {

struct NonseparableConfig {
  uint64_t seed = 0x1A3BFA15ULL;
  int steps = 3;
  TwinShapeCase shape{128, 128, 48, 64, 64};
};
std::vector<ClaimCaseResult> run_nonseparable_cases(const NonseparableConfig& cfg);

struct NonseparableMapConfig {
  uint64_t seed = 0x1A3BFA15ULL;
  int steps = 3;
  // Small shapes keep the CPU claim fast; rows a multiple of Adam-mini's 16-row blocks; the third
  // has ragged tiles; the fourth has dY at 1e-4 of the others' scale, so that |g| comes near the
  // rules' eps and the MPFR step case sees where an eps sits (a defect at unit scale hides there).
  std::vector<TwinShapeCase> shapes{{64, 128, 32, 16, 32},
                                    {64, 128, 32, 32, 64},
                                    {48, 80, 24, 16, 32},
                                    {80, 96, 32, 16, 32, CaseDistribution::normal, {}, CaseDistParams{1e-4}}};
  std::vector<NsRule> rules{std::begin(kNsRules), std::end(kNsRules)};
  NsHyper hyper;
  NsPlants plants;  // planted on the exact fused schedule only (tests)
  // Planted in the twin's G loop (linear-fusion-only, exact fused and naive all read it; tests).
  TwinPlantedDefects twin_defects;
  // Planted in the MPFR case (tests): the fp32 statistics rounded to bf16 before they are
  // judged, a statistic kept at lower precision than its bound assumes.
  bool plant_statistic_in_bf16 = false;
  // Planted in the MPFR step case (tests): the reference's lr 0.1% off, a step the check must see.
  bool plant_mpfr_lr_off = false;
};
// The MPFR step case's bound: the fp32 two-phase step's error against ns_mpfr_step, normwise per
// array, relative to the step's change plus one fp32 rounding on each side (2^-22 of the array's norm).
inline constexpr double kNsMpfrStepTolerance = 1e-4;
// A case of the map, with its report attributes (the schedule, the map's figures) and, for a naive
// fusion case, its error size: dataset "naive_error" = {largest elementwise relative error,
// normwise relative error, fraction of elements whose bits differ} of W after the last step.
struct NsMapCase {
  ClaimCaseResult result;
  std::vector<std::pair<std::string, std::string>> attrs;
  std::vector<double> naive_error;  // empty: not a naive fusion case
};
inline constexpr const char* kNaiveErrorDataset = "naive_error";  // declared in the registry row
std::vector<NsMapCase> run_nonseparable_map_cases(const NonseparableMapConfig& cfg);

// One row of the map: the statistic that couples the coordinates, the exact fused schedule (or
// why none keeps G unmaterialized), its passes over G (the twin's ns_step returns the same count;
// the claim checks it), and the bytes it moves beyond a one-pass fused step, per parameter.
struct NsMapRow {
  NsRule rule;
  const char* statistic;
  const char* schedule;
  int passes_over_g;
  int extra_bytes_per_param;  // fp32 state and weights re-read for statistics or a second pass
  const char* extra_other;    // element ops and dense work beyond the GEMM passes
};
const std::vector<NsMapRow>& ns_map_rows();
const NsMapRow& ns_map_row(NsRule r);
// Extra GEMM FLOPs of the exact schedule over a one-pass fused step: (passes - 1) * 2 T out in.
double ns_extra_gemm_flops(const NsMapRow& row, int64_t out, int64_t in, int64_t T);
// Muon's Newton-Schulz FLOPs, the same in the two-phase step: steps * (4 n^2 k + 2 n^3),
// n = min(out, in), k = max(out, in).
double ns_newton_schulz_flops(int64_t out, int64_t in, int steps);

// Every array of two parameters of the same rule and shape, bit for bit, into ev.
void compare_ns(ParamEvidence& ev, const NsParam& a, const NsParam& b, int64_t step, TileShape tile,
                const std::string& where);
// The map's row of a rule as report attributes (statistic, schedule, passes, extra FLOPs and
// bytes at 14336 x 4096, the order description).
std::vector<std::pair<std::string, std::string>> ns_map_attrs(NsRule rule, const NsHyper& h);
// The GPU variant's map case of a rule (run_nonseparable_gpu_cases, suites/claims/nonseparable_gpu_cases.h).
std::string ns_gpu_map_case_name(NsRule rule);

// forge-verify's entries: nonseparable_falsifier (the twin: the falsifier and the map) and
// nonseparable_falsifier_gpu (the exact schedules on the GPU against the twin, and the map's
// memory and time at 14336 x 4096); both honour --seed only (fixed shapes and steps).
void claim_nonseparable_falsifier(const VerifyConfig& cfg, Report& report, const Progress& progress,
                                  const ClaimVariant& variant);

}  // namespace fh
