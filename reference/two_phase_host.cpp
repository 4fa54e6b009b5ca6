#include "reference/two_phase_host.h"

#include <stdexcept>
#include <string>

#include "kernels/twin/mma_model.h"
#include "reference/exact_gradient.h"

namespace fh {

const char* grad_producer_name(GradProducer p) {
  switch (p) {
    case GradProducer::exact: return "exact";
    case GradProducer::fp32_sequential: return "fp32_sequential";
    case GradProducer::tensor_core_chain: return "tensor_core_chain";
  }
  return "?";
}

std::vector<float> tensor_core_chain_wgrad(const bf16* X, const bf16* dY, int64_t T,
                                           int64_t in, int64_t out) {
  if (T < 0 || in < 0 || out < 0) throw std::invalid_argument("tensor_core_chain_wgrad: negative shape");
  if ((T * in > 0 && !X) || (T * out > 0 && !dY))
    throw std::invalid_argument("tensor_core_chain_wgrad: null input with nonzero size");
  std::vector<float> G(size_t(out * in));
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i)
      G[size_t(o * in + i)] = mma_chain_dot_strided(dY + o, out, X + i, in, T, 0.0f, kHopperMma);
  return G;
}

std::vector<float> produce_wgrad(GradProducer which, const bf16* X, const bf16* dY,
                                 int64_t T, int64_t in, int64_t out) {
  switch (which) {
    case GradProducer::exact: return exact_wgrad(X, dY, T, in, out);
    case GradProducer::fp32_sequential: return fp32_sequential_wgrad(X, dY, T, in, out);
    case GradProducer::tensor_core_chain: return tensor_core_chain_wgrad(X, dY, T, in, out);
  }
  throw std::invalid_argument("produce_wgrad: unknown producer " + std::to_string(int(which)));
}

void apply_two_phase_update(HostParam& w, const std::vector<float>& G, int64_t step) {
  if (G.size() != size_t(w.rows * w.cols))
    throw std::invalid_argument("apply_two_phase_update: G has " + std::to_string(G.size()) +
                                " elements, the weight has " + std::to_string(w.rows * w.cols));
  apply_rule_region(w.rule, w.state_format, w.weight_store, w.view(), step, G.data(), w.cols, 0,
                    w.rows, 0, w.cols);
}

void two_phase_step_host(HostParam& w, const bf16* X, const bf16* dY, int64_t T,
                         int64_t step, GradProducer which, std::vector<float>* g_out) {
  if (w.rows <= 0 || w.cols <= 0) throw std::invalid_argument("two_phase_step_host: empty weight");
  if (step < 1) throw std::invalid_argument("two_phase_step_host: step counts from 1");
  std::vector<float> G = produce_wgrad(which, X, dY, T, w.cols, w.rows);  // phase 1
  apply_two_phase_update(w, G, step);                                     // phase 2
  if (g_out) *g_out = std::move(G);
}

}  // namespace fh
