// GPU claims: run on a machine with an sm_90 GPU, reported not-run (with the reason) elsewhere
// (main.cpp never calls a needs_gpu claim without one).
//   gpu_mma_model               the CPU instruction model == mma.sync and wgmma, ~10^6 seeded outputs each
//   gpu_fused_vs_order_matched  fused == materializer + rule kernel (Proposition 1 on the GPU)
//   gpu_fused_vs_twin           fused == host twin (the guarantee behind the CPU gate)
//   gpu_cublas_order            Corollary 1, sharpened: cuBLAS G == the twin in cuBLAS order; W
//                               after cuBLAS + rule kernel == fused where the orders match
//   gpu_order_guard             FPRev probe: cuBLAS's order still equals its description
// Producers run here; the verdicts come from the oracles (compare_params, compare_bitwise) and
// from the probe's judge, never from a tolerance where bitwise equality is the claim.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "kernels/common/bf16.h"
#include "kernels/gpu/cublas_order_probe.h"
#include "kernels/gpu/device_info.h"
#include "kernels/gpu/gpu_api.h"
#include "kernels/common/host_parallel.h"
#include "kernels/gpu/mma_probe_run.h"
#include "kernels/twin/fused_twin.h"
#include "kernels/twin/mma_model.h"
#include "oracles/bitwise.h"
#include "oracles/dot_bound.h"
#include "oracles/param_compare.h"
#include "oracles/ulp.h"
#include "reference/case_gen.h"
#include "suites/forge_verify/verify_config.h"

