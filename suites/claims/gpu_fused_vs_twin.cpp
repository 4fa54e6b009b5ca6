// gpu_fused_vs_twin: the GPU fused kernel equals its host twin (kernels/twin/fused_twin) bit for
// bit: the guarantee that lets the twin stand in for the GPU in CI (oracles/param_compare).
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

void claim_gpu_fused_vs_twin(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  const LayerInputs li = make_layer_inputs(stream_seed(cfg.seed, "gpu_fused_vs_twin/inputs"), cfg.out, cfg.in, cfg.tokens, cfg.steps);
  const DeviceSteps dev(li);
  const std::vector<Combo> combos = combos_of(cfg);
  // The twin in the fused kernel's order for this shape (split over tokens where fused_token_splits says).
  const TwinSchedule sched = twin_schedule(gpu::fused_order_for(dev.prob[0], gpu::TileShape{128, 128}));
  // One case per worker at a time: GPU calls from several host threads are safe (the runtime
  // serialises them on the default stream); the Report is filled afterwards, in case order.
  std::vector<ParamEvidence> evs(combos.size());
  parallel_for(int64_t(combos.size()), [&](int64_t ci) {
    const Combo& c = combos[size_t(ci)];
    const HostParam hp0 = make_param(c, li, stream_seed(cfg.seed, "gpu_fused_vs_twin/sr_key"), size_t(ci));
    HostParam fused_h = hp0, twin = hp0;
    gpu::DeviceParam fused(hp0);
    ParamEvidence& ev = evs[size_t(ci)];
    for (int64_t st = 1; st <= cfg.steps; ++st) {
      const StepInputs& in = li.steps[size_t(st - 1)];
      gpu::fused_wgrad_update(dev.prob[size_t(st - 1)], c.rule, c.format, c.store, fused.view(), st,
                              gpu::TileShape{128, 128});
      fused_twin_step(twin, in.X.data(), in.dY.data(), li.T, st, sched);
      fused.download_into(fused_h);
      compare_params(ev, fused_h, twin, st, kTileEvidence, "step " + std::to_string(st));
    }
  });
  int64_t failing = 0;
  for (size_t ci = 0; ci < combos.size(); ++ci) {
    const Combo& c = combos[ci];
    CaseRecord& cs = report.add_case("gpu_fused_vs_twin", case_name(c.rule.id, c.format, c.store));
    cs.set_attr("shape", shape_name(li.out, li.in, li.T)).set_attr("steps", std::to_string(cfg.steps))
        .set_attr("tile", "128x128").set_attr("twin_order", sched.order.describe());
    cs.add_i64("evidence", {evs[ci].compared, evs[ci].differing}, "arrays compared (all steps), elements differing");
    cs.add_check(bitwise_check("fused_equals_twin", evs[ci]));
    failing += evs[ci].differing != 0;
  }
  progress.note(std::to_string(combos.size()) + " cases x " + std::to_string(cfg.steps) + " steps at " +
                shape_name(li.out, li.in, li.T) + ", " + std::to_string(failing) + " failing");
}

}  // namespace fh
