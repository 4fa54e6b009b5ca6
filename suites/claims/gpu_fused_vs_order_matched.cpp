// gpu_fused_vs_order_matched: Proposition 1 on the GPU. The fused kernel equals the materializer
// plus the standalone rule kernel (same reduction order, kernels/gpu), bit for bit, on every
// rule x state format x weight store of the configuration (oracles/param_compare).
#include <algorithm>
#include <cmath>
#include <map>

#include "kernels/common/host_parallel.h"
#include "kernels/twin/fused_twin.h"
#include "oracles/bitwise.h"
#include "oracles/dot_bound.h"
#include "oracles/param_compare.h"
#include "oracles/ulp.h"
#include "suites/claims/gpu_claim_common.h"

namespace fh {

void claim_gpu_fused_vs_order_matched(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  const LayerInputs li = make_layer_inputs(stream_seed(cfg.seed, "gpu_fused_vs_order_matched/inputs"), cfg.out, cfg.in, cfg.tokens, cfg.steps);
  const DeviceSteps dev(li);
  const std::vector<Combo> combos = combos_of(cfg);
  int64_t failing = 0;
  for (size_t ci = 0; ci < combos.size(); ++ci) {
    const Combo& c = combos[ci];
    const HostParam hp0 = make_param(c, li, stream_seed(cfg.seed, "gpu_fused_vs_order_matched/sr_key"), ci);
    HostParam fused_h = hp0, om_h = hp0;
    gpu::DeviceParam fused(hp0), om(hp0);
    gpu::DeviceBuffer<float> g(size_t(li.out * li.in));
    ParamEvidence ev;
    for (int64_t st = 1; st <= cfg.steps; ++st) {
      const gpu::WgradProblem& p = dev.prob[size_t(st - 1)];
      gpu::fused_wgrad_update(p, c.rule, c.format, c.store, fused.view(), st, gpu::TileShape{128, 128});
      gpu::wgrad_materialize(p, g.data(), gpu::TileShape{128, 128});
      gpu::rule_apply_device(c.rule, c.format, c.store, om.view(), st, g.data(), li.in);
      fused.download_into(fused_h);
      om.download_into(om_h);
      compare_params(ev, fused_h, om_h, st, kTileEvidence, "step " + std::to_string(st));
    }
    CaseRecord& cs = report.add_case("gpu_fused_vs_order_matched", case_name(c.rule.id, c.format, c.store));
    cs.set_attr("shape", shape_name(li.out, li.in, li.T)).set_attr("steps", std::to_string(cfg.steps))
        .set_attr("tile", "128x128");
    cs.add_i64("evidence", {ev.compared, ev.differing}, "arrays compared (all steps), elements differing");
    cs.add_check(bitwise_check("fused_equals_order_matched", ev));
    failing += ev.differing != 0;
  }
  progress.note(std::to_string(combos.size()) + " cases x " + std::to_string(cfg.steps) + " steps at " +
                shape_name(li.out, li.in, li.T) + ", " + std::to_string(failing) + " failing");
}

}  // namespace fh
