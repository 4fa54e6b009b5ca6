#include "reference/nonseparable_two_phase.h"

#include <stdexcept>

#include "exact/tracked.h"
#include "reference/order_matched_host.h"

namespace fh {

std::vector<float> ns_two_phase_step(NsParam& p, const NsHyper& h, const bf16* X, const bf16* dY,
                                     int64_t T, int64_t step, const ReductionOrder& order, const NsGrid& grid) {
  std::vector<float> G = order_matched_wgrad(X, dY, T, p.cols, p.rows, order);
  ns_step(p, h, step, grid, ns_materialized_source(G, p.rows, p.cols, grid));
  return G;
}

ExactSumOfSquares mpfr_sum_of_squares(const float* x, int64_t ld, int64_t rows, int64_t cols, float add,
                                      float computed) {
  if (x == nullptr || rows < 0 || cols < 0 || ld < cols)
    throw std::invalid_argument("mpfr_sum_of_squares: bad array");
  mpreal s = ref_real(0.0);
  const mpreal a = ref_real(add);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const mpreal v = ref_real(x[i * ld + j]);
      s += v * v + a;
    }
  ExactSumOfSquares r;
  r.exact = s.toDouble();
  r.abs_err = abs(ref_real(computed) - s).toDouble();
  return r;
}

}  // namespace fh

namespace fh {

namespace {

using Mat = std::vector<mpreal>;

Mat exact(const std::vector<float>& x) {
  Mat m;
  m.reserve(x.size());
  for (float v : x) m.push_back(ref_real(v));
  return m;
}
std::vector<float> rounded(const Mat& m) {
  std::vector<float> x;
  x.reserve(m.size());
  for (const mpreal& v : m) x.push_back(mpfr_get_flt(v.mpfr_srcptr(), MPFR_RNDN));  // one rounding to fp32
  return x;
}
mpreal sum_sq(const Mat& m) {
  mpreal s = ref_real(0.0);
  for (const mpreal& v : m) s += v * v;
  return s;
}
mpreal mmax(const mpreal& a, const mpreal& b) { return a > b ? a : b; }
mpreal mmin(const mpreal& a, const mpreal& b) { return a < b ? a : b; }

// X (n x k) = rows x cols B turned to the wide side.
Mat wide(const Mat& B, int64_t rows, int64_t cols) {
  if (rows <= cols) return B;
  Mat X(B.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) X[size_t(c * rows + r)] = B[size_t(r * cols + c)];
  return X;
}
Mat matmul(const Mat& A, const Mat& B, int64_t n, int64_t l, int64_t k, bool b_transposed) {
  Mat C(size_t(n * k), ref_real(0.0));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j) {
      mpreal s = ref_real(0.0);
      for (int64_t q = 0; q < l; ++q) s += A[size_t(i * l + q)] * (b_transposed ? B[size_t(j * l + q)] : B[size_t(q * k + j)]);
      C[size_t(i * k + j)] = s;
    }
  return C;
}

}  // namespace

