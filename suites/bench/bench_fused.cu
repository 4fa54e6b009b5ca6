// Fused wgrad-plus-update against the two-phase paths, Google Benchmark with
// CUDA-event manual time and the L2 flushed before every timed repetition:
//   fused        : fused_wgrad_update (G never leaves the SM)
//   order_matched: wgrad_materialize (fp32 G to memory) + rule_apply_device
//   cublas       : cublas_wgrad (fp32 G to memory) + rule_apply_device
// Layers out x in with T tokens, every rule (torch.optim defaults) with (a) fp32 master + fp32
// state, (b) bf16 weights + bf16 state, (c) fp32 master + INT8 state (block 64); the variant paths
// exist for AdamW (a) and (b) only. Counters: bytes/s and FLOP/s achieved, and floor_ratio = time / (bytes that must
// move / the runner's measured copy rate, 4.2 TB/s).
#include <climits>
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/common/seed_stream.h"
#include "kernels/common/splitmix64.h"
#include "kernels/gpu/device_info.h"
#include "kernels/gpu/gpu_api.h"

namespace fh::gpu {
namespace {

constexpr double kCopyRateBytesPerS = 4.2e12;  // GPU_RUNNER.md, device-to-device, read + write

// fused: the kernel fused_wgrad_update runs (block-per-tile, or the cooperative kernel from
// T = FH_FUSED_COOP_MIN_TOKENS on, default kCoopMinTokens, FH_FUSED_COOP_MIN_TOKENS_INT8 for INT8
// state, default kCoopMinTokensInt8 = 8192; 0: never; its stagger FH_FUSED_COOP_STAGGER_US and
// FH_FUSED_COOP_STAGGER_GROUPS, its tile order FH_FUSED_COOP_GROUP_ROWS, its G tiles through L2
// from FH_FUSED_COOP_L2G_MIN_TOKENS, 0: never); fused_pingpong: the warp-specialized 128 x 128 kernel;
// fused_g_roundtrip: the pingpong kernel storing each G tile and loading it back in the same
// launch (the decomposition's middle step); fused_coop: the cooperative 128 x 256 kernel at every T;
// gemm_cublas: cuBLAS's wgrad GEMM alone (no update), the large-T yardstick.
enum class Path { fused, fused_pingpong, fused_g_roundtrip, fused_coop, order_matched, cublas, gemm_cublas };
const char* path_name(Path p) {
  switch (p) {
    case Path::fused: return "fused";
    case Path::fused_pingpong: return "fused_pingpong";
    case Path::fused_g_roundtrip: return "fused_g_roundtrip";
    case Path::fused_coop: return "fused_coop";
    case Path::order_matched: return "order_matched";
    case Path::cublas: return "cublas";
    case Path::gemm_cublas: return "gemm_cublas";
  }
  return "?";
}

// The benchmarks' one seed, printed at the start: a timing does not depend on the values, so it
// is fixed; every input is a named stream of it.
constexpr uint64_t kBenchSeed = 20261202;

std::vector<bf16> rand_bf16(size_t n, uint64_t seed) {
  std::vector<bf16> v(n);
  for (auto& x : v) {
    const uint64_t r = splitmix64_next(seed);
    x = bf16::from_bits(uint16_t(((r & 1) << 15) | (uint32_t(120 + (r >> 8) % 8) << 7) | ((r >> 20) & 0x7f)));
  }
  return v;
}

// Bytes the step must move: weights and state read and written, the bf16 working copy written,
// the inputs read once. G is not counted (the fused path never moves it).
// INT8 state: one byte a value plus a 4-byte absmax per block of 64.
double floor_bytes(int64_t out, int64_t in, int64_t T, StateFormat sf, WeightStore ws, int state_slots) {
  const double n = double(out) * double(in);
  const double w = ws == WeightStore::fp32_master ? 4 + 4 + 2 : 2 + 2;
  const double st = state_slots * (sf == StateFormat::fp32 ? 4.0 : sf == StateFormat::bf16 ? 2.0 : 1.0 + 4.0 / 64);
  return n * (w + 2 * st) + 2.0 * double(T) * double(in + out);
}

struct Setup {
  int64_t out, in, T;
  StateFormat sf;
  WeightStore ws;
  RuleConfig rule;
  DeviceBuffer<bf16> x, dy;
  std::unique_ptr<DeviceParam> param;
  DeviceBuffer<float> g;
  DeviceBuffer<unsigned char> flush;
  CublasHandle cublas;
  Setup(RuleId id, int64_t out_, int64_t in_, int64_t T_, StateFormat sf_, WeightStore ws_)
      : out(out_), in(in_), T(T_), sf(sf_), ws(ws_), rule(default_rule_config(id)), x(rand_bf16(size_t(T * in), stream_seed(kBenchSeed, "bench_fused/x"))),
        dy(rand_bf16(size_t(T * out), stream_seed(kBenchSeed, "bench_fused/dy"))),
        g(size_t(out * in)) {
    std::vector<float> w0(size_t(out * in));
    uint64_t s = stream_seed(kBenchSeed, "bench_fused/w0");
    for (auto& v : w0) v = float(int64_t(splitmix64_next(s) >> 40) - (int64_t(1) << 23)) / float(1 << 24);
    param = std::make_unique<DeviceParam>(HostParam::make(rule, sf, ws, out, in, w0, stream_seed(kBenchSeed, "bench_fused/sr_key"), 0));
    int l2 = 0;
    cuda_check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0), "L2 size");
    flush = DeviceBuffer<unsigned char>(size_t(l2) * 2);
  }
  WgradProblem problem() const { return WgradProblem{x.data(), dy.data(), T, out, in}; }
};

