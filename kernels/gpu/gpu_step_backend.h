// The fused kernel as a FusedStepBackend (kernels/twin/step_backend.h), so that the fidelity
// claims (suites/claims/prop4_int8.h, sr_statistics.h, stagnation.h, gradient_fidelity.h) run on
// the GPU with the code they run on the twin in CI. Each step uploads the HostParam and the
// step's X, dY, runs fused_wgrad_update and downloads weights and state. The tile is the
// schedule's when the kernel has that shape (128x128, 64x64), else 128x128: the bits do not
// depend on the tile (test_schedule_invariance). A producer only: the comparison of every GPU
// step with the twin is the claims layer's (suites/claims/twin_tally.h). Callable from several
// host threads: their steps take turns on the device.
#pragma once
#include "kernels/gpu/gpu_api.h"
#include "kernels/twin/step_backend.h"

namespace fh::gpu {

// The tile the kernel runs a schedule with.
TileShape gpu_tile_for(const TwinSchedule& sched);
FusedStepBackend make_gpu_step_backend();

}  // namespace fh::gpu
