// The paper's memory equation (Eq. 6) and the standard path's, term by term:
//   M_FORGE    = 2P + kP + 0 + sum |a_l| + O(TR * TC)
//   M_standard = 2P + kP + 2P_grad + sum |a_l|
// for a named model family's parameter list, a weight store and a state format. Eq. 6's zero
// gradient term holds only for single-consumer linear weights (fused); the embedding (a scatter-add
// gradient), the norm weights and a tied embedding / LM head (two consumers, Remark 1's scope) keep
// a materialized gradient on the fused path too: the model says so term by term, with the bytes.
// Activations are the caller's (the step that is measured states what it holds).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/formats/formats.h"

namespace fh {

struct ModelShape {
  std::string name;
  int64_t hidden = 0, intermediate = 0, heads = 0, kv_heads = 0, head_dim = 0, vocab = 0, layers = 0;
  bool tied = false;     // the LM head is the embedding
  bool qk_norm = false;  // per-head RMSNorm on q and k (Qwen3)
};
// llama31_8b, llama31_70b, llama31_405b, qwen3_14b, the Qwen3 family (qwen3_0p6b, qwen3_1p7b, qwen3_4b, qwen3_8b: `tied` as their
// config.json), gpt2_124m (GPT-2's sizes, Llama-shaped), llama_30m (the convergence runs), tiny (CI);
// std::invalid_argument for another name.
ModelShape model_shape(const std::string& name);

enum class ParamKind : uint8_t { linear, embedding, norm, tied_embedding };
const char* param_kind_name(ParamKind k);
struct ParamShape {
  std::string name;
  int64_t rows = 0, cols = 0;
  ParamKind kind = ParamKind::linear;
  int64_t count() const { return rows * cols; }
  // Fusable: one consumer and a GEMM gradient (Remark 1). Embeddings, norms and a tied weight are not.
  bool fusable() const { return kind == ParamKind::linear; }
};
std::vector<ParamShape> model_params(const ModelShape& s);
int64_t param_count(const std::vector<ParamShape>& ps);

struct MemoryTerm {
  std::string name, formula;
  int64_t bytes = 0;
};
struct MemoryEstimate {
  std::vector<MemoryTerm> terms;
  int64_t total() const;
  int64_t term(const std::string& name) const;  // 0 when absent
};

struct StepLayout {
  StateFormat state = StateFormat::bf16;
  WeightStore store = WeightStore::bf16_rne;
  int state_slots = 2;          // AdamW: m and v
  int grad_bytes = 2;           // a materialized gradient's element (bf16, as autograd keeps it)
  int64_t tile_rows = 128, tile_cols = 128, active_tiles = 132;  // the fused kernel's G tiles in flight
};

// Bytes of one parameter's weights (bf16 stores: 2; fp32 master: 4 + the bf16 working copy 2) and
// state (fp32 4, bf16 2 per slot; int8 1 per slot + one fp32 absmax per 64-column block).
int64_t weight_bytes(const ParamShape& p, const StepLayout& l);
int64_t state_bytes(const ParamShape& p, const StepLayout& l);

// Eq. 6 (fused = true: gradients only for the non-fusable parameters, plus the tile workspace) or
// the standard path (every gradient materialized). activation_bytes: what the step holds.
MemoryEstimate step_memory(const std::vector<ParamShape>& ps, const StepLayout& l, bool fused, int64_t activation_bytes);

// The activations the model step (kernels/gpu/model_step.cu, batch 1 there) holds at the end of its
// forward pass, for `batch` sequences of `tokens` (each sequence's causal softmax [heads, T, T]):
// what step_memory's activation term is at that peak (exact at Llama-3.1-8B, T = 512: 4,170,582,016
// bytes, the measured tag peak, docs/model_step/README.md).
int64_t step_activation_bytes(const ModelShape& s, int64_t batch, int64_t tokens);

// One tensor-parallel rank's shard of s at degree tp, as Megatron-LM lays it out without sequence
// parallelism: q, k, v, gate and up column-parallel (their output rows split: heads, KV heads and
// the intermediate size over tp), o and down row-parallel (their input columns split), the
// embedding and the LM head vocab-parallel (the vocabulary padded to a multiple of 128 * tp, as
// Megatron's make-vocab-size-divisible-by 128 does, then split); the norms and the hidden-size
// activations replicated on every rank. tp = 1: s itself. std::invalid_argument when tp < 1 or
// heads or KV heads or the intermediate size is not a multiple of tp.
ModelShape tp_rank_shape(const ModelShape& s, int tp);

// The device memory one rank's tensor-parallel communicator holds outside any allocator pool: NCCL's
// own buffers, which on one GPU cannot be measured (NCCL refuses two ranks on one device). Stated
// model: `channels` ring channels, each with a receive buffer of `buffer_bytes` (NCCL_BUFFSIZE,
// 4 MiB by default) from each of the ring's `peers` neighbours; 0 at tp = 1 (no communicator).
struct CollectiveBuffers {
  int channels = 16;
  int peers = 2;
  int64_t buffer_bytes = int64_t(4) << 20;
};
int64_t tp_collective_bytes(int tp, const CollectiveBuffers& c = {});

// What the model step holds beside its activations at the forward pass's end, outside them: the fp32
// logits [T, V] and the per-token losses (workspace).
int64_t forward_end_workspace_bytes(const ModelShape& s, int64_t batch, int64_t tokens);

// A step's peak on each of `gpus` GPUs (weights, state and gradients sharded evenly over them), as the
// model step walks it (kernels/gpu/model_step.cu): weights and state, plus the largest of the forward
// pass's end (the activations, the fp32 logits and per-token losses) and each point of backward (the
// activations not yet given back beside the gradients held so far: fused, the unfused ones; standard,
// all, l.grad_bytes each), plus the fused kernel's tile workspace. A block's own transients are not
// counted.
double step_peak_bytes(const ModelShape& m, const StepLayout& l, bool fused, int64_t batch, int64_t tokens, int gpus = 1);
// The same with bf16 weights and AdamW state in bf16, gradients of grad_bytes.
double step_peak_bytes(const ModelShape& m, bool fused, int64_t batch, int64_t tokens, int gpus = 1, int grad_bytes = 2);

// Refuses a fused in-place update of a parameter that is not single-consumer with a GEMM gradient
// (Remark 1): std::invalid_argument naming it and the fallback (materialized gradient, standard step).
void check_single_consumer(const ParamShape& p);

// Bytes in use and high-water marks per tag (weights, state, gradients, activations, workspace):
// the host twin's bookkeeping of what a step holds; reset_peaks() starts a phase, as writing 0 to
// cudaMemPoolAttrUsedMemHigh does.
struct MemoryLedger {
  std::vector<std::pair<std::string, int64_t>> in_use, peak;  // per tag, in first-use order
  int64_t total_in_use = 0, total_peak = 0;                    // all tags together
  // The timeline (the paper's Figure 2): at each phase boundary, the bytes in use and the high-water
  // mark of all tags since the previous boundary.
  struct Phase {
    std::string name;
    int64_t in_use = 0, peak = 0;
  };
  std::vector<Phase> timeline;
  int64_t phase_peak = 0;
  void phase(const std::string& name);
  std::string timeline_text() const;  // "name in_use/peak; ..."
  void alloc(const std::string& tag, int64_t bytes);
  void release(const std::string& tag, int64_t bytes);  // std::logic_error below zero
  int64_t peak_of(const std::string& tag) const;
  void reset_peaks();
};

}  // namespace fh
