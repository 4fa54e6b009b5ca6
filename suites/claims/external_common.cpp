// The external-producer claims' shared pieces (external_common.h).
#include "suites/claims/external_common.h"

#include <map>
#include <stdexcept>

#include "kernels/common/bf16.h"
#include "kernels/common/host_parallel.h"
#include "kernels/gpu/cublas_order_probe.h"
#include "reference/case_gen.h"
#include "suites/claims/claim_common.h"
#include "suites/claims/gpu_claim_common.h"

namespace fh {

namespace {

ext::CaseSpec adamw_case(const std::string& id, const std::string& kind, int64_t out, int64_t in, int64_t T,
                         int64_t steps, const std::string& wd, const std::string& sd, int64_t first_step = 1) {
  ext::CaseSpec c;
  c.id = id;
  c.kind = kind;
  c.out = out;
  c.in = in;
  c.tokens = T;
  c.steps = steps;
  c.weight_dtype = wd;
  c.state_dtype = sd;
  // A learning rate large enough that bf16 weights move every step (torch's default 1e-3).
  c.lr = 1e-3;
  c.beta1 = 0.9;
  c.beta2 = 0.999;
  c.eps = 1e-8;
  c.weight_decay = 0.01;
  c.first_step = first_step;
  c.qblock = kind == "adamw_int8" ? 64 : 0;
  c.g_order = fused_kernel_order().describe();
  return c;
}

ext::CaseSpec probe_case(int64_t out, int64_t in, int64_t T) {
  ext::CaseSpec c;
  c.id = "probe_" + std::to_string(out) + "x" + std::to_string(in) + "_t" + std::to_string(T);
  c.kind = "order_probe";
  c.out = out;
  c.in = in;
  c.tokens = T;
  c.steps = 1;
  c.state_dtype = "none";
  return c;
}

std::string shape_id(int64_t out, int64_t in, int64_t T) {
  return std::to_string(out) + "x" + std::to_string(in) + "_t" + std::to_string(T);
}

// The adamw cases of one shape: the README's setting (bf16 W and state), bf16 W with fp32 state,
// fp32 W and state; and (optionally) a later step from a non-zero state.
void add_adamw_shape(std::vector<ext::CaseSpec>& v, int64_t out, int64_t in, int64_t T, int64_t steps, bool late) {
  const std::string s = shape_id(out, in, T);
  v.push_back(adamw_case("adamw_bf16_bf16_" + s, "adamw", out, in, T, steps, "bf16", "bf16"));
  v.push_back(adamw_case("adamw_bf16_fp32_" + s, "adamw", out, in, T, steps, "bf16", "fp32"));
  v.push_back(adamw_case("adamw_fp32_fp32_" + s, "adamw", out, in, T, steps, "fp32", "fp32"));
  if (late) v.push_back(adamw_case("adamw_bf16_bf16_late_" + s, "adamw", out, in, T, steps, "bf16", "bf16", 1000));
}

}  // namespace

std::vector<ext::CaseSpec> external_case_specs(const std::string& set) {
  std::vector<ext::CaseSpec> v;
  if (set == "ci") {
    v.push_back(probe_case(64, 48, 70));
    add_adamw_shape(v, 48, 40, 37, 3, true);
    v.push_back(adamw_case("int8_" + shape_id(32, 128, 20), "adamw_int8", 32, 128, 20, 3, "bf16", "int8"));
    return v;
  }
  if (set == "forge" || set == "forge_adamw") {
    // Llama-3.1-8B's layer shapes [out, in]: q/o 4096x4096, k/v 1024x4096, gate/up 14336x4096,
    // down 4096x14336. forge_adamw leaves the probes out (a case's inputs depend on its shape only).
    if (set == "forge") {
      for (int64_t T : {512, 2048, 8192})
        for (auto [o, i] : {std::pair<int64_t, int64_t>{4096, 4096}, {1024, 4096}, {14336, 4096}, {4096, 14336}})
          v.push_back(probe_case(o, i, T));
      v.push_back(probe_case(1000, 1000, 500));
      v.push_back(probe_case(200, 192, 77));
    }
    add_adamw_shape(v, 256, 384, 200, 3, true);
    add_adamw_shape(v, 160, 192, 77, 3, false);
    add_adamw_shape(v, 512, 512, 512, 2, false);
    // INT8: 384 = 6 blocks of 64 (a 256-wide tile leaves a 128-wide edge tile), 192 = 3 blocks.
    v.push_back(adamw_case("int8_" + shape_id(256, 384, 200), "adamw_int8", 256, 384, 200, 5, "bf16", "int8"));
    v.push_back(adamw_case("int8_" + shape_id(128, 192, 64), "adamw_int8", 128, 192, 64, 5, "bf16", "int8"));
    v.push_back(adamw_case("int8_" + shape_id(512, 512, 512), "adamw_int8", 512, 512, 512, 3, "bf16", "int8"));
    return v;
  }
  throw std::invalid_argument("unknown case set '" + set + "' (ci, forge or forge_adamw)");
}

namespace {

// The external cases file keeps the derivation its case sets were published with, because
// external producers answer those sets and a results file must keep meaning the same inputs:
// the stream "external_cases/v1" of docs/EXTERNAL_PRODUCER.md ("How the inputs are drawn"),
// seed(a, b) = splitmix64_mix(run seed ^ a * 0x9E3779B97F4A7C15 ^ b * 0xC2B2AE3D27D4EB4F).
uint64_t external_cases_v1_seed(uint64_t seed, uint64_t a, uint64_t b = 0) {
  return splitmix64_mix(seed ^ (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full));
}

}  // namespace

std::map<std::string, ext::Tensor> external_case_inputs(const ext::CaseSpec& c, uint64_t seed) {
  using ext::Dtype;
  using ext::Tensor;
  std::map<std::string, Tensor> d;
  const int64_t O = c.out, I = c.in, T = c.tokens, S = c.steps;
  // The seed depends on the shape only, so the dtype variants of a shape share X, dY and W0.
  const uint64_t s = external_cases_v1_seed(seed, uint64_t(O) * 1000003u + uint64_t(I), uint64_t(T));
  if (c.kind == "order_probe") {
    const std::vector<gpu::OrderProbePair> pairs =
        gpu::order_probe_pairs(T, fused_kernel_order(), std::min<int64_t>(O, 512), s);
    d["X"] = Tensor::from_bf16s({1, T, I}, gpu::order_probe_x(T, I));
    d["dY"] = Tensor::from_bf16s({1, T, O}, gpu::order_probe_dy(T, O, pairs));
    std::vector<int64_t> pi, pj;
    for (const auto& p : pairs) {
      pi.push_back(p.i);
      pj.push_back(p.j);
    }
    d["pair_i"] = Tensor::from_i64(pi);
    d["pair_j"] = Tensor::from_i64(pj);
    return d;
  }
  std::vector<uint64_t> step_seeds;
  for (int64_t k = 0; k < S; ++k) step_seeds.push_back(external_cases_v1_seed(s, 1, uint64_t(k)));
  const LayerInputs li = make_layer_inputs_from_seeds(s, step_seeds, external_cases_v1_seed(s, 2), O, I, T);
  std::vector<bf16> X, dY;
  std::vector<float> G;
  for (const StepInputs& st : li.steps) {
    X.insert(X.end(), st.X.begin(), st.X.end());
    dY.insert(dY.end(), st.dY.begin(), st.dY.end());
    const std::vector<float> g = twin_wgrad_parallel(st.X, st.dY, T, I, O, fused_kernel_order());
    G.insert(G.end(), g.begin(), g.end());
  }
  d["X"] = Tensor::from_bf16s({S, T, I}, X);
  d["dY"] = Tensor::from_bf16s({S, T, O}, dY);
  d["G"] = Tensor::from_floats(Dtype::fp32, {S, O, I}, G);
  d["W0"] = Tensor::from_floats(ext::dtype_of_storage(c.weight_dtype), {O, I}, li.w0);
  if (c.kind == "adamw") {
    // Zero moments at step 1 (AdamW's start); a later step starts from moments of a plausible size.
    std::vector<float> m(size_t(O * I), 0.0f), v(size_t(O * I), 0.0f);
    if (c.first_step > 1) {
      CaseRng rng(external_cases_v1_seed(s, 3));
      for (size_t k = 0; k < m.size(); ++k) {
        m[k] = float(0.01 * rng.normalish());
        const double r = 0.01 * rng.normalish();
        v[k] = float(r * r);
      }
    }
    const ext::Dtype sd = ext::dtype_of_storage(c.state_dtype);
    d["m0"] = Tensor::from_floats(sd, {O, I}, m);
    d["v0"] = Tensor::from_floats(sd, {O, I}, v);
  } else {
    // The release's initial INT8 state: codes 0, scales 1.
    d["m0_q"] = Tensor::make(Dtype::int8, {O, I});
    d["v0_q"] = Tensor::make(Dtype::int8, {O, I});
    const std::vector<float> ones(size_t(O * (I / c.qblock)), 1.0f);
    d["m0_scale"] = Tensor::from_floats(Dtype::fp32, {O, I / c.qblock}, ones);
    d["v0_scale"] = Tensor::from_floats(Dtype::fp32, {O, I / c.qblock}, ones);
  }
  return d;
}

void write_external_cases(const std::string& path, const std::string& set, uint64_t seed, const std::string& revision) {
  const std::vector<ext::CaseSpec> specs = external_case_specs(set);
  ext::CasesHeader h;
  h.case_set = set;
  h.seed = int64_t(seed);
  h.harness_revision = revision;
  h.cases_id = set + "-" + std::to_string(seed) + "-" + revision;
  ext::write_cases_file(path, h, specs, [&](const ext::CaseSpec& c) { return external_case_inputs(c, seed); });
}

const ExternalRun& external_run(const VerifyConfig& cfg) {
  const ExternalRun& run = claim_inputs(cfg).external;
  if (!run.cases) throw std::logic_error("external_run: the run has no external files (ask external_absent first)");
  return run;
}

bool inputs_absent(const std::vector<std::string>& files, Report& report, const std::string& claim,
                   const std::string& how) {
  if (!files.empty()) return false;
  report.add_case(claim, "all").add_check(Check::not_run(claim, how));
  return true;
}

bool external_absent(const VerifyConfig& cfg, Report& report, const std::string& claim) {
  return inputs_absent(cfg.external_results, report, claim,
                       "no external results: run forge-verify --external RESULTS.h5 --external-cases CASES.h5 "
                       "(docs/EXTERNAL_PRODUCER.md)");
}

ReductionOrder to_reduction_order(const ext::DeclaredOrder& o) {
  if (o.model != "mma_chain") throw std::invalid_argument("to_reduction_order: order model '" + o.model + "' is not mma_chain");
  ReductionOrder r = with_k_group(fused_kernel_order(), int(o.k_group));
  r.split_k = int(o.split_k);
  r.split_round = int(o.split_round);
  r.validate();
  return r;
}

std::vector<std::vector<float>> host_g(const ext::CasesFile& cases, const ext::CaseSpec& c, const ext::DeclaredOrder& order) {
  if (order.model.empty()) throw std::invalid_argument("host_g: the producer declared no order");
  const ext::Tensor X = cases.load(c.id, "X"), dY = cases.load(c.id, "dY");
  std::vector<std::vector<float>> out;
  for (int64_t s = 0; s < c.steps; ++s) {
    const std::vector<bf16> x = X.slab(s).bf16s(), dy = dY.slab(s).bf16s();
    if (order.model == "mma_chain") {
      out.push_back(twin_wgrad_parallel(x, dy, c.tokens, c.in, c.out, to_reduction_order(order)));
      continue;
    }
    std::vector<float> g(size_t(c.out * c.in), 0.0f);
    parallel_for(c.out, [&](int64_t o) {
      for (int64_t i = 0; i < c.in; ++i) {
        float acc = 0.0f;
        for (int64_t t = 0; t < c.tokens; ++t)
          acc = fadd(acc, fmul(bf16_to_float(dy[size_t(t * c.out + o)]), bf16_to_float(x[size_t(t * c.in + i)])));
        g[size_t(o * c.in + i)] = acc;
      }
    });
    out.push_back(std::move(g));
  }
  return out;
}

bool record_not_ok(CaseRecord& cs, const ext::ResultsFile& r, const std::string& case_id, bool judged_path) {
  const ext::ResultCase* rc = r.find(case_id);
  if (!rc) {
    cs.add_check(Check::not_run("ran", "the producer did not attempt this case (" + r.path_name() + ")"));
    return true;
  }
  if (!rc->detail.empty()) cs.set_attr(judged_path ? "detail" : "partner_detail", rc->detail);
  if (rc->status == "ok") return false;
  cs.set_attr(judged_path ? "error" : "partner_error", rc->error);
  if (!judged_path)
    cs.add_check(Check::not_run("ran", "the " + r.role() + " path " + r.path_name() + " " +
                                           (rc->status == "unsupported" ? "does not support" : "failed on") +
                                           " this case (its own rows carry that): " + rc->error));
  else if (rc->status == "unsupported") cs.add_check(Check::not_run("ran", "unsupported by this path: " + rc->error));
  else cs.add_check(judge("ran", "ran", 0, 1, PassIf::at_least, "the path failed on this case: " + rc->error));
  return true;
}

void set_external_attrs(CaseRecord& cs, const ext::ResultsFile& r) {
  cs.set_attr("producer", r.producer()).set_attr("path", r.path_name()).set_attr("role", r.role())
      .set_attr("results_file", r.path()).set_attr("declared_order", r.order().describe());
}

std::vector<ParamEvidence> compare_outputs_per_step(const ext::ResultsFile& a, const ext::ResultsFile& b, const ext::CaseSpec& c) {
  std::vector<ParamEvidence> per_step(size_t(c.steps));
  for (const ext::ResultDatasetSpec& d : ext::case_outputs(c)) {
    if (d.optional) continue;  // G: a two-phase path's input, not an output to compare
    const ext::Tensor ta = a.load(c.id, d.name), tb = b.load(c.id, d.name);
    const int64_t per = ta.numel() / c.steps;
    const int64_t cols = d.shape.back();
    for (int64_t s = 0; s < c.steps; ++s) {
      BitwiseContext ctx;
      ctx.name = d.name + " after step " + std::to_string(s);
      ctx.step = s;
      const ext::Tensor sa = ta.slab(s), sb = tb.slab(s);
      BitwiseReport r;
      if (d.dtype == ext::Dtype::bf16) r = compare_bitwise(sa.bf16s(), sb.bf16s(), per / cols, cols, ctx);
      else if (d.dtype == ext::Dtype::int8) {
        ctx.signed_codes = true;
        r = compare_bitwise(sa.u8(), sb.u8(), per / cols, cols, ctx);
      } else r = compare_bitwise(sa.floats(), sb.floats(), per / cols, cols, ctx);
      per_step[size_t(s)].add(r, d.name);
    }
  }
  return per_step;
}

ParamEvidence fold(const std::vector<ParamEvidence>& per_step) {
  ParamEvidence ev;
  for (const ParamEvidence& e : per_step) ev.add(e);
  return ev;
}

}  // namespace fh