namespace fh {
namespace {

// ---------------------------------------------------------------- helpers



std::string shape_name(int64_t out, int64_t in, int64_t T) {
  return std::to_string(out) + "x" + std::to_string(in) + ".T" + std::to_string(T);
}

// A bitwise check from folded evidence: metric = differing elements, bound = 0.
Check bitwise_check(const std::string& name, const ParamEvidence& ev, const std::string& fail_reason = {}) {
  if (ev.differing == 0)
    return Check::passed(name, "differing", 0, 0).bitwise(0, 0, "");
  const std::string first = ev.first_diff.empty() ? "unknown" : ev.first_diff;
  return Check::failed(name, "differing", double(ev.differing), 0, fail_reason.empty() ? first : fail_reason + ": " + first)
      .bitwise(ev.differing, ev.max_ulp, first);
}

ParamEvidence evidence_of(const BitwiseReport& r, const std::string& where = {}) {
  ParamEvidence ev;
  ev.add(r, where);
  return ev;
}

void set_gpu_attrs(CaseRecord& cs) {
  const DeviceInfo& d = query_device_info();
  cs.set_attr("gpu", d.name + " (sm " + d.compute_capability + ", " + std::to_string(d.sm_count) + " SMs)");
}

// One layer's inputs for `steps` steps: new X, dY per step (bf16, normal), one w0 (fp32).
struct StepInputs {
  std::vector<uint16_t> X, dY;
};
struct LayerInputs {
  int64_t out = 0, in = 0, T = 0;
  std::vector<StepInputs> steps;
  std::vector<float> w0;
};
LayerInputs make_layer_inputs(uint64_t seed, int64_t out, int64_t in, int64_t T, int64_t steps) {
  LayerInputs li;
  li.out = out; li.in = in; li.T = T;
  for (int64_t k = 0; k < steps; ++k) {
    WgradCase c = make_wgrad_case(mix_seed(seed, 1, uint64_t(k)), T, in, out, CaseDistribution::normal);
    li.steps.push_back({std::move(c.X), std::move(c.dY)});
  }
  CaseRng rng(mix_seed(seed, 2));
  li.w0 = gen_weights_f32(rng, out * in, 0.02);  // small enough that every rule moves bf16
  return li;
}

// The inputs on the device, one WgradProblem per step.
struct DeviceSteps {
  std::vector<gpu::DeviceBuffer<uint16_t>> x, dy;
  std::vector<gpu::WgradProblem> prob;
  explicit DeviceSteps(const LayerInputs& li) {
    for (const StepInputs& s : li.steps) {
      x.emplace_back(s.X);
      dy.emplace_back(s.dY);
      prob.push_back({x.back().data(), dy.back().data(), li.T, li.out, li.in});
    }
  }
};

struct Combo {
  RuleConfig rule;
  StateFormat format;
  WeightStore store;
};
std::vector<Combo> combos_of(const VerifyConfig& cfg) {
  std::vector<Combo> out;
  for (const RuleConfig& rc : cfg.rules)
    for (StateFormat f : cfg.formats)
      for (WeightStore w : cfg.stores) out.push_back({rc, f, w});
  return out;
}

HostParam make_param(const Combo& c, const LayerInputs& li, uint64_t seed, size_t index) {
  return HostParam::make(c.rule, c.format, c.store, li.out, li.in, li.w0, mix_seed(seed, 3, index),
                         uint32_t(index));
}

constexpr int64_t kTile = 128;  // the fused kernel's and the twin's tile (the paper's TR = TC)
const TileShape kTileEvidence{kTile, kTile};

TwinSchedule twin_schedule(const ReductionOrder& order = fused_kernel_order(64)) {
  TwinSchedule s;
  s.tile_rows = kTile;
  s.tile_cols = kTile;
  s.order = order;
  return s;
}

// G [out, in] in the twin's order for `order`, the twin run on 128-row bands in parallel (each
// band is the twin on a sub-layer: a G element's order does not depend on the band).
std::vector<float> twin_wgrad_parallel(const std::vector<uint16_t>& X, const std::vector<uint16_t>& dY, int64_t T,
                                       int64_t in, int64_t out, const ReductionOrder& order) {
  std::vector<float> G(size_t(out * in));
  const TwinSchedule sched = twin_schedule(order);
  const int64_t bands = (out + kTile - 1) / kTile;
  parallel_for(bands, [&](int64_t b) {
    const int64_t r0 = b * kTile, r1 = std::min(out, r0 + kTile), rows = r1 - r0;
    std::vector<uint16_t> dy_band(size_t(T * rows));
    for (int64_t t = 0; t < T; ++t)
      std::copy(dY.begin() + t * out + r0, dY.begin() + t * out + r1, dy_band.begin() + t * rows);
    const std::vector<float> g = twin_wgrad(X.data(), dy_band.data(), T, in, rows, sched);
    std::copy(g.begin(), g.end(), G.begin() + r0 * in);
  });
  return G;
}

// ---------------------------------------------------------------- gpu_mma_model

constexpr int64_t kMmaInstancesPerCategory = 656;  // 12 categories x 656 x 128 = 1.0e6 outputs
constexpr int64_t kWgmmaCasesPerCategory = 16 * 10;  // 12 categories x 10 x 8192 = 0.98e6 outputs

// Both instructions the kernels use: mma.sync (the 64 x 64 tile) and wgmma m64n128k16 (the
// 128 x 128 tile, v6+), each on every probe category, judged by the same model.
void run_gpu_mma_model(const VerifyConfig& cfg, Report& report, const Progress& progress) {
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
           probe_and_judge(cat, n, [&](int64_t i) { return mix_seed(cfg.seed, 11 + uint64_t(ci), uint64_t(i)); }));
  }
  for (int ci = 0; ci < kProbeCategories; ++ci) {
    const ProbeCategory cat = ProbeCategory(ci);
    const int64_t n = kWgmmaCasesPerCategory;
    record(std::string("wgmma.") + probe_category_name(cat), cat,
           "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 (both operands MN-major, 128-byte swizzle)", n / 16,
           probe_and_judge_wgmma(cat, n, [&](int64_t i) { return mix_seed(cfg.seed, 31 + uint64_t(ci), uint64_t(i)); }));
  }
  CaseRecord& all = report.add_case("gpu_mma_model", "all");
  set_gpu_attrs(all);
  all.set_attr("fp32_fma_loop_misses", std::to_string(total_fma) + " of " + std::to_string(total));
  all.add_i64("counts", {total, total_mis, total_fma}, "outputs compared, model mismatches, outputs a plain fp32 fmaf loop misses");
  all.add_f64("fp32_fma_loop_miss_fraction", {double(total_fma) / double(total)},
              "fraction of outputs where a plain fp32 fmaf loop differs from the hardware");
  if (total_mis == 0)
    all.add_check(Check::passed("model_mismatches", "differing", 0, 0).bitwise(0, 0, ""));
  else
    all.add_check(Check::failed("model_mismatches", "differing", double(total_mis), 0, "see the per-category cases")
                      .bitwise(total_mis, 0, "see the per-category cases"));
  progress.note(std::to_string(total) + " outputs, " + std::to_string(total_mis) + " model mismatches, " +
                std::to_string(total_fma) + " fp32-fma-loop misses");
}

