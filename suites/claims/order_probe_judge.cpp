#include "suites/claims/order_probe_judge.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace fh::gpu {

namespace {

std::string pair_text(const OrderProbePair& p) {
  return "pair (" + std::to_string(p.i) + ", " + std::to_string(p.j) + ") kind " + p.kind;
}

}  // namespace

ParamEvidence OrderProbeResult::evidence() const {
  ParamEvidence ev;
  ev.differing = elements_differing;
  ev.first_diff = first_diff;
  ev.compared = 1;
  ev.values = elements_compared;
  return ev;
}

OrderProbeResult judge_order_probe(const std::vector<float>& g, int64_t out, int64_t in, int64_t T,
                                   const std::vector<OrderProbePair>& pairs, const ReductionOrder& order) {
  if (out < 1 || in < 1 || g.size() != size_t(out * in))
    throw std::invalid_argument("judge_order_probe: G has " + std::to_string(g.size()) + " elements, expected out*in = " +
                                std::to_string(out * in));
  if (pairs.empty()) throw std::invalid_argument("judge_order_probe: no probe pairs");
  OrderProbeResult r;
  r.out = out; r.in = in; r.T = T;
  r.pairs = int64_t(std::min<size_t>(pairs.size(), size_t(out)));
  r.pair_list.assign(pairs.begin(), pairs.begin() + r.pairs);
  r.predicted.resize(size_t(r.pairs));
  r.observed.resize(size_t(r.pairs));
  for (int64_t k = 0; k < r.pairs; ++k) {
    r.predicted[size_t(k)] = predict_order_probe(T, pairs[size_t(k)], order);
    r.observed[size_t(k)] = g[size_t(k * in)];
  }
  std::vector<char> pair_bad(size_t(r.pairs), 0);
  for (int64_t o = 0; o < out; ++o) {
    const size_t k = size_t(o) % pairs.size();
    const float want = r.predicted[k];
    uint32_t wb;
    std::memcpy(&wb, &want, 4);
    for (int64_t c = 0; c < in; ++c) {
      const float got = g[size_t(o * in + c)];
      uint32_t gb;
      std::memcpy(&gb, &got, 4);
      ++r.elements_compared;
      if (gb == wb) continue;
      ++r.elements_differing;
      pair_bad[k] = 1;
      if (r.first_diff.empty())
        r.first_diff = pair_text(pairs[k]) + ": row " + std::to_string(o) + " col " + std::to_string(c) +
                       ": observed " + std::to_string(got) + ", predicted " + std::to_string(want) + " by [" +
                       order.describe() + "]";
    }
  }
  for (char b : pair_bad) r.pairs_differing += b;
  return r;
}

OrderProbeResult run_cublas_order_probe(int64_t out, int64_t in, int64_t T, const ReductionOrder& predicted,
                                        int64_t max_pairs, uint64_t seed) {
  const std::vector<OrderProbePair> pairs = order_probe_pairs(T, predicted, std::min(max_pairs, out), seed);
  return judge_order_probe(cublas_order_probe_g(out, in, T, pairs), out, in, T, pairs, predicted);
}

}  // namespace fh::gpu
