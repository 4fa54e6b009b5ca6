// The claim registry: one entry per claim, one table (suites/claims/registry.cpp). An entry says
// which paper statement the claim judges, which producers make its values and which oracles
// judge them, which per-case datasets it writes (the report refuses any other), which
// forge-verify options reach it, which input files it reads and what it needs of the machine (a
// GPU). The id is used unchanged as the report group, the GoogleTest suite name and the --claim
// name. Each claim's code lives in suites/claims/<id>.cpp; a row may declare a GPU variant,
// <id>_gpu, which runs the same code on the fused kernel (suites/claims/claim_config.h).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "suites/claims/claim_config.h"

namespace fh {

// forge-verify options a claim may honour. An option given on the command line that a selected
// claim does not honour is reported (stderr and /meta), never silently dropped.
enum ClaimOption : uint32_t {
  kOptRule = 1u << 0,     // --rule
  kOptFormat = 1u << 1,   // --format
  kOptStore = 1u << 2,    // --store
  kOptShape = 1u << 3,    // --shape
  kOptSteps = 1u << 4,    // --steps
  kOptSeed = 1u << 5,     // --seed
  kOptSamples = 1u << 6,  // --samples
  kOptHyper = 1u << 7,    // --hyper
};
struct ClaimOptionName { ClaimOption bit; const char* flag; };
inline constexpr ClaimOptionName kClaimOptionNames[] = {
    {kOptRule, "--rule"}, {kOptFormat, "--format"}, {kOptStore, "--store"}, {kOptShape, "--shape"},
    {kOptSteps, "--steps"}, {kOptSeed, "--seed"}, {kOptSamples, "--samples"}, {kOptHyper, "--hyper"}};
std::string option_flags(uint32_t options);  // "--rule --seed", or "-" when none

// The run's input files a claim reads (inputs/run_inputs.h, named after RunInputs' members).
// Given any of them and no --claim, forge-verify runs only the claims that judge a given one.
enum RunInput : uint32_t {
  kInputExternal = 1u << 0,     // RunInputs::external: --external-cases and --external
  kInputModelRuns = 1u << 1,    // RunInputs::model_runs: --external-model
  kInputModelSteps = 1u << 2,   // RunInputs::model_steps: --model-step
  kInputTimings = 1u << 3,      // RunInputs::timings: --external-timing
  kInputKillMatrices = 1u << 4, // RunInputs::kill_matrices: --kill-matrix
  kInputConvergenceRuns = 1u << 5,  // RunInputs::convergence_runs: --convergence-run
  kInputTpRankRuns = 1u << 6,       // RunInputs::tp_rank_runs: --tp-rank-run
};
// The RunInput bits of the files `paths` names (--bench-json is forge-verify's own: none).
uint32_t inputs_given(const RunInputPaths& paths);

// What a claim needs of the machine. A machine that lacks it cannot run the claim: the claim is
// reported not-run "not applicable: needs ..." and is no failure, not even under --require-gpu.
struct ClaimNeeds {
  int gpus = 0;  // visible GPUs
  int sm = 0;    // compute capability as major * 10 + minor (90: the build's sm_90a code); 0: any
};
inline constexpr ClaimNeeds kNeedsNothing{};
// Every GPU claim: the kernels are built for sm_90a only (CMakeLists.txt), which no other
// compute capability runs.
inline constexpr ClaimNeeds kNeedsSm90Gpu{.gpus = 1, .sm = 90};

// What the machine offers, as forge-verify sees it (kernels/gpu/device_info.h).
struct MachineCaps {
  int gpus = 0;  // visible GPUs, whether usable or not
  int sm = 0;    // device 0's compute capability, major * 10 + minor; 0: no device
};
// What of `needs` the machine lacks, as the not-run reason says it after "not applicable: ":
// "needs a GPU, 0 visible", "needs 2 GPUs, 1 visible", "needs a GPU of compute capability 9.0,
// 8.9 here"; "" when the machine meets them all.
std::string unmet_need(const ClaimNeeds& needs, const MachineCaps& caps);

// A claim's entry as the driver calls it (the registry binds a claim with variants to one).
using ClaimRun = std::function<void(const VerifyConfig&, Report&, const Progress&)>;

struct ClaimInfo {
  std::string id;                      // report group == GoogleTest suite == --claim name
  std::string statement;               // the paper statement judged, e.g. "Proposition 1"
  std::string what;                    // one line: what the claim checks
  std::vector<std::string> producers;  // what makes the values (kernels/, reference/)
  std::vector<std::string> oracles;    // what judges them (oracles/)
  std::vector<std::string> datasets;   // every per-case dataset name it may write
  uint32_t options = 0;                // ClaimOption bits it honours
  ClaimNeeds needs;                    // of the machine; without them the claim is not applicable
  ClaimRun run = nullptr;
  // forge-verify --jobs runs claims side by side (suites/forge_verify/claim_scheduler.h): a
  // claim that touches process-wide mutable state other claims also use (a global setting, a
  // cache without a lock, the environment) is marked exclusive and runs with no other claim.
  // GPU claims need no mark: they share the GPU one at a time anyway.
  bool exclusive = false;
  // The checks that judge a statement of the paper or of the external release (findings:
  // confirmed, refuted or inconclusive, and a refutation does not fail the run): exact check
  // names, or prefixes written "name*". Every other check is a harness contract. The report
  // refuses a check made a finding that is not listed here.
  std::vector<std::string> findings;
  uint32_t reads = 0;         // RunInput bits: the input files it judges (given one, it runs by default)
  uint32_t reads_beside = 0;  // read when given, never alone a reason to run it (model_step_figures' torch)
  std::string variant_of;     // a GPU variant: the id of the claim whose code it runs; "" otherwise

  bool needs_gpu() const { return needs.gpus > 0; }
};

// Every claim, in the order forge-verify runs them.
const std::vector<ClaimInfo>& claim_registry();
const ClaimInfo* find_claim(const std::string& id);  // null when unknown

// The registry as a Markdown table (forge-verify --list-claims --markdown; the README's table is
// checked against it) and as JSON (--list-claims --json; scripts read dataset names from it).
std::string registry_markdown();
std::string registry_json();

}  // namespace fh