// ---------------------------------------------------------------- gpu_fused_vs_*

void run_fused_vs_order_matched(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  const LayerInputs li = make_layer_inputs(mix_seed(cfg.seed, 21), cfg.out, cfg.in, cfg.tokens, cfg.steps);
  const DeviceSteps dev(li);
  const std::vector<Combo> combos = combos_of(cfg);
  int64_t failing = 0;
  for (size_t ci = 0; ci < combos.size(); ++ci) {
    const Combo& c = combos[ci];
    const HostParam hp0 = make_param(c, li, cfg.seed, ci);
    HostParam fused_h = hp0, om_h = hp0;
    gpu::DeviceParam fused(hp0), om(hp0);
    gpu::DeviceBuffer<float> g(size_t(li.out * li.in));
    ParamEvidence ev;
    for (int64_t st = 1; st <= cfg.steps; ++st) {
      const gpu::WgradProblem& p = dev.prob[size_t(st - 1)];
      gpu::fused_wgrad_update(p, c.rule, c.format, c.store, fused.view(), st, gpu::TileShape{128, 128});
      gpu::wgrad_materialize(p, g.data(), gpu::TileShape{128, 128});
      gpu::rule_apply_device(c.rule, c.format, c.store, om.view(), st, g.data(), li.in);
      fused.download_into(fused_h);
      om.download_into(om_h);
      compare_params(ev, fused_h, om_h, st, kTileEvidence, "step " + std::to_string(st));
    }
    CaseRecord& cs = report.add_case("gpu_fused_vs_order_matched", case_name(c.rule.id, c.format, c.store));
    cs.set_attr("shape", shape_name(li.out, li.in, li.T)).set_attr("steps", std::to_string(cfg.steps))
        .set_attr("tile", "128x128");
    cs.add_i64("evidence", {ev.compared, ev.differing}, "arrays compared (all steps), elements differing");
    cs.add_check(bitwise_check("fused_equals_order_matched", ev));
    failing += ev.differing != 0;
  }
  progress.note(std::to_string(combos.size()) + " cases x " + std::to_string(cfg.steps) + " steps at " +
                shape_name(li.out, li.in, li.T) + ", " + std::to_string(failing) + " failing");
}

