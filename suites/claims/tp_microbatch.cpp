// tp_microbatch (issue 33): the paper's tensor-parallel figures (abstract and §4: integrated into
// Megatron-LM, FORGE "fits 8B training at four times the micro-batch a standard optimizer allows on
// the same GPUs", with 20-55% per-rank memory savings) judged on one rank of the Llama-3.1-8B step:
// its shard (reference/memory_model.h tp_rank_shape) run on one GPU (forge-model-step --tp, given
// with --tp-rank-run) and the memory model carried to one H200 per rank.
//   - rank.tp<N>.<update>.b<B>: each measured rank step: its pool peak against the model's
//     (step_peak_bytes of the rank's shard, fp32 gradients as the step holds them) within 3%, and
//     what it allocated outside the pool for the collectives against the model's term for them
//     (tp_collective_bytes) within 2 MiB, the allocator's granularity (contracts: a buffer the
//     accounting leaves out fails the second);
//   - capacity.tp<N>.<update>: each measured --capacity-batch run against the model's largest
//     micro-batch for that GPU (its memory less what was in use when the run began, less the
//     collectives), within one micro-batch or 3% (a contract);
//   - h200.tp<N>: per degree 2, 4, 8, the model's largest micro-batch of 512-token sequences on one
//     H200 per rank (140 GiB) for FORGE and for a standard optimizer (bf16 gradients, as torch
//     holds them); findings: four_times_microbatch (FORGE's over the standard's >= 4) and
//     saving_20_to_55pct (1 - FORGE's peak / the standard's at micro-batch 1 in [0.20, 0.55]). The
//     collectives' buffers cannot be measured on one GPU: the verdicts are recomputed with them at 0
//     and at 4x the model, and the case says whether they change.
// One GPU cannot show communication time (the rank's collectives are not run) nor NCCL's own
// buffers; the second is bounded as above.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "reference/memory_model.h"
#include "suites/claims/claim_entries.h"
#include "suites/claims/external_common.h"

