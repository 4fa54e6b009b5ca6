// Runtime dispatch of the fused kernel: checks, per-step scalars on the host (double, rounded
// once, DESIGN contract 1), then the rule family's instantiation (rule_family_<rule>.cu).
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include "kernels/gpu/fused_wgrad_update.cuh"
#include "kernels/gpu/gpu_api.h"
#include "kernels/gpu/rule_family.h"
#include "kernels/gpu/rule_family_built.h"

namespace fh::gpu {

// Instantiated in rule_family_<rule>.cu, not here.
#define FH_GPU_EXTERN_LISTED_RULE_FAMILY(name, Type) FH_GPU_EXTERN_RULE_FAMILY(Type)
FH_RULES(FH_GPU_EXTERN_LISTED_RULE_FAMILY)
#undef FH_GPU_EXTERN_LISTED_RULE_FAMILY

namespace {

void require_state_pointers(const ParamView& pv, WeightStore ws, const StateDecls& decls, StateFormat sf,
                            const char* who) {
  if (ws == WeightStore::fp32_master && !pv.master)
    throw std::invalid_argument(std::string(who) + ": fp32_master store needs pv.master");
  if (ws != WeightStore::fp32_master && !pv.bf16)
    throw std::invalid_argument(std::string(who) + ": bf16 store needs pv.bf16");
  for (int k = 0; k < kMaxStates; ++k) {
    if (!decls.slot[k].kept) continue;
    if (!state_storage(pv.state[k], sf))
      throw std::invalid_argument(std::string(who) + ": state slot " + std::to_string(k) + " (" +
                                  decls.slot[k].name + ") has no " + state_format_name(sf) + " storage");
    if (sf == StateFormat::int8 && !pv.state[k].absmax)
      throw std::invalid_argument(std::string(who) + ": int8 state slot " + std::to_string(k) +
                                  " has no absmax");
    if (pv.state[k].nonnegative != decls.slot[k].nonnegative)
      throw std::invalid_argument(std::string(who) + ": state slot " + std::to_string(k) +
                                  " has the wrong codec sign");
  }
}

}  // namespace

void validate_param_view(const RuleConfig& rule, StateFormat sf, WeightStore ws, const DeviceParamView& pv,
                         int64_t step, const char* who) {
  if (step < 1) throw std::invalid_argument(std::string(who) + ": step counts from 1");
  if (pv.rows < 1 || pv.cols < 1) throw std::invalid_argument(std::string(who) + ": empty weight view");
  if (pv.row0 < 0 || pv.col0 < 0 || pv.global_cols < pv.col0 + pv.cols)
    throw std::invalid_argument(std::string(who) + ": view does not fit its global row length");
  // INT8 blocks must not straddle the view's edges (DESIGN contract 5).
  require_block_aligned(sf, pv.col0, pv.global_cols, who);
  require_block_aligned(sf, pv.col0 + pv.cols, pv.global_cols, who);
  visit_rule(rule.id, [&](auto r) {
    using Rule = decltype(r);
    Rule::validate(hyper_of<Rule>(rule));
    const StateDecls decls = Rule::states(hyper_of<Rule>(rule));
    for (int k = Rule::kStateSlots; k < kMaxStates; ++k)  // the fused epilogue skips these slots
      if (decls.slot[k].kept)
        throw std::logic_error(std::string(who) + ": " + Rule::kName + " keeps state slot " + std::to_string(k) +
                               " past its kStateSlots");
    require_state_pointers(pv, ws, decls, sf, who);
  });
}

int rule_kept_slots(const RuleConfig& rule) {
  return visit_rule(rule.id, [&](auto r) { return decltype(r)::states(hyper_of<decltype(r)>(rule)).count(); });
}
int rule_declared_slots(const RuleConfig& rule) {
  return visit_rule(rule.id, [](auto r) { return decltype(r)::kStateSlots; });
}

int fused_token_splits(const WgradProblem& p, TileShape tile) {
  validate_problem(p, "fused_token_splits");
  return tile.rows == 128 && tile.cols == 128 ? coop_splits_for(make_tile_args(p)) : 1;
}

ReductionOrder fused_order_for(const WgradProblem& p, TileShape tile) {
  const int splits = fused_token_splits(p, tile);
  if (splits == 1) return fused_kernel_order(CoopCfg::TK);
  ReductionOrder r = cublas_wgrad_order(splits, CoopCfg::TK);
  r.token_chunk = CoopCfg::TK;
  r.validate();
  return r;
}

const char* fused_kernel_for(const WgradProblem& p, TileShape tile, StateFormat sf, const RuleConfig& rule) {
  if (tile.rows == 64 && tile.cols == 64) return "mma_sync_64x64";
  const WgradTileArgs a = make_tile_args(p);
  if (const int splits = coop_splits_for(a); splits > 1)
    return coop_tiles(a) * splits <= coop_sm_count() ? "coop_split_128x256" : "coop_split_waves_128x256";
  if (coop_ilv_chosen(a, sf)) return "coop_ilv_128x256";
  if (coop_l2g_chosen(a, sf, rule_declared_slots(rule), rule_kept_slots(rule)))
    return coop_l2g_shares(sf) ? "coop_l2g_share_128x256" : "coop_l2g_128x256";
  return coop_chosen(a, sf) ? "coop_128x256" : "block_per_tile";
}

float* coop_l2g_scratch(cudaStream_t stream, size_t floats) {
  // Never freed: the slices live as long as the process (a static's destructor could run after
  // the CUDA context is gone).
  static std::mutex* mutex = new std::mutex;
  static auto* slices = new std::map<std::pair<int, cudaStream_t>, DeviceBuffer<float>>;
  std::lock_guard<std::mutex> lock(*mutex);
  int device = 0;
  cuda_check(cudaGetDevice(&device), "coop_l2g_scratch: cudaGetDevice");
  DeviceBuffer<float>& b = (*slices)[{device, stream}];
  if (b.size() < floats) b = DeviceBuffer<float>(floats);  // cudaFree waits for the kernels using the old one
  return b.data();
}

void fused_wgrad_update(const WgradProblem& p, const RuleConfig& rule, StateFormat sf,
                        WeightStore ws, const DeviceParamView& pv_in, int64_t step, TileShape tile,
                        cudaStream_t stream) {
  validate_problem(p, "fused_wgrad_update");
  validate_param_view(rule, sf, ws, pv_in, step, "fused_wgrad_update");
  if (!tile_supported(tile))
    throw std::invalid_argument("fused_wgrad_update: unsupported tile " + std::to_string(tile.rows) +
                                "x" + std::to_string(tile.cols) + " (128x128 or 64x64)");
  if (pv_in.rows != p.out || pv_in.cols != p.in)
    throw std::invalid_argument("fused_wgrad_update: W view is " + std::to_string(pv_in.rows) + "x" +
                                std::to_string(pv_in.cols) + " but G is " + std::to_string(p.out) +
                                "x" + std::to_string(p.in));
  // Tile column edges fall at col0 + k * TC: for INT8 state they must be block aligned.
  require_block_aligned(sf, pv_in.col0 + (tile.cols < pv_in.cols ? tile.cols : pv_in.cols),
                        pv_in.global_cols, "fused_wgrad_update tile");
  ParamView pv = pv_in;
  pv.sr.step = uint32_t(step);
  visit_rule(rule.id, [&](auto r) {
    using Rule = decltype(r);
    const typename Rule::Scalars s = Rule::scalars(hyper_of<Rule>(rule), step);
    if constexpr (rule_family_built<Rule>())
      launch_fused_typed<Rule>(sf, ws, p, s, pv, tile, stream);
    else
      refuse_unbuilt_family<Rule>("fused_wgrad_update");
  });
}

}  // namespace fh::gpu
