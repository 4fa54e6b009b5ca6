// The twin tally of the claims that run on the fused kernel: a FusedStepBackend wrapper that runs
// every step of the wrapped backend (the GPU's, kernels/gpu/gpu_step_backend.h) also on the host
// twin (on a copy, with the schedule as given) and compares every stored array bit for bit
// (oracles/param_compare.h), and every G likewise (oracles/bitwise.h). The counts become the
// "fused kernel == host twin on every step" case of each <claim>_gpu (fidelity_common.h) and the
// GPU suite's tally checks. The producer (the GPU backend) only produces; this is where it is judged.
#pragma once
#include <cstdint>
#include <functional>

#include "kernels/twin/step_backend.h"
#include "oracles/param_compare.h"

namespace fh {

struct TwinTally {
  ParamEvidence ev;   // ev.values: stored values compared
  int64_t steps = 0;  // steps compared
  bool clean() const { return ev.differing == 0 && steps > 0; }
};

// The tile the wrapped backend ran a schedule with (the evidence's tile coordinates); empty: the
// schedule's own tile.
using TallyTileOf = std::function<TileShape(const TwinSchedule&)>;

// `inner` with each step and G also made by the twin and compared: a step's arrays under
// "<inner.name> step vs twin" (compare_params at the step and tile), a G as "G <inner.name> vs
// twin" (step 0). With a null tally, `inner` itself.
FusedStepBackend with_twin_tally(const FusedStepBackend& inner, TwinTally* tally, TallyTileOf tile_of = {});

}  // namespace fh
