// speed_decomposition: where the fused kernel's speed over cuBLAS + a rule kernel comes from, per
// layer shape and T, from forge-bench's timings (--external-timing):
//   fused              one launch, G never leaves the SM
//   fused_g_roundtrip  the same launch, each G tile stored to memory and loaded back
//   order_matched      our GEMM writes G, then the rule kernel reads it (two launches)
//   cublas             cuBLAS's GEMM writes G, then the rule kernel reads it
// Each step's difference is one part of the gap cublas - fused: keeping G on chip (round trip -
// fused), the second launch with G through HBM (order_matched - round trip), and the GEMM itself
// (cublas - order_matched; negative where cuBLAS's GEMM is faster than ours). The parts sum to the
// gap by construction; what can fail is the measurement: a round trip measured faster than no
// round trip means the row's differences are noise, and it says so.
#include <map>
#include <regex>

#include "suites/claims/ext_model_common.h"

namespace fh {

namespace {

// Bytes each variant moves to or from memory at least: weights and state read and written, the
// bf16 working copy written (fp32 master), the inputs read once; every variant but fused adds
// G's fp32 write and read (through L2 for the round trip, through HBM for the two-launch paths).
double floor_bytes(int64_t out, int64_t in, int64_t T, bool fp32_config) {
  const double n = double(out) * double(in);
  const double per_param = fp32_config ? 4 + 4 + 2 + 2 * 8 : 2 + 2 + 2 * 4;
  return n * per_param + 2.0 * double(T) * double(in + out);
}

// A round trip at least this fraction of the fused time: below it, the row is noise.
constexpr double kRoundTripFloor = 0.97;

}  // namespace

void claim_speed_decomposition(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  if (measurements_absent(cfg.external_timing, report, "speed_decomposition", "--external-timing")) return;
  const std::regex bench_name(
      R"(^adamw_(fp32_fp32_master|bf16_bf16_rne)/(fused|fused_g_roundtrip|order_matched|cublas|gemm_cublas)/out(\d+)_in(\d+)_T(\d+)/)");
  struct Row {
    std::string config;
    int64_t out = 0, in = 0, T = 0;
    std::map<std::string, double> us;  // variant -> median
  };
  std::map<std::string, Row> rows;  // config.outxinxT -> row
  for (const TimingFile& f : claim_inputs(cfg).timings)
    for (const BenchmarkData& b : f.benchmarks) {
      std::smatch m;
      if (!std::regex_search(b.name, m, bench_name)) continue;
      const std::string key = std::string(m[1]) + "." + std::string(m[3]) + "x" + std::string(m[4]) + "x" + std::string(m[5]);
      Row& r = rows[key];
      r.config = m[1];
      r.out = std::stoll(m[3]), r.in = std::stoll(m[4]), r.T = std::stoll(m[5]);
      r.us[m[2]] = b.median_ns / 1e3;
    }
  if (rows.empty()) {
    report.add_case("speed_decomposition", "all")
        .add_check(Check::not_run("speed_decomposition", "no forge-bench AdamW timings in the --external-timing files"));
    return;
  }
  const char* variants[] = {"fused", "fused_g_roundtrip", "order_matched", "cublas"};
  for (const auto& [key, r] : rows) {
    CaseRecord& cs = report.add_case("speed_decomposition", key);
    cs.set_attr("config", r.config).set_attr("shape", "out x in x T = " + std::to_string(r.out) + "x" +
                                                          std::to_string(r.in) + "x" + std::to_string(r.T));
    std::string missing;
    for (const char* v : variants)
      if (!r.us.count(v)) missing += std::string(missing.empty() ? "" : ", ") + v;
    if (!missing.empty()) {
      cs.add_check(Check::not_run("roundtrip_costs_time", "not timed at this shape: " + missing));
      continue;
    }
    const double fused = r.us.at("fused"), trip = r.us.at("fused_g_roundtrip"), om = r.us.at("order_matched"),
                 cub = r.us.at("cublas");
    cs.add_f64("median_us", {fused, trip, om, cub},
               "median time of one step, microseconds: fused, fused_g_roundtrip, order_matched, cublas");
    const double base = floor_bytes(r.out, r.in, r.T, r.config == "fp32_fp32_master"), g = 8.0 * double(r.out) * double(r.in);
    cs.add_f64("bytes", {base, base + g, base + g, base + g},
               "bytes each variant moves at least (same order; G's fp32 write and read added after fused)");
    const double parts[] = {trip - fused, om - trip, cub - om};
    cs.add_f64("parts_us", {parts[0], parts[1], parts[2]},
               "microseconds: G kept on chip (round trip - fused), second launch with G through HBM (order_matched - "
               "round trip), GEMM (cublas - order_matched)");
    const double gap = cub - fused;
    if (gap > 0)
      cs.add_f64("share", {parts[0] / gap, parts[1] / gap, parts[2] / gap},
                 "each part as a fraction of cublas - fused (the three sum to 1)");
    if (r.us.count("gemm_cublas"))
      cs.add_f64("gemm_cublas_us", {r.us.at("gemm_cublas")}, "cuBLAS's wgrad GEMM alone, microseconds");
    const double ratio = trip / fused;
    cs.add_check(judge("roundtrip_costs_time", "ratio", ratio, kRoundTripFloor, PassIf::at_least,
                       "the G round trip measured faster than the fused kernel: this row's parts are noise"));
  }
  progress.note(std::to_string(rows.size()) + " rows");
}

}  // namespace fh
