#include "reference/fidelity_producers.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include <Eigen/Dense>  // the stagnation problem's exact least-squares optimum (double QR)

#include "kernels/formats/int8_block.h"

namespace fh {

const char* int8_tile_defect_name(Int8TileDefect d) {
  switch (d) {
    case Int8TileDefect::none: return "none";
    case Int8TileDefect::straddle_tile_edge: return "straddle_tile_edge";
    case Int8TileDefect::absmax_over_tile: return "absmax_over_tile";
  }
  return "?";
}

const char* sr_variant_name(SrVariant v) {
  switch (v) {
    case SrVariant::kernel: return "kernel";
    case SrVariant::bits8: return "bits8";
    case SrVariant::shared_tile_bits: return "shared_tile_bits";
  }
  return "?";
}

namespace {

// ---- INT8 tile update copy ----

template <class Rule>
void tiled_copy_typed(HostParam& w, const typename Rule::Scalars& s, const std::vector<float>& G,
                      int64_t tile_cols, Int8TileDefect defect) {
  const int64_t rows = w.rows, cols = w.cols, bpr = w.blocks_per_row();
  const bool straddle = defect == Int8TileDefect::straddle_tile_edge;
  for (int64_t tc0 = 0; tc0 < cols; tc0 += tile_cols) {
    const int64_t tc1 = std::min(cols, tc0 + tile_cols);
    if (!straddle) {  // DESIGN contract 5, as apply_rule_region enforces it
      require_block_aligned(StateFormat::int8, tc0, cols, "copy tile");
      require_block_aligned(StateFormat::int8, tc1, cols, "copy tile");
    }
    // Segments: [start, end) with the absmax slot start / 64 (as update_segment indexes it).
    std::vector<std::pair<int64_t, int64_t>> segs;
    for (int64_t c = tc0; c < tc1;) {
      const int64_t next = straddle ? std::min(tc1, c + kInt8Block)
                                    : std::min(tc1, (c / kInt8Block + 1) * kInt8Block);
      segs.push_back({c, next});
      c = next;
    }
    std::vector<float> st_new[kMaxStates];
    for (auto& v : st_new) v.assign(size_t(tc1 - tc0), 0.0f);
    for (int64_t r = 0; r < rows; ++r) {
      for (auto [c0, c1] : segs) {
        const int64_t blk = r * bpr + c0 / kInt8Block;
        for (int64_t c = c0; c < c1; ++c) {
          const int64_t idx = r * cols + c;
          float st[kMaxStates];
          for (int k = 0; k < kMaxStates; ++k)
            st[k] = w.decls.slot[k].kept ? int8_decode(w.st_i8[k][size_t(idx)], w.decls.slot[k].nonnegative,
                                                       w.st_absmax[k][size_t(blk)])
                                         : 0.0f;
          float p = w.master[size_t(idx)];
          Rule::update(s, p, G[size_t(idx)], st);
          w.master[size_t(idx)] = p;
          w.bf16[size_t(idx)] = float_to_bf16_rne(p);
          for (int k = 0; k < kMaxStates; ++k) st_new[k][size_t(c - tc0)] = st[k];
        }
      }
      for (int k = 0; k < kMaxStates; ++k) {
        if (!w.decls.slot[k].kept) continue;
        const bool nn = w.decls.slot[k].nonnegative;
        uint8_t* bytes = w.st_i8[k].data() + r * cols;
        const float tile_a = int8_block_absmax(st_new[k].data(), int(tc1 - tc0));
        for (auto [c0, c1] : segs) {
          float* amax = w.st_absmax[k].data() + r * bpr + c0 / kInt8Block;
          const float* x = st_new[k].data() + (c0 - tc0);
          if (defect == Int8TileDefect::absmax_over_tile) {
            *amax = tile_a;
            for (int64_t c = c0; c < c1; ++c) bytes[c] = int8_encode_value(x[c - c0], tile_a, nn);
          } else {
            int8_encode_block(x, int(c1 - c0), nn, bytes + c0, amax);
          }
        }
      }
    }
  }
}

}  // namespace

void int8_tiled_update_copy(HostParam& w, const std::vector<float>& G, int64_t step,
                            int64_t tile_cols, Int8TileDefect defect) {
  if (w.state_format != StateFormat::int8 || w.weight_store != WeightStore::fp32_master)
    throw std::invalid_argument("int8_tiled_update_copy: needs int8 state and an fp32_master store");
  if (G.size() != size_t(w.rows * w.cols)) throw std::invalid_argument("int8_tiled_update_copy: G has the wrong size");
  if (tile_cols < 1 || step < 1) throw std::invalid_argument("int8_tiled_update_copy: tile_cols >= 1, step >= 1");
  visit_rule(w.rule.id, [&](auto r) {
    using Rule = decltype(r);
    tiled_copy_typed<Rule>(w, Rule::scalars(hyper_of<Rule>(w.rule), step), G, tile_cols, defect);
  });
}

// ---- stochastic rounding ----

bf16 sr_round(float x, const sr_key& key, int64_t r, int64_t c, int64_t cols, int64_t tile_rows,
                  int64_t tile_cols, SrVariant v) {
  switch (v) {
    case SrVariant::kernel: return float_to_bf16_sr(x, sr_bits(key, uint64_t(r * cols + c)));
    case SrVariant::bits8: return float_to_bf16_sr(x, sr_bits(key, uint64_t(r * cols + c)) & 0xff00u);
    case SrVariant::shared_tile_bits:
      return float_to_bf16_sr(x, sr_bits(key, uint64_t((r % tile_rows) * tile_cols + (c % tile_cols))));
  }
  throw std::invalid_argument("sr_round: unknown variant");
}

float sr_class_value(uint32_t low16, int64_t r, int64_t c) {
  const uint32_t sign = uint32_t(r & 1) << 31;
  const uint32_t expo = 0x70u + uint32_t((r >> 1) % 32);  // 2^-15 .. 2^16
  const uint32_t mant_hi = uint32_t((c * 37 + r * 11) & 0x7f);
  return u2f(sign | (expo << 23) | (mant_hi << 16) | low16);
}

SrClassStep sr_class_step(uint32_t low16, int64_t rows, int64_t cols) {
  SrClassStep st;
  SGD::Hyper h;
  h.lr = 1.0;
  st.rule = RuleConfig{RuleId::sgd, h};
  st.w0.resize(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) st.w0[size_t(r * cols + c)] = u2f(f2u(sr_class_value(low16, r, c)) & 0xffff0000u);
  st.X.assign(size_t(2 * cols), bf16::from_bits(0x3f80));  // bf16 1.0
  st.dY.resize(size_t(2 * rows));
  for (int64_t r = 0; r < rows; ++r) {
    const float v = sr_class_value(low16, r, 0);
    const int e = int((f2u(v) >> 23) & 0xff) - 127;
    const double sgn = f2u(v) >> 31 ? 1.0 : -1.0;  // g = w0 - value = -(sign) * low16 * 2^(e-23)
    st.dY[size_t(r)] = float_to_bf16_rne(float(sgn * double(low16 >> 8) * std::ldexp(1.0, e - 15)));
    st.dY[size_t(rows + r)] = float_to_bf16_rne(float(sgn * double(low16 & 0xff) * std::ldexp(1.0, e - 23)));
  }
  return st;
}

// ---- the stagnation experiment's least-squares problem ----

LeastSquaresProblem LeastSquaresProblem::make(uint64_t seed, int64_t out, int64_t in, int64_t eval_T,
                                              double w_star_scale, double target_noise) {
  LeastSquaresProblem p;
  p.out = out;
  p.in = in;
  p.eval_T = eval_T;
  p.target_noise = target_noise;
  CaseRng prob(seed);
  p.wstar = gen_weights_f32(prob, out * in, w_star_scale);
  p.w0 = gen_weights_f32(prob, out * in, 0.01);
  p.Xe = gen_bf16(prob, eval_T * in, CaseDistribution::normal);
  p.Ye = p.targets(p.Xe, eval_T, prob);
  return p;
}

std::vector<double> LeastSquaresProblem::targets(const std::vector<bf16>& X, int64_t n, CaseRng& rng) const {
  const int64_t O = out, I = in;
  std::vector<double> Y(size_t(n * O));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t o = 0; o < O; ++o) {
      double acc = 0;
      for (int64_t i = 0; i < I; ++i) acc += double(bf16_to_float(X[size_t(t * I + i)])) * double(wstar[size_t(o * I + i)]);
      Y[size_t(t * O + o)] = acc + target_noise * rng.normalish();
    }
  return Y;
}

