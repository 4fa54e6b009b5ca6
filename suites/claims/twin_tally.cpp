#include "suites/claims/twin_tally.h"

#include <utility>
#include <vector>

#include "kernels/twin/fused_twin.h"
#include "oracles/bitwise.h"

namespace fh {

FusedStepBackend with_twin_tally(const FusedStepBackend& inner, TwinTally* tally, TallyTileOf tile_of) {
  if (!tally) return inner;
  if (!tile_of) tile_of = [](const TwinSchedule& s) { return TileShape{s.tile_rows, s.tile_cols}; };
  FusedStepBackend b;
  b.name = inner.name;
  const std::string step_where = inner.name + " step vs twin";
  const std::string g_name = "G " + inner.name + " vs twin";
  b.step = [inner, tally, tile_of, step_where](HostParam& w, const bf16* X, const bf16* dY, int64_t T,
                                               int64_t step, const TwinSchedule& sched) {
    const TileShape tile = tile_of(sched);
    HostParam twin = w;
    fused_twin_step(twin, X, dY, T, step, sched);
    inner.step(w, X, dY, T, step, sched);
    compare_params(tally->ev, w, twin, step, tile, step_where);
    ++tally->steps;
  };
  b.wgrad = [inner, tally, tile_of, g_name](const bf16* X, const bf16* dY, int64_t T, int64_t in,
                                            int64_t out, const TwinSchedule& sched) {
    const TileShape tile = tile_of(sched);
    std::vector<float> g = inner.wgrad(X, dY, T, in, out, sched);
    const std::vector<float> t = twin_wgrad(X, dY, T, in, out, sched);
    tally->ev.add(compare_bitwise(g, t, out, in, {g_name, tile, 0}));
    return g;
  };
  return b;
}

}  // namespace fh