NsParam ns_mpfr_step(const NsParam& p, const NsHyper& h, int64_t step, const std::vector<float>& G) {
  const int64_t R = p.rows, C = p.cols, P = R * C;
  if (step < 1 || int64_t(G.size()) != P || int64_t(p.w.size()) != P)
    throw std::invalid_argument("ns_mpfr_step: step counts from 1; G and w must be rows x cols");
  const Mat g = exact(G);
  Mat w = exact(p.w), m = exact(p.m), v = exact(p.v), row = exact(p.row_stat), col = exact(p.col_stat);
  const mpreal lr = ref_real(h.lr), one = ref_real(1.0);
  switch (p.rule) {
    case NsRule::lamb: {
      const mpreal b1 = ref_real(h.beta1), b2 = ref_real(h.beta2);
      const mpreal bc1 = one - exact_pow_int(h.beta1, step), bc2 = one - exact_pow_int(h.beta2, step);
      Mat u(static_cast<size_t>(P));
      for (int64_t i = 0; i < P; ++i) {
        m[size_t(i)] = b1 * m[size_t(i)] + (one - b1) * g[size_t(i)];
        v[size_t(i)] = b2 * v[size_t(i)] + (one - b2) * g[size_t(i)] * g[size_t(i)];
        u[size_t(i)] = (m[size_t(i)] / bc1) / (sqrt(v[size_t(i)] / bc2) + ref_real(h.eps)) + ref_real(h.weight_decay) * w[size_t(i)];
      }
      const mpreal wn = sqrt(sum_sq(w)), un = sqrt(sum_sq(u));
      const mpreal ratio = (wn > 0 && un > 0) ? wn / un : one;
      for (int64_t i = 0; i < P; ++i) w[size_t(i)] -= lr * ratio * u[size_t(i)];
      break;
    }
    case NsRule::adam_mini: {
      const mpreal b1 = ref_real(h.beta1), b2 = ref_real(h.beta2);
      const mpreal bc1 = one - exact_pow_int(h.beta1, step), bc2 = one - exact_pow_int(h.beta2, step);
      const int64_t nb = int64_t(row.size()), rpb = R / nb;
      for (int64_t i = 0; i < P; ++i) m[size_t(i)] = b1 * m[size_t(i)] + (one - b1) * g[size_t(i)];
      for (int64_t b = 0; b < nb; ++b) {
        mpreal s = ref_real(0.0);
        for (int64_t i = b * rpb * C; i < (b + 1) * rpb * C; ++i) s += g[size_t(i)] * g[size_t(i)];
        row[size_t(b)] = b2 * row[size_t(b)] + (one - b2) * s / ref_real(double(rpb * C));
      }
      for (int64_t i = 0; i < P; ++i) {
        const mpreal vb = row[size_t(i / C / rpb)];
        w[size_t(i)] = w[size_t(i)] * (one - lr * ref_real(h.weight_decay)) -
                       (lr / bc1) * m[size_t(i)] / (sqrt(vb) / sqrt(bc2) + ref_real(h.eps));
      }
      break;
    }
    case NsRule::adafactor: {
      const mpreal decay = exact_pow(double(step), ref_real(h.decay_rate)), beta2t = one - decay, eps1 = ref_real(h.eps1);
      const mpreal rms_w = sqrt(sum_sq(w) / ref_real(double(P)));
      for (int64_t r = 0; r < R; ++r) {
        mpreal s = ref_real(0.0);
        for (int64_t c = 0; c < C; ++c) s += g[size_t(r * C + c)] * g[size_t(r * C + c)] + eps1;
        row[size_t(r)] = beta2t * row[size_t(r)] + decay * s;
      }
      for (int64_t c = 0; c < C; ++c) {
        mpreal s = ref_real(0.0);
        for (int64_t r = 0; r < R; ++r) s += g[size_t(r * C + c)] * g[size_t(r * C + c)] + eps1;
        col[size_t(c)] = beta2t * col[size_t(c)] + decay * s;
      }
      mpreal total = ref_real(0.0);
      for (const mpreal& x : row) total += x;
      Mat U(static_cast<size_t>(P));
      for (int64_t i = 0; i < P; ++i) U[size_t(i)] = g[size_t(i)] / sqrt(row[size_t(i / C)] * col[size_t(i % C)] / total);
      const mpreal rms_u = sqrt(sum_sq(U) / ref_real(double(P)));
      const mpreal alpha = mmax(ref_real(h.eps2), rms_w) * lr;
      const mpreal step_size = alpha / mmax(one, rms_u / ref_real(h.clip_threshold));
      for (int64_t i = 0; i < P; ++i) w[size_t(i)] -= step_size * U[size_t(i)];
      break;
    }
    case NsRule::sm3_i:
    case NsRule::sm3_ii: {
      const bool second = p.rule == NsRule::sm3_ii;
      Mat nr(size_t(R), ref_real(0.0)), nc(size_t(C), ref_real(0.0));
      if (!second) {  // SM3-I: the accumulators gain this step's maxima first
        for (int64_t i = 0; i < P; ++i) {
          nr[size_t(i / C)] = mmax(nr[size_t(i / C)], g[size_t(i)] * g[size_t(i)]);
          nc[size_t(i % C)] = mmax(nc[size_t(i % C)], g[size_t(i)] * g[size_t(i)]);
        }
        for (int64_t r = 0; r < R; ++r) row[size_t(r)] += nr[size_t(r)];
        for (int64_t c = 0; c < C; ++c) col[size_t(c)] += nc[size_t(c)];
      }
      Mat nu_r(size_t(R), ref_real(0.0)), nu_c(size_t(C), ref_real(0.0));
      for (int64_t i = 0; i < P; ++i) {
        const mpreal nu = mmin(row[size_t(i / C)], col[size_t(i % C)]) + (second ? g[size_t(i)] * g[size_t(i)] : ref_real(0.0));
        if (nu > 0) w[size_t(i)] -= lr * g[size_t(i)] / sqrt(nu);
        nu_r[size_t(i / C)] = mmax(nu_r[size_t(i / C)], nu);
        nu_c[size_t(i % C)] = mmax(nu_c[size_t(i % C)], nu);
      }
      if (second) {  // SM3-II: the cover maxima of this step's nu
        row = nu_r;
        col = nu_c;
      }
      break;
    }
    case NsRule::lars: {
      const mpreal wn = sqrt(sum_sq(w)), gn = sqrt(sum_sq(g)), wd = ref_real(h.weight_decay);
      const mpreal local = (wn > 0 && gn > 0) ? ref_real(h.trust_coefficient) * wn / (gn + wd * wn) : one;
      for (int64_t i = 0; i < P; ++i) {
        m[size_t(i)] = ref_real(h.momentum) * m[size_t(i)] + lr * local * (g[size_t(i)] + wd * w[size_t(i)]);
        w[size_t(i)] -= m[size_t(i)];
      }
      break;
    }
    case NsRule::muon: {
      for (int64_t i = 0; i < P; ++i) m[size_t(i)] = ref_real(h.momentum) * m[size_t(i)] + g[size_t(i)];
      const bool tall = R > C;
      const int64_t n = tall ? C : R, k = tall ? R : C;
      Mat X = wide(m, R, C);
      const mpreal norm = sqrt(sum_sq(X)) + ref_real(double(kNsNormEps));
      for (mpreal& x : X) x /= norm;
      const mpreal a = ref_real(double(kNsA)), b = ref_real(double(kNsB)), c = ref_real(double(kNsC));
      for (int s = 0; s < h.ns_steps; ++s) {
        const Mat A = matmul(X, X, n, k, n, true);
        const Mat AA = matmul(A, A, n, n, n, false);
        Mat Bm(A.size());
        for (size_t i = 0; i < A.size(); ++i) Bm[i] = b * A[i] + c * AA[i];
        const Mat BX = matmul(Bm, X, n, n, k, false);
        for (size_t i = 0; i < X.size(); ++i) X[i] = a * X[i] + BX[i];
      }
      Mat O = X;  // back to rows x cols: O[r][c] = X[c][r] when tall
      if (tall)
        for (int64_t r = 0; r < R; ++r)
          for (int64_t c = 0; c < C; ++c) O[size_t(r * C + c)] = X[size_t(c * R + r)];
      const mpreal scale = lr * sqrt(mmax(one, ref_real(double(R)) / ref_real(double(C))));
      for (int64_t i = 0; i < P; ++i)
        w[size_t(i)] = w[size_t(i)] * (one - lr * ref_real(h.weight_decay)) - scale * O[size_t(i)];
      break;
    }
  }
  NsParam out = p;
  out.w = rounded(w);
  out.m = rounded(m);
  out.v = rounded(v);
  out.row_stat = rounded(row);
  out.col_stat = rounded(col);
  return out;
}

}  // namespace fh