void run_fused_vs_twin(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  const LayerInputs li = make_layer_inputs(mix_seed(cfg.seed, 21), cfg.out, cfg.in, cfg.tokens, cfg.steps);
  const DeviceSteps dev(li);
  const std::vector<Combo> combos = combos_of(cfg);
  const TwinSchedule sched = twin_schedule();
  // One case per worker at a time: GPU calls from several host threads are safe (the runtime
  // serialises them on the default stream); the Report is filled afterwards, in case order.
  std::vector<ParamEvidence> evs(combos.size());
  parallel_for(int64_t(combos.size()), [&](int64_t ci) {
    const Combo& c = combos[size_t(ci)];
    const HostParam hp0 = make_param(c, li, cfg.seed, size_t(ci));
    HostParam fused_h = hp0, twin = hp0;
    gpu::DeviceParam fused(hp0);
    ParamEvidence& ev = evs[size_t(ci)];
    for (int64_t st = 1; st <= cfg.steps; ++st) {
      const StepInputs& in = li.steps[size_t(st - 1)];
      gpu::fused_wgrad_update(dev.prob[size_t(st - 1)], c.rule, c.format, c.store, fused.view(), st,
                              gpu::TileShape{128, 128});
      fused_twin_step(twin, in.X.data(), in.dY.data(), li.T, st, sched);
      fused.download_into(fused_h);
      compare_params(ev, fused_h, twin, st, kTileEvidence, "step " + std::to_string(st));
    }
  });
  int64_t failing = 0;
  for (size_t ci = 0; ci < combos.size(); ++ci) {
    const Combo& c = combos[ci];
    CaseRecord& cs = report.add_case("gpu_fused_vs_twin", case_name(c.rule.id, c.format, c.store));
    cs.set_attr("shape", shape_name(li.out, li.in, li.T)).set_attr("steps", std::to_string(cfg.steps))
        .set_attr("tile", "128x128").set_attr("twin_order", sched.order.describe());
    cs.add_i64("evidence", {evs[ci].compared, evs[ci].differing}, "arrays compared (all steps), elements differing");
    cs.add_check(bitwise_check("fused_equals_twin", evs[ci]));
    failing += evs[ci].differing != 0;
  }
  progress.note(std::to_string(combos.size()) + " cases x " + std::to_string(cfg.steps) + " steps at " +
                shape_name(li.out, li.in, li.T) + ", " + std::to_string(failing) + " failing");
}

// ---------------------------------------------------------------- gpu_cublas_order

struct LayerShape {
  int64_t out, in, T;
};

std::vector<LayerShape> unique_shapes(std::vector<LayerShape> v) {
  std::vector<LayerShape> out;
  for (const LayerShape& s : v) {
    bool dup = false;
    for (const LayerShape& o : out) dup |= o.out == s.out && o.in == s.in && o.T == s.T;
    if (!dup) out.push_back(s);
  }
  return out;
}

std::string algo_text(const gpu::CublasLtWgradAlgo& a) {
  if (!a.ok) return "heuristic query failed: " + a.note + " (assumed no split)";
  return "split_k=" + std::to_string(a.split_k) + " reduction_scheme=" + std::to_string(a.reduction_scheme) +
         " algo_id=" + std::to_string(a.algo_id) + " candidates=" + std::to_string(a.candidates) +
         " workspace=" + std::to_string(a.workspace_bytes) + " B";
}

// Upper bound on |G_hat - S| of one element computed in `order` (S exact): the instruction-chain
// bound of each slice plus gamma_{S-1} of the partials' magnitudes for the fp32 adds (Higham).
double order_dot_bound(const std::vector<uint16_t>& X, const std::vector<uint16_t>& dY, int64_t T, int64_t in,
                       int64_t out, int64_t o, int64_t i, const ReductionOrder& order) {
  const MmaModelParams p = order.model_params();
  if (order.split_k == 1) return tc_chain_dot_bound(dY.data() + o, out, X.data() + i, in, T, 0.0f, p);
  double total = 0.0, partial_mag = 0.0;
  for (int s = 0; s < order.split_k; ++s) {
    int64_t tb, te;
    order.slice_bounds(T, s, tb, te);
    const double b = tc_chain_dot_bound(dY.data() + tb * out + o, out, X.data() + tb * in + i, in, te - tb, 0.0f, p);
    double abs_sum = 0.0;
    for (int64_t t = tb; t < te; ++t)
      abs_sum += std::fabs(double(bf16_to_float(dY[size_t(t * out + o)])) * double(bf16_to_float(X[size_t(t * in + i)])));
    total += b;
    partial_mag += abs_sum * (1.0 + 0x1p-40) + b;
  }
  return (total + gamma_fp32(order.split_k - 1) * partial_mag) * (1.0 + 0x1p-40);
}

