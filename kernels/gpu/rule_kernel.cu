// Runtime dispatch of the standalone rule kernel (phase 2 of the two-phase references).
#include <string>

#include "kernels/gpu/gpu_api.h"
#include "kernels/gpu/rule_family.h"
#include "kernels/gpu/rule_family_built.h"

namespace fh::gpu {

void rule_apply_device(const RuleConfig& rule, StateFormat sf, WeightStore ws, const DeviceParamView& pv_in,
                       int64_t step, const float* g, int64_t ldg, cudaStream_t stream) {
  validate_param_view(rule, sf, ws, pv_in, step, "rule_apply_device");
  if (!g) throw std::invalid_argument("rule_apply_device: G must be a device pointer");
  if (ldg < pv_in.cols) throw std::invalid_argument("rule_apply_device: ldg < cols");
  ParamView pv = pv_in;
  pv.sr.step = uint32_t(step);
  visit_rule(rule.id, [&](auto r) {
    using Rule = decltype(r);
    const typename Rule::Scalars s = Rule::scalars(hyper_of<Rule>(rule), step);
    if constexpr (rule_family_built<Rule>())
      launch_rule_typed<Rule>(sf, ws, s, pv, g, ldg, stream);
    else
      refuse_unbuilt_family<Rule>("rule_apply_device");
  });
}

}  // namespace fh::gpu
