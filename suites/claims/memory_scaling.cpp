// memory_scaling (issue 33): the memory model (reference/memory_model.h: Eq. 6 or the standard
// path's terms, with the model step's own activations, step_activation_bytes) carried past what one
// GPU measured, as the review reads the paper's saving. A step's peak is taken where the runner
// measured it (docs/model_step/README.md): weights and state, plus the larger of the activations
// (held at the end of the forward pass) and the gradients held at the end of backward (FORGE: the
// unfused ones; the standard step: all), plus the tile workspace.
//   - validation.<model>: each fused, untied bf16 model step measured on the runner (--model-step,
//     optional) against the model's prediction for it, within 3% (a contract; without a
//     measurement the predictions below stand unvalidated, and this says so);
//   - saving_vs_sequence.<model>, saving_vs_batch.<model>: the saving, 1 - fused / standard, over
//     sequence length (batch 1) and batch (sequence 512); findings: largest at short sequence and at
//     small batch (the review's reading);
//   - capacity.<path>: each capacity run measured on the runner (--model-step, --capacity: the most
//     Qwen3-14B-shaped layers whose step fits one H200) against the model's count, within one layer
//     (a contract);
//   - fit.gpus<N>: per path, the most layers of the Llama-3.1-70B shape (its embedding and head) whose
//     step fits N H200s (140 GiB each), and the largest model of a ladder (Qwen3 0.6B to
//     Llama-3.1-405B) that fits, weights, gradients and state sharded evenly over the N (as FSDP or
//     ZeRO-3 would, communication buffers not counted), each GPU holding the activations of one
//     512-token sequence; a finding per N: FORGE fits more of those layers than the standard step.
// The standard step here is a standard optimizer's: bf16 gradients for every parameter (torch's).
#include <algorithm>
#include <cmath>

#include "reference/memory_model.h"
#include "suites/claims/claim_entries.h"
#include "suites/claims/external_common.h"

