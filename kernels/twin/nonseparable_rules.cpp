#include "kernels/twin/nonseparable_rules.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace fh {

namespace {

// ---- the fixed reduction orders (nonseparable_rules.h) ----

// A tile's partial sum of x^2: ns_tile_chain's order (row chains, then the rows).
float tile_sum_of_squares(const float* t, int64_t ld, int64_t nr, int64_t nc) {
  return ns_tile_chain(nr, nc, [&](int64_t i, int64_t j) { return ns_square(t[i * ld + j]); });
}
// Per row of a tile: the sum of x^2 + add along the row, fp32 adds from +0.
void tile_row_sums(const float* t, int64_t ld, int64_t nr, int64_t nc, float add, float* rows) {
  for (int64_t i = 0; i < nr; ++i) rows[i] = ns_chain(nc, [&](int64_t j) { return ns_square_plus(t[i * ld + j], add); });
}
// Per column of a tile: the sum of x^2 + add down the column, fp32 adds from +0.
void tile_col_sums(const float* t, int64_t ld, int64_t nr, int64_t nc, float add, float* cols) {
  for (int64_t j = 0; j < nc; ++j) cols[j] = ns_chain(nr, [&](int64_t i) { return ns_square_plus(t[i * ld + j], add); });
}
// Partials parts[k * stride + i], k = 0..n-1, added from +0 in ascending k (descending when the
// planted defect reverses the order), for every i < width.
std::vector<float> add_partials(const std::vector<float>& parts, int64_t n, int64_t width, bool reversed) {
  std::vector<float> s(size_t(width), 0.0f);
  for (int64_t i = 0; i < width; ++i)
    for (int64_t q = 0; q < n; ++q) {
      const int64_t k = reversed ? n - 1 - q : q;
      s[size_t(i)] = fadd(s[size_t(i)], parts[size_t(k * width + i)]);
    }
  return s;
}
std::vector<float> max_partials(const std::vector<float>& parts, int64_t n, int64_t width) {
  std::vector<float> s(size_t(width), 0.0f);
  for (int64_t k = 0; k < n; ++k)
    for (int64_t i = 0; i < width; ++i) s[size_t(i)] = ns_fmax(s[size_t(i)], parts[size_t(k * width + i)]);
  return s;
}
// x points at the grid region's corner (row g.r0, column g.c0).
float sum_of_squares_in_grid(const float* x, int64_t ld, const NsGrid& g, bool reversed) {
  const int64_t ntr = g.n_tile_rows(), ntc = g.n_tile_cols();
  std::vector<float> parts(size_t(ntr * ntc));
  for (int64_t a = 0; a < ntr; ++a)
    for (int64_t b = 0; b < ntc; ++b) {
      const int64_t r0 = a * g.tile_rows, c0 = b * g.tile_cols;  // from the region's corner
      parts[size_t(a * ntc + b)] = tile_sum_of_squares(x + r0 * ld + c0, ld, std::min(g.tile_rows, g.r1 - g.r0 - r0),
                                                       std::min(g.tile_cols, g.c1 - g.c0 - c0));
    }
  return add_partials(parts, ntr * ntc, 1, reversed)[0];
}

// The statistic the update uses: the fresh one, or under the planted defect the previous step's.
std::vector<float> statistic_in_use(NsParam& p, std::vector<float> fresh, const NsPlants& pl) {
  if (!pl.stale_statistic) return fresh;
  std::vector<float> used = p.last_statistic.empty() ? fresh : p.last_statistic;
  p.last_statistic = std::move(fresh);
  return used;
}

struct Region {
  const NsGrid& g;
  int64_t nr() const { return g.r1 - g.r0; }
  int64_t nc() const { return g.c1 - g.c0; }
  int64_t ntr() const { return g.n_tile_rows(); }
  int64_t ntc() const { return g.n_tile_cols(); }
  int64_t id(const TileCoord& tc) const { return g.tile_row_of(tc) * ntc() + g.tile_col_of(tc); }
};

// Elements of a G tile: fn(row, col, state index, g).
template <class Fn>
void for_each_element(const NsParam& p, const TileCoord& tc, const float* g, int64_t ldg, Fn&& fn) {
  for (int64_t r = tc.r0; r < tc.r1; ++r)
    for (int64_t c = tc.c0; c < tc.c1; ++c) fn(r, c, size_t(r * p.cols + c), g[(r - tc.r0) * ldg + (c - tc.c0)]);
}
template <class Fn>
void for_each_state_element(const NsParam& p, const NsGrid& g, Fn&& fn) {
  for (int64_t r = g.r0; r < g.r1; ++r)
    for (int64_t c = g.c0; c < g.c1; ++c) fn(r, c, size_t(r * p.cols + c));
}

// ---- the rules ----

// LAMB, You et al. 2020 ("Large Batch Optimization for Deep Learning"), Algorithm 2 with
// phi = identity: Adam moments, r = m_hat / (sqrt(v_hat) + eps), u = r + lambda w,
// w <- w - lr ||w|| / ||u|| u. Pass 1 (over G): moments, u and the norm partials; pass 2
// (element-wise over the stored m, v, w): u again, then the weights.
int step_lamb(NsParam& p, const NsHyper& h, int64_t step, const NsGrid& g, const NsGSource& src, const NsPlants& pl) {
  const Region R{g};
  const LambScalars s = ns_lamb_scalars(h, step);
  std::vector<float> w_part(size_t(R.ntr() * R.ntc())), u_part(w_part.size());
  std::vector<float> w2, u2;  // one tile's squares, row-major
  src([&](const TileCoord& tc, const float* gt, int64_t ldg) {
    const int64_t nr = tc.r1 - tc.r0, nc = tc.c1 - tc.c0;
    w2.assign(size_t(nr * nc), 0.0f);
    u2.assign(w2.size(), 0.0f);
    for_each_element(p, tc, gt, ldg, [&](int64_t r, int64_t c, size_t i, float gi) {
      lamb_moments(s, gi, p.m[i], p.v[i]);
      const size_t t = size_t((r - tc.r0) * nc + (c - tc.c0));
      w2[t] = ns_square(p.w[i]);
      u2[t] = ns_square(lamb_direction(s, p.m[i], p.v[i], p.w[i]));
    });
    w_part[size_t(R.id(tc))] = ns_tile_chain(nr, nc, [&](int64_t a, int64_t b) { return w2[size_t(a * nc + b)]; });
    u_part[size_t(R.id(tc))] = ns_tile_chain(nr, nc, [&](int64_t a, int64_t b) { return u2[size_t(a * nc + b)]; });
  });
  const int64_t n = R.ntr() * R.ntc();
  const std::vector<float> st = statistic_in_use(
      p, {add_partials(w_part, n, 1, pl.reversed_tile_sum)[0], add_partials(u_part, n, 1, pl.reversed_tile_sum)[0]}, pl);
  const float step_size = ns_lamb_step_size(h, st[0], st[1]);
  for_each_state_element(p, g, [&](int64_t, int64_t, size_t i) {
    p.w[i] = fsub(p.w[i], fmul(step_size, lamb_direction(s, p.m[i], p.v[i], p.w[i])));
  });
  return 1;
}

// Adam-mini, Zhang et al. 2025 ("Adam-mini: Use Fewer Learning Rates To Gain More"), Algorithm 1
// and the official code's step: m <- b1 m + (1-b1) g element-wise; per block b,
// v_b <- b2 v_b + (1-b2) mean_b(g*g); w <- w (1 - lr wd); w <- w - (lr/bc1) m / (sqrt(v_b)/sqrt(bc2) + eps).
// A block is rows_per_block output rows by every input column (one head of Q/K; 1 row for V, the
// attention output and the MLP), so its mean spans every tile column. Pass 1 (over G): m and the
// row partials; pass 2 (element-wise over the stored m, w): the weights.
int step_adam_mini(NsParam& p, const NsHyper& h, int64_t step, const NsGrid& g, const NsGSource& src,
                   const NsPlants& pl) {
  const Region R{g};
  const AdamMiniScalars s = ns_adam_mini_scalars(h, step);
  std::vector<float> row_part(size_t(R.ntc() * R.nr()));
  src([&](const TileCoord& tc, const float* gt, int64_t ldg) {
    for_each_element(p, tc, gt, ldg, [&](int64_t, int64_t, size_t i, float gi) {
      p.m[i] = ns_moving(s.b1, s.omb1, p.m[i], gi);
    });
    tile_row_sums(gt, ldg, tc.r1 - tc.r0, tc.c1 - tc.c0, 0.0f,
                  &row_part[size_t(g.tile_col_of(tc) * R.nr() + (tc.r0 - g.r0))]);
  });
  const std::vector<float> rows = add_partials(row_part, R.ntc(), R.nr(), pl.reversed_tile_sum);
  const int64_t n_blocks = int64_t(p.row_stat.size());
  const int64_t shift = pl.block_shifted_one_row ? 1 : 0;
  auto block_of = [&](int64_t r) { return ns_adam_mini_block(r, h.rows_per_block, n_blocks, shift); };
  const int64_t b_lo = block_of(g.r0), b_hi = block_of(g.r1 - 1);
  std::vector<float> sums(size_t(b_hi - b_lo + 1), 0.0f), counts(sums.size(), 0.0f);
  for (int64_t r = g.r0; r < g.r1; ++r) {
    const size_t b = size_t(block_of(r) - b_lo);
    sums[b] = fadd(sums[b], rows[size_t(r - g.r0)]);
    counts[b] = fadd(counts[b], float(R.nc()));  // exact: small integers
  }
  std::vector<float> means(sums.size());
  for (size_t b = 0; b < sums.size(); ++b) means[b] = fdiv(sums[b], counts[b]);
  means = statistic_in_use(p, std::move(means), pl);
  for (int64_t b = b_lo; b <= b_hi; ++b)
    p.row_stat[size_t(b)] = ns_moving(s.b2, s.omb2, p.row_stat[size_t(b)], means[size_t(b - b_lo)]);
  for_each_state_element(p, g, [&](int64_t r, int64_t, size_t i) {
    p.w[i] = adam_mini_weight(s, p.w[i], p.m[i], p.row_stat[size_t(block_of(r))]);
  });
  return 1;
}

// Adafactor, Shazeer & Stern 2018 ("Adafactor: Adaptive Learning Rates with Sublinear Memory
// Cost"), Algorithm 4 (factored second moment) with update clipping (section 6) and relative
// scaling alpha = max(eps2, RMS(w)) rho, rho = lr: beta2_t = 1 - t^decay_rate,
// R <- beta2_t R + (1-beta2_t) (G^2 + eps1) 1, C <- beta2_t C + (1-beta2_t) 1^T (G^2 + eps1),
// V = R C / (1^T R), U = G / sqrt(V), w <- w - alpha / max(1, RMS(U)/d) U.
// Pass 1 (over G): row and column sums and ||w||^2; pass 2 (G recomputed): ||U||^2; pass 3 (G
// recomputed): the weights.
int step_adafactor(NsParam& p, const NsHyper& h, int64_t step, const NsGrid& g, const NsGSource& src,
                   const NsPlants& pl) {
  const Region R{g};
  const AdafactorScalars s = ns_adafactor_scalars(h, step);
  std::vector<float> row_part(size_t(R.ntc() * R.nr())), col_part(size_t(R.ntr() * R.nc()));
  src([&](const TileCoord& tc, const float* gt, int64_t ldg) {
    const int64_t nr = tc.r1 - tc.r0, nc = tc.c1 - tc.c0;
    tile_row_sums(gt, ldg, nr, nc, s.eps1, &row_part[size_t(g.tile_col_of(tc) * R.nr() + (tc.r0 - g.r0))]);
    tile_col_sums(gt, ldg, nr, nc, s.eps1, &col_part[size_t(g.tile_row_of(tc) * R.nc() + (tc.c0 - g.c0))]);
  });
  std::vector<float> st = add_partials(row_part, R.ntc(), R.nr(), pl.reversed_tile_sum);
  const std::vector<float> cols = add_partials(col_part, R.ntr(), R.nc(), pl.reversed_tile_sum);
  st.insert(st.end(), cols.begin(), cols.end());
  st.push_back(sum_of_squares_in_grid(&p.w[size_t(g.r0 * p.cols + g.c0)], p.cols, g, pl.reversed_tile_sum));
  st = statistic_in_use(p, std::move(st), pl);
  for (int64_t r = g.r0; r < g.r1; ++r)
    p.row_stat[size_t(r)] = ns_moving(s.beta2t, s.omb2t, p.row_stat[size_t(r)], st[size_t(r - g.r0)]);
  for (int64_t c = g.c0; c < g.c1; ++c)
    p.col_stat[size_t(c)] = ns_moving(s.beta2t, s.omb2t, p.col_stat[size_t(c)], st[size_t(R.nr() + c - g.c0)]);
  const float row_total = ns_chain(R.nr(), [&](int64_t r) { return p.row_stat[size_t(g.r0 + r)]; });
  auto update_of = [&](int64_t r, int64_t c, float gi) {
    return adafactor_update(gi, p.row_stat[size_t(r)], p.col_stat[size_t(c)], row_total);
  };
  std::vector<float> u_part(size_t(R.ntr() * R.ntc()));
  src([&](const TileCoord& tc, const float* gt, int64_t ldg) {
    u_part[size_t(R.id(tc))] = ns_tile_chain(tc.r1 - tc.r0, tc.c1 - tc.c0, [&](int64_t a, int64_t b) {
      return ns_square(update_of(tc.r0 + a, tc.c0 + b, gt[a * ldg + b]));
    });
  });
  const float u_sq = add_partials(u_part, R.ntr() * R.ntc(), 1, pl.reversed_tile_sum)[0];
  const float step_size = ns_adafactor_step_size(h, u_sq, st.back(), R.nr() * R.nc());
  src([&](const TileCoord& tc, const float* gt, int64_t ldg) {
    for_each_element(p, tc, gt, ldg, [&](int64_t r, int64_t c, size_t i, float gi) {
      p.w[i] = fsub(p.w[i], fmul(step_size, update_of(r, c, gi)));
    });
  });
  return 3;
}

// SM3, Anil et al. 2019 ("Memory-Efficient Adaptive Optimization"), with the rows and the columns
// as the cover. SM3-I (Algorithm 1): mu_r <- mu_r + max_{j in r} g_j^2 for each cover set,
// nu_i = min_{r ∋ i} mu_r, w_i <- w_i - lr g_i / sqrt(nu_i) (0 where nu_i = 0). Pass 1 (over G): the
// row and column maxima (order-free); pass 2 (G recomputed): the weights.
int step_sm3_i(NsParam& p, const NsHyper& h, int64_t, const NsGrid& g, const NsGSource& src, const NsPlants& pl) {
  const Region R{g};
  std::vector<float> row_part(size_t(R.ntc() * R.nr()), 0.0f), col_part(size_t(R.ntr() * R.nc()), 0.0f);
  src([&](const TileCoord& tc, const float* gt, int64_t ldg) {
    const int64_t tr = g.tile_row_of(tc), tcl = g.tile_col_of(tc);
    for_each_element(p, tc, gt, ldg, [&](int64_t r, int64_t c, size_t, float gi) {
      float& rm = row_part[size_t(tcl * R.nr() + r - g.r0)];
      float& cm = col_part[size_t(tr * R.nc() + c - g.c0)];
      rm = ns_fmax(rm, ns_square(gi));
      cm = ns_fmax(cm, ns_square(gi));
    });
  });
  std::vector<float> st = max_partials(row_part, R.ntc(), R.nr());
  const std::vector<float> cols = max_partials(col_part, R.ntr(), R.nc());
  st.insert(st.end(), cols.begin(), cols.end());
  st = statistic_in_use(p, std::move(st), pl);
  for (int64_t r = g.r0; r < g.r1; ++r) p.row_stat[size_t(r)] = fadd(p.row_stat[size_t(r)], st[size_t(r - g.r0)]);
  for (int64_t c = g.c0; c < g.c1; ++c)
    p.col_stat[size_t(c)] = fadd(p.col_stat[size_t(c)], st[size_t(R.nr() + c - g.c0)]);
  const float lr = round_scalar(h.lr);
  src([&](const TileCoord& tc, const float* gt, int64_t ldg) {
    for_each_element(p, tc, gt, ldg, [&](int64_t r, int64_t c, size_t i, float gi) {
      p.w[i] = sm3_weight(p.w[i], lr, gi, ns_fmin(p.row_stat[size_t(r)], p.col_stat[size_t(c)]));
    });
  });
  return 2;
}

// SM3-II (Anil et al. 2019, Algorithm 2): nu'_i = min_{r ∋ i} mu'_r(previous step) + g_i^2,
// w_i <- w_i - lr g_i / sqrt(nu'_i), mu'_r(this step) = max_{i in r} nu'_i. The new maxima are
// order-free, so one pass over G in any tile order is exact.
int step_sm3_ii(NsParam& p, const NsHyper& h, int64_t, const NsGrid& g, const NsGSource& src, const NsPlants&) {
  const Region R{g};
  std::vector<float> new_rows(size_t(R.nr()), 0.0f), new_cols(size_t(R.nc()), 0.0f);
  const float lr = round_scalar(h.lr);
  src([&](const TileCoord& tc, const float* gt, int64_t ldg) {
    for_each_element(p, tc, gt, ldg, [&](int64_t r, int64_t c, size_t i, float gi) {
      const float nu = fadd(ns_fmin(p.row_stat[size_t(r)], p.col_stat[size_t(c)]), ns_square(gi));
      p.w[i] = sm3_weight(p.w[i], lr, gi, nu);
      new_rows[size_t(r - g.r0)] = ns_fmax(new_rows[size_t(r - g.r0)], nu);
      new_cols[size_t(c - g.c0)] = ns_fmax(new_cols[size_t(c - g.c0)], nu);
    });
  });
  std::copy(new_rows.begin(), new_rows.end(), p.row_stat.begin() + g.r0);
  std::copy(new_cols.begin(), new_cols.end(), p.col_stat.begin() + g.c0);
  return 1;
}

// LARS, You, Gitman & Ginsburg 2017 ("Large Batch Training of Convolutional Networks"),
// Algorithm 1: local_lr = eta ||w|| / (||g|| + beta ||w||), v <- m v + gamma local_lr (g + beta w),
// w <- w - v. The gradient norm is needed before g enters the momentum: pass 1 (over G) forms
// ||g||^2 (and ||w||^2), pass 2 (G recomputed) updates.
int step_lars(NsParam& p, const NsHyper& h, int64_t, const NsGrid& g, const NsGSource& src, const NsPlants& pl) {
  const Region R{g};
  std::vector<float> g_part(size_t(R.ntr() * R.ntc()));
  src([&](const TileCoord& tc, const float* gt, int64_t ldg) {
    g_part[size_t(R.id(tc))] = tile_sum_of_squares(gt, ldg, tc.r1 - tc.r0, tc.c1 - tc.c0);
  });
  const std::vector<float> st = statistic_in_use(
      p, {sum_of_squares_in_grid(&p.w[size_t(g.r0 * p.cols + g.c0)], p.cols, g, pl.reversed_tile_sum),
          add_partials(g_part, R.ntr() * R.ntc(), 1, pl.reversed_tile_sum)[0]}, pl);
  const LarsScalars s = ns_lars_scalars(h, st[0], st[1]);
  src([&](const TileCoord& tc, const float* gt, int64_t ldg) {
    for_each_element(p, tc, gt, ldg, [&](int64_t, int64_t, size_t i, float gi) { lars_element(s, gi, p.m[i], p.w[i]); });
  });
  return 2;
}

// Muon, Jordan 2024 ("Muon: An optimizer for hidden layers in neural networks", and its code):
// B <- mu B + G (element-wise, fused: pass 1 over G), O = NewtonSchulz5(B) (a dense step on the
// state B, so G is never materialized), w <- w (1 - lr wd) - lr sqrt(max(1, rows/cols)) O.
int step_muon(NsParam& p, const NsHyper& h, int64_t, const NsGrid& g, const NsGSource& src, const NsPlants&) {
  const Region R{g};
  const MuonScalars s = ns_muon_scalars(h, R.nr(), R.nc());
  src([&](const TileCoord& tc, const float* gt, int64_t ldg) {
    for_each_element(p, tc, gt, ldg, [&](int64_t, int64_t, size_t i, float gi) { p.m[i] = muon_momentum(s, p.m[i], gi); });
  });
  const std::vector<float> O = newton_schulz5(&p.m[size_t(g.r0 * p.cols + g.c0)], p.cols, R.nr(), R.nc(), h.ns_steps,
                                              g.tile_rows, g.tile_cols);
  for_each_state_element(p, g, [&](int64_t r, int64_t c, size_t i) {
    p.w[i] = muon_weight(s, p.w[i], O[size_t((r - g.r0) * R.nc() + (c - g.c0))]);
  });
  return 1;
}

}  // namespace

