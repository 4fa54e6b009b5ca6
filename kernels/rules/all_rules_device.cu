// Compiles every rule, state format and weight store for the device (CI has nvcc but no GPU):
// a rule that does not build for sm_90a fails the CI build here.
#include "kernels/formats/formats.h"
#include "kernels/rules/all_rules.h"

namespace fh {
namespace {

template <class Rule, StateFormat SF, WeightStore WS>
__global__ void rule_compile_probe(typename Rule::Scalars s, ParamView pv, const float* g) {
  const int64_t r = blockIdx.x;
  update_segment<Rule, SF, WS>(s, pv, r, 0, int(pv.cols < kInt8Block ? pv.cols : kInt8Block), g);
}

template <class Rule>
void instantiate_rule() {
  (void)&rule_compile_probe<Rule, StateFormat::fp32, WeightStore::fp32_master>;
  (void)&rule_compile_probe<Rule, StateFormat::bf16, WeightStore::bf16_rne>;
  (void)&rule_compile_probe<Rule, StateFormat::int8, WeightStore::bf16_sr>;
}

}  // namespace

// Every rule of kAllRules, so that a new rule needs no line here.
void instantiate_all_rules_for_device() {
  for (RuleId id : kAllRules) visit_rule(id, [](auto rule) { instantiate_rule<decltype(rule)>(); });
}

}  // namespace fh
