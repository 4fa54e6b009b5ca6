// What the FORGE audit's benchmark scripts write, read for the ext_model_* and ext_layer_speed
// claims (issue 16): scripts/forge_model_bench.py's JSON (one model configuration per file) and
// the error entries of a Google Benchmark JSON (scripts/forge_adapter.py --timing), which
// read_benchmark_json (reports/bench_import.h) leaves out.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace fh {

struct ModelBenchResult {
  std::string path;                  // the file
  std::string config, model, status, error;  // status: ok or failed
  int64_t batch = 0, seq = 0, steps = 0, warmup_steps = 0;
  std::string dtype, device, torch, triton, transformers, forge_commit, switches, state_mode;
  int64_t params = 0, fused_params = 0;
  double peak_bytes = -1;            // torch.cuda.max_memory_allocated over all steps; -1: none
  double median_ms = -1;             // median step time after the warm-up steps; -1: none
  std::vector<double> step_ms;
  int64_t losses = 0, nonfinite_losses = 0;  // training losses recorded; how many were not finite (null)
};

// Throws std::invalid_argument naming the file when it cannot be read, is not JSON, or lacks
// config, model or status (or status ok without peak_bytes and median_ms).
ModelBenchResult read_model_bench_json(const std::string& path);

// Google Benchmark JSON: run name -> error message of every entry with error_occurred.
std::map<std::string, std::string> read_benchmark_errors(const std::string& path);

}  // namespace fh