const char* ns_rule_name(NsRule r) {
  switch (r) {
    case NsRule::lamb: return "lamb";
    case NsRule::adam_mini: return "adam_mini";
    case NsRule::adafactor: return "adafactor";
    case NsRule::sm3_i: return "sm3_i";
    case NsRule::sm3_ii: return "sm3_ii";
    case NsRule::lars: return "lars";
    case NsRule::muon: return "muon";
  }
  throw std::invalid_argument("ns_rule_name: unknown rule");
}

bool ns_rule_sums(NsRule r) {
  return r == NsRule::lamb || r == NsRule::adam_mini || r == NsRule::adafactor || r == NsRule::lars;
}
bool ns_rule_has_current_statistic(NsRule r) { return r != NsRule::sm3_ii && r != NsRule::muon; }

LambScalars ns_lamb_scalars(const NsHyper& h, int64_t step) {
  return lamb_scalars(LambHyper{h.lr, h.beta1, h.beta2, h.eps, h.weight_decay}, step);
}
float ns_lamb_step_size(const NsHyper& h, float w_sq, float u_sq) {
  const double ratio = (w_sq > 0.0f && u_sq > 0.0f) ? std::sqrt(double(w_sq)) / std::sqrt(double(u_sq)) : 1.0;
  return round_scalar(h.lr * ratio);
}
AdamMiniScalars ns_adam_mini_scalars(const NsHyper& h, int64_t step) {
  AdamMiniScalars s;
  s.b1 = round_scalar(h.beta1);
  s.omb1 = round_scalar(1.0 - h.beta1);
  s.b2 = round_scalar(h.beta2);
  s.omb2 = round_scalar(1.0 - h.beta2);
  s.decay = round_scalar(1.0 - h.lr * h.weight_decay);
  s.step_size = round_scalar(h.lr / (1.0 - std::pow(h.beta1, double(step))));
  s.sqrt_bc2 = round_scalar(std::sqrt(1.0 - std::pow(h.beta2, double(step))));
  s.eps = round_scalar(h.eps);
  return s;
}
AdafactorScalars ns_adafactor_scalars(const NsHyper& h, int64_t step) {
  const double decay = std::pow(double(step), h.decay_rate);
  return AdafactorScalars{round_scalar(h.eps1), round_scalar(1.0 - decay), round_scalar(decay)};
}
float ns_adafactor_step_size(const NsHyper& h, float u_sq, float w_sq, int64_t elements) {
  const double n = double(elements);
  const double clip = std::max(1.0, std::sqrt(double(u_sq) / n) / h.clip_threshold);
  const double alpha = std::max(h.eps2, std::sqrt(double(w_sq) / n)) * h.lr;
  return round_scalar(alpha / clip);
}
LarsScalars ns_lars_scalars(const NsHyper& h, float w_sq, float g_sq) {
  const double wn = std::sqrt(double(w_sq)), gn = std::sqrt(double(g_sq));
  const double local = (wn > 0.0 && gn > 0.0) ? h.trust_coefficient * wn / (gn + h.weight_decay * wn) : 1.0;
  return LarsScalars{round_scalar(h.lr * local), round_scalar(h.momentum), round_scalar(h.weight_decay)};
}
MuonScalars ns_muon_scalars(const NsHyper& h, int64_t rows, int64_t cols) {
  return MuonScalars{round_scalar(h.momentum), round_scalar(1.0 - h.lr * h.weight_decay),
                     round_scalar(h.lr * std::sqrt(std::max(1.0, double(rows) / double(cols))))};
}

