// A model-shaped training step in CUDA: token embedding, a stack of decoder blocks
// (RMSNorm; q, k, v projections; causal softmax attention without rotary embedding, grouped KV
// heads; o projection; RMSNorm; SiLU-gated MLP), a final RMSNorm, the LM head (tied to the
// embedding or not) and the mean cross-entropy loss over the micro-batch's tokens (batch sequences of T). Forward and backward on
// cuBLAS (bf16 operands, fp32 accumulation) and small kernels of our own (kernels/gpu/model_kernels.cuh);
// each linear weight's update either fused into its backward (linear_backward: dX from the weight
// before the step, then the fused wgrad-plus-update kernel; Remark 1) or on the standard path (G
// materialized and held to the end of backward, then the standalone rule kernel). The embedding,
// the norm weights and a tied embedding / LM head are never fused: their gradients are materialized
// (fp32) on both paths and stepped at the end of backward.
//
// Every device allocation comes from one TaggedPool (kernels/gpu/tagged_pool.h). Attention scores
// are materialized: per layer a transient fp32 [heads, T, T] of one sequence (scores, then dP) and a
// saved bf16 softmax [batch, heads, T, T]; at T = 512 and 32 heads that is 32 MiB transient and 16 MiB
// saved per layer and sequence.
// Not modelled: qk-norm (Qwen3), rotary embeddings, dropout.
// A producer: it reports digests and measurements; the judging is the suites'.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/gpu/gpu_api.h"
#include "kernels/gpu/tagged_pool.h"

namespace fh::gpu {

struct ModelDims {
  int64_t hidden = 256, intermediate = 512, heads = 4, kv_heads = 2, head_dim = 64, vocab = 1024, layers = 2;
  int64_t tokens = 128;  // one sequence's
  int64_t batch = 1;     // sequences in the micro-batch (attention within each)
  bool tied = false;
};

// fused: linear weights fused (Remark 1); standard: every linear G materialized by the fused
// kernel's own mainloop (the order-matched path: same bits as fused) and held to the end of
// backward; standard_cublas: the same with cuBLAS's wgrad (its own order).
enum class ModelUpdate : uint8_t { fused, standard, standard_cublas };

// Planted defects (test only; off by default).
struct ModelDefects {
  bool materialize_one_layer = false;  // fused: the first linear reached in backward keeps its whole G
  bool naive_tied_fusion = false;      // tied: the LM head's use of the shared weight updated in place (fused)
  bool dx_after_update = false;        // fused: every linear reads its weight after its update for dX
  bool skip_one_update = false;        // fused: the first linear reached in backward gets its dX, no update
};

struct ModelStepConfig {
  ModelDims dims;
  ModelUpdate update = ModelUpdate::fused;
  RuleConfig rule = default_rule_config(RuleId::adamw);
  StateFormat state = StateFormat::bf16;
  WeightStore store = WeightStore::bf16_rne;
  uint64_t seed = 0x18ull;
  ModelDefects defects;
  bool phase_marks = true;   // a timeline mark after the forward pass and each block's backward
  bool digests = false;      // record a digest of every linear layer's dX
  int64_t cublas_workspace_bytes = int64_t(32) << 20;
};

struct ModelParamInfo {
  std::string name;
  int64_t rows = 0, cols = 0;
  bool fused = false;  // updated inside its backward
};

struct ModelStepStats {
  float loss = 0.0f;
  double ms = 0.0;                         // CUDA events around the whole step
  std::vector<TaggedPool::Phase> timeline; // this step's marks, from "start" to "end"
  int64_t pool_peak = 0;                   // the pool's highest use during the step
  int64_t tag_peak[TaggedPool::kTags] = {};
  std::vector<uint64_t> dx_digests;        // digests on: each linear's dX, in backward order
};

class ModelStep {
 public:
  // Allocates weights (seeded) and state (initial values) in a fresh pool; throws on bad dims or
  // when the rule's state does not start at zero.
  explicit ModelStep(const ModelStepConfig& cfg);
  ~ModelStep();
  ModelStep(const ModelStep&) = delete;
  ModelStep& operator=(const ModelStep&) = delete;

  ModelStepStats step(int64_t step);  // step counts from 1
  // Training on data (issue 33's convergence runs): the tokens and next-token labels that the
  // following steps and evaluations use, dims.batch * dims.tokens of each (the sequences one after
  // the other), every id in [0, vocab)
  // (std::invalid_argument otherwise). Until the first call: the seeded random tokens.
  void set_batch(const std::vector<int32_t>& tokens, const std::vector<int32_t>& labels);
  // The mean cross-entropy of the current batch under the current weights: the forward pass alone,
  // no weight or state changes.
  float eval_loss();
  // Phase marks and dX digests for the next steps (digests only where the config asked for them:
  // their buffer is allocated at construction).
  void set_marks(bool phase_marks, bool digests);
  // The standard path (update standard or standard_cublas) only: the next steps keep a host copy of
  // every parameter's materialized gradient (fp32, in params() order), read by gradients() (issue 33:
  // the whole model's gradients against an independent reference). std::logic_error on the fused path.
  void capture_gradients(bool on);
  const std::vector<std::vector<float>>& gradients() const;  // the last step's; empty before one

  const std::vector<ModelParamInfo>& params() const;
  int64_t param_count() const;
  int64_t fused_param_count() const;
  // Per parameter, in params() order: a digest of its stored weights (bf16 and fp32 master) and
  // one of its state (every slot, INT8 scales included). Equal digests: equal bits (up to a 2^-64
  // collision); different digests: some element differs.
  std::vector<uint64_t> weight_digests() const;
  // Parameter i's bf16 weights (the copy the forward pass reads), their bits, row-major.
  std::vector<uint16_t> weight_bits(size_t i) const;
  // INT8 state only (AdamW's slots: 0 the first moment, 1 the second): over every parameter, how many
  // second moments decode to zero (code 0, or a block whose absmax is 0), how many of those beside a
  // first moment that does not (the elements whose next update is m / eps), and how many elements
  // there are; all 0 for another state format.
  struct Int8ZeroCounts {
    int64_t v_zero = 0, v_zero_m_nonzero = 0, total = 0;
  };
  Int8ZeroCounts int8_zero_counts() const;
  std::vector<uint64_t> state_digests() const;
  // The bytes the step holds at its start: weights and state (the pool's current use).
  int64_t resident_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A digest of n bytes of device memory (n even): order-independent sum of a hash of each 16-bit word
// and its index; deterministic.
uint64_t device_digest(const void* p, int64_t bytes, cudaStream_t stream);

}  // namespace fh::gpu
