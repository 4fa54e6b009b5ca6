// ext_order_probe: the reduction order an external path computes G in, revealed by the FPRev
// probe (kernels/gpu/cublas_order_probe.h) run through its adapter. Each results file's G on
// each order_probe case is compared element by element with the predictions of its declared
// order (the verdict), and with a list of candidate orders so that the report names the order
// that every element matches ("identified_order"). When a reference file (cuBLAS through torch)
// ran the same case, the report says whether the path's G equals it bit for bit.
#include <cmath>

#include "kernels/common/bf16.h"
#include "kernels/common/host_parallel.h"
#include "kernels/gpu/cublas_order_probe.h"
#include "oracles/param_compare.h"
#include "oracles/ulp.h"
#include "suites/claims/claim_entries.h"
#include "suites/claims/external_common.h"

namespace fh {

namespace {

struct Candidate {
  std::string name;
  ext::DeclaredOrder order;
};

std::vector<Candidate> candidates(const ext::DeclaredOrder& declared) {
  std::vector<Candidate> c;
  if (!declared.model.empty()) c.push_back({"declared: " + declared.describe(), declared});
  c.push_back({"fp32_sequential", {"fp32_sequential"}});
  for (int64_t k : {1, 8, 16, 32}) c.push_back({"", {"mma_chain", k, 1, 16}});
  for (int64_t s : {2, 3, 4, 8}) c.push_back({"", {"mma_chain", 16, s, 16}});
  for (auto& x : c)
    if (x.name.empty()) x.name = x.order.describe();
  return c;
}

// What a producer summing in `order` outputs on the probe column of pair (i, j).
float predict(int64_t T, const gpu::OrderProbePair& p, const ext::DeclaredOrder& order) {
  if (order.model == "mma_chain") return gpu::predict_order_probe(T, p, to_reduction_order(order));
  float acc = 0.0f;  // fp32_sequential: X is all ones, so each term is dY's value
  for (int64_t t = 0; t < T; ++t) {
    const float term = t == p.i ? bf16_to_float(gpu::kOrderProbeBigBf16)
                       : t == p.j ? -bf16_to_float(gpu::kOrderProbeBigBf16) : 1.0f;
    acc = fadd(acc, term);
  }
  return acc;
}

struct Match {
  int64_t differing = 0;
  double max_ulp = 0;
  std::string first;
};

Match compare(const ext::Tensor& g, const ext::CaseSpec& c, const std::vector<gpu::OrderProbePair>& pairs,
              const std::vector<float>& pred) {
  Match m;
  for (int64_t o = 0; o < c.out; ++o) {
    const size_t p = size_t(o) % pairs.size();
    const uint32_t want = f2u(pred[p]);
    for (int64_t i = 0; i < c.in; ++i) {
      const uint32_t got = g.bits(o * c.in + i);
      if (got == want) continue;
      const uint64_t d = ulp_distance_f32(u2f(got), u2f(want));
      m.max_ulp = std::max(m.max_ulp, d == kUlpNaN ? INFINITY : double(d));
      if (m.differing++ == 0) {
        char buf[200];
        std::snprintf(buf, sizeof buf, "row %lld col %lld (pair %lld,%lld %s): G %.9g, predicted %.9g", (long long)o,
                      (long long)i, (long long)pairs[p].i, (long long)pairs[p].j, pairs[p].kind.c_str(), double(u2f(got)),
                      double(pred[p]));
        m.first = buf;
      }
    }
  }
  return m;
}

}  // namespace

void claim_ext_order_probe(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  if (external_absent(cfg, report, "ext_order_probe")) return;
  const ExternalRun& run = external_run(cfg);
  const ext::ResultsFile* reference = nullptr;
  for (const auto& r : run.results)
    if (r->role() == "reference") reference = r.get();
  for (const ext::CaseSpec& c : run.cases->cases()) {
    if (c.kind != "order_probe") continue;
    const ext::Tensor pi = run.cases->load(c.id, "pair_i"), pj = run.cases->load(c.id, "pair_j");
    std::vector<gpu::OrderProbePair> pairs;
    for (int64_t k = 0; k < pi.numel(); ++k) pairs.push_back({pi.i64(k), pj.i64(k), "probe"});
    for (const auto& r : run.results) {
      progress_set_case(r->path_name() + "." + c.id);
      CaseRecord& cs = report.add_case("ext_order_probe", r->path_name() + "." + c.id);
      set_external_attrs(cs, *r);
      cs.set_attr("shape", std::to_string(c.out) + "x" + std::to_string(c.in) + " T=" + std::to_string(c.tokens));
      if (record_not_ok(cs, *r, c.id)) continue;
      const ext::Tensor g = r->load(c.id, "G");
      const std::vector<Candidate> cands = candidates(r->order());
      std::vector<int64_t> diff_per_candidate;
      std::string identified, names, declared_first;
      int64_t declared_diff = -1;
      double declared_ulp = 0;
      for (size_t k = 0; k < cands.size(); ++k) {
        std::vector<float> pred(pairs.size());
        parallel_for(int64_t(pairs.size()), [&](int64_t p) { pred[size_t(p)] = predict(c.tokens, pairs[size_t(p)], cands[k].order); });
        const Match m = compare(g, c, pairs, pred);
        diff_per_candidate.push_back(m.differing);
        names += (names.empty() ? "" : "; ") + cands[k].name;
        if (m.differing == 0 && identified.empty()) identified = cands[k].order.describe();
        if (k == 0 && !r->order().model.empty()) {
          declared_diff = m.differing;
          declared_ulp = m.max_ulp;
          declared_first = m.first;
        }
      }
      cs.set_attr("identified_order", identified.empty() ? "none of the candidates" : identified);
      cs.set_attr("candidates", names);
      cs.add_i64("elements_differing_per_candidate", diff_per_candidate,
                 "per candidate order (attr candidates): elements of G that differ from its prediction");
      if (declared_diff < 0) {
        cs.add_check(Check::not_run("g_matches_declared_order", "the producer declared no order_model"));
      } else {
        ParamEvidence ev;
        ev.differing = declared_diff;
        ev.max_ulp = declared_ulp;
        ev.first_diff = declared_first;
        ev.compared = 1;
        ev.values = c.out * c.in;
        cs.add_check(bitwise_check("g_matches_declared_order", ev,
                                   "G differs from the prediction of the declared order " + r->order().describe()));
      }
      if (reference && reference != r.get()) {
        const ext::ResultCase* rc = reference->find(c.id);
        if (rc && rc->status == "ok") {
          const ext::Tensor gr = reference->load(c.id, "G");
          int64_t d = 0;
          for (int64_t k = 0; k < g.numel(); ++k) d += g.bits(k) != gr.bits(k);
          cs.set_attr("same_g_as_reference", d == 0 ? "yes" : "no (" + std::to_string(d) + " elements differ)");
          cs.set_attr("reference_path", reference->path_name());
        } else {
          cs.set_attr("same_g_as_reference", "unknown: the reference did not run this case");
        }
      }
      progress.note(r->path_name() + " " + c.id + ": " + (identified.empty() ? "no candidate order matches" : identified));
    }
  }
}

}  // namespace fh