Setup& setup_for(RuleId id, int64_t out, int64_t in, int64_t T, StateFormat sf, WeightStore ws) {
  static std::map<std::string, std::unique_ptr<Setup>> cache;
  const std::string key = std::string(rule_name(id)) + "/" + std::to_string(out) + "x" + std::to_string(in) + "x" + std::to_string(T) + "/" +
                          state_format_name(sf) + "/" + weight_store_name(ws);
  auto& p = cache[key];
  if (!p) {
    cache.clear();  // one configuration's buffers at a time
    auto& q = cache[key];
    q = std::make_unique<Setup>(id, out, in, T, sf, ws);
    return *q;
  }
  return *p;
}

void run_path(Setup& su, Path path) {
  const WgradProblem p = su.problem();
  const DeviceParamView pv = su.param->view();
  switch (path) {
    case Path::fused: fused_wgrad_update(p, su.rule, su.sf, su.ws, pv, 1); break;
    case Path::fused_pingpong:
      fused_wgrad_update_variant(p, su.rule, su.sf, su.ws, pv, 1, FusedVariant::pingpong_128x128);
      break;
    case Path::fused_g_roundtrip:
      fused_wgrad_update_variant(p, su.rule, su.sf, su.ws, pv, 1, FusedVariant::g_roundtrip, su.g.data());
      break;
    case Path::fused_coop: fused_wgrad_update_variant(p, su.rule, su.sf, su.ws, pv, 1, FusedVariant::coop_128x256); break;
    case Path::gemm_cublas: cublas_wgrad(su.cublas.get(), p, su.g.data()); break;
    case Path::order_matched:
      wgrad_materialize(p, su.g.data());
      rule_apply_device(su.rule, su.sf, su.ws, pv, 1, su.g.data(), su.in);
      break;
    case Path::cublas:
      cublas_wgrad(su.cublas.get(), p, su.g.data());
      rule_apply_device(su.rule, su.sf, su.ws, pv, 1, su.g.data(), su.in);
      break;
  }
}

