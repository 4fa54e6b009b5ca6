#include "reference/order_matched_host.h"

#include <stdexcept>
#include <string>

#include "kernels/twin/bf16_transpose.h"
#include "kernels/twin/mma_model.h"
#include "reference/two_phase_host.h"

namespace fh {

std::vector<float> order_matched_wgrad(const bf16* X, const bf16* dY, int64_t T,
                                       int64_t in, int64_t out, const ReductionOrder& order) {
  if (T < 0 || out <= 0 || in <= 0) throw std::invalid_argument("order_matched_wgrad: bad shape");
  if (T > 0 && (!X || !dY)) throw std::invalid_argument("order_matched_wgrad: null X or dY");
  order.validate();
  const MmaModelParams p = order.model_params();
  const std::vector<bf16> dYt = transpose_bf16(dY, T, out);  // [out, T]
  const std::vector<bf16> Xt = transpose_bf16(X, T, in);     // [in, T]
  std::vector<float> G(size_t(out * in));
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i) {
      const bf16* a = dYt.data() + o * T;
      const bf16* b = Xt.data() + i * T;
      float g = 0.0f;
      for (int s = 0; s < order.split_k; ++s) {
        int64_t tb, te;
        order.slice_bounds(T, s, tb, te);
        const float part = mma_chain_dot(a + tb, b + tb, te - tb, 0.0f, p);
        g = s == 0 ? part : fadd(g, part);
      }
      G[size_t(o * in + i)] = g;
    }
  return G;
}

std::vector<float> order_matched_dgrad(const bf16* dY, const bf16* Wb, int64_t T,
                                       int64_t in, int64_t out, const ReductionOrder& order) {
  if (T < 0 || out <= 0 || in <= 0) throw std::invalid_argument("order_matched_dgrad: bad shape");
  if (T > 0 && (!dY || !Wb)) throw std::invalid_argument("order_matched_dgrad: null input");
  order.validate();
  const MmaModelParams p = order.model_params();
  const std::vector<bf16> Wt = transpose_bf16(Wb, out, in);  // [in, out]
  std::vector<float> dX(size_t(T * in));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < in; ++i)
      dX[size_t(t * in + i)] = mma_chain_dot(dY + t * out, Wt.data() + i * out, out, 0.0f, p);
  return dX;
}

void order_matched_step(HostParam& w, const bf16* X, const bf16* dY, int64_t T,
                        int64_t step, const ReductionOrder& order, std::vector<float>* dX) {
  if (step < 1) throw std::invalid_argument("order_matched_step: step counts from 1");
  if (dX) *dX = order_matched_dgrad(dY, w.bf16.data(), T, w.cols, w.rows, order);
  const std::vector<float> G = order_matched_wgrad(X, dY, T, w.cols, w.rows, order);
  apply_two_phase_update(w, G, step);  // phase two, shared with the two-phase reference
}

}  // namespace fh
