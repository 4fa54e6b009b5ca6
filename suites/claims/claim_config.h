// What every claim runs on: forge-verify's configuration and its progress lines.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>
#include "kernels/formats/formats.h"
#include "kernels/rules/all_rules.h"
#include "inputs/run_inputs.h"
#include "reports/report.h"

namespace fh {

struct VerifyConfig {
  std::vector<RuleConfig> rules;          // default: all eight with torch.optim's defaults
  std::vector<StateFormat> formats{StateFormat::fp32, StateFormat::bf16, StateFormat::int8};
  std::vector<WeightStore> stores{WeightStore::fp32_master, WeightStore::bf16_rne, WeightStore::bf16_sr};
  int64_t out = 192, in = 256, tokens = 100;  // one layer: W [out, in], T tokens (ragged on purpose)
  int64_t steps = 5;
  uint64_t seed = 20261202;
  int64_t rule_samples = 1000;            // elements per rule and input class in the MPFR check
  std::vector<std::string> claims;        // empty: all
  std::string report_path;                // default: ./forge-verify-<UTC time>-<pid>.h5
  bool gpu_available = false;
  std::string gpu_reason;                 // why not, when not
  bool quiet = false;
  // External producers (docs/EXTERNAL_PRODUCER.md): the cases file and the results files the
  // ext_* claims judge; empty: those claims are not run.
  std::string external_cases;
  std::vector<std::string> external_results;
  // The audit's measurements: scripts/forge_model_bench.py JSON files (ext_model_*)
  // and Google Benchmark JSON timings (ext_layer_speed); empty: those claims are not run.
  std::vector<std::string> external_model, external_timing;
  // forge-model-step's JSON files: the model_step_figures claim; empty: not run.
  std::vector<std::string> model_step;
  // Kill matrices of scripts/mutate.py and scripts/mutate_gpu.py: mutation_kill_matrix; empty: not run.
  std::vector<std::string> kill_matrix;
  // Convergence runs (forge-model-step --train, scripts/torch_train_reference.py): convergence_parity; empty: not run.
  std::vector<std::string> convergence_run;
  std::vector<std::string> tp_rank_run;
  // The files above, parsed and validated by forge-verify before any claim starts (owned by the
  // run). Claims reach them through claim_inputs(), never through the paths.
  const RunInputs* inputs = nullptr;
};

// Which executor a claim with variants runs its fused steps on. The registry makes one claim of
// each variant from one row: <id> on the host twin, <id>_gpu on the fused kernel with every step
// also checked against the twin. Same code, datasets, options and findings; only the group differs.
enum class ClaimBackend : uint8_t { twin, gpu };
struct ClaimVariant {
  ClaimBackend backend = ClaimBackend::twin;
  std::string group;  // the variant's report group: its registry id
};

// The paths of the files a configuration names (--bench-json is forge-verify's own: empty).
RunInputPaths input_paths_of(const VerifyConfig& cfg);
// The parsed files of the run. Throws std::logic_error when the configuration names files that
// were not parsed (cfg.inputs unset): a claim never reads a file itself. A planted defect for the
// internal-error test (off unless set): FH_PLANT_INPUT_ACCESS_THROW=1 makes it throw
// std::invalid_argument, the exception a bad input gives before the run, to show that once the
// claims started any failure is an internal error (exit 3), never bad input.
const RunInputs& claim_inputs(const VerifyConfig& cfg);

// Progress on stderr, so stdout keeps only the verdict table.
struct Progress {
  bool quiet = false;
  int claim_index = 0, claim_count = 0;
  // Where note() sends a line instead of stderr (not quiet): forge-verify holds each claim's
  // notes and prints them under the claim's finish line, so that claims running at the same
  // time (--jobs) do not interleave. Called from the claim's own thread.
  std::function<void(const std::string&)> note_sink;
  void claim(const std::string& name, const std::string& what) const;
  void note(const std::string& text) const;
};

// The case a long claim is working on, for forge-verify's progress heartbeat: runners set it as
// they go (thread-safe). One entry per thread, so claims running at the same time on their own
// threads (--jobs) each have theirs; "" clears the calling thread's.
void progress_set_case(const std::string& name);
std::string progress_current_case();                      // the calling thread's
std::string progress_case_of(std::thread::id thread);     // another thread's ("" when none)

// Case names of a (rule, state format[, weight store]) combination: "adamw.int8.bf16_sr". The
// one format every claim uses.
std::string case_name(RuleId r, StateFormat f, WeightStore w);
std::string case_name(RuleId r, StateFormat f);

}  // namespace fh
