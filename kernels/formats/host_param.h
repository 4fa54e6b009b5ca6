// A weight and its optimizer state in host memory, owning the storage, for every producer that
// runs on the host (host twin, two-phase references, forge-verify) and as the staging copy the
// GPU suites upload and compare against.
#pragma once
#include <vector>
#include "kernels/formats/formats.h"
#include "kernels/rules/all_rules.h"

namespace fh {

// Refuses INT8 layouts whose blocks would straddle an edge (DESIGN contract 5): `edge` is the
// column where a tile or shard begins or ends, in global columns.
void require_block_aligned(StateFormat sf, int64_t edge, int64_t global_cols, const char* what);

struct HostParam {
  RuleConfig rule;
  StateFormat state_format = StateFormat::fp32;
  WeightStore weight_store = WeightStore::fp32_master;
  int64_t rows = 0, cols = 0;
  std::vector<float> master;        // fp32_master
  std::vector<fh::bf16> bf16;       // weights (bf16 stores) or the working copy (fp32_master)
  StateDecls decls;
  std::vector<float> st_f32[kMaxStates];
  std::vector<fh::bf16> st_bf16[kMaxStates];
  std::vector<uint8_t> st_i8[kMaxStates];
  std::vector<float> st_absmax[kMaxStates];
  sr_key sr;
  // Where this tensor sits in a larger one when it is a shard (slice()): its first row and column
  // there, and that tensor's row length (0: not a shard). view() passes them on, so stochastic
  // rounding draws the bits of the global element and INT8 blocks keep their global edges.
  int64_t origin_row = 0, origin_col = 0, origin_global_cols = 0;

  // Weights start from w0 (rounded to bf16 for bf16 stores), state from the rule's initial value.
  static HostParam make(const RuleConfig& rule, StateFormat sf, WeightStore ws, int64_t rows,
                        int64_t cols, const std::vector<float>& w0, uint64_t seed = 0,
                        uint32_t tensor_id = 0);
  HostParamView view();                        // the whole tensor
  float weight(int64_t i) const;               // the stored weight, widened
  float state(int k, int64_t i) const;         // state slot k, decoded
  int64_t blocks_per_row() const { return (cols + kInt8Block - 1) / kInt8Block; }
  // The shard [r0, r1) x [c0, c1): weights and state copied, origin set (composes with this
  // tensor's own origin). INT8 state: c0 and c1 must be block edges of the global tensor, else
  // std::invalid_argument (a shard edge may not split a block).
  HostParam slice(int64_t r0, int64_t r1, int64_t c0, int64_t c1) const;
  // Writes a shard made by slice() of this tensor back into its place.
  void place(const HostParam& shard);
};

// Step scalars for `step`, then the rule on the rectangle [r0, r1) x [c0, c1) of the view, with
// G given for that rectangle (row-major, leading dimension ldg). For int8 state the rectangle's
// column edges must be block aligned (or the tensor's end). One function for all producers on
// the host: the twin calls it per tile, the two-phase step once for the whole tensor.
void apply_rule_region(const RuleConfig& rule, StateFormat sf, WeightStore ws, const HostParamView& pv,
                       int64_t step, const float* g, int64_t ldg, int64_t r0, int64_t r1,
                       int64_t c0, int64_t c1);

}  // namespace fh