void run_cublas_order(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  const std::vector<LayerShape> shapes =
      unique_shapes({{cfg.out, cfg.in, cfg.tokens}, {1000, 1000, 500}, {4096, 4096, 512}});
  gpu::CublasHandle h;
  for (size_t si = 0; si < shapes.size(); ++si) {
    const LayerShape& s = shapes[si];
    const gpu::CublasLtWgradAlgo algo = gpu::cublaslt_wgrad_algo(s.out, s.in, s.T);
    const ReductionOrder corder = gpu::described_cublas_order(algo);
    const ReductionOrder forder = fused_kernel_order(64);
    const bool orders_match = corder.same_order(forder);
    const LayerInputs li = make_layer_inputs(mix_seed(cfg.seed, 31, si), s.out, s.in, s.T, 1);
    const DeviceSteps dev(li);
    const gpu::WgradProblem& prob = dev.prob[0];
    const int64_t n = s.out * s.in;

    gpu::DeviceBuffer<float> g_cublas(static_cast<size_t>(n)), g_mat(static_cast<size_t>(n));
    gpu::cublas_wgrad(h.get(), prob, g_cublas.data());
    gpu::wgrad_materialize(prob, g_mat.data(), gpu::TileShape{128, 128});
    gpu::cuda_check(cudaDeviceSynchronize(), "gpu_cublas_order: cublas_wgrad");
    const std::vector<float> gc = g_cublas.download(), gm = g_mat.download();
    const std::vector<float> gt = twin_wgrad_parallel(li.steps[0].X, li.steps[0].dY, s.T, s.in, s.out, corder);

    CaseRecord& cs = report.add_case("gpu_cublas_order", shape_name(s.out, s.in, s.T));
    set_gpu_attrs(cs);
    cs.set_attr("shape", shape_name(s.out, s.in, s.T)).set_attr("cublaslt_heuristic", algo_text(algo))
        .set_attr("cublas_order", corder.describe()).set_attr("fused_order", forder.describe())
        .set_attr("case_applied", orders_match ? "orders_match (cuBLAS does not split K): W and state bitwise"
                                               : "cuBLAS splits K: G of the twin in cuBLAS order bitwise, fused G within the order bound, W explained by G");
    BitwiseContext gctx;
    gctx.name = "G cuBLAS vs twin in cuBLAS order";
    gctx.tile = kTileEvidence;
    cs.add_check(bitwise_check("g_cublas_equals_twin_cublas_order", evidence_of(compare_bitwise(gc, gt, s.out, s.in, gctx)),
                               "cuBLAS's G differs from its order description (order changed, not a kernel bug)"));
    if (orders_match) {
      gctx.name = "G materializer vs cuBLAS";
      cs.add_check(bitwise_check("g_fused_order_equals_cublas", evidence_of(compare_bitwise(gm, gc, s.out, s.in, gctx))));
    } else {
      // Sampled elements: |G_fused - G_cuBLAS| <= bound(fused order) + bound(cuBLAS order).
      const int64_t samples = std::min<int64_t>(n, 65536);
      std::vector<double> ratio(static_cast<size_t>(samples));
      parallel_for(samples, [&](int64_t k) {
        const int64_t e = samples == n ? k : int64_t(mix_seed(cfg.seed, 33 + si, uint64_t(k)) % uint64_t(n));
        const int64_t o = e / s.in, i = e % s.in;
        const double bound = order_dot_bound(li.steps[0].X, li.steps[0].dY, s.T, s.in, s.out, o, i, forder) +
                             order_dot_bound(li.steps[0].X, li.steps[0].dY, s.T, s.in, s.out, o, i, corder);
        const double diff = std::fabs(double(gm[size_t(e)]) - double(gc[size_t(e)]));
        ratio[size_t(k)] = diff == 0 ? 0 : (bound > 0 ? diff / bound : INFINITY);
      });
      const double worst = *std::max_element(ratio.begin(), ratio.end());
      cs.add_check(worst <= 1 ? Check::passed("g_fused_vs_cublas_within_order_bound", "max_diff_over_bound", worst, 1)
                              : Check::failed("g_fused_vs_cublas_within_order_bound", "max_diff_over_bound", worst, 1,
                                              "fused and cuBLAS G differ by more than the two orders' bounds"));
    }
    // W after one step, fp32 state and fp32 master, per rule of the configuration.
    std::vector<double> w_ulp;
    std::vector<int64_t> w_diff;
    std::string rules;
    for (size_t ri = 0; ri < cfg.rules.size(); ++ri) {
      const Combo c{cfg.rules[ri], StateFormat::fp32, WeightStore::fp32_master};
      const HostParam hp0 = make_param(c, li, cfg.seed, ri);
      HostParam fused_h = hp0, cub_h = hp0, host = hp0;
      gpu::DeviceParam fused(hp0), cub(hp0);
      gpu::fused_wgrad_update(prob, c.rule, c.format, c.store, fused.view(), 1, gpu::TileShape{128, 128});
      gpu::rule_apply_device(c.rule, c.format, c.store, cub.view(), 1, g_cublas.data(), s.in);
      fused.download_into(fused_h);
      cub.download_into(cub_h);
      const std::string rn = rule_name(c.rule.id);
      rules += (rules.empty() ? "" : ",") + rn;
      BitwiseContext wctx;
      wctx.name = "W (fp32 master) fused vs cuBLAS + rule kernel";
      wctx.tile = kTileEvidence;
      wctx.step = 1;
      const BitwiseReport wr = compare_bitwise(fused_h.master, cub_h.master, s.out, s.in, wctx);
      w_ulp.push_back(wr.max_ulp == kUlpNaN ? INFINITY : double(wr.max_ulp));
      w_diff.push_back(wr.n_differ);
      if (orders_match) {
        ParamEvidence ev;
        compare_params(ev, fused_h, cub_h, 1, kTileEvidence, rn);
        cs.add_check(bitwise_check("w_state_fused_equals_cublas." + rn, ev));
      } else {
        // The W difference is explained entirely by G: the host rule on the twin's cuBLAS-order G
        // gives the cuBLAS path's W and state bit for bit.
        apply_rule_region(host.rule, host.state_format, host.weight_store, host.view(), 1, gt.data(), s.in, 0, s.out,
                          0, s.in);
        ParamEvidence ev;
        compare_params(ev, host, cub_h, 1, kTileEvidence, rn);
        cs.add_check(bitwise_check("w_explained_by_g." + rn, ev));
      }
    }
    cs.set_attr("rules", rules);
    cs.add_f64("w_max_ulp_per_rule", w_ulp, "per rule (attr rules), fp32 state, fp32 master, one step: largest ulp "
                                            "distance of W between fused and cuBLAS + rule kernel");
    cs.add_i64("w_differing_per_rule", w_diff, "per rule (attr rules): W elements that differ, fused vs cuBLAS path");
    progress.note(shape_name(s.out, s.in, s.T) + ": " + (orders_match ? "orders match" : "cuBLAS splits K") + ", " +
                  algo_text(algo));
  }
}

