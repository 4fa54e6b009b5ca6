#include "kernels/twin/nonseparable.h"

#include <cmath>
#include <stdexcept>

namespace fh {

void LambHyper::validate() const {
  require_hyper(finite_nonneg(lr), "lamb", "lr must be finite and >= 0");
  require_hyper(beta_ok(beta1) && beta_ok(beta2), "lamb", "betas must be in [0, 1)");
  require_hyper(finite_nonneg(eps), "lamb", "eps must be finite and >= 0");
  require_hyper(finite_nonneg(weight_decay), "lamb", "weight_decay must be finite and >= 0");
}

LambScalars lamb_scalars(const LambHyper& h, int64_t step) {
  LambScalars s;
  s.b1 = round_scalar(h.beta1);
  s.omb1 = round_scalar(1.0 - h.beta1);
  s.b2 = round_scalar(h.beta2);
  s.omb2 = round_scalar(1.0 - h.beta2);
  s.inv_bc1 = round_scalar(1.0 / (1.0 - std::pow(h.beta1, double(step))));
  s.inv_bc2 = round_scalar(1.0 / (1.0 - std::pow(h.beta2, double(step))));
  s.eps = round_scalar(h.eps);
  s.wd = round_scalar(h.weight_decay);
  return s;
}

LambParam LambParam::make(int64_t rows, int64_t cols, const std::vector<float>& w0) {
  if (rows <= 0 || cols <= 0) throw std::invalid_argument("LambParam: shape must be positive");
  if (int64_t(w0.size()) != rows * cols) throw std::invalid_argument("LambParam: w0 has the wrong size");
  LambParam p;
  p.rows = rows;
  p.cols = cols;
  p.w = w0;
  p.m.assign(w0.size(), 0.0f);
  p.v.assign(w0.size(), 0.0f);
  return p;
}

void lamb_update_region(LambParam& p, const LambHyper& h, int64_t step, const float* g,
                        int64_t ldg, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  h.validate();
  if (step < 1) throw std::invalid_argument("lamb_update_region: step counts from 1");
  if (r0 < 0 || r1 > p.rows || c0 < 0 || c1 > p.cols || r0 > r1 || c0 > c1)
    throw std::invalid_argument("lamb_update_region: region outside the tensor");
  const LambScalars s = lamb_scalars(h, step);

  // Pass 1: moments and the update direction u (a region-sized scratch: one tile in the twin).
  const int64_t cols = c1 - c0;
  std::vector<float> u(size_t((r1 - r0) * cols));
  double w_sq = 0.0, u_sq = 0.0;
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t c = c0; c < c1; ++c) {
      const size_t i = size_t(r * p.cols + c);
      lamb_moments(s, g[(r - r0) * ldg + (c - c0)], p.m[i], p.v[i]);
      const float ui = lamb_direction(s, p.m[i], p.v[i], p.w[i]);
      u[size_t((r - r0) * cols + (c - c0))] = ui;
      w_sq = dadd(w_sq, dmul(double(p.w[i]), double(p.w[i])));
      u_sq = dadd(u_sq, dmul(double(ui), double(ui)));
    }
  // The non-separable part: one scalar from the whole region.
  const double ratio = (w_sq > 0.0 && u_sq > 0.0) ? dsqrt(w_sq) / dsqrt(u_sq) : 1.0;
  const float step_size = round_scalar(h.lr * ratio);
  // Pass 2: the weights.
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t c = c0; c < c1; ++c) {
      const size_t i = size_t(r * p.cols + c);
      p.w[i] = fsub(p.w[i], fmul(step_size, u[size_t((r - r0) * cols + (c - c0))]));
    }
}

void lamb_fused_twin_step(LambParam& p, const LambHyper& h, const bf16* X, const bf16* dY,
                          int64_t T, int64_t step, const TwinSchedule& sched) {
  twin_for_each_g_tile(X, dY, T, p.cols, p.rows, sched,
                       [&](const TileCoord& tc, const float* g, int64_t ldg) {
                         lamb_update_region(p, h, step, g, ldg, tc.r0, tc.r1, tc.c0, tc.c1);
                       });
}

}  // namespace fh
