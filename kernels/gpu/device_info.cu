#include "kernels/gpu/device_info.h"

#include <cublas_api.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <fstream>
#include <regex>

namespace fh {

namespace {
// The driver version nvidia-smi reports ("580.159.04"), for machines (containers, VMs) where
// /proc/driver/nvidia is not visible; empty if nvidia-smi is absent or says something else.
std::string nvidia_smi_driver_version() {
  FILE* p = popen("nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null", "r");
  if (!p) return {};
  char buf[128] = {};
  const bool got = std::fgets(buf, sizeof buf, p) != nullptr;
  pclose(p);
  std::string v = got ? std::string(buf) : std::string();
  while (!v.empty() && (v.back() == '\n' || v.back() == '\r' || v.back() == ' ')) v.pop_back();
  return std::regex_match(v, std::regex("[0-9]+(\\.[0-9]+)+")) ? v : std::string();
}

// The kernel module's version ("580.159.04") as the driver publishes it, else nvidia-smi's; empty
// if neither is readable.
std::string driver_version_text() {
  std::ifstream f("/proc/driver/nvidia/version");
  std::string line;
  std::getline(f, line);
  std::smatch m;
  if (std::regex_search(line, m, std::regex("Kernel Module[^0-9]*([0-9]+(\\.[0-9]+)+)"))) return m[1];
  return nvidia_smi_driver_version();
}

DeviceInfo probe() {
  DeviceInfo info;
  int rt = 0;
  if (cudaRuntimeGetVersion(&rt) == cudaSuccess) info.runtime = std::to_string(rt);
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS)
    info.cublas = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  int drv = 0;
  if (cudaDriverGetVersion(&drv) == cudaSuccess && drv > 0) {
    const std::string module = driver_version_text();
    info.driver = (module.empty() ? std::string("unknown") : module) + " (CUDA driver API " + std::to_string(drv) + ")";
  }
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    // With no driver at all the runtime says "CUDA driver version is insufficient", which sends
    // a newcomer to upgrade a driver they do not have; say what it means, keep the error name.
    // A driver that is present (drv > 0) but too old keeps the runtime's own text.
    if (err == cudaErrorNoDevice || (err == cudaErrorInsufficientDriver && drv == 0))
      info.reason = std::string("no NVIDIA driver or device on this machine (") + cudaGetErrorName(err) + ")";
    else
      info.reason = std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) + ")";
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return info;
  }
  info.visible = count;
  if (count == 0) { info.reason = "no CUDA device"; return info; }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) { info.reason = "cudaGetDeviceProperties failed"; return info; }
  info.sm = prop.major * 10 + prop.minor;
  if (prop.major < 9) {
    info.reason = std::string("device ") + prop.name + " is not sm_90 (the kernels are built for sm_90a)";
    return info;
  }
#if !FH_DEVICE_SASS
  // A PTX-only build (CMake FH_DEVICE_SASS=OFF, for GPU-less CI) would have the driver JIT every
  // kernel: its runs are not the kernels the harness judges, so it runs none of them.
  info.reason = std::string("this build has no sm_90a machine code (configured with FH_DEVICE_SASS=OFF, "
                            "for machines without a GPU): rebuild with FH_DEVICE_SASS=ON to use ") + prop.name;
  return info;
#endif
  info.available = true;
  info.name = prop.name;
  info.compute_capability = std::to_string(prop.major) + "." + std::to_string(prop.minor);
  info.sm_count = prop.multiProcessorCount;
  return info;
}
}  // namespace

const DeviceInfo& query_device_info() {
  static const DeviceInfo info = probe();
  return info;
}

}  // namespace fh
