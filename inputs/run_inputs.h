// Every file one forge-verify run is given, parsed once and validated completely before any
// claim starts (DESIGN contract 8). The claims judge these typed values and never open the
// files themselves; once they are read, a failure while using them is an internal error.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "inputs/benchmark_json.h"
#include "inputs/convergence_run_json.h"
#include "inputs/external_bench.h"
#include "inputs/external_io.h"
#include "inputs/kill_matrix_json.h"

namespace fh {

// The paths, as the options named them.
struct RunInputPaths {
  std::string external_cases;                 // --external-cases
  std::vector<std::string> external_results;  // --external (needs --external-cases)
  std::vector<std::string> external_model;    // --external-model: scripts/forge_model_bench.py JSON
  std::vector<std::string> model_step;        // --model-step: forge-model-step JSON
  std::vector<std::string> external_timing;   // --external-timing: Google Benchmark JSON
  std::string bench_json;                     // --bench-json: forge-bench's Google Benchmark JSON
  std::vector<std::string> kill_matrix;       // --kill-matrix: scripts/mutate.py / mutate_gpu.py JSON
  std::vector<std::string> convergence_run;   // --convergence-run: forge-model-step --train / torch_train_reference.py
  std::vector<std::string> tp_rank_run;       // --tp-rank-run: forge-model-step --tp / --batch / --capacity-batch
};

// The external producer's files: the cases file and the results that answer it, each held open
// since it was validated (inputs/external_io.h). `cases` is null when none were given.
struct ExternalRun {
  std::unique_ptr<ext::CasesFile> cases;
  std::vector<std::unique_ptr<ext::ResultsFile>> results;
};

// One --external-timing file: its timed runs and the runs that reported an error.
struct TimingFile {
  std::string path;
  std::vector<BenchmarkData> benchmarks;
  std::map<std::string, std::string> errors;  // run name -> error message
};

struct RunInputs {
  ExternalRun external;
  std::vector<ModelBenchResult> model_runs;   // one per --external-model, in order
  std::vector<ModelStepRun> model_steps;      // one per --model-step, in order
  std::vector<TimingFile> timings;            // one per --external-timing, in order
  std::vector<BenchmarkData> benchmarks;      // --bench-json; empty when not given
  std::vector<KillMatrix> kill_matrices;      // one per --kill-matrix, in order
  std::vector<ConvergenceRun> convergence_runs;  // one per --convergence-run, in order
  std::vector<ModelStepRun> tp_rank_runs;        // one per --tp-rank-run, in order
};

// Reads and validates every file `paths` names; one file given twice to the same option (by any
// spelling or link: device and inode) is refused before any is read. Throws std::invalid_argument naming the file
// and the field of the first bad one (the external producer's files prefixed "external
// producer: ", the benchmarks "--bench-json: "); nothing is kept of a run with a bad input.
RunInputs read_run_inputs(const RunInputPaths& paths);

}  // namespace fh
