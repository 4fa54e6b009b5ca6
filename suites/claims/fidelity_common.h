// What the low-precision fidelity claims (issue 5: prop4_int8, sr_statistics, stagnation,
// gradient_fidelity) share. Each runs twice: on the host twin (<id>) and, on a GPU machine, with
// every fused step on the fused kernel (<id>_gpu), each GPU step then also checked bitwise against
// the twin (suites/claims/twin_tally.h), the tally being one more case of <id>_gpu. A claim body
// is written once against Where (its report group and its fused-step backend) and run by
// run_fidelity.
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "kernels/twin/step_backend.h"
#include "oracles/bitwise.h"
#include "oracles/evidence.h"
#include "reports/report.h"
#include "suites/claims/claim_common.h"
#include "suites/claims/claim_config.h"
#include "suites/claims/twin_tally.h"

namespace fh {

// Where a claim runs: its report group and its fused-step backend (null: the twin).
struct Where {
  std::string group;
  const FusedStepBackend* be = nullptr;
};
using FidelityBody = void (*)(const VerifyConfig&, Report&, const Progress&, const Where&);

// The claim as `variant` says: on the twin, body at Where{group, nullptr}; on the GPU, with the
// fused kernel doing every step, each step checked against the twin, the tally being its own case
// "fused kernel == host twin on every step" (check gpu_equals_twin, attributes steps and
// values_compared).
void run_fidelity(FidelityBody body, const ClaimVariant& variant, const VerifyConfig& cfg, Report& report,
                  const Progress& progress);
// The tally's case of `group` (run_fidelity's last case on the GPU; also the prop2 _gpu claims').
void record_twin_tally_case(Report& report, const std::string& group, const TwinTally& tally,
                            const Progress& progress);

// The fused kernel's backend (kernels/gpu/gpu_step_backend.h) with the twin tally, tiles as the
// kernel runs them (gpu::gpu_tile_for); a null tally gives the plain kernel backend.
FusedStepBackend gpu_backend_with_twin_tally(TwinTally* tally);

// ---- helpers of the runners ----

// snprintf of up to three doubles.
std::string fidelity_fmt(const char* f, double a, double b = 0, double c = 0);
// A bitwise case of `claim` named `name` from comparisons, folded as ParamEvidence and judged by
// judge_bitwise (a NaN difference's max ulp is +inf, as everywhere else).
ClaimCaseResult fidelity_bitwise_case(const std::string& claim, const std::string& name,
                                      const std::vector<BitwiseReport>& reps);
double fidelity_seconds_since(std::chrono::steady_clock::time_point t0);

}  // namespace fh
