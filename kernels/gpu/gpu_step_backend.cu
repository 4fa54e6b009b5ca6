#include "kernels/gpu/gpu_step_backend.h"

#include <mutex>

namespace fh::gpu {
namespace {

// The claims run units of work on several host threads (suites/claims/prop2_common.h), each with
// a backend of its own: one step at a time on the device keeps the kernel's process-wide launch
// state and the device-wide synchronize as a serial run has them.
std::mutex g_device_step_mutex;

void gpu_step(HostParam& w, const bf16* X, const bf16* dY, int64_t T, int64_t step, TileShape tile) {
  std::lock_guard<std::mutex> lock(g_device_step_mutex);
  DeviceBuffer<bf16> dx(std::vector<bf16>(X, X + T * w.cols));
  DeviceBuffer<bf16> ddy(std::vector<bf16>(dY, dY + T * w.rows));
  DeviceParam dp(w);
  const WgradProblem p{dx.data(), ddy.data(), T, w.rows, w.cols};
  fused_wgrad_update(p, w.rule, w.state_format, w.weight_store, dp.view(), step, tile);
  cuda_check(cudaDeviceSynchronize(), "gpu_step_backend: fused step");
  dp.download_into(w);
}

std::vector<float> gpu_wgrad(const bf16* X, const bf16* dY, int64_t T, int64_t in, int64_t out,
                             TileShape tile) {
  std::lock_guard<std::mutex> lock(g_device_step_mutex);
  DeviceBuffer<bf16> dx(std::vector<bf16>(X, X + T * in));
  DeviceBuffer<bf16> ddy(std::vector<bf16>(dY, dY + T * out));
  DeviceBuffer<float> g(size_t(out * in));
  wgrad_materialize(WgradProblem{dx.data(), ddy.data(), T, out, in}, g.data(), tile);
  cuda_check(cudaDeviceSynchronize(), "gpu_step_backend: wgrad");
  return g.download();
}

}  // namespace

TileShape gpu_tile_for(const TwinSchedule& sched) {
  const TileShape t{int(sched.tile_rows), int(sched.tile_cols)};
  return tile_supported(t) ? t : TileShape{};
}

FusedStepBackend make_gpu_step_backend() {
  FusedStepBackend b;
  b.name = "gpu";
  b.step = [](HostParam& w, const bf16* X, const bf16* dY, int64_t T, int64_t step,
              const TwinSchedule& sched) { gpu_step(w, X, dY, T, step, gpu_tile_for(sched)); };
  b.wgrad = [](const bf16* X, const bf16* dY, int64_t T, int64_t in, int64_t out,
               const TwinSchedule& sched) { return gpu_wgrad(X, dY, T, in, out, gpu_tile_for(sched)); };
  return b;
}

}  // namespace fh::gpu
