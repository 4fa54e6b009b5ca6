// The claim registry: one entry per claim, one table (suites/claims/registry.cpp). An entry says
// which paper statement the claim judges, which producers make its values and which oracles
// judge them, which per-case datasets it writes (the report refuses any other), which
// forge-verify options reach it, and whether it needs a GPU. The id is used unchanged as the
// report group, the GoogleTest suite name and the --claim name. Each claim's code lives in
// suites/claims/<id>.cpp (a claim and its _gpu twin share one file).
#pragma once
#include <cstdint>
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

using ClaimRun = void (*)(const VerifyConfig&, Report&, const Progress&);

struct ClaimInfo {
  std::string id;                      // report group == GoogleTest suite == --claim name
  std::string statement;               // the paper statement judged, e.g. "Proposition 1"
  std::string what;                    // one line: what the claim checks
  std::vector<std::string> producers;  // what makes the values (kernels/, reference/)
  std::vector<std::string> oracles;    // what judges them (oracles/)
  std::vector<std::string> datasets;   // every per-case dataset name it may write
  uint32_t options = 0;                // ClaimOption bits it honours
  bool needs_gpu = false;              // run only on a GPU; otherwise reported not-run
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
};

// Every claim, in the order forge-verify runs them.
const std::vector<ClaimInfo>& claim_registry();
const ClaimInfo* find_claim(const std::string& id);  // null when unknown

// The registry as a Markdown table (forge-verify --list-claims --markdown; the README's table is
// checked against it) and as JSON (--list-claims --json; scripts read dataset names from it).
std::string registry_markdown();
std::string registry_json();

}  // namespace fh
