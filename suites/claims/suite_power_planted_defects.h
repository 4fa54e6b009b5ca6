// suite_power_planted_defects: the power of the twin claims. Each planted defect of the twin
// (align_bits = 24, a tile's state one row off, dX after the update) is run through prop1_twin,
// schedule_invariance and corollary1 on a small case; a case passes when that claim's verdict is
// FAIL (the defect is seen). Producers: kernels/twin/fused_twin (TwinPlantedDefects) through
// those claims' runners. Oracles: theirs (oracles/bitwise, oracles/param_compare,
// oracles/dot_bound).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "suites/claims/twin_cases.h"

namespace fh {

// `claim` selects one claim ("prop1_twin", "schedule_invariance", "corollary1"; "" = all three).
std::vector<ClaimCaseResult> run_planted_defect_cases(const std::string& claim = "",
                                                      uint64_t seed = 0xDEFEC7ULL);

// forge-verify's entry: honours --seed only.
void claim_suite_power_planted_defects(const VerifyConfig& cfg, Report& report, const Progress& progress);

}  // namespace fh