void bench_step(benchmark::State& state, Path path, RuleId id, int64_t out, int64_t in, int64_t T, StateFormat sf,
                WeightStore ws) {
  Setup& su = setup_for(id, out, in, T, sf, ws);
  cudaEvent_t start, stop;
  cuda_check(cudaEventCreate(&start), "event");
  cuda_check(cudaEventCreate(&stop), "event");
  run_path(su, path);  // warm up (and raise smem limits)
  cuda_check(cudaDeviceSynchronize(), "warm-up");
  for (auto _ : state) {
    cuda_check(cudaMemsetAsync(su.flush.data(), int(state.iterations() & 0xff), su.flush.size()), "L2 flush");
    cuda_check(cudaEventRecord(start), "event");
    run_path(su, path);
    cuda_check(cudaEventRecord(stop), "event");
    cuda_check(cudaEventSynchronize(stop), "event");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start, stop), "event");
    state.SetIterationTime(double(ms) * 1e-3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  const double bytes = floor_bytes(out, in, T, sf, ws, rule_kept_slots(su.rule));
  const double flops = 2.0 * double(out) * double(in) * double(T);
  state.counters["bytes_per_s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["flop_per_s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  // floor_ratio = time per step / floor time: an inverted iteration-invariant rate of the floor
  // time gives elapsed / (iterations * floor).
  const double floor_s = bytes / kCopyRateBytesPerS;
  state.counters["floor_us"] = floor_s * 1e6;
  state.counters["floor_ratio"] = benchmark::Counter(
      floor_s, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  std::string kernel;
  if (path == Path::fused) kernel = std::string(" kernel=") + fused_kernel_for(su.problem(), TileShape{}, sf, su.rule);
  state.SetLabel(std::string(path_name(path)) + " " + rule_name(id) + "/" + state_format_name(sf) + "/" + weight_store_name(ws) + kernel);
}

}  // namespace
}  // namespace fh::gpu

