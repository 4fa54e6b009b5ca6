// Pieces every claim shares, one copy each: the rule x format x store combinations of a
// configuration, one layer's seeded inputs, and the mapping of runner results into the report.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/formats/host_param.h"
#include "oracles/evidence.h"
#include "reports/report.h"
#include "reference/case_gen.h"
#include "suites/claims/claim_config.h"

namespace fh {

// ---- combinations ----

struct Combo {
  RuleConfig rule;
  StateFormat format;
  WeightStore store;
};
// Every selected rule x state format x weight store, rules outermost.
std::vector<Combo> combos_of(const VerifyConfig& cfg);
// The configured hyperparameters of a rule, or torch.optim's defaults.
RuleConfig config_for(RuleId id, const std::vector<RuleConfig>& configs);

// ---- inputs ----

// One layer's inputs for `steps` steps: new X [T, in] and dY [T, out] per step (bf16 bits, drawn
// by reference/case_gen.h with `dist`), one initial weight w0 [out, in] (fp32, small enough that
// every rule moves bf16). The one input maker of the claims.
struct StepInputs {
  std::vector<bf16> X, dY;
};
struct LayerInputs {
  int64_t out = 0, in = 0, T = 0;
  uint64_t seed = 0;
  std::vector<StepInputs> steps;
  std::vector<float> w0;
};
// Step k's X and dY come from stream "layer_inputs/step" (index k) of `seed`, w0 from
// "layer_inputs/w0".
LayerInputs make_layer_inputs(uint64_t seed, int64_t out, int64_t in, int64_t T, int64_t steps,
                              CaseDistribution dist = CaseDistribution::normal,
                              const CaseDistParams& x_params = {}, const CaseDistParams& dy_params = {});
// The same maker with each draw's seed given: step k's X and dY from step_seeds[k], w0 from
// w0_seed; `seed` is only recorded. For inputs whose derivation is fixed elsewhere (the
// external cases file's).
LayerInputs make_layer_inputs_from_seeds(uint64_t seed, const std::vector<uint64_t>& step_seeds, uint64_t w0_seed,
                                         int64_t out, int64_t in, int64_t T,
                                         CaseDistribution dist = CaseDistribution::normal,
                                         const CaseDistParams& x_params = {}, const CaseDistParams& dy_params = {});

// ---- report ----

// One case record per result under `claim`, one check named after the claim (oracles'
// case_check), the result's note as attribute "note". Returns the records, in the order of
// `results`, so callers can add datasets.
std::vector<CaseRecord*> record_claim_cases(Report& report, const std::vector<ClaimCaseResult>& results,
                                            const std::string& claim);
void set_attrs(const std::vector<CaseRecord*>& recs, const std::string& key, const std::string& value);
std::string num(double x);  // "%.6g"

}  // namespace fh
