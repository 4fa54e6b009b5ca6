// inputs/run_inputs.h.
#include "inputs/run_inputs.h"

#include <stdexcept>

namespace fh {

RunInputs read_run_inputs(const RunInputPaths& paths) {
  RunInputs in;
  for (const auto& f : paths.external_model) in.model_runs.push_back(read_model_bench_json(f));
  for (const auto& f : paths.model_step) in.model_steps.push_back(read_model_step_json(f));
  for (const auto& f : paths.external_timing) in.timings.push_back({f, read_benchmark_json(f), read_benchmark_errors(f)});
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
