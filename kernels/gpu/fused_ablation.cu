// Variants of the fused kernel (gpu_api.h fused_wgrad_update_variant): AdamW only, two
// configurations, so each variant costs two instantiations, not 72.
#include <stdexcept>

#include "kernels/gpu/fused_wgrad_update.cuh"

namespace fh::gpu {

namespace {
// The pingpong kernel (with a G round trip where kGRoundTrip), or (kCoop) the cooperative 128 x 256 tile.
template <bool kGRoundTrip, bool kCoop = false>
void launch_variant(StateFormat sf, WeightStore ws, const WgradTileArgs& a, const AdamW::Scalars& s,
                    const ParamView& pv, cudaStream_t stream, float* g) {
  auto launch = [&]<StateFormat SF, WeightStore WS>() {
    if constexpr (kCoop)
      launch_fused_coop<AdamW, SF, WS>(a, s, pv, stream);
    else
      launch_fused_pingpong<AdamW, SF, WS, kGRoundTrip, PingpongCfg>(a, s, pv, stream, g);
  };
  if (sf == StateFormat::fp32 && ws == WeightStore::fp32_master)
    return launch.template operator()<StateFormat::fp32, WeightStore::fp32_master>();
  if (sf == StateFormat::bf16 && ws == WeightStore::bf16_rne)
    return launch.template operator()<StateFormat::bf16, WeightStore::bf16_rne>();
  // INT8 state with fp32 master weights: the cooperative kernel only (at every T, where
  // production switches to it from coop_min_tokens_int8).
  if constexpr (kCoop)
    if (sf == StateFormat::int8 && ws == WeightStore::fp32_master)
      return launch_fused_coop<AdamW, StateFormat::int8, WeightStore::fp32_master>(a, s, pv, stream);
  throw std::invalid_argument("fused_wgrad_update_variant: fp32/fp32_master or bf16/bf16_rne"
                              " (and int8/fp32_master for coop_128x256) only");
}
}  // namespace

void fused_wgrad_update_variant(const WgradProblem& p, const RuleConfig& rule, StateFormat sf, WeightStore ws,
                                const DeviceParamView& pv_in, int64_t step, FusedVariant v, float* g, cudaStream_t stream) {
  validate_problem(p, "fused_wgrad_update_variant");
  validate_param_view(rule, sf, ws, pv_in, step, "fused_wgrad_update_variant");
  if (rule.id != RuleId::adamw) throw std::invalid_argument("fused_wgrad_update_variant: AdamW only");
  if (pv_in.rows != p.out || pv_in.cols != p.in)
    throw std::invalid_argument("fused_wgrad_update_variant: W view and G differ in shape");
  const WgradTileArgs a = make_tile_args(p);
  if (!pingpong_usable(a)) throw std::invalid_argument("fused_wgrad_update_variant: needs 16-byte aligned rows of X and dY");
  ParamView pv = pv_in;
  pv.sr.step = uint32_t(step);
  const AdamW::Scalars s = AdamW::scalars(hyper_of<AdamW>(rule), step);
  switch (v) {
    case FusedVariant::g_roundtrip:
      if (!g) throw std::invalid_argument("fused_wgrad_update_variant: g_roundtrip needs g, out x in floats on the device");
      return launch_variant<true>(sf, ws, a, s, pv, stream, g);
    case FusedVariant::pingpong_128x128: return launch_variant<false>(sf, ws, a, s, pv, stream, nullptr);
    case FusedVariant::coop_128x256: return launch_variant<false, true>(sf, ws, a, s, pv, stream, nullptr);
  }
  throw std::invalid_argument("fused_wgrad_update_variant: unknown variant");
}

}  // namespace fh::gpu
