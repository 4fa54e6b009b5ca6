// GPU claims: run on a machine with an sm_90 GPU, reported not-run (with the reason) elsewhere.
#include "suites/forge_verify/verify_config.h"

namespace fh {

void add_gpu_claims(std::vector<ClaimSpec>& out) {
  auto pending = [](const char* claim) {
    return [claim](const VerifyConfig&, Report& report, const Progress&) {
      report.add_case(claim, "all").add_check(Check::not_run(claim, "not wired into forge-verify yet: run the GPU suites"));
    };
  };
  out.push_back({"gpu_mma_model", "the CPU instruction model equals the H200's mma.sync bit for bit", true, pending("gpu_mma_model")});
  out.push_back({"gpu_fused_vs_order_matched", "fused kernel equals materialize + rule kernel, bitwise", true, pending("gpu_fused_vs_order_matched")});
  out.push_back({"gpu_fused_vs_twin", "GPU fused kernel equals the host twin, bitwise", true, pending("gpu_fused_vs_twin")});
  out.push_back({"gpu_cublas_order", "cuBLAS wgrad equals the sequential k16 chain (Corollary 1 on cuBLAS)", true, pending("gpu_cublas_order")});
}

}  // namespace fh
