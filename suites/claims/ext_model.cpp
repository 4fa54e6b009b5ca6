// ext_model_memory, ext_model_time, ext_layer_speed: the FORGE README's model table and the
// paper's speed claim, judged on what the audit's benchmark scripts measured on the runner
// (forge-verify --external-model F.json from scripts/forge_model_bench.py, one configuration per
// process; --external-timing F.json from scripts/forge_adapter.py --timing and forge-bench).
//
// The README's table (external_release/forge/README.md:54-62, commit 7cba611): Llama-3.1-8B on
// one H200, batch 1, sequence 512, bf16 everywhere, median of 20 steps:
//   fused AdamW 60.08 GB, 134.3 +- 14.1 ms;  FORGE 48.36 GB, 110.2 +- 8.7 ms;
//   FORGE (int8) 35.32 GB, 155.0 +- 4.4 ms.
// Decisions (no one to ask):
//   - "GB" is read as GiB (2^30 bytes): torch's fused AdamW, measured the same way, lands within
//     0.3% of 60.08 in GiB and 7% off in 10^9 bytes. Both units are stored.
//   - A peak matches the README within 5% (the README gives no spread; allocator and library
//     versions differ). A step time matches when it lies within the README's own +- spread.
//   - forge_tma_ws (the release's fastest switches by its own notes) is held to the FORGE row.
//   - The per-layer speed verdict is "faster than cuBLAS + torch.optim.AdamW(fused=True) on the
//     same layer" (torch_reference); the harness's own fused kernel and cuBLAS + rule are stored
//     beside it when forge-bench's JSON is given.
#include <cmath>
#include <map>
#include <optional>
#include <regex>

#include "reports/bench_import.h"
#include "reports/external_bench.h"
#include "suites/claims/claim_entries.h"

