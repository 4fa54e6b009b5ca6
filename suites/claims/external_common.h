// The external-producer claims' shared pieces (docs/EXTERNAL_PRODUCER.md): the case sets the
// harness writes for external producers, the loaded files, and the host-side G of a declared
// order. The judging itself is in ext_order_probe.cpp, ext_prop1.cpp, ext_corollary1.cpp and
// ext_int8.cpp.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "kernels/common/reduction_order.h"
#include "inputs/external_io.h"
#include "oracles/param_compare.h"
#include "reports/report.h"
#include "suites/claims/claim_config.h"

namespace fh {

// The case sets: "ci" (small, every kind, judged on the CPU in CI) and "forge" (the release
// audit: the probe at the 4096x4096 and Llama-3.1-8B layer shapes at T = 512, 2048 and 8192 plus
// ragged shapes; AdamW in bf16/bf16, bf16/fp32 and fp32/fp32 on ragged shapes; INT8 state).
std::vector<ext::CaseSpec> external_case_specs(const std::string& set);
// A case's inputs, drawn from `seed` (the same seed and spec give the same bits).
std::map<std::string, ext::Tensor> external_case_inputs(const ext::CaseSpec& c, uint64_t seed);
// Writes the set's cases file (cases_id from set, seed and harness revision). Throws on an
// unknown set.
void write_external_cases(const std::string& path, const std::string& set, uint64_t seed, const std::string& revision);

// The run's external files, parsed before the claims started (claim_inputs). Throws
// std::logic_error when the run has none (claims ask external_absent first).
const ExternalRun& external_run(const VerifyConfig& cfg);
// True (and one not-run case recorded under `claim`) when the run has no external files.
bool external_absent(const VerifyConfig& cfg, Report& report, const std::string& claim);
// The same for any external input: no `files` given -> one not-run case "all" saying `how` to give
// them; true when absent.
bool inputs_absent(const std::vector<std::string>& files, Report& report, const std::string& claim,
                   const std::string& how);

// G [steps][out*in] as a producer declaring `order` computes it from the case's X and dY:
// mma_chain through the twin, fp32_sequential with one fp32 multiply and add per token.
// Throws std::invalid_argument when no order is declared.
std::vector<std::vector<float>> host_g(const ext::CasesFile& cases, const ext::CaseSpec& c, const ext::DeclaredOrder& order);
ReductionOrder to_reduction_order(const ext::DeclaredOrder& order);

// The record of a result case that is not "ok" (or absent): failed -> a failing check "ran"
// with the producer's error; unsupported or absent -> not run with the reason. Returns true when
// it recorded one (the caller then skips the case). For the partner of a comparison (a two-phase
// path, the reference; judged_path false) a failure is the partner's, not this row's: not run,
// with the partner's error (the partner's own rows carry its failure).
bool record_not_ok(CaseRecord& cs, const ext::ResultsFile& r, const std::string& case_id, bool judged_path = true);
// Every stored output of case c (W and the state; G, an optional input, left out) in two results
// files, bit for bit: one evidence per step, over all the outputs.
std::vector<ParamEvidence> compare_outputs_per_step(const ext::ResultsFile& a, const ext::ResultsFile& b, const ext::CaseSpec& c);
ParamEvidence fold(const std::vector<ParamEvidence>& per_step);
// Attributes every external case carries: producer, path, role, results file.
void set_external_attrs(CaseRecord& cs, const ext::ResultsFile& r);

}  // namespace fh
