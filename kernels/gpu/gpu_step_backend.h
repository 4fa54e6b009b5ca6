// The fused kernel as a FusedStepBackend (kernels/twin/step_backend.h), so that the fidelity
// claims (reference/fidelity_runs.h) run on the GPU with the code they run on the twin in CI.
// Each step uploads the HostParam and the step's X, dY, runs fused_wgrad_update and downloads
// weights and state. The tile is the schedule's when the kernel has that shape (128x128, 64x64),
// else 128x128: the bits do not depend on the tile (test_schedule_invariance), and the tally
// below holds the GPU to that.
#pragma once
#include "kernels/gpu/gpu_api.h"
#include "kernels/twin/step_backend.h"
#include "oracles/param_compare.h"

namespace fh::gpu {

// With a tally, every GPU step is also run by the host twin (on a copy, with the schedule as
// given) and every stored array is compared bit for bit; every GPU G likewise.
struct TwinTally {
  ParamEvidence ev;   // ev.values: stored values compared
  int64_t steps = 0;  // steps compared
  bool clean() const { return ev.differing == 0 && steps > 0; }
};

TileShape gpu_tile_for(const TwinSchedule& sched);
FusedStepBackend make_gpu_step_backend(TwinTally* tally = nullptr);

}  // namespace fh::gpu
