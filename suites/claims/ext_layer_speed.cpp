// ext_layer_speed: each external path's time per layer against cuBLAS + torch fused AdamW, the
// harness's kernels beside it (the README figures and decisions:
// suites/claims/ext_model_common.h).
#include <map>
#include <regex>

#include "suites/claims/ext_model_common.h"

namespace fh {

void claim_ext_layer_speed(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  if (measurements_absent(cfg.external_timing, report, "ext_layer_speed", "--external-timing")) return;
  // forge/<path>/<out>x<in>x<T> from the adapter; <rule>/(fused|cublas)/out<O>_in<I>_T<T>/... from forge-bench.
  const std::regex forge_name(R"(^forge/([A-Za-z0-9_]+)/(\d+x\d+x\d+)$)");
  const std::regex bench_name(R"(^adamw_bf16_bf16_rne/(fused|cublas)/out(\d+)_in(\d+)_T(\d+)/)");
  std::map<std::string, std::map<std::string, double>> median_us;  // shape -> producer -> median
  std::map<std::string, std::map<std::string, std::string>> failed;  // shape -> path -> error
  for (const TimingFile& f : claim_inputs(cfg).timings) {
    for (const BenchmarkData& b : f.benchmarks) {
      std::smatch m;
      if (std::regex_search(b.name, m, forge_name)) median_us[m[2]][m[1]] = b.median_ns / 1e3;
      else if (std::regex_search(b.name, m, bench_name))
        median_us[std::string(m[2]) + "x" + std::string(m[3]) + "x" + std::string(m[4])]["harness_" + std::string(m[1])] =
            b.median_ns / 1e3;
    }
    for (const auto& [name, error] : f.errors) {
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
        cs.add_check(judge_true("ran", "failed", false, "the path failed at this shape: " + failed[shape][path]));
        continue;
      }
      cs.add_check(judge_true("ran", "failed", true));
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
