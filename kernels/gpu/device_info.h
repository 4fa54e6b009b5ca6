// Interface owned by the lead (forge-verify and the report /meta depend on it); extend, do not change.
// Whether a GPU is here, and what it is, without linking the driver library: the static CUDA
// runtime answers cudaGetDeviceCount with an error on a machine without a driver, and that
// error is the "no GPU" reason that GPU checks report as not-run.
#pragma once
#include <string>

namespace fh {

struct DeviceInfo {
  bool available = false;
  std::string reason;           // why not available ("no CUDA driver", ...)
  std::string name = "none";    // e.g. "NVIDIA H200"
  std::string compute_capability = "none";
  std::string driver = "none";  // e.g. "580.159.04 (CUDA driver API 13000)"
  std::string runtime = "unknown";
  std::string cublas = "unknown";
  int sm_count = 0;
  // What a claim's needs are judged against (suites/claims/registry.h), set also when the device
  // is not usable: CUDA devices visible, and device 0's compute capability as major * 10 + minor.
  int visible = 0;
  int sm = 0;
};

// Queried once and cached; device 0.
const DeviceInfo& query_device_info();

}  // namespace fh