void NsHyper::validate() const {
  const char* n = "nonseparable";
  require_hyper(finite_nonneg(lr), n, "lr must be finite and >= 0");
  require_hyper(beta_ok(beta1) && beta_ok(beta2) && beta_ok(momentum), n, "betas and momentum must be in [0, 1)");
  require_hyper(finite_nonneg(eps) && finite_nonneg(eps1) && finite_nonneg(eps2), n, "eps, eps1, eps2 must be finite and >= 0");
  require_hyper(finite_nonneg(weight_decay), n, "weight_decay must be finite and >= 0");
  require_hyper(finite_nonneg(trust_coefficient), n, "trust_coefficient must be finite and >= 0");
  require_hyper(std::isfinite(clip_threshold) && clip_threshold > 0.0, n, "clip_threshold must be finite and > 0");
  require_hyper(std::isfinite(decay_rate) && decay_rate < 0.0, n, "decay_rate must be finite and < 0");
  require_hyper(rows_per_block >= 1, n, "rows_per_block must be >= 1");
  require_hyper(ns_steps >= 0 && ns_steps <= 100, n, "ns_steps must be in [0, 100]");
}

NsParam NsParam::make(NsRule rule, int64_t rows, int64_t cols, const std::vector<float>& w0, const NsHyper& h) {
  h.validate();
  if (rows <= 0 || cols <= 0) throw std::invalid_argument("NsParam: shape must be positive");
  if (int64_t(w0.size()) != rows * cols) throw std::invalid_argument("NsParam: w0 has the wrong size");
  NsParam p;
  p.rule = rule;
  p.rows = rows;
  p.cols = cols;
  p.w = w0;
  if (rule == NsRule::lamb || rule == NsRule::adam_mini || rule == NsRule::lars || rule == NsRule::muon)
    p.m.assign(w0.size(), 0.0f);
  if (rule == NsRule::lamb) p.v.assign(w0.size(), 0.0f);
  if (rule == NsRule::adam_mini) {
    if (rows % h.rows_per_block != 0)
      throw std::invalid_argument("NsParam: adam_mini's rows_per_block must divide the rows");
    p.row_stat.assign(size_t(rows / h.rows_per_block), 0.0f);
  }
  if (rule == NsRule::adafactor || rule == NsRule::sm3_i || rule == NsRule::sm3_ii) {
    p.row_stat.assign(size_t(rows), 0.0f);
    p.col_stat.assign(size_t(cols), 0.0f);
  }
  return p;
}

