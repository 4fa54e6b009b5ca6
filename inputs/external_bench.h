// What the FORGE audit's benchmark scripts write, read for the ext_model_* and ext_layer_speed
// claims: scripts/forge_model_bench.py's JSON (one model configuration per file) and
// the error entries of a Google Benchmark JSON (scripts/forge_adapter.py --timing), which
// read_benchmark_json (inputs/benchmark_json.h) leaves out.
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
  int64_t layers = -1;               // the decoder layers the run built (-1: the file does not say)
  double peak_bytes = -1;            // torch.cuda.max_memory_allocated over all steps; -1: none
  double median_ms = -1;             // median step time after the warm-up steps; -1: none
  std::vector<double> step_ms;
  int64_t losses = 0, nonfinite_losses = 0;  // training losses recorded; how many were not finite (null)
};

// Throws std::invalid_argument naming the file and the field when it is not a regular JSON file
// within the input limit (inputs/input_file.h: duplicate keys and overflowing numbers refused),
// lacks config, model or status (or status ok without peak_bytes and median_ms), names a model
// other than llama8b, qwen14b or tiny, holds a count that is not an integer in its range
// (layers 1..1000), holds a step_ms that is not a list of times >= 0 (or an empty one in a run with
// status ok), holds text the report cannot take (a NUL; a config that cannot name the
// report's case config.model, e.g. with a '/'), or is forge-model-step's JSON (it has "update").
ModelBenchResult read_model_bench_json(const std::string& path);

// forge-model-step's JSON (suites/model_step/forge_model_step.cpp): the common fields
// above (model canonicalised: llama31_8b -> llama8b, qwen3_14b -> qwen14b, the names
// scripts/forge_model_bench.py uses) and the harness's own measurements.
struct ModelStepRun {
  ModelBenchResult common;
  std::string update, state, store;   // fused | standard | standard_cublas; bf16 | fp32 | int8; weight store
  bool tied = false;
  int64_t layers = 0;
  std::map<std::string, int64_t> tag_peaks;                 // bytes per pool tag
  struct Phase { std::string name; int64_t in_use = 0, peak = 0, outside_pool = 0, gradients_unfused = 0; };
  std::vector<Phase> timeline;                               // step 1's phase marks
  std::vector<std::pair<std::string, int64_t>> model_terms;  // the memory model's terms (Eq. 6 or standard)
  int64_t model_total = -1, activation_bytes = -1, outside_pool_bytes = -1;
  int64_t tied_gradient_bytes = -1;                          // tied: P_tied x 4 (the fallback's gradient)
  std::vector<std::string> dx_digests, weight_digests, state_digests;
  int64_t max_layers_fit = -1, capacity_max_tried = -1;      // a --capacity run; -1 otherwise
  bool capacity() const { return capacity_max_tried >= 0; }
  int64_t max_batch_fit = -1, capacity_batch_max_tried = -1; // a --capacity-batch run; -1 otherwise
  bool capacity_batch() const { return capacity_batch_max_tried >= 0; }
  // --tp: the tensor-parallel degree whose rank ran (1: the whole model), what it allocated outside
  // the pool for the collectives (NCCL's stand-in; -1: not said), the model's bytes for them, and
  // the GPU's total memory and the memory in use when the run began (-1: not said).
  int64_t tp = 1, collective_bytes_modeled = 0, collective_bytes_allocated = -1;
  int64_t device_total_bytes = -1, device_used_at_start = -1;
};
// Throws std::invalid_argument naming the file and the field when the file is not such a run
// (a finished measurement needs peak_bytes, median_ms, tag_peaks and the memory model; a finished
// capacity run needs max_layers_fit), or update, state or store is not one forge-model-step
// knows, or a byte count or layer count is not an integer in its range.
ModelStepRun read_model_step_json(const std::string& path);

// Google Benchmark JSON: run name -> error message of every entry with error_occurred.
std::map<std::string, std::string> read_benchmark_errors(const std::string& path);

}  // namespace fh
