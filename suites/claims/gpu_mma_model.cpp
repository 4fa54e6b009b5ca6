// gpu_mma_model: the CPU instruction model (kernels/twin/mma_model, DESIGN contract 2) equals the
// H200's mma.sync m16n8k16 and wgmma m64n128k16 bit for bit on every probe category (~10^6
// outputs each), and how many outputs a plain fp32 fmaf loop would miss. Producers: the probe
// kernels (kernels/gpu/mma_probe) and the model; judged bitwise (oracles/ulp, param_compare).
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
#include "suites/claims/mma_probe_judge.h"

namespace fh {

constexpr int64_t kMmaInstancesPerCategory = 656;  // 12 categories x 656 x 128 = 1.0e6 outputs
constexpr int64_t kWgmmaCasesPerCategory = 16 * 10;  // 12 categories x 10 x 8192 = 0.98e6 outputs

// Both instructions the kernels use: mma.sync (the 64 x 64 tile) and wgmma m64n128k16 (the
// 128 x 128 tile), each on every probe category, judged by the same model.
void claim_gpu_mma_model(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  using namespace gpu;
  int64_t total = 0, total_mis = 0, total_fma = 0;
  auto record = [&](const std::string& name, ProbeCategory cat, const char* instruction, int64_t instances,
                    const ProbeJudgement& j) {
    CaseRecord& cs = report.add_case("gpu_mma_model", name);
    cs.set_attr("category", probe_category_name(cat)).set_attr("chain", std::to_string(j.chain))
        .set_attr("instances", std::to_string(instances)).set_attr("instruction", instruction);
    cs.add_i64("counts", {j.outputs, j.mismatches, j.fma_misses},
               "outputs compared, model mismatches, outputs a plain fp32 fmaf loop misses");
    ParamEvidence ev;
    ev.differing = j.mismatches;
    ev.max_ulp = j.max_ulp == kUlpNaN ? INFINITY : double(j.max_ulp);
    ev.first_diff = j.first;
    cs.add_check(bitwise_check("model_equals_hardware", ev));
    total += j.outputs; total_mis += j.mismatches; total_fma += j.fma_misses;
  };
  for (int ci = 0; ci < kProbeCategories; ++ci) {
    const ProbeCategory cat = ProbeCategory(ci);
    const int64_t n = kMmaInstancesPerCategory;
    record(probe_category_name(cat), cat, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", n,
           probe_and_judge(cat, n, [&](int64_t i) { return stream_seed(cfg.seed, "gpu_mma_model/mma_sync_probes", uint64_t(ci) << 32 | uint64_t(i)); }));
  }
  for (int ci = 0; ci < kProbeCategories; ++ci) {
    const ProbeCategory cat = ProbeCategory(ci);
    const int64_t n = kWgmmaCasesPerCategory;
    record(std::string("wgmma.") + probe_category_name(cat), cat,
           "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 (both operands MN-major, 128-byte swizzle)", n / 16,
           probe_and_judge_wgmma(cat, n, [&](int64_t i) { return stream_seed(cfg.seed, "gpu_mma_model/wgmma_probes", uint64_t(ci) << 32 | uint64_t(i)); }));
  }
  CaseRecord& all = report.add_case("gpu_mma_model", "all");
  set_gpu_attrs(all);
  all.set_attr("fp32_fma_loop_misses", std::to_string(total_fma) + " of " + std::to_string(total));
  all.add_i64("counts", {total, total_mis, total_fma}, "outputs compared, model mismatches, outputs a plain fp32 fmaf loop misses");
  all.add_f64("fp32_fma_loop_miss_fraction", {double(total_fma) / double(total)},
              "fraction of outputs where a plain fp32 fmaf loop differs from the hardware");
  all.add_check(judge("model_mismatches", "differing", double(total_mis), 0, PassIf::at_most, "see the per-category cases")
                    .bitwise(total_mis, 0, total_mis ? "see the per-category cases" : ""));
  progress.note(std::to_string(total) + " outputs, " + std::to_string(total_mis) + " model mismatches, " +
                std::to_string(total_fma) + " fp32-fma-loop misses");
}


}  // namespace fh
