// Variants of the pingpong kernel (gpu_api.h fused_wgrad_update_variant): AdamW only, two
// configurations, so each variant costs two instantiations, not 72.
#include <stdexcept>

#include "kernels/gpu/fused_wgrad_update.cuh"

namespace fh::gpu {

namespace {
template <bool kGRoundTrip, int kPrefetch, class Ring = PingpongCfg>
void launch_variant(StateFormat sf, WeightStore ws, const WgradTileArgs& a, const AdamW::Scalars& s,
                    const ParamView& pv, cudaStream_t stream, float* g) {
  if (sf == StateFormat::fp32 && ws == WeightStore::fp32_master)
    return launch_fused_pingpong<AdamW, StateFormat::fp32, WeightStore::fp32_master, kGRoundTrip, kPrefetch, Ring>(a, s, pv,
                                                                                                          stream, g);
  if (sf == StateFormat::bf16 && ws == WeightStore::bf16_rne)
    return launch_fused_pingpong<AdamW, StateFormat::bf16, WeightStore::bf16_rne, kGRoundTrip, kPrefetch, Ring>(a, s, pv,
                                                                                                       stream, g);
  throw std::invalid_argument("fused_wgrad_update_variant: fp32/fp32_master or bf16/bf16_rne only");
}
}  // namespace

void fused_wgrad_update_variant(const WgradProblem& p, const RuleConfig& rule, StateFormat sf, WeightStore ws,
                                const ParamView& pv_in, int64_t step, FusedVariant v, float* g, cudaStream_t stream) {
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
      return launch_variant<true, 4>(sf, ws, a, s, pv, stream, g);
    case FusedVariant::epilogue_prefetch8: return launch_variant<false, 8>(sf, ws, a, s, pv, stream, nullptr);
    case FusedVariant::deep_ring: return launch_variant<false, 4, PingpongDeepRing>(sf, ws, a, s, pv, stream, nullptr);
    case FusedVariant::deep_ring_wait2:
      return launch_variant<false, 4, PingpongDeepRing2>(sf, ws, a, s, pv, stream, nullptr);
  }
  throw std::invalid_argument("fused_wgrad_update_variant: unknown variant");
}

}  // namespace fh::gpu