// ---------------------------------------------------------------- gpu_order_guard

constexpr int64_t kProbePairsMax = 4096;  // one pair per column of dY, up to this many distinct
constexpr size_t kProbeRecordPairs = 256;  // pairs kept in the report per shape

void run_order_guard(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  const std::vector<LayerShape> shapes = unique_shapes({{4096, 4096, 512}, {4096, 4096, 2048}, {4096, 4096, 8192},
                                                        {14336, 4096, 512}, {4096, 14336, 512},
                                                        {cfg.out, cfg.in, cfg.tokens}});
  int64_t changed = 0;
  for (size_t si = 0; si < shapes.size(); ++si) {
    const LayerShape& s = shapes[si];
    CaseRecord& cs = report.add_case("gpu_order_guard", shape_name(s.out, s.in, s.T));
    cs.set_attr("shape", shape_name(s.out, s.in, s.T));
    if (s.T < 2) {
      cs.add_check(Check::not_run("probe_matches_description", "the probe needs T >= 2 tokens"));
      continue;
    }
    const gpu::CublasLtWgradAlgo algo = gpu::cublaslt_wgrad_algo(s.out, s.in, s.T);
    const ReductionOrder order = gpu::described_cublas_order(algo);
    const gpu::OrderProbeResult r =
        gpu::run_cublas_order_probe(s.out, s.in, s.T, order, kProbePairsMax, mix_seed(cfg.seed, 41, si));
    set_gpu_attrs(cs);
    cs.set_attr("cublaslt_heuristic", algo_text(algo)).set_attr("described_order", order.describe())
        .set_attr("pairs_probed", std::to_string(r.pairs));
    std::map<std::string, int64_t> kinds;
    for (const auto& p : r.pair_list) ++kinds[p.kind];
    std::string kt;
    for (const auto& [k, v] : kinds) kt += (kt.empty() ? "" : ",") + k + "=" + std::to_string(v);
    cs.set_attr("pair_kinds", kt);
    const size_t keep = std::min(kProbeRecordPairs, r.pair_list.size());
    std::vector<int64_t> pi, pj;
    std::vector<double> obs, pred;
    for (size_t k = 0; k < keep; ++k) {
      pi.push_back(r.pair_list[k].i);
      pj.push_back(r.pair_list[k].j);
      obs.push_back(r.observed[k]);
      pred.push_back(r.predicted[k]);
    }
    cs.add_i64("pair_i", pi, "token of +2^40 (first pairs probed)");
    cs.add_i64("pair_j", pj, "token of -2^40");
    cs.add_f64("observed", obs, "cuBLAS's output for the pair (row carrying it, column 0)");
    cs.add_f64("predicted", pred, "the output the described order predicts");
    cs.add_i64("counts", {r.pairs, r.pairs_differing, r.elements_compared, r.elements_differing},
               "pairs probed, pairs differing, elements compared, elements differing");
    ParamEvidence ev;
    ev.differing = r.elements_differing;
    ev.first_diff = r.first_diff;
    cs.add_check(bitwise_check("probe_matches_description", ev,
                               "order changed: cuBLAS's wgrad order for this shape no longer equals its description "
                               "(re-derive the description; not a kernel bug)"));
    changed += r.elements_differing != 0;
  }
  progress.note(std::to_string(shapes.size()) + " shapes probed, " + std::to_string(changed) + " with a changed order");
}

}  // namespace

void add_gpu_claims(std::vector<ClaimSpec>& out) {
  out.push_back({"gpu_mma_model", "the CPU instruction model equals the H200's mma.sync and wgmma bit for bit (~10^6 outputs each)", true, run_gpu_mma_model});
  out.push_back({"gpu_fused_vs_order_matched", "fused kernel equals materialize + rule kernel, bitwise", true, run_fused_vs_order_matched});
  out.push_back({"gpu_fused_vs_twin", "GPU fused kernel equals the host twin, bitwise", true, run_fused_vs_twin});
  out.push_back({"gpu_cublas_order", "Corollary 1, sharpened: cuBLAS G equals the twin in cuBLAS order; W equals fused where orders match", true, run_cublas_order});
  out.push_back({"gpu_order_guard", "FPRev probe: cuBLAS's wgrad summation order still equals its description", true, run_order_guard});
}

}  // namespace fh
