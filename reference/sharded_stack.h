// A small transformer-block stack on p simulated ranks: the dataflow between layers
// made real, not one layer in isolation. Each block is
//   h = RMSNorm(x) g1;  q, k, v = h Wq^T, h Wk^T, h Wv^T  (column-parallel: heads split)
//   a = causal softmax attention per head;  x += a Wo^T   (row-parallel: partial sums reduced)
//   h2 = RMSNorm(x) g2;  m = SiLU(h2 Wg^T) * (h2 Wu^T)    (column-parallel)
//   x += m Wd^T                                           (row-parallel)
// with Megatron-LM's tensor-parallel dataflow (Dataflow::tp: activations whole on every rank,
// the row-parallel outputs and the column-parallel dX all-reduced in rank order) or its sequence-
// parallel one (Dataflow::sp_megatron: the residual stream token-sharded, all-gathers before the
// column-parallel layers and for the row-parallel layers' dY, reduce-scatters after; norm weights'
// gradients token-partial, all-reduced in rank order after backward). The loss is <x_out, dOut>
// for a fixed dOut. One training step: forward, backward, and each weight's update as it is
// reached in backward: the linear layers either fused (the FusedStepBackend on each rank's shard,
// dX from W before the step) or unfused (G materialized in the same order by be.wgrad, then the
// standard step); the norm weights always by the standard step on their reduced gradient.
// GEMM inputs are bf16 (rounded from the fp32 activations); everything else is fp32.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/common/collectives.h"
#include "kernels/formats/host_param.h"
#include "kernels/twin/step_backend.h"
#include "reference/memory_model.h"
#include "reference/sharding.h"

namespace fh {

struct StackShape {
  int64_t hidden = 128, intermediate = 256, heads = 8, T = 32;
  int blocks = 2;
  int64_t head_dim() const { return hidden / heads; }
};

// The parameters of every block, whole (unsharded).
struct StackParams {
  struct Block {
    HostParam g1, wq, wk, wv, wo, g2, wg, wu, wd;  // g1, g2: RMSNorm weights as [1, hidden]
  };
  std::vector<Block> blocks;
  // Every parameter, block by block in the order above (for comparisons).
  std::vector<const HostParam*> all() const;
  // Seeded weights (linear ~ N(0, 1/in), norm weights ~ 1 + N(0, 0.1)), state at its initial value.
  static StackParams make(const StackShape& s, const RuleConfig& rule, StateFormat sf, WeightStore ws, uint64_t seed);
};

// n seeded N(0, scale^2) values (Box-Muller on splitmix64): the stack's weights and inputs.
std::vector<float> seeded_normals(size_t n, uint64_t seed, float scale = 1.0f);

// fused: the FusedStepBackend's step; unfused: G materialized and stepped at once (optimizer in
// backward); standard: every G materialized and held to the end of backward, then every step.
enum class LinearUpdate : uint8_t { fused, unfused, standard };

struct StackDefects {
  bool dx_after_update = false;        // fused layers read W after their update for dX (Remark 1 broken)
  bool materialize_one_layer = false;  // fused: the first layer reached keeps its whole G to the end
};

// What the stack step holds, by formula (the memory model's side; the ledger counts the buffers):
// the parameters as the model sees them, and the activations saved for backward per rank at p = 1
// (fp32 x_in, x_mid, q, k, v, attention output, softmax P per head, gate, up and the two rstd;
// bf16 h, h2, a, m).
std::vector<ParamShape> stack_param_shapes(const StackShape& s);
int64_t stack_activation_bytes(const StackShape& s);

// A norm weight's gradient as the step computed it, with what it was computed from (whole, every
// rank's tokens): dg[j] = sum over t of dy[t, j] x[t, j] rstd[t]. prop2_block_stack judges dg
// against the exact sum of those terms (under SP a rank that summed the wrong tokens is seen).
struct NormGradRecord {
  std::vector<float> x, dy, rstd, dg;  // x, dy [T, H]; rstd [T]; dg [H]
  int64_t T = 0, H = 0;
};

// One training step of the stack at `step` on p simulated ranks (flow tp or sp_megatron), the
// parameters updated in place (sharded internally, gathered back). x0 [T, hidden] the input,
// dout [T, hidden] the loss gradient at the output (both fp32). Returns the input gradient dx0.
// The norm weights' gradients are held to the end of backward and stepped then (the standard path
// of a non-fusable parameter). ledger (p = 1): weights and state, the saved activations (released
// after their block's backward), gradients (fused: one schedule tile while a layer steps).
// norm_grads: when set, one NormGradRecord is appended per norm weight, in backward order.
std::vector<float> stack_train_step(StackParams& params, const StackShape& s, const std::vector<float>& x0,
                                    const std::vector<float>& dout, int64_t step, int p, Dataflow flow,
                                    LinearUpdate how, const FusedStepBackend& be, const TwinSchedule& sched,
                                    const Collectives& coll, const StackDefects& defects = {},
                                    MemoryLedger* ledger = nullptr,
                                    std::vector<NormGradRecord>* norm_grads = nullptr);

}  // namespace fh