int64_t NsGrid::n_tile_rows() const { return (r1 - r0 + tile_rows - 1) / tile_rows; }
int64_t NsGrid::n_tile_cols() const { return (c1 - c0 + tile_cols - 1) / tile_cols; }
int64_t NsGrid::tile_row_of(const TileCoord& tc) const {
  if (tc.r0 < r0 || tc.r0 >= r1 || (tc.r0 - r0) % tile_rows != 0 || tc.r1 != std::min(r1, tc.r0 + tile_rows))
    throw std::invalid_argument("NsGrid: a tile that is not on the grid");
  return (tc.r0 - r0) / tile_rows;
}
int64_t NsGrid::tile_col_of(const TileCoord& tc) const {
  if (tc.c0 < c0 || tc.c0 >= c1 || (tc.c0 - c0) % tile_cols != 0 || tc.c1 != std::min(c1, tc.c0 + tile_cols))
    throw std::invalid_argument("NsGrid: a tile that is not on the grid");
  return (tc.c0 - c0) / tile_cols;
}
NsGrid NsGrid::whole(int64_t rows, int64_t cols, int64_t tile_rows, int64_t tile_cols) {
  if (rows < 1 || cols < 1 || tile_rows < 1 || tile_cols < 1)
    throw std::invalid_argument("NsGrid: shape and tile shape must be positive");
  return NsGrid{0, rows, 0, cols, tile_rows, tile_cols};
}

