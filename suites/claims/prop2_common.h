// What the Proposition 2 claims on simulated ranks share: prop2_tp_sharded,
// prop2_sp_sharded, prop2_referee_dataflow and prop2_token_partial. Each runs one layer on p
// simulated ranks of reference/sharding.h (the host twin as every rank's fused kernel) next to
// the same layer unsharded, several steps, and compares W and state bit for bit.
// Planted defects (off by default; the suites turn them on to show each check can fail):
//   gather_permutation  the sequence all-gather concatenates ranks in another order;
//   shard_origin_shift  each shard believes it starts 64 columns further right (its stochastic
//                       rounding bits then belong to other elements);
//   skip_refusal        a token-partial parameter is updated by the fused kernel anyway;
//   dx_after_update     (the block stack) fused layers read W after their update for dX.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "reference/sharding.h"
#include "suites/claims/twin_cases.h"
#include "suites/claims/twin_tally.h"

namespace fh {

struct Prop2Defects {
  bool gather_permutation = false;
  bool shard_origin_shift = false;
  bool skip_refusal = false;
  bool dx_after_update = false;
};

struct Prop2Config {
  uint64_t seed = 0x5EC0DD17ull;
  int steps = 3;
  int64_t out = 192, in = 256, T = 96;  // divisible by 2, 4 and 8; in / 8 splits INT8 blocks
  std::vector<int> degrees{2, 4, 8};
  std::vector<RuleId> rules;            // empty: all
  std::vector<RuleConfig> rule_configs;
  std::vector<StateFormat> formats;     // empty: all three
  std::vector<WeightStore> stores;      // empty: all three
  Prop2Defects defects;
  // Every fused step (unsharded and each rank): empty, the twin; else the backend that
  // make_backend(tally) makes, one per unit of work (run_prop2_units) with a tally of its own,
  // the tallies folded into *tally.
  std::function<FusedStepBackend(TwinTally*)> make_backend;
  TwinTally* tally = nullptr;
};

// Runs run(i, be) for every unit i in [0, n) on the host's cores (kernels/common/host_parallel.h),
// be the unit's own fused step (cfg.make_backend with a tally of its own; the twin when empty).
// The cases come back in unit order and the tallies fold into *cfg.tally in unit order, so the
// cases, the counts and the first difference are a serial run's whatever the cores.
using Prop2Unit = std::function<std::vector<ClaimCaseResult>(size_t i, const FusedStepBackend& be)>;
std::vector<ClaimCaseResult> run_prop2_units(const Prop2Config& cfg, size_t n, const Prop2Unit& run);

// The (degree, combination) units of the claims that run every degree: combos_at(p) for each
// p of cfg.degrees, in that order.
struct DegreeCombo {
  int p;
  Combo combo;
};
std::vector<DegreeCombo> degree_combos(const Prop2Config& cfg, const std::function<std::vector<Combo>(int p)>& combos_at);

// The claim configuration from forge-verify's options (--seed, --steps, --rule/--hyper,
// --format, --store; the shape is the claims' own).
Prop2Config prop2_config(const VerifyConfig& cfg);

// The twin schedule of a layer [out, in] over T tokens (128 x 128 tiles, row-major, TK = 64).
TwinSchedule prop2_schedule(int64_t out, int64_t in, int64_t T);

// The combinations a degree runs: all of them at p = 2, each rule once (format and store
// rotating) at higher degrees, to keep CPU time in check.
std::vector<Combo> prop2_combos(const Prop2Config& cfg, int p, bool full_at_2 = true);

// The layer's unsharded fused run (the twin), `steps` steps from the seeded inputs.
struct UnshardedRun {
  HostParam initial, final_param;
  std::vector<std::vector<float>> dX;  // per step
};
UnshardedRun run_unsharded(const Combo& cb, const LayerInputs& inp, const TwinSchedule& sched, uint32_t tensor_id,
                           uint64_t seed, const FusedStepBackend* be);

// The sharded run of the same layer: the shards gathered after the last step, dX per step.
struct ShardedRun {
  HostParam final_param;
  std::vector<std::vector<float>> dX;
};
ShardedRun run_sharded(const HostParam& initial, TpKind kind, Dataflow flow, int p, const LayerInputs& inp,
                       const TwinSchedule& sched, const Prop2Defects& defects, const FusedStepBackend* be);

SimCollectives prop2_collectives(int p, const Prop2Defects& defects);

// The claims' runners (one file each), for forge-verify and the suites. Each claim runs twice:
// <id> on the host twin, <id>_gpu with every fused step on the fused kernel and each step also
// checked against the twin (suites/claims/fidelity_common.h: the tally is one more case).
std::vector<ClaimCaseResult> run_prop2_tp_cases(const Prop2Config& cfg);
std::vector<ClaimCaseResult> run_prop2_sp_cases(const Prop2Config& cfg);
std::vector<ClaimCaseResult> run_prop2_referee_cases(const Prop2Config& cfg);
std::vector<ClaimCaseResult> run_prop2_token_partial_cases(const Prop2Config& cfg);
std::vector<ClaimCaseResult> run_prop2_block_stack_cases(const Prop2Config& cfg);
using Prop2Runner = std::vector<ClaimCaseResult> (*)(const Prop2Config&);
// forge-verify's entry of a prop2 claim: `run` on the twin, or on the GPU with the tally, as
// `variant` says.
void record_prop2_claim(Prop2Runner run, const ClaimVariant& variant, const VerifyConfig& cfg, Report& report,
                        const Progress& progress);

// Folds W/state evidence of `a` against `b` after the last step (and `extra`, e.g. dX) into a
// bitwise case.
ClaimCaseResult bitwise_case(const std::string& claim, const std::string& name, const HostParam& a,
                             const HostParam& b, int steps, const std::string& where,
                             const ParamEvidence* extra = nullptr);
// A case whose verdict is that a difference exists (the harness sees the wrong update):
// metric = differing elements, pass when at least one.
ClaimCaseResult differs_case(const std::string& claim, const std::string& name, const HostParam& a,
                             const HostParam& b, int steps, const std::string& what);

// For the suites: the failing cases (not-run ones excluded) and the first one, described.
inline int count_failures(const std::vector<ClaimCaseResult>& rs) {
  int n = 0;
  for (const auto& r : rs) n += !r.pass && !r.not_run;
  return n;
}
inline std::string first_failure(const std::vector<ClaimCaseResult>& rs) {
  for (const auto& r : rs)
    if (!r.pass && !r.not_run) return r.case_name + ": " + r.first_diff + " " + r.note;
  return "";
}

// A case that expects a refusal (std::invalid_argument from `run`): pass when refused, with the
// message as note; fail when it ran.
template <class Run>
ClaimCaseResult expect_refusal(const std::string& claim, const std::string& name, Run run) {
  ClaimCaseResult c;
  c.claim = claim;
  c.case_name = name;
  bool refused = false;
  try {
    run();
    c.metric_name = "not_refused";
    c.note = "ran: the configuration was not refused";
  } catch (const std::invalid_argument& e) {
    refused = true;
    c.note = std::string("refused: ") + e.what();
  }
  judge_case(c, refused ? 0 : 1, 0, PassIf::at_most);
  return c;
}

}  // namespace fh
