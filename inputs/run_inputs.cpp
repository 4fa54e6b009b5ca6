// inputs/run_inputs.h.
#include "inputs/run_inputs.h"

#include <map>
#include <optional>
#include <stdexcept>

#include "inputs/input_file.h"

namespace fh {

namespace {

// Throws naming both spellings when two of `paths` lead to one file (device and inode of the
// opened files, as the output path policy compares them): the same results file twice judged
// every case twice, and the claim threw "duplicate case" after the run had started.
void refuse_repeated(const std::string& option, const std::vector<std::string>& paths) {
  std::vector<std::pair<InputFileId, const std::string*>> seen;
  for (const std::string& p : paths) {
    const std::optional<InputFileId> id = input_file_id(p);
    if (!id) continue;  // its reader names why it cannot be opened
    for (const auto& [other, spelling] : seen)
      if (other == *id)
        throw std::invalid_argument(option + " '" + *spelling + "' and " + option + " '" + p +
                                    "' are the same file; give each file once");
    seen.emplace_back(*id, &p);
  }
}

// One mutant in two matrices of the same tool would be judged twice under one name, its two
// verdicts maybe different: refused, naming both files.
void refuse_remeasured(const std::vector<KillMatrix>& matrices) {
  std::map<std::pair<std::string, std::string>, const std::string*> seen;
  for (const KillMatrix& m : matrices)
    for (const KillMatrixMutant& k : m.mutants)
      if (const auto [it, fresh] = seen.emplace(std::pair{m.tool, k.id}, &m.path); !fresh)
        throw std::invalid_argument("--kill-matrix '" + *it->second + "' and '" + m.path + "' both measured mutant " +
                                    k.id + "; give each mutant's measurement once");
}

}  // namespace

RunInputs read_run_inputs(const RunInputPaths& paths) {
  for (const auto& [option, files] : {std::pair<const char*, const std::vector<std::string>*>{
                                          "--external", &paths.external_results},
                                      {"--external-model", &paths.external_model},
                                      {"--model-step", &paths.model_step},
                                      {"--external-timing", &paths.external_timing},
                                      {"--kill-matrix", &paths.kill_matrix},
                                      {"--convergence-run", &paths.convergence_run},
                                      {"--tp-rank-run", &paths.tp_rank_run}})
    refuse_repeated(option, *files);
  RunInputs in;
  for (const auto& f : paths.external_model) in.model_runs.push_back(read_model_bench_json(f));
  for (const auto& f : paths.model_step) {
    // The whole model at batch 1 only: the claims reading --model-step judge that step.
    ModelStepRun r = read_model_step_json(f);
    if (r.tp != 1 || r.common.batch > 1 || r.capacity_batch())
      throw std::invalid_argument("--model-step '" + f + "': a tensor-parallel rank or micro-batch run (tp " +
                                  std::to_string(r.tp) + ", batch " + std::to_string(r.common.batch) +
                                  "): give it with --tp-rank-run");
    in.model_steps.push_back(std::move(r));
  }
  for (const auto& f : paths.tp_rank_run) in.tp_rank_runs.push_back(read_model_step_json(f));
  for (const auto& f : paths.external_timing) in.timings.push_back({f, read_benchmark_json(f), read_benchmark_errors(f)});
  for (const auto& f : paths.kill_matrix) in.kill_matrices.push_back(read_kill_matrix_json(f));
  for (const auto& f : paths.convergence_run) in.convergence_runs.push_back(read_convergence_run_json(f));
  refuse_remeasured(in.kill_matrices);
  if (!paths.bench_json.empty()) {
    try {
      in.benchmarks = read_benchmark_json(paths.bench_json);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("--bench-json: ") + e.what());
    }
  }
  if (paths.external_results.empty() != paths.external_cases.empty())
    throw std::invalid_argument("--external and --external-cases go together (docs/EXTERNAL_PRODUCER.md)");
  if (!paths.external_cases.empty()) {
    try {
      in.external.cases = std::make_unique<ext::CasesFile>(paths.external_cases);
      for (const auto& p : paths.external_results)
        in.external.results.push_back(std::make_unique<ext::ResultsFile>(p, *in.external.cases));
    } catch (const ext::ExternalFileError& e) {
      throw std::invalid_argument(std::string("external producer: ") + e.what());
    }
  }
  return in;
}

}  // namespace fh