NsGSource ns_materialized_source(const std::vector<float>& G, int64_t rows, int64_t cols, const NsGrid& grid) {
  if (int64_t(G.size()) != rows * cols || grid.r1 > rows || grid.c1 > cols)
    throw std::invalid_argument("ns_materialized_source: G and the grid disagree on the shape");
  return [&G, cols, grid](const GTileConsumer& consume) {
    for (int64_t a = 0; a < grid.n_tile_rows(); ++a)
      for (int64_t b = 0; b < grid.n_tile_cols(); ++b) {
        TileCoord tc;
        tc.tile_row = a;
        tc.tile_col = b;
        tc.id = a * grid.n_tile_cols() + b;
        tc.r0 = grid.r0 + a * grid.tile_rows;
        tc.r1 = std::min(grid.r1, tc.r0 + grid.tile_rows);
        tc.c0 = grid.c0 + b * grid.tile_cols;
        tc.c1 = std::min(grid.c1, tc.c0 + grid.tile_cols);
        consume(tc, &G[size_t(tc.r0 * cols + tc.c0)], cols);
      }
  };
}

NsGSource ns_twin_source(const bf16* X, const bf16* dY, int64_t T, int64_t rows, int64_t cols,
                         const TwinSchedule& sched) {
  return [=](const GTileConsumer& consume) { twin_for_each_g_tile(X, dY, T, cols, rows, sched, consume); };
}