namespace fh {

namespace {

struct ReadmeRow {
  const char* row;
  double peak_gib, step_ms, step_spread_ms;
};

// Which README row a configuration of scripts/forge_model_bench.py is held to.
std::optional<ReadmeRow> readme_row(const std::string& config) {
  if (config == "torch_fused") return ReadmeRow{"fused AdamW", 60.08, 134.3, 14.1};
  if (config == "forge" || config == "forge_tma_ws") return ReadmeRow{"FORGE", 48.36, 110.2, 8.7};
  if (config == "forge_int8") return ReadmeRow{"FORGE (int8)", 35.32, 155.0, 4.4};
  return std::nullopt;
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kPeakTolerance = 0.05;

bool absent(const VerifyConfig& cfg, const std::vector<std::string>& files, Report& report, const std::string& claim,
            const std::string& option) {
  if (!files.empty()) return false;
  report.add_case(claim, "all").add_check(
      Check::not_run(claim, "no measurements given: run forge-verify " + option + " FILE.json (scripts/forge_audit.sh)"));
  (void)cfg;
  return true;
}

std::vector<ModelBenchResult> read_all(const std::vector<std::string>& files) {
  std::vector<ModelBenchResult> out;
  for (const auto& f : files) out.push_back(read_model_bench_json(f));
  return out;
}

CaseRecord& model_case(Report& report, const std::string& claim, const ModelBenchResult& r) {
  CaseRecord& cs = report.add_case(claim, r.config + "." + r.model);
  cs.set_attr("file", r.path).set_attr("config", r.config).set_attr("model", r.model).set_attr("status", r.status)
      .set_attr("setting", "batch " + std::to_string(r.batch) + ", sequence " + std::to_string(r.seq) + ", " + r.dtype)
      .set_attr("device", r.device).set_attr("torch", r.torch).set_attr("triton", r.triton)
      .set_attr("transformers", r.transformers);
  if (!r.forge_commit.empty()) cs.set_attr("forge_commit", r.forge_commit).set_attr("switches", r.switches);
  if (!r.state_mode.empty()) cs.set_attr("state_mode", r.state_mode);
  return cs;
}

// A configuration that did not finish is a verdict: failed, with its error. One that finished
// but trained to NaN fails losses_finite: its memory and time are not those of a working step.
bool record_failed_run(CaseRecord& cs, const ModelBenchResult& r) {
  if (r.status != "ok") {
    cs.add_check(Check::failed("ran", "failed", 1, 0, "the configuration did not finish: " + r.error));
    return true;
  }
  cs.add_check(Check::passed("ran", "failed", 0, 0));
  cs.add_i64("nonfinite_losses", {r.nonfinite_losses, r.losses}, "training losses that were not finite, of all recorded");
  if (r.losses == 0) cs.add_check(Check::not_run("losses_finite", "the file records no losses"));
  else if (r.nonfinite_losses == 0) cs.add_check(Check::passed("losses_finite", "nonfinite", 0, 0));
  else
    cs.add_check(Check::failed("losses_finite", "nonfinite", double(r.nonfinite_losses), 0,
                               std::to_string(r.nonfinite_losses) + " of " + std::to_string(r.losses) +
                                   " training losses are NaN or infinite: the run does not train"));
  return false;
}

const ModelBenchResult* baseline(const std::vector<ModelBenchResult>& runs, const ModelBenchResult& r) {
  for (const auto& b : runs)
    if (b.config == "torch_fused" && b.model == r.model && b.status == "ok") return &b;
  return nullptr;
}

Check ratio_below_one(const std::string& name, double ratio, const std::string& what) {
  return ratio < 1.0 ? Check::passed(name, "ratio", ratio, 1.0)
                     : Check::failed(name, "ratio", ratio, 1.0, what + " (ratio " + std::to_string(ratio) + ")");
}

}  // namespace

void claim_ext_model_memory(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  if (absent(cfg, cfg.external_model, report, "ext_model_memory", "--external-model")) return;
  const std::vector<ModelBenchResult> runs = read_all(cfg.external_model);
  for (const ModelBenchResult& r : runs) {
    CaseRecord& cs = model_case(report, "ext_model_memory", r);
    if (record_failed_run(cs, r)) continue;
    const double gib = r.peak_bytes / kGiB;
    cs.add_f64("peak_gib", {gib}, "torch.cuda.max_memory_allocated over all steps, GiB");
    cs.add_f64("peak_gb", {r.peak_bytes / 1e9}, "the same peak in 10^9 bytes");
    if (const auto row = readme_row(r.config)) {
      cs.set_attr("readme_row", row->row);
      cs.add_f64("readme_peak", {row->peak_gib}, "the README's peak for this row (read as GiB)");
      const double rel = std::fabs(gib - row->peak_gib) / row->peak_gib;
      cs.add_check(rel <= kPeakTolerance
                       ? Check::passed("matches_readme_peak", "relative_difference", rel, kPeakTolerance)
                       : Check::failed("matches_readme_peak", "relative_difference", rel, kPeakTolerance,
                                       "peak " + std::to_string(gib) + " GiB against the README's " +
                                           std::to_string(row->peak_gib)));
    } else {
      cs.add_check(Check::not_run("matches_readme_peak", "the README has no row for configuration " + r.config));
    }
    if (r.config == "torch_fused") continue;
    const ModelBenchResult* b = baseline(runs, r);
    if (!b) {
      cs.add_check(Check::not_run("below_torch_fused", "no finished torch_fused run of model " + r.model));
      continue;
    }
    cs.add_f64("torch_fused_peak_gib", {b->peak_bytes / kGiB}, "the baseline's peak, GiB");
    cs.add_check(ratio_below_one("below_torch_fused", r.peak_bytes / b->peak_bytes,
                                 "the peak is not below torch.optim.AdamW(fused=True)'s"));
    progress.note(r.config + ": peak " + std::to_string(gib) + " GiB");
  }
}

void claim_ext_model_time(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  if (absent(cfg, cfg.external_model, report, "ext_model_time", "--external-model")) return;
  const std::vector<ModelBenchResult> runs = read_all(cfg.external_model);
  for (const ModelBenchResult& r : runs) {
    CaseRecord& cs = model_case(report, "ext_model_time", r);
    if (record_failed_run(cs, r)) continue;
    cs.add_f64("median_ms", {r.median_ms}, "median step time after the warm-up steps, ms");
    cs.add_f64("step_ms", r.step_ms, "every step's time, ms (warm-up first)");
    cs.set_attr("timed_steps", std::to_string(r.steps - r.warmup_steps));
    if (const auto row = readme_row(r.config)) {
      cs.set_attr("readme_row", row->row);
      cs.add_f64("readme_step_ms", {row->step_ms, row->step_spread_ms}, "the README's step time and its +- spread");
      const double off = std::fabs(r.median_ms - row->step_ms);
      cs.add_check(off <= row->step_spread_ms
                       ? Check::passed("matches_readme_step_time", "abs_difference_ms", off, row->step_spread_ms)
                       : Check::failed("matches_readme_step_time", "abs_difference_ms", off, row->step_spread_ms,
                                       "median " + std::to_string(r.median_ms) + " ms, outside the README's " +
                                           std::to_string(row->step_ms) + " +- " + std::to_string(row->step_spread_ms)));
    } else {
      cs.add_check(Check::not_run("matches_readme_step_time", "the README has no row for configuration " + r.config));
    }
    if (r.config == "torch_fused") continue;
    const ModelBenchResult* b = baseline(runs, r);
    if (!b) {
      cs.add_check(Check::not_run("faster_than_torch_fused", "no finished torch_fused run of model " + r.model));
      continue;
    }
    cs.add_f64("torch_fused_median_ms", {b->median_ms}, "the baseline's median step time, ms");
    cs.add_check(ratio_below_one("faster_than_torch_fused", r.median_ms / b->median_ms,
                                 "the step is not faster than under torch.optim.AdamW(fused=True)"));
    progress.note(r.config + ": median " + std::to_string(r.median_ms) + " ms");
  }
}

void claim_ext_layer_speed(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  if (absent(cfg, cfg.external_timing, report, "ext_layer_speed", "--external-timing")) return;
  // forge/<path>/<out>x<in>x<T> from the adapter; <rule>/(fused|cublas)/out<O>_in<I>_T<T>/... from forge-bench.
  const std::regex forge_name(R"(^forge/([A-Za-z0-9_]+)/(\d+x\d+x\d+)$)");
  const std::regex bench_name(R"(^adamw_bf16_bf16_rne/(fused|cublas)/out(\d+)_in(\d+)_T(\d+)/)");
  std::map<std::string, std::map<std::string, double>> median_us;  // shape -> producer -> median
  std::map<std::string, std::map<std::string, std::string>> failed;  // shape -> path -> error
  for (const std::string& f : cfg.external_timing) {
    for (const BenchmarkData& b : read_benchmark_json(f)) {
      std::smatch m;
      if (std::regex_search(b.name, m, forge_name)) median_us[m[2]][m[1]] = b.median_ns / 1e3;
      else if (std::regex_search(b.name, m, bench_name))
        median_us[std::string(m[2]) + "x" + std::string(m[3]) + "x" + std::string(m[4])]["harness_" + std::string(m[1])] =
            b.median_ns / 1e3;
    }
    for (const auto& [name, error] : read_benchmark_errors(f)) {
      std::smatch m;
      if (std::regex_search(name, m, forge_name)) failed[m[2]][m[1]] = error;
    }
  }
  auto paths_at = [&](const std::string& shape) {
    std::map<std::string, bool> paths;  // path -> measured
    if (median_us.count(shape))
      for (const auto& [p, us] : median_us.at(shape))
        if (!p.starts_with("harness_") && p != "torch_reference") paths[p] = true;
    if (failed.count(shape))
      for (const auto& [p, e] : failed.at(shape)) paths.emplace(p, false);
    return paths;
  };
  std::map<std::string, bool> shapes;
  for (const auto& [s, _] : median_us) shapes[s] = true;
  for (const auto& [s, _] : failed) shapes[s] = true;
  for (const auto& [shape, _] : shapes) {
    const auto& times = median_us[shape];
    for (const auto& [path, measured] : paths_at(shape)) {
      CaseRecord& cs = report.add_case("ext_layer_speed", path + "." + shape);
      cs.set_attr("path", path).set_attr("shape", "out x in x T = " + shape);
      if (!measured) {
        cs.add_check(Check::failed("ran", "failed", 1, 0, "the path failed at this shape: " + failed[shape][path]));
        continue;
      }
      cs.add_check(Check::passed("ran", "failed", 0, 0));
      const double us = times.at(path);
      cs.add_f64("median_us", {us}, "median time of one call (wgrad + AdamW step), microseconds");
      for (const char* other : {"torch_reference", "harness_fused", "harness_cublas"})
        if (times.count(other))
          cs.add_f64(std::string(other) + "_median_us", {times.at(other)},
                     std::string("median time of ") + other + " at the same shape, microseconds");
      if (!times.count("torch_reference")) {
        cs.add_check(Check::not_run("faster_than_torch_fused", "no torch_reference timing at this shape"));
        continue;
      }
      cs.add_check(ratio_below_one("faster_than_torch_fused", us / times.at("torch_reference"),
                                   "slower than cuBLAS + torch.optim.AdamW(fused=True) on the same layer"));
    }
  }
  progress.note(std::to_string(shapes.size()) + " shapes");
}

}  // namespace fh
