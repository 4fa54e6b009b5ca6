// Sharded fused updates on simulated ranks (Proposition 2): one linear layer's weight
// gradient step under tensor, sequence and data parallelism, with the host twin as every rank's
// fused kernel and the collectives done by explicit concatenation and sums in a stated order.
//
// Megatron-LM's dataflow (megatron/core/tensor_parallel/layers.py, mappings.py), p ranks:
//   column-parallel  W's rows (out) split; each rank sees X whole and dY's columns of its rows.
//                    Backward dX = sum over ranks of dY_r W_r: an all-reduce (TP) or a
//                    reduce-scatter over tokens (SP) of p partial products.
//   row-parallel     W's columns (in) split; each rank sees X's columns of its slice and dY whole.
//                    dX stays split by columns: no reduction.
//   sequence-parallel  activations are token-sharded between layers: a column-parallel layer
//                    all-gathers X over tokens again in backward (rank order), a row-parallel
//                    layer's dY is all-gathered over tokens (the backward of its reduce-scatter).
//                    So every rank's weight-gradient contraction still runs over all T tokens.
//   the referee's dataflow  dY token-sharded at the weight-gradient point and only X gathered:
//                    each rank contracts over its own T/p tokens.
//   data-parallel    each rank has its T/p tokens and the whole W: its G is token-partial.
// A parameter whose G on a rank is token-partial (data parallelism; and, under SP, norm weights
// and the row-parallel bias, which Megatron all-reduces after backward) must not be updated in
// place by a fused kernel: check_fusable refuses it, and token_partial_fallback_step is the
// exact route (materialize each rank's G, ordered all-reduce, the standard step).
// Every rank's fused kernel is a FusedStepBackend (kernels/twin/step_backend.h: the host twin in
// CI, the GPU kernel on the runner); the collectives are either implementation.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/common/collectives.h"
#include "kernels/formats/host_param.h"
#include "kernels/twin/fused_twin.h"
#include "kernels/twin/step_backend.h"

namespace fh {

enum class TpKind : uint8_t { column, row };
const char* tp_kind_name(TpKind k);

// How the weight-gradient point sees its inputs.
enum class Dataflow : uint8_t {
  tp,            // tensor parallel, activations whole
  sp_megatron,   // sequence parallel, Megatron's gathers
  sp_referee,    // sequence parallel as the referee describes it: dY token-sharded, only X gathered
  dp,            // data parallel: tokens sharded, W replicated
};
const char* dataflow_name(Dataflow d);

// Collectives of simulated ranks (kernels/common/collectives.h): concatenation in gather_order
// (rank order unless a suite plants a permutation) and the ordered fp32 sum.
struct SimCollectives : Collectives {
  int p = 1;
  std::vector<int> gather_order;  // empty: 0, 1, ..., p-1
  int ranks() const override { return p; }
  std::string describe() const override;
  std::vector<bf16> all_gather_rows(const std::vector<std::vector<bf16>>& parts, int64_t cols) const override;
  std::vector<float> all_gather_cols(const std::vector<std::vector<float>>& parts, int64_t rows) const override;
  std::vector<float> all_reduce_ordered(const std::vector<std::vector<float>>& parts) const override;
};

// Rows [r0, r1) or columns [c0, c1) of a row-major [rows, cols] matrix.
std::vector<bf16> take_rows(const std::vector<bf16>& a, int64_t cols, int64_t r0, int64_t r1);
std::vector<bf16> take_cols(const std::vector<bf16>& a, int64_t rows, int64_t cols, int64_t c0, int64_t c1);

// [begin, end) of rank r's equal share of n; std::invalid_argument when p does not divide n.
void even_share(int64_t n, int p, int r, int64_t& begin, int64_t& end, const char* what);

// One layer on p simulated ranks: its weight shards (tp, sp_*) or replicas (dp).
struct ShardedLayer {
  TpKind kind = TpKind::column;
  Dataflow flow = Dataflow::tp;
  int p = 1;
  std::vector<HostParam> ranks;
  // Shards (or replicas, for dp) of `full`; INT8 shards whose edge splits a block are refused.
  static ShardedLayer split(const HostParam& full, TpKind kind, Dataflow flow, int p);
  HostParam gathered(const HostParam& like) const;  // the shards placed back into a copy of `like`
};

// Refuses a fused in-place update whose G on a rank would be token-partial: dp, and a
// parameter the caller declares token-partial (norm weight, row-parallel bias under SP).
// Throws std::invalid_argument naming the parameter and the fallback.
void check_fusable(Dataflow flow, bool token_partial_param, const std::string& what);

// One fused step of w on `be` (one rank, or the unsharded layer); dX [T, in], if given, is the
// twin's dY * W from W before the step (Remark 1).
void rank_step(const FusedStepBackend& be, HostParam& w, const bf16* X, const bf16* dY, int64_t T,
               int64_t step, const TwinSchedule& sched, std::vector<float>* dX = nullptr);

// One fused step of every rank. X [T, in] and dY [T, out] are the layer's whole inputs; each
// rank is given what its dataflow gives it (the collectives run here). dX, if given, receives the
// layer's dX [T, in] assembled as the dataflow assembles it (ordered reductions). The referee's
// dataflow and dp run as asked (no check_fusable): the claims measure what they do. Each rank's
// step runs on `be`; dX's partial products are the twin's (twin_dgrad, from W before the step).
void sharded_fused_step(ShardedLayer& layer, const bf16* X, const bf16* dY, int64_t T, int64_t step,
                        const TwinSchedule& sched, const Collectives& coll, std::vector<float>* dX = nullptr,
                        const FusedStepBackend& be = twin_step_backend());

// The exact route for a token-partial parameter: each rank's G over its own tokens (twin order),
// the ordered all-reduce, then the standard step of every replica with that G. Returns the bytes
// of gradient each rank held (the fallback's extra memory). Each rank's G comes from be.wgrad.
int64_t token_partial_fallback_step(ShardedLayer& layer, const bf16* X, const bf16* dY, int64_t T,
                                    int64_t step, const TwinSchedule& sched, const Collectives& coll,
                                    const FusedStepBackend& be = twin_step_backend());

}  // namespace fh