int ns_step(NsParam& p, const NsHyper& h, int64_t step, const NsGrid& grid, const NsGSource& source,
            const NsPlants& plants) {
  h.validate();
  if (step < 1) throw std::invalid_argument("ns_step: step counts from 1");
  if (grid.r0 < 0 || grid.c0 < 0 || grid.r1 > p.rows || grid.c1 > p.cols || grid.r0 >= grid.r1 ||
      grid.c0 >= grid.c1 || grid.tile_rows < 1 || grid.tile_cols < 1)
    throw std::invalid_argument("ns_step: grid outside the tensor");
  switch (p.rule) {
    case NsRule::lamb: return step_lamb(p, h, step, grid, source, plants);
    case NsRule::adam_mini: return step_adam_mini(p, h, step, grid, source, plants);
    case NsRule::adafactor: return step_adafactor(p, h, step, grid, source, plants);
    case NsRule::sm3_i: return step_sm3_i(p, h, step, grid, source, plants);
    case NsRule::sm3_ii: return step_sm3_ii(p, h, step, grid, source, plants);
    case NsRule::lars: return step_lars(p, h, step, grid, source, plants);
    case NsRule::muon: return step_muon(p, h, step, grid, source, plants);
  }
  throw std::invalid_argument("ns_step: unknown rule");
}