namespace fh {

namespace {

constexpr const char* kClaim = "tp_microbatch";
constexpr double kValidTolerance = 0.03;
constexpr double kH200Bytes = 140.0 * 1073741824.0;  // per GPU, as memory_scaling (../shared/GPU_RUNNER.md)
constexpr int64_t kSeq = 512;
constexpr int64_t kGranularity = int64_t(2) << 20;  // cudaMalloc's 2 MiB pages
constexpr int64_t kMaxBatch = 100000;

// The planted defect (off by default; the claim's CPU test turns it on): the per-rank accounting
// leaves the collectives' buffers out.
bool planted_no_collectives() {
  const char* e = std::getenv("FH_PLANT_TP_NO_COLLECTIVES");
  return e && std::string(e) == "1";
}

int64_t collectives(int tp, double scale = 1.0) {
  return planted_no_collectives() ? 0 : int64_t(std::llround(double(tp_collective_bytes(tp)) * scale));
}

// The largest micro-batch (0 .. kMaxBatch) whose rank step fits `bytes`, the collectives' buffers beside it.
int64_t max_batch(const ModelShape& rank, bool fused, double bytes, int64_t coll, int grad_bytes) {
  int64_t lo = 0, hi = kMaxBatch;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (step_peak_bytes(rank, fused, mid, kSeq, 1, grad_bytes) + double(coll) <= bytes) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

}  // namespace

void claim_tp_microbatch(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  const ModelShape full = model_shape("llama31_8b");
  for (const ModelStepRun& r : claim_inputs(cfg).tp_rank_runs) {
    ModelShape rank = full;
    rank.layers = r.layers;
    rank = tp_rank_shape(rank, int(r.tp));
    const bool fused = r.update == "fused";
    if (r.capacity_batch()) {
      CaseRecord& cs = report.add_case(kClaim, "capacity.tp" + std::to_string(r.tp) + "." + r.update);
      cs.set_attr("file", r.common.path).set_attr("device", r.common.device);
      if (r.common.status != "ok" || r.device_total_bytes < 0 || r.device_used_at_start < 0) {
        cs.add_check(Check::not_run("capacity_within_one_microbatch", "the run " +
                                        (r.common.status != "ok" ? "failed: " + r.common.error
                                                                 : std::string("does not say the GPU's memory"))));
        continue;
      }
      const double budget = double(r.device_total_bytes - r.device_used_at_start);
      const int64_t predicted = max_batch(rank, fused, budget, collectives(int(r.tp)), 4);
      cs.add_f64("capacity_batch", {double(predicted), double(r.max_batch_fit)}, "the model's micro-batch, the measured one");
      const double off = std::fabs(double(predicted - r.max_batch_fit));
      cs.add_check(judge("capacity_within_one_microbatch", "microbatches_off", off,
                         std::max(1.0, 0.03 * double(r.max_batch_fit)), PassIf::at_most,
                         "the model's largest micro-batch on this GPU is not the measured one"));
      continue;
    }
    CaseRecord& cs = report.add_case(kClaim, "rank.tp" + std::to_string(r.tp) + "." + r.update + ".b" +
                                                 std::to_string(r.common.batch));
    cs.set_attr("file", r.common.path).set_attr("device", r.common.device);
    if (r.common.status != "ok") {
      cs.add_check(Check::not_run("peak_within_3pct", "the run failed: " + r.common.error));
      continue;
    }
    const double predicted = step_peak_bytes(rank, fused, r.common.batch, r.common.seq, 1, 4);
    cs.add_f64("predicted_peak_bytes", {predicted}, "the rank's shard: Eq. 6 or the standard step, the step's activations");
    cs.add_f64("measured_peak_bytes", {r.common.peak_bytes}, "the rank step's pool peak on the runner");
    cs.add_check(judge("peak_within_3pct", "relative_error", std::fabs(predicted - r.common.peak_bytes) / r.common.peak_bytes,
                       kValidTolerance, PassIf::at_most, "the memory model misses the rank's measured peak by more than 3%"));
    const int64_t modeled = collectives(int(r.tp));
    cs.add_i64("collective_bytes", {modeled, r.collective_bytes_allocated},
               "the accounting's bytes for the collectives, those the rank allocated outside the pool");
    if (r.collective_bytes_allocated < 0)
      cs.add_check(Check::not_run("collectives_accounted", "the run does not say what it allocated for the collectives"));
    else
      cs.add_check(judge("collectives_accounted", "bytes_off", std::fabs(double(modeled - r.collective_bytes_allocated)),
                         double(kGranularity), PassIf::at_most,
                         "the per-rank accounting's collectives are not what the rank holds outside the pool"));
  }

  // One H200 per rank: the model's largest micro-batch and the saving, per degree.
  for (const int tp : {2, 4, 8}) {
    const ModelShape rank = tp_rank_shape(full, tp);
    CaseRecord& cs = report.add_case(kClaim, "h200.tp" + std::to_string(tp));
    cs.set_attr("assumes", "one rank of Llama-3.1-8B per H200 (140 GiB), 512-token sequences, bf16 weights and "
                           "AdamW state, the standard optimizer's gradients bf16; NCCL's buffers as "
                           "tp_collective_bytes, recomputed at 0 and 4x");
    std::vector<double> fused_b, standard_b, ratio, saving;
    for (const double scale : {1.0, 0.0, 4.0}) {
      const int64_t coll = collectives(tp, scale);
      const int64_t bf = max_batch(rank, true, kH200Bytes, coll, 2), bs = max_batch(rank, false, kH200Bytes, coll, 2);
      fused_b.push_back(double(bf));
      standard_b.push_back(double(bs));
      ratio.push_back(bs > 0 ? double(bf) / double(bs) : INFINITY);
      saving.push_back(1.0 - (step_peak_bytes(rank, true, 1, kSeq) + double(coll)) /
                                 (step_peak_bytes(rank, false, 1, kSeq) + double(coll)));
    }
    cs.add_f64("max_microbatch_fused", fused_b, "FORGE's largest micro-batch; collectives at the model, 0, 4x");
    cs.add_f64("max_microbatch_standard", standard_b, "the standard optimizer's; collectives at the model, 0, 4x");
    cs.add_f64("microbatch_ratio", ratio, "FORGE's over the standard's; collectives at the model, 0, 4x");
    cs.add_f64("per_rank_saving", saving, "1 - FORGE's rank peak / the standard's at micro-batch 1; collectives at the model, 0, 4x");
    const auto four = [](double x) { return x >= 4.0; };
    const auto band = [](double x) { return x >= 0.20 && x <= 0.55; };
    const bool robust = four(ratio[0]) == four(ratio[1]) && four(ratio[0]) == four(ratio[2]) &&
                        band(saving[0]) == band(saving[1]) && band(saving[0]) == band(saving[2]);
    cs.set_attr("verdicts_robust_to_collectives", robust ? "yes (0 and 4x the model give the same verdicts)"
                                                         : "no: the collectives' size decides a verdict");
    cs.add_check(judge("four_times_microbatch", "ratio", ratio[0], 4.0, PassIf::at_least,
                       "FORGE's largest micro-batch is less than four times the standard optimizer's")
                     .as_finding());
    cs.add_check(judge_true("saving_20_to_55pct", "outside_band", band(saving[0]),
                            "the per-rank saving at micro-batch 1 is outside the paper's 20-55%")
                     .as_finding());
    progress.note("TP " + std::to_string(tp) + ": micro-batch " + std::to_string(int64_t(fused_b[0])) + " vs " +
                  std::to_string(int64_t(standard_b[0])) + ", saving " + std::to_string(saving[0]));
  }
}

}  // namespace fh
