// Per-rule entry points of the kernel set. The templates are defined in fused_wgrad_update.cuh
// and rule_kernel.cuh and explicitly instantiated once per rule in rule_family_<rule>.cu, so the
// 8 rules x 3 state formats x 3 weight stores compile in parallel translation units; the runtime
// dispatchers (fused_wgrad_update.cu, rule_kernel.cu) see only these declarations.
#pragma once
#include "kernels/gpu/gpu_api.h"

namespace fh::gpu {

template <class Rule>
void launch_fused_typed(StateFormat sf, WeightStore ws, const WgradProblem& p,
                        const typename Rule::Scalars& s, const ParamView& pv, TileShape tile,
                        cudaStream_t stream);

template <class Rule>
void launch_rule_typed(StateFormat sf, WeightStore ws, const typename Rule::Scalars& s,
                       const ParamView& pv, const float* g, int64_t ldg, cudaStream_t stream);

}  // namespace fh::gpu

// Explicit instantiation of both entry points for one rule (used by rule_family_<rule>.cu), and its
// declaration (used by the dispatchers, which see the templates' definitions: without it they
// instantiate the whole kernel set a second time, doubling the build and every binary's fatbin).
// KW is `template` or `extern template`: one signature for both.
#define FH_GPU_RULE_FAMILY_ENTRY_POINTS(KW, RULE)                                                    \
  KW void launch_fused_typed<RULE>(StateFormat, WeightStore, const WgradProblem&, const RULE::Scalars&, \
                                   const ParamView&, TileShape, cudaStream_t);                        \
  KW void launch_rule_typed<RULE>(StateFormat, WeightStore, const RULE::Scalars&, const ParamView&,    \
                                  const float*, int64_t, cudaStream_t);
#define FH_GPU_INSTANTIATE_RULE_FAMILY(RULE) FH_GPU_RULE_FAMILY_ENTRY_POINTS(template, RULE)
#define FH_GPU_EXTERN_RULE_FAMILY(RULE) FH_GPU_RULE_FAMILY_ENTRY_POINTS(extern template, RULE)