void ns_naive_fused_step(NsParam& p, const NsHyper& h, const bf16* X, const bf16* dY, int64_t T,
                         int64_t step, const TwinSchedule& sched) {
  twin_for_each_g_tile(X, dY, T, p.cols, p.rows, sched, [&](const TileCoord& tc, const float* g, int64_t ldg) {
    const NsGrid tile{tc.r0, tc.r1, tc.c0, tc.c1, tc.r1 - tc.r0, tc.c1 - tc.c0};
    ns_step(p, h, step, tile, [&](const GTileConsumer& consume) { consume(tc, g, ldg); });
  });
}

std::string ns_order_description(NsRule r) {
  const std::string sums =
      "each tile's partial an fp32 RNE chain from +0 along each tile row, the row sums then chained from +0 in "
      "ascending row (along the row or down the column for a row or column sum), partials added from +0 in ascending tile index (row-major id; tile column "
      "for a row sum; tile row for a column sum), independent of the tile visit order";
  switch (r) {
    case NsRule::lamb:
      return "LAMB: statistic ||w||^2, ||u||^2 (u from the current m, v). Pass 1 over G: m, v, u, norm partials; "
             "pass 2 element-wise over stored m, v, w. Sums: " + sums + "; ratio in double, rounded once";
    case NsRule::adam_mini:
      return "Adam-mini: statistic mean of g^2 per block of rows_per_block rows x all columns. Pass 1 over G: m, "
             "row sums; pass 2 element-wise over stored m, w. Row sums: " + sums +
             "; block sum: row sums added from +0 in ascending row";
    case NsRule::adafactor:
      return "Adafactor: statistics row and column sums of g^2 + eps1, ||w||^2, then RMS(U). Pass 1 over G: row and "
             "column sums; pass 2 over G (recomputed): ||U||^2; pass 3 over G (recomputed): weights. Sums: " + sums +
             "; 1^T R added from +0 in ascending row; RMS and alpha in double, rounded once";
    case NsRule::sm3_i:
      return "SM3-I: statistic row and column maxima of g^2 (order-free). Pass 1 over G: maxima; pass 2 over G "
             "(recomputed): weights";
    case NsRule::sm3_ii:
      return "SM3-II: the previous step's cover maxima plus an order-free max of this step's nu'. One pass over G, "
             "any tile order";
    case NsRule::lars:
      return "LARS: statistic ||g||^2 and ||w||^2 before g enters the momentum. Pass 1 over G: ||g||^2; pass 2 over G "
             "(recomputed): momentum and weights. Sums: " + sums + "; local lr in double, rounded once";
    case NsRule::muon:
      return "Muon: momentum B = mu B + G element-wise in one pass over G; Newton-Schulz (5 steps, (3.4445, -4.7750, "
             "2.0315), fp32) as a dense step on the state B: Frobenius norm a tensor sum over the grid's tiles of X, each product "
             "element one chain from +0 in ascending k";
  }
  throw std::invalid_argument("ns_order_description: unknown rule");
}

