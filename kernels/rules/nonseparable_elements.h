// The per-element arithmetic and the fixed-order chains of the non-separable rules
// (kernels/twin/nonseparable_rules.h): one definition for the host twin and for the GPU passes
// (kernels/gpu/nonseparable_gpu.cu). Per-step scalars are formed on the host (nonseparable_rules.cpp)
// in double and rounded once; everything here is fp32 through the IEEE shim.
#pragma once
#include <cstdint>

#include "kernels/common/ieee_shim.h"

namespace fh {

// One fp32 round-to-nearest chain from +0 over term(0) .. term(n - 1), in that order.
template <class Term>
FH_HD float ns_chain(int64_t n, Term term) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s = fadd(s, term(i));
  return s;
}
// A tile's sum in the fixed order: each row's chain along the row, then the row sums chained in
// ascending row (the GPU forms the row chains in parallel, one thread a row).
template <class Term>
FH_HD float ns_tile_chain(int64_t rows, int64_t cols, Term term) {
  return ns_chain(rows, [&](int64_t r) { return ns_chain(cols, [&](int64_t c) { return term(r, c); }); });
}
FH_HD float ns_square(float x) { return fmul(x, x); }
// max and min as std::max / std::min pick (statistics are never NaN here).
FH_HD float ns_fmax(float a, float b) { return a > b ? a : b; }
FH_HD float ns_fmin(float a, float b) { return b < a ? b : a; }
// An exponential moving average s <- beta s + (1 - beta) x (Adam-mini's block v, Adafactor's R, C).
FH_HD float ns_moving(float beta, float one_minus_beta, float s, float x) {
  return fadd(fmul(beta, s), fmul(one_minus_beta, x));
}

// LAMB's moments and update direction u = m_hat / (sqrt(v_hat) + eps) + wd w.
struct LambScalars {
  float b1, omb1, b2, omb2, inv_bc1, inv_bc2, eps, wd;
};
FH_HD void lamb_moments(const LambScalars& s, float g, float& m, float& v) {
  m = fadd(fmul(s.b1, m), fmul(s.omb1, g));
  v = fadd(fmul(s.b2, v), fmul(s.omb2, fmul(g, g)));
}
FH_HD float lamb_direction(const LambScalars& s, float m, float v, float w) {
  return fadd(fdiv(fmul(m, s.inv_bc1), fadd(fsqrt(fmul(v, s.inv_bc2)), s.eps)), fmul(s.wd, w));
}

// Adam-mini: the element-wise first moment and the weight from its block's second moment.
struct AdamMiniScalars {
  float b1, omb1, b2, omb2, decay, step_size, sqrt_bc2, eps;
};
// Adam-mini's block of a row (the planted defect shifts it by `shift` rows); the last block takes the rest.
FH_HD int64_t ns_adam_mini_block(int64_t row, int64_t rows_per_block, int64_t n_blocks, int64_t shift) {
  const int64_t b = (row + shift) / rows_per_block;
  return b < n_blocks - 1 ? b : n_blocks - 1;
}
FH_HD float adam_mini_weight(const AdamMiniScalars& s, float w, float m, float v_block) {
  const float den = fadd(fdiv(fsqrt(v_block), s.sqrt_bc2), s.eps);
  return fsub(fmul(w, s.decay), fmul(s.step_size, fdiv(m, den)));
}

// A row or column statistic's term g^2 + add (Adafactor: add = eps1; Adam-mini: add = 0).
FH_HD float ns_square_plus(float g, float add) { return fadd(fmul(g, g), add); }
// Adafactor's update U = G / sqrt(R C / 1^T R).
FH_HD float adafactor_update(float g, float row, float col, float row_total) {
  return fdiv(g, fsqrt(fdiv(fmul(row, col), row_total)));
}

// SM3: w <- w - lr g / sqrt(nu), unchanged where nu = 0.
FH_HD float sm3_weight(float w, float lr, float g, float nu) {
  return nu > 0.0f ? fsub(w, fmul(lr, fdiv(g, fsqrt(nu)))) : w;
}

// LARS: v <- m v + (lr local_lr) (g + wd w), w <- w - v.
struct LarsScalars {
  float scaled, mom, wd;
};
FH_HD void lars_element(const LarsScalars& s, float g, float& m, float& w) {
  m = fadd(fmul(s.mom, m), fmul(s.scaled, fadd(g, fmul(s.wd, w))));
  w = fsub(w, m);
}

// Muon: the momentum B <- mu B + G, and the weight from the orthogonalised O.
struct MuonScalars {
  float mu, decay, step_size;
};
FH_HD float muon_momentum(const MuonScalars& s, float m, float g) { return fadd(fmul(s.mu, m), g); }
FH_HD float muon_weight(const MuonScalars& s, float w, float o) { return fsub(fmul(w, s.decay), fmul(s.step_size, o)); }

// Newton-Schulz's coefficients (Jordan 2024) and the Frobenius norm's guard.
inline constexpr float kNsA = 3.4445f, kNsB = -4.7750f, kNsC = 2.0315f, kNsNormEps = 1e-7f;

}  // namespace fh