int main(int argc, char** argv) {
  using namespace fh;
  using namespace fh::gpu;
  benchmark::Initialize(&argc, argv);
  // Without a GPU nothing is measured, and a benchmark run that measured nothing is not a
  // success: exit 4 (forge-verify's "not run where a run was required") unless told that no
  // GPU is expected (--allow-no-gpu, for trying scripts on a CPU-only machine).
  bool allow_no_gpu = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--allow-no-gpu") == 0) allow_no_gpu = true;
    else {
      std::fprintf(stderr, "forge-bench: unknown option '%s' (Google Benchmark's --benchmark_* options, or --allow-no-gpu)\n", argv[i]);
      return 2;
    }
  }
  // The fused kernel's launch schedule (gpu_api.h FusedSchedule), settable for sweeps; checked
  // before the GPU is looked for, so that a bad value is refused on any machine.
  FusedSchedule sched = fused_schedule();
  auto env_int = [](const char* name, int& v) {
    if (const char* e = std::getenv(name)) {
      char* end = nullptr;
      const long x = std::strtol(e, &end, 10);
      if (!*e || *end || x < INT_MIN || x > INT_MAX) {
        std::fprintf(stderr, "forge-bench: %s=%s is not an integer (of int's range)\n", name, e);
        std::exit(2);
      }
      v = int(x);
    }
  };
  env_int("FH_FUSED_STAGGER_US", sched.stagger_us);
  env_int("FH_FUSED_STAGGER_STRIDE", sched.stagger_stride);
  auto env_tokens = [&](const char* name, int64_t& v) {  // an int of tokens into an int64_t field
    int x = int(v);
    env_int(name, x);
    v = x;
  };
  env_tokens("FH_FUSED_COOP_MIN_TOKENS", sched.coop_min_tokens);  // 0: never
  env_tokens("FH_FUSED_COOP_MIN_TOKENS_INT8", sched.coop_min_tokens_int8);
  env_int("FH_FUSED_COOP_STAGGER_US", sched.coop_stagger_us);
  env_int("FH_FUSED_COOP_STAGGER_GROUPS", sched.coop_stagger_groups);
  env_int("FH_FUSED_COOP_GROUP_ROWS", sched.coop_group_rows);
  env_tokens("FH_FUSED_COOP_L2G_MIN_TOKENS", sched.coop_l2g_min_tokens);  // 0: never
  env_tokens("FH_FUSED_COOP_L2G_MIN_TOKENS_LIGHT", sched.coop_l2g_min_tokens_light);
  env_tokens("FH_FUSED_COOP_L2G_LIGHT_MIN_TILES", sched.coop_l2g_light_min_tiles);
  env_int("FH_FUSED_COOP_L2G_EPILOGUE_WARPS", sched.coop_l2g_epilogue_warps);
  env_int("FH_FUSED_COOP_L2G_EPILOGUE_ROWS", sched.coop_l2g_epilogue_rows);
  env_int("FH_FUSED_COOP_L2G_EPILOGUE_ROWS_16K", sched.coop_l2g_epilogue_rows_16k);
  env_int("FH_FUSED_COOP_L2G_EPILOGUE_ROWS_FP", sched.coop_l2g_epilogue_rows_fp);  // 128: the epilogue warps' whole tiles
  env_int("FH_FUSED_COOP_L2G_G_SLICES", sched.coop_l2g_g_slices);  // 1 or 2
  env_int("FH_FUSED_COOP_L2G_STAGED", sched.coop_l2g_staged);      // 0 or 1
  env_tokens("FH_FUSED_COOP_L2G_MIN_TOKENS_INT8", sched.coop_l2g_min_tokens_int8);
  env_tokens("FH_FUSED_COOP_ILV_MIN_TOKENS", sched.coop_ilv_min_tokens);  // 0: never
  env_int("FH_FUSED_COOP_SPLIT_MAX", sched.coop_split_max);  // 1: never
  env_tokens("FH_FUSED_COOP_SPLIT_MIN_TOKENS", sched.coop_split_min_tokens);
  env_int("FH_FUSED_COOP_SPLIT_OVERHEAD_CHUNKS", sched.coop_split_overhead_chunks);
  env_int("FH_FUSED_COOP_SPLIT_GAIN_PCT", sched.coop_split_gain_pct);
  env_int("FH_FUSED_COOP_SPLIT_UNIT_CHUNKS", sched.coop_split_unit_chunks);  // -1: one wave only
  env_tokens("FH_FUSED_COOP_SPLIT_MIN_SLICE_TOKENS", sched.coop_split_min_slice_tokens);
  try {
    set_fused_schedule(sched);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "forge-bench: %s\n", e.what());
    return 2;
  }
  const DeviceInfo& dev = query_device_info();
  if (!dev.available) {
    std::fprintf(stderr, "forge-bench: no GPU: %s: nothing was benchmarked%s\n", dev.reason.c_str(),
                 allow_no_gpu ? " (--allow-no-gpu: exit 0)" : "");
    return allow_no_gpu ? 0 : 4;
  }
  std::printf("forge-bench: %s, driver %s, runtime %s, cuBLAS %s\n", dev.name.c_str(), dev.driver.c_str(),
              dev.runtime.c_str(), dev.cublas.c_str());
  std::printf("seed: 0x%016llx (fixed)\n", (unsigned long long)kBenchSeed);
  std::printf("forge-bench: fused schedule: cooperative kernel from T = %lld (INT8 state: %lld; 0: never), stagger %d us "
              "(-1: auto, %d us for fp32 state), stride %d (0: SM count); cooperative stagger %d us x %d groups, "
              "tiles in groups of %d rows; G through L2 from T = %lld, lighter epilogues from T = %lld (0: never) on %lld tiles or more, INT8 from T = %lld, %d epilogue warps on %d rows (%d from T = %lld; fp32 / bf16 state %d), %d G slices a block, staged epilogue %d; split over tokens up to %d slices from T = %lld (overhead %d chunks a unit, gain %d%%; waves: %d chunks a wave, -1: none, slices from %lld tokens); interleaved epilogue from T = %lld (0: never)\n",
              (long long)sched.coop_min_tokens, (long long)sched.coop_min_tokens_int8, sched.stagger_us,
              auto_stagger_us(StateFormat::fp32), sched.stagger_stride, sched.coop_stagger_us, sched.coop_stagger_groups,
              sched.coop_group_rows, (long long)sched.coop_l2g_min_tokens, (long long)sched.coop_l2g_min_tokens_light,
              (long long)sched.coop_l2g_light_min_tiles, (long long)sched.coop_l2g_min_tokens_int8,
              sched.coop_l2g_epilogue_warps, sched.coop_l2g_epilogue_rows, sched.coop_l2g_epilogue_rows_16k,
              (long long)kCoopL2gRows16kFromTokens, sched.coop_l2g_epilogue_rows_fp, sched.coop_l2g_g_slices, sched.coop_l2g_staged, sched.coop_split_max, (long long)sched.coop_split_min_tokens,
              sched.coop_split_overhead_chunks, sched.coop_split_gain_pct, sched.coop_split_unit_chunks,
              (long long)sched.coop_split_min_slice_tokens, (long long)sched.coop_ilv_min_tokens);
  struct Layer { int64_t out, in; };
  const Layer layers[] = {{4096, 4096}, {14336, 4096}, {4096, 14336}, {1024, 4096}};
  // The Qwen3 family's linear layers (config.json: hidden h, intermediate f, 128-wide heads, 8 KV
  // heads), out x in, each shape once (those above left out): q (heads * 128) x h, k and v 1024 x h,
  // o h x (heads * 128), gate and up f x h, down h x f. 0.6B: h 1024, f 3072, 16 heads; 1.7B: 2048,
  // 6144, 16; 4B: 2560, 9728, 32; 8B: 4096, 12288, 32; 14B: 5120, 17408, 40. AdamW only, the fused
  // kernel against cuBLAS + rule and the GEMM alone (the table's columns).
  const Layer qwen3_layers[] = {{2048, 1024},  {1024, 1024},  {1024, 2048}, {3072, 1024},  {1024, 3072},
                                {2048, 2048},  {6144, 2048},  {2048, 6144}, {4096, 2560},  {1024, 2560},
                                {2560, 4096},  {9728, 2560},  {2560, 9728}, {12288, 4096}, {4096, 12288},
                                {5120, 5120},  {1024, 5120},  {17408, 5120}, {5120, 17408}};
  const int64_t tokens[] = {512, 2048, 8192, 16384};
  const std::pair<StateFormat, WeightStore> configs[] = {{StateFormat::fp32, WeightStore::fp32_master},
                                                         {StateFormat::bf16, WeightStore::bf16_rne},
                                                         {StateFormat::int8, WeightStore::fp32_master}};
  // prefix + "<rule>_<state>_<store>/<path>/out<O>_in<I>_T<T>" (render_summary.py reads the names).
  auto add = [](const std::string& prefix, Path p, RuleId id, Layer l, int64_t T, StateFormat sf, WeightStore ws) {
    const std::string name = prefix + rule_name(id) + "_" + state_format_name(sf) + "_" + weight_store_name(ws) + "/" +
                             path_name(p) + "/out" + std::to_string(l.out) + "_in" + std::to_string(l.in) + "_T" +
                             std::to_string(T);
    benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) { bench_step(st, p, id, l.out, l.in, T, sf, ws); })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond)
        ->Repetitions(5)
        // The console shows the aggregates; the JSON keeps every repetition too, so a
        // baseline diff can test a slowdown (Mann-Whitney U over repetitions).
        ->DisplayAggregatesOnly(true)
        ->MinTime(0.05);
  };
  for (RuleId id : kAllRules)
  for (const auto& [sf, ws] : configs)
    for (const Layer& l : layers)
      for (int64_t T : tokens)
        for (Path p : {Path::fused, Path::fused_pingpong, Path::fused_g_roundtrip, Path::fused_coop, Path::order_matched,
                       Path::cublas, Path::gemm_cublas}) {
          const bool variant = p == Path::fused_pingpong || p == Path::fused_g_roundtrip || p == Path::fused_coop;
          // Variants: AdamW fp32 / bf16; INT8 (fp32 master) the cooperative kernel only.
          if (variant && (id != RuleId::adamw || (sf == StateFormat::int8 && p != Path::fused_coop))) continue;
          add("", p, id, l, T, sf, ws);
        }
  for (const auto& [sf, ws] : configs)
    for (const Layer& l : qwen3_layers)
      for (int64_t T : tokens)
        for (Path p : {Path::fused, Path::cublas, Path::gemm_cublas}) {
          add("qwen3/", p, RuleId::adamw, l, T, sf, ws);
        }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