float ns_tiled_sum_of_squares(const float* x, int64_t ld, const NsGrid& grid) {
  return sum_of_squares_in_grid(x, ld, grid, false);
}

std::vector<float> ns_tiled_row_sums_of_squares(const float* x, int64_t ld, const NsGrid& g, float add) {
  const int64_t nr = g.r1 - g.r0, ntc = g.n_tile_cols();
  std::vector<float> parts(size_t(ntc * nr));
  for (int64_t a = 0; a < g.n_tile_rows(); ++a)
    for (int64_t b = 0; b < ntc; ++b) {
      const int64_t r0 = a * g.tile_rows, c0 = b * g.tile_cols;  // from the region's corner
      tile_row_sums(x + r0 * ld + c0, ld, std::min(g.tile_rows, nr - r0), std::min(g.tile_cols, g.c1 - g.c0 - c0), add,
                    &parts[size_t(b * nr + r0)]);
    }
  return add_partials(parts, ntc, nr, false);
}

std::vector<float> newton_schulz5(const float* B, int64_t ldb, int64_t rows, int64_t cols, int steps,
                                  int64_t tile_rows, int64_t tile_cols) {
  const float a = kNsA, b = kNsB, c = kNsC;
  const bool tall = rows > cols;
  const int64_t n = tall ? cols : rows, k = tall ? rows : cols;  // X is n x k, n <= k
  std::vector<float> X(size_t(n * k));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j) X[size_t(i * k + j)] = tall ? B[j * ldb + i] : B[i * ldb + j];
  const float sq = ns_tiled_sum_of_squares(X.data(), k, NsGrid::whole(n, k, tile_rows, tile_cols));
  const float norm = fadd(fsqrt(sq), kNsNormEps);
  for (float& x : X) x = fdiv(x, norm);
  std::vector<float> A(size_t(n * n)), Bm(A.size()), Xn(X.size());
  for (int s = 0; s < steps; ++s) {
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float acc = 0.0f;
        for (int64_t l = 0; l < k; ++l) acc = fadd(acc, fmul(X[size_t(i * k + l)], X[size_t(j * k + l)]));
        A[size_t(i * n + j)] = acc;
      }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float acc = 0.0f;
        for (int64_t l = 0; l < n; ++l) acc = fadd(acc, fmul(A[size_t(i * n + l)], A[size_t(l * n + j)]));
        Bm[size_t(i * n + j)] = fadd(fmul(b, A[size_t(i * n + j)]), fmul(c, acc));
      }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < k; ++j) {
        float acc = 0.0f;
        for (int64_t l = 0; l < n; ++l) acc = fadd(acc, fmul(Bm[size_t(i * n + l)], X[size_t(l * k + j)]));
        Xn[size_t(i * k + j)] = fadd(fmul(a, X[size_t(i * k + j)]), acc);
      }
    X.swap(Xn);
  }
  std::vector<float> O(size_t(rows * cols));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j) O[size_t(tall ? j * cols + i : i * cols + j)] = X[size_t(i * k + j)];
  return O;
}

}  // namespace fh
