// gpu_cublas_order: Corollary 1, sharpened. cuBLAS's G equals the twin in cuBLAS's described order;
// where the orders match (no split-K) the fused step equals cuBLAS + the rule kernel in W and
// state bit for bit; where the orders differ (cuBLAS or the fused kernel splits K), fused G is within both orders' bounds
// (oracles/dot_bound) and W is explained entirely by G (host rule on the twin's G).
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

namespace fh {

void claim_gpu_cublas_order(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  const std::vector<LayerShape> shapes =
      unique_shapes({{cfg.out, cfg.in, cfg.tokens}, {1000, 1000, 500}, {4096, 4096, 512}});
  gpu::CublasHandle h;
  for (size_t si = 0; si < shapes.size(); ++si) {
    const LayerShape& s = shapes[si];
    const gpu::CublasLtWgradAlgo algo = gpu::cublaslt_wgrad_algo(s.out, s.in, s.T);
    const ReductionOrder corder = gpu::described_cublas_order(algo);
    const LayerInputs li = make_layer_inputs(stream_seed(cfg.seed, "gpu_cublas_order/inputs", si), s.out, s.in, s.T, 1);
    const DeviceSteps dev(li);
    const gpu::WgradProblem& prob = dev.prob[0];
    const ReductionOrder forder = gpu::fused_order_for(prob, gpu::TileShape{128, 128});
    const bool orders_match = corder.same_order(forder);
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
                                               : "the orders differ (cuBLAS or the fused kernel splits K): G of the twin in cuBLAS order bitwise, fused G within the order bound, W explained by G");
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
        const int64_t e = samples == n ? k : int64_t(stream_seed(cfg.seed, "gpu_cublas_order/sampled_elements", uint64_t(si) << 32 | uint64_t(k)) % uint64_t(n));
        const int64_t o = e / s.in, i = e % s.in;
        const double bound = order_dot_bound(li.steps[0].X.data(), li.steps[0].dY.data(), s.T, s.in, s.out, o, i, forder) +
                             order_dot_bound(li.steps[0].X.data(), li.steps[0].dY.data(), s.T, s.in, s.out, o, i, corder);
        const double diff = std::fabs(double(gm[size_t(e)]) - double(gc[size_t(e)]));
        ratio[size_t(k)] = diff == 0 ? 0 : (bound > 0 ? diff / bound : INFINITY);
      });
      const double worst = *std::max_element(ratio.begin(), ratio.end());
      cs.add_check(judge("g_fused_vs_cublas_within_order_bound", "max_diff_over_bound", worst, 1, PassIf::at_most,
                         "fused and cuBLAS G differ by more than the two orders' bounds"));
    }
    // W after one step, fp32 state and fp32 master, per rule of the configuration.
    std::vector<double> w_ulp;
    std::vector<int64_t> w_diff;
    std::string rules;
    for (size_t ri = 0; ri < cfg.rules.size(); ++ri) {
      const Combo c{cfg.rules[ri], StateFormat::fp32, WeightStore::fp32_master};
      const HostParam hp0 = make_param(c, li, stream_seed(cfg.seed, "gpu_cublas_order/sr_key"), ri);
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
    progress.note(shape_name(s.out, s.in, s.T) + ": " + (orders_match ? "orders match" : "orders differ") + ", " +
                  algo_text(algo));
  }
}

}  // namespace fh
