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

void instantiate_all_rules_for_device() {
  instantiate_rule<AdamW>();
  instantiate_rule<NAdam>();
  instantiate_rule<RAdam>();
  instantiate_rule<Lion>();
  instantiate_rule<RMSprop>();
  instantiate_rule<Adagrad>();
  instantiate_rule<SGD>();
  instantiate_rule<SGDMomentum>();
}

}  // namespace fh
