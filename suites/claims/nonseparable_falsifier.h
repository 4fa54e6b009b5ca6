// nonseparable_falsifier: a non-separable update (LAMB's trust ratio, one scalar from a norm over
// the region) run through the fused twin sees one tile at a time, so it MUST differ from its
// two-phase version; controls: one tile covering the tensor matches, and separable AdamW on the
// same data matches bitwise. Producers: kernels/twin/nonseparable, kernels/twin/fused_twin,
// reference/order_matched_host. Oracles: oracles/bitwise, oracles/param_compare.
#pragma once
#include <cstdint>
#include <vector>

#include "suites/claims/twin_cases.h"

namespace fh {

struct NonseparableConfig {
  uint64_t seed = 0x1A3BFA15ULL;
  int steps = 3;
  TwinShapeCase shape{128, 128, 48, 64, 64};
};
std::vector<ClaimCaseResult> run_nonseparable_cases(const NonseparableConfig& cfg);

// forge-verify's entry: honours --seed only (fixed shape and steps).
void claim_nonseparable_falsifier(const VerifyConfig& cfg, Report& report, const Progress& progress);

}  // namespace fh
