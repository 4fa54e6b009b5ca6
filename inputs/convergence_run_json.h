// A convergence run (issue 33): one training run of the convergence parity study, as forge-model-step
// --train (path "harness") or scripts/torch_train_reference.py (path "torch", or "forge_release" for the
// released package) writes it: each step's
// training loss, the held-out loss at its evaluation steps and, from the harness, a digest of every
// weight and state after each step. Read for the claim convergence_parity.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fh {

struct ConvergenceRun {
  std::string path;                 // the file
  std::string producer_path;        // "harness" | "torch" | "forge_release"
  std::string config, model, status, error, device, planted;
  std::string update, state, store;  // the harness's path (empty for torch)
  std::string dtype;                 // torch's parameter type (empty for the harness)
  std::string init_from;             // torch started from the harness's dumped weights (--init-from); else empty
  int64_t init_seed = -1;            // ... of this harness seed
  int64_t seed = 0, steps = 0, seq = 0, eval_every = 0, eval_batches = 0;
  double lr = 0, weight_decay = 0;
  int64_t train_tokens = 0, heldout_tokens = 0;
  std::vector<double> train_loss;    // one per step; NaN where the file says null (not finite)
  std::vector<int64_t> eval_steps;   // ascending, from 0
  std::vector<double> eval_loss;     // one per eval step; NaN where null
  std::vector<std::string> step_digests;  // harness: one per step; torch: none
  int64_t nonfinite_losses = 0;
  int64_t int8_v_zero = -1, int8_v_total = -1;  // INT8 state: second moments decoding to zero at the end; -1: not given
  // forge-model-step --trace-steps N: per traced step (the first N), the largest change of a bf16
  // weight (NaN: not finite) and its parameter; INT8 state also the second moments decoding to zero,
  // and those beside a first moment that does not. All empty: no trace.
  std::vector<double> trace_max_update;
  std::vector<std::string> trace_update_param;
  std::vector<int64_t> trace_v_zero, trace_v_zero_m_nonzero;
  // torch --compare-grads: per parameter, ||G_harness - G_torch|| / ||G_torch|| at step 1 (name, error).
  std::vector<std::pair<std::string, double>> grad_rel_err;
};

// Throws std::invalid_argument naming the file and the field when the file is not a JSON object of
// kind "convergence_run" with path harness, torch or forge_release, a status other than ok / failed, or (status ok)
// losses of another length than steps, eval steps not ascending from 0 or past steps, a harness run
// without one digest per step, a loss that is neither a finite number nor null, or a string that
// cannot reach the report (inputs/text_rules.h), or a grad_rel_err that is not an object of
// parameter names and numbers >= 0, or a trace whose lists are not one value per traced step (at
// most steps; v_zero lists on INT8 state only, counts of at most the state's elements).
// A failed run needs only its error.
ConvergenceRun read_convergence_run_json(const std::string& path);

}  // namespace fh