namespace fh {

namespace {

constexpr const char* kClaim = "memory_scaling";
constexpr double kValidTolerance = 0.03;
constexpr double kH200Bytes = 140.0 * 1073741824.0;  // per GPU (../shared/GPU_RUNNER.md: about 140 GiB free)
constexpr int64_t kSeq = 512;
const char* const kLadder[] = {"qwen3_0p6b", "qwen3_1p7b", "qwen3_4b", "llama31_8b", "qwen3_14b", "llama31_70b",
                               "llama31_405b"};

// The most layers (0 .. 10000) of shape m whose step fits `bytes` per GPU; -1 when none does.
int64_t max_layers(ModelShape m, bool fused, int gpus, double bytes, int grad_bytes = 2) {
  int64_t best = -1;
  for (int64_t L = 0; L <= 10000; ++L) {
    m.layers = L;
    if (step_peak_bytes(m, fused, 1, kSeq, gpus, grad_bytes) > bytes) break;
    best = L;
  }
  return best;
}

}  // namespace

void claim_memory_scaling(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  // Validation against the measured steps, when given.
  bool validated = false;
  for (const ModelStepRun& r : claim_inputs(cfg).model_steps) {
    if (r.capacity() || r.update != "fused" || r.tied || r.state != "bf16" || r.store != "bf16_rne" || r.common.status != "ok")
      continue;
    const std::string shape_name = r.common.model == "llama8b" ? "llama31_8b" : r.common.model == "qwen14b" ? "qwen3_14b"
                                                                                                          : r.common.model;
    ModelShape m;
    try {
      m = model_shape(shape_name);
    } catch (const std::invalid_argument&) {
      continue;  // a model the ladder does not know
    }
    m.layers = r.layers;
    m.qk_norm = false;
    CaseRecord& cs = report.add_case(kClaim, "validation." + shape_name + ".L" + std::to_string(r.layers));
    cs.set_attr("file", r.common.path);
    // The model step materializes fp32 gradients (forge-model-step's memory_model).
    const double predicted = step_peak_bytes(m, true, 1, r.common.seq, 1, 4);
    cs.add_f64("predicted_peak_bytes", {predicted}, "Eq. 6's terms with the step's activation model, at the peak");
    cs.add_f64("measured_peak_bytes", {r.common.peak_bytes}, "the step's pool peak on the runner");
    const double off = std::fabs(predicted - r.common.peak_bytes) / r.common.peak_bytes;
    cs.add_check(judge("prediction_within_3pct", "relative_error", off, kValidTolerance, PassIf::at_most,
                       "the memory model misses the measured peak by more than 3%: its predictions do not carry"));
    validated = true;
  }
  for (const ModelStepRun& r : claim_inputs(cfg).model_steps) {
    if (!r.capacity() || r.state != "bf16" || r.store != "bf16_rne" || r.tied || r.common.status != "ok") continue;
    if (r.common.model != "qwen14b") continue;  // the runner's capacity runs (scripts/model_step_runner.sh)
    ModelShape m = model_shape("qwen3_14b");
    m.qk_norm = false;
    CaseRecord& cs = report.add_case(kClaim, "capacity." + r.update);
    cs.set_attr("file", r.common.path);
    const int64_t predicted = max_layers(m, r.update == "fused", 1, kH200Bytes, 4);
    cs.add_f64("capacity_layers", {double(predicted), double(r.max_layers_fit)}, "the model's count, the measured count");
    cs.add_check(judge("capacity_within_one_layer", "layers_off", std::fabs(double(predicted - r.max_layers_fit)), 1,
                       PassIf::at_most, "the model's capacity is not the measured one"));
  }
  if (!validated) {
    CaseRecord& cs = report.add_case(kClaim, "validation.llama31_8b");
    cs.add_check(Check::not_run("prediction_within_3pct",
                                "no measured fused bf16 model step given (--model-step, scripts/model_step_runner.sh): "
                                "the predictions below are the model's alone"));
  }

  // The saving over sequence length and over batch.
  for (const char* name : {"llama31_8b", "qwen3_14b"}) {
    const ModelShape m = model_shape(name);
    for (const bool over_batch : {false, true}) {
      CaseRecord& cs = report.add_case(kClaim, std::string(over_batch ? "saving_vs_batch." : "saving_vs_sequence.") + name);
      std::vector<double> xs, saving;
      for (const int64_t x : over_batch ? std::vector<int64_t>{1, 2, 4, 8, 16} : std::vector<int64_t>{128, 512, 2048, 8192}) {
        const int64_t batch = over_batch ? x : 1, tokens = over_batch ? kSeq : x;
        saving.push_back(1.0 - step_peak_bytes(m, true, batch, tokens) / step_peak_bytes(m, false, batch, tokens));
        xs.push_back(double(x));
      }
      cs.add_f64(over_batch ? "batches" : "tokens", xs, over_batch ? "sequences of 512 tokens" : "one sequence of this length");
      cs.add_f64("saving_fraction", saving, "1 - FORGE's step memory / the standard step's");
      const char* name_of = over_batch ? "saving_largest_at_small_batch" : "saving_largest_at_short_sequence";
      const bool first_largest = saving.front() >= *std::max_element(saving.begin(), saving.end());
      cs.add_check(judge_true(name_of, "larger_elsewhere", first_largest,
                              "the saving is larger at a longer sequence or a larger batch than at the smallest")
                       .as_finding());
    }
  }

  // The largest model that fits N H200s, per path.
  for (const int gpus : {1, 2, 4, 8}) {
    CaseRecord& cs = report.add_case(kClaim, "fit.gpus" + std::to_string(gpus));
    cs.set_attr("assumes", "weights, gradients and state sharded over the GPUs (FSDP / ZeRO-3), communication buffers "
                           "not counted; each GPU one 512-token sequence's activations; 140 GiB a GPU");
    std::vector<double> per_gpu_fused, per_gpu_standard, params;
    int best[2] = {-1, -1};
    for (int i = 0; i < int(std::size(kLadder)); ++i) {
      const ModelShape m = model_shape(kLadder[i]);
      params.push_back(double(param_count(model_params(m))));
      for (const bool fused : {true, false}) {
        const double per_gpu = step_peak_bytes(m, fused, 1, kSeq, gpus);
        (fused ? per_gpu_fused : per_gpu_standard).push_back(per_gpu);
        if (per_gpu <= kH200Bytes) best[fused ? 0 : 1] = i;
      }
    }
    cs.add_f64("params", params, "the ladder's parameter counts (attribute ladder)");
    cs.set_attr("ladder", "qwen3_0p6b, qwen3_1p7b, qwen3_4b, llama31_8b, qwen3_14b, llama31_70b, llama31_405b");
    cs.add_f64("per_gpu_bytes_fused", per_gpu_fused, "FORGE's step, bytes per GPU");
    cs.add_f64("per_gpu_bytes_standard", per_gpu_standard, "the standard step (bf16 gradients), bytes per GPU");
    cs.set_attr("largest_fused", best[0] < 0 ? "none" : kLadder[best[0]]);
    cs.set_attr("largest_standard", best[1] < 0 ? "none" : kLadder[best[1]]);
    ModelShape m70 = model_shape("llama31_70b");
    std::vector<double> layers, fitted;
    for (const bool fused : {true, false}) {
      ModelShape m = m70;
      m.layers = max_layers(m70, fused, gpus, kH200Bytes);
      layers.push_back(double(m.layers));
      fitted.push_back(m.layers < 0 ? 0.0 : double(param_count(model_params(m))));
    }
    cs.add_f64("llama70b_shaped_layers", layers, "FORGE, then the standard step: the most 70B-shaped layers that fit");
    cs.add_f64("llama70b_shaped_params", fitted, "FORGE, then the standard step: their parameters");
    cs.add_check(judge("forge_fits_more_parameters", "ratio", fitted[0] / fitted[1], 1.0, PassIf::above,
                       "FORGE fits no more 70B-shaped layers than the standard step here (the activations, not the "
                       "gradients, set both peaks)")
                     .as_finding());
    progress.note(std::to_string(gpus) + " H200: FORGE " + (best[0] < 0 ? "none" : kLadder[best[0]]) + ", standard " +
                  (best[1] < 0 ? "none" : kLadder[best[1]]));
  }
}

}  // namespace fh