std::vector<double> LeastSquaresProblem::predict(const std::vector<bf16>& X, int64_t n,
                                                 const std::vector<bf16>& w_bf16) const {
  const int64_t O = out, I = in;
  std::vector<double> P(size_t(n * O));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t o = 0; o < O; ++o) {
      double acc = 0;
      for (int64_t i = 0; i < I; ++i)
        acc += double(bf16_to_float(X[size_t(t * I + i)])) * double(bf16_to_float(w_bf16[size_t(o * I + i)]));
      P[size_t(t * O + o)] = acc;
    }
  return P;
}

double LeastSquaresProblem::loss(const std::vector<double>& P, const std::vector<double>& Y, int64_t n) {
  double s = 0;
  for (size_t i = 0; i < P.size(); ++i) s += (P[i] - Y[i]) * (P[i] - Y[i]);
  return 0.5 * s / double(n);
}

LeastSquaresProblem::Optimum LeastSquaresProblem::exact_optimum() const {
  using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Mat X(eval_T, in), Y(eval_T, out), Ws(out, in);
  for (int64_t t = 0; t < eval_T; ++t)
    for (int64_t i = 0; i < in; ++i) X(t, i) = double(bf16_to_float(Xe[size_t(t * in + i)]));  // exact
  for (int64_t t = 0; t < eval_T; ++t)
    for (int64_t o = 0; o < out; ++o) Y(t, o) = Ye[size_t(t * out + o)];
  for (int64_t k = 0; k < out * in; ++k) Ws.data()[k] = double(wstar[size_t(k)]);
  const Eigen::ColPivHouseholderQR<Mat> qr(X);
  const Mat Wt = qr.solve(Y);  // [in, out]
  Optimum r;
  r.rank = qr.rank();
  const Mat R = X * Wt - Y;
  r.loss = 0.5 * R.squaredNorm() / double(eval_T);
  r.wstar_loss = 0.5 * (X * Ws.transpose() - Y).squaredNorm() / double(eval_T);
  const double scale = X.norm() * (X.norm() * Wt.norm() + Y.norm());
  r.stationarity = scale > 0 ? (X.transpose() * R).norm() / scale : 0.0;
  r.w.resize(size_t(out * in));
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i) r.w[size_t(o * in + i)] = Wt(i, o);
  return r;
}

std::vector<bf16> LeastSquaresProblem::output_grad_bf16(const std::vector<double>& P,
                                                            const std::vector<double>& Y, int64_t T) {
  std::vector<bf16> dY(P.size());
  for (size_t i = 0; i < dY.size(); ++i) dY[i] = float_to_bf16_rne(float((P[i] - Y[i]) / double(T)));
  return dY;
}

// ---- gradient fidelity ----

std::vector<float> bf16_rne_widened(const std::vector<float>& g) {
  std::vector<float> r(g.size());
  for (size_t i = 0; i < g.size(); ++i) r[i] = bf16_to_float(float_to_bf16_rne(g[i]));
  return r;
}

std::vector<float> bf16_truncated_widened(const std::vector<float>& g) {
  std::vector<float> r(g.size());
  for (size_t i = 0; i < g.size(); ++i) r[i] = u2f(f2u(g[i]) & 0xffff0000u);
  return r;
}

}  // namespace fh
