#include "reference/model_kernels_host.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/common/bf16.h"
#include "kernels/common/ieee_shim.h"

namespace fh::model_ref {
namespace {

void require(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(std::string("model_ref: ") + what);
}
void require_size(size_t got, int64_t want, const char* what) {
  require(want >= 0 && got == size_t(want), what);
}

// The device's block reduction (block_sum / block_max in model_kernels.cuh) over elements
// 0 .. n-1: thread t folds term(t), term(t + 256), ... into a partial that starts at `init`,
// then slot i takes op(slot i, slot i + s) for s = 128, 64, ..., 1.
template <class Term, class Op>
float block_reduce(int64_t n, float init, Term term, Op op) {
  float red[kBlockThreads];
  for (int t = 0; t < kBlockThreads; ++t) {
    float v = init;
    for (int64_t j = t; j < n; j += kBlockThreads) v = op(v, term(j));
    red[t] = v;
  }
  for (int s = kBlockThreads / 2; s > 0; s >>= 1)
    for (int i = 0; i < s; ++i) red[i] = op(red[i], red[i + s]);
  return red[0];
}
template <class Term>
float block_sum(int64_t n, Term term) {
  return block_reduce(n, 0.0f, term, [](float a, float b) { return fadd(a, b); });
}
// fmaxf: a NaN operand loses, as on the device; the sign of a zero maximum cannot reach any
// output (exp(s - (+0)) and exp(s - (-0)) are the same).
template <class Term>
float block_max(int64_t n, Term term) {
  return block_reduce(n, -INFINITY, term, [](float a, float b) { return std::fmax(a, b); });
}

}  // namespace

float CorrectlyRoundedFns::exp(float x) const { return fcanon(float(std::exp(double(x)))); }
float CorrectlyRoundedFns::log(float x) const { return fcanon(float(std::log(double(x)))); }
float CorrectlyRoundedFns::rsqrt(float x) const { return fcanon(float(1.0 / std::sqrt(double(x)))); }

std::vector<float> embedding(const std::vector<bf16>& e, const std::vector<int32_t>& tok, int64_t T, int64_t H) {
  require_size(tok.size(), T, "embedding: tok");
  require(H > 0 && e.size() % size_t(H) == 0, "embedding: E is not [V, H]");
  const int64_t V = int64_t(e.size()) / H;
  std::vector<float> x(size_t(T * H));
  for (int64_t t = 0; t < T; ++t) {
    require(tok[size_t(t)] >= 0 && tok[size_t(t)] < V, "embedding: token out of range");
    for (int64_t c = 0; c < H; ++c) x[size_t(t * H + c)] = bf16_to_float(e[size_t(tok[size_t(t)] * H + c)]);
  }
  return x;
}

RmsnormFwdOut rmsnorm_fwd(const std::vector<float>& x, const std::vector<bf16>& g, int64_t T, int64_t H,
                          const ElementaryFns& fns) {
  require_size(x.size(), T * H, "rmsnorm_fwd: x");
  require_size(g.size(), H, "rmsnorm_fwd: g");
  RmsnormFwdOut out{std::vector<bf16>(size_t(T * H)), std::vector<float>(size_t(T))};
  for (int64_t t = 0; t < T; ++t) {
    const float* xr = x.data() + t * H;
    const float ss = block_sum(H, [&](int64_t c) { return fmul(xr[c], xr[c]); });
    const float r = fns.rsqrt(fadd(fdiv(ss, float(H)), kNormEps));
    out.rstd[size_t(t)] = r;
    for (int64_t c = 0; c < H; ++c)
      out.h[size_t(t * H + c)] = float_to_bf16_rne(fmul(fmul(xr[c], r), bf16_to_float(g[size_t(c)])));
  }
  return out;
}

template <bool kPlantedProjectionWithoutRstd>
void rmsnorm_bwd_dx(const std::vector<float>& x, const std::vector<bf16>& g, const std::vector<float>& rstd,
                    const std::vector<float>& dh, std::vector<float>& dx, int64_t T, int64_t H) {
  require_size(x.size(), T * H, "rmsnorm_bwd_dx: x");
  require_size(g.size(), H, "rmsnorm_bwd_dx: g");
  require_size(rstd.size(), T, "rmsnorm_bwd_dx: rstd");
  require_size(dh.size(), T * H, "rmsnorm_bwd_dx: dh");
  require_size(dx.size(), T * H, "rmsnorm_bwd_dx: dx");
  for (int64_t t = 0; t < T; ++t) {
    const float r = rstd[size_t(t)];
    const float* xr = x.data() + t * H;
    const float* dhr = dh.data() + t * H;
    const float sum = block_sum(H, [&](int64_t c) {
      return fmul(fmul(fmul(dhr[c], bf16_to_float(g[size_t(c)])), xr[c]), r);
    });
    const float mean = fdiv(sum, float(H));
    for (int64_t c = 0; c < H; ++c) {
      const float y = kPlantedProjectionWithoutRstd ? xr[c] : fmul(xr[c], r);
      float& d = dx[size_t(t * H + c)];
      d = fadd(d, fmul(r, fsub(fmul(dhr[c], bf16_to_float(g[size_t(c)])), fmul(y, mean))));
    }
  }
}
template void rmsnorm_bwd_dx<false>(const std::vector<float>&, const std::vector<bf16>&,
                                    const std::vector<float>&, const std::vector<float>&, std::vector<float>&, int64_t,
                                    int64_t);
template void rmsnorm_bwd_dx<true>(const std::vector<float>&, const std::vector<bf16>&,
                                   const std::vector<float>&, const std::vector<float>&, std::vector<float>&, int64_t,
                                   int64_t);

std::vector<float> rmsnorm_bwd_dg(const std::vector<float>& x, const std::vector<float>& rstd,
                                  const std::vector<float>& dh, int64_t T, int64_t H) {
  require_size(x.size(), T * H, "rmsnorm_bwd_dg: x");
  require_size(rstd.size(), T, "rmsnorm_bwd_dg: rstd");
  require_size(dh.size(), T * H, "rmsnorm_bwd_dg: dh");
  std::vector<float> dg(static_cast<size_t>(H));
  for (int64_t c = 0; c < H; ++c) {
    float s = 0.0f;
    for (int64_t t = 0; t < T; ++t)
      s = fadd(s, fmul(fmul(dh[size_t(t * H + c)], x[size_t(t * H + c)]), rstd[size_t(t)]));
    dg[size_t(c)] = s;
  }
  return dg;
}

std::vector<bf16> causal_softmax(const std::vector<float>& s, int64_t rows, int64_t T, const ElementaryFns& fns) {
  require(T > 0, "causal_softmax: T");
  require_size(s.size(), rows * T, "causal_softmax: s");
  std::vector<bf16> p(size_t(rows * T));
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t i = row % T;
    const float* sr = s.data() + row * T;
    const float m = block_max(i + 1, [&](int64_t j) { return sr[j]; });
    const float z = block_sum(i + 1, [&](int64_t j) { return fns.exp(fsub(sr[j], m)); });
    for (int64_t j = 0; j < T; ++j)
      p[size_t(row * T + j)] = float_to_bf16_rne(j <= i ? fdiv(fns.exp(fsub(sr[j], m)), z) : 0.0f);
  }
  return p;
}

std::vector<bf16> softmax_bwd(const std::vector<bf16>& p, const std::vector<float>& dp, int64_t rows,
                                  int64_t T, float scale) {
  require_size(p.size(), rows * T, "softmax_bwd: p");
  require_size(dp.size(), rows * T, "softmax_bwd: dp");
  std::vector<bf16> ds(size_t(rows * T));
  for (int64_t row = 0; row < rows; ++row) {
    const bf16* pr = p.data() + row * T;
    const float* dpr = dp.data() + row * T;
    const float s = block_sum(T, [&](int64_t j) { return fmul(dpr[j], bf16_to_float(pr[j])); });
    for (int64_t j = 0; j < T; ++j)
      ds[size_t(row * T + j)] = float_to_bf16_rne(fmul(fmul(bf16_to_float(pr[j]), fsub(dpr[j], s)), scale));
  }
  return ds;
}

std::vector<bf16> expand_kv(const std::vector<bf16>& kv, int64_t T, int64_t heads, int64_t kvh, int64_t d) {
  require(kvh > 0 && heads % kvh == 0, "expand_kv: heads is not a multiple of kv heads");
  require_size(kv.size(), T * kvh * d, "expand_kv: kv");
  const int64_t group = heads / kvh;
  std::vector<bf16> x(size_t(T * heads * d));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t c = 0; c < d; ++c) x[size_t((t * heads + h) * d + c)] = kv[size_t((t * kvh + h / group) * d + c)];
  return x;
}

std::vector<bf16> reduce_kv(const std::vector<float>& dx, int64_t T, int64_t heads, int64_t kvh, int64_t d) {
  require(kvh > 0 && heads % kvh == 0, "reduce_kv: heads is not a multiple of kv heads");
  require_size(dx.size(), T * heads * d, "reduce_kv: dx");
  const int64_t group = heads / kvh;
  std::vector<bf16> dkv(size_t(T * kvh * d));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t g = 0; g < kvh; ++g)
      for (int64_t c = 0; c < d; ++c) {
        float s = 0.0f;
        for (int64_t k = 0; k < group; ++k) s = fadd(s, dx[size_t((t * heads + g * group + k) * d + c)]);
        dkv[size_t((t * kvh + g) * d + c)] = float_to_bf16_rne(s);
      }
  return dkv;
}

namespace {
// 1 + exp(-z): the denominator of silu and of the sigmoid in model_kernels.cuh.
float one_plus_exp_neg(float z, const ElementaryFns& fns) { return fadd(1.0f, fns.exp(fneg(z))); }
}  // namespace

std::vector<bf16> gate_fwd(const std::vector<float>& gate, const std::vector<float>& up, const ElementaryFns& fns) {
  require(gate.size() == up.size(), "gate_fwd: gate and up differ in size");
  std::vector<bf16> m(gate.size());
  for (size_t i = 0; i < gate.size(); ++i)
    m[i] = float_to_bf16_rne(fmul(fdiv(gate[i], one_plus_exp_neg(gate[i], fns)), up[i]));
  return m;
}

GateBwdOut gate_bwd(const std::vector<float>& gate, const std::vector<float>& up, const std::vector<float>& dm,
                    const ElementaryFns& fns) {
  require(gate.size() == up.size() && gate.size() == dm.size(), "gate_bwd: gate, up and dm differ in size");
  GateBwdOut out{std::vector<bf16>(gate.size()), std::vector<bf16>(gate.size())};
  for (size_t i = 0; i < gate.size(); ++i) {
    const float z = gate[i], sg = fdiv(1.0f, one_plus_exp_neg(z, fns));
    out.dgate[i] = float_to_bf16_rne(fmul(fmul(dm[i], up[i]), fmul(sg, fadd(1.0f, fmul(z, fsub(1.0f, sg))))));
    out.dup[i] = float_to_bf16_rne(fmul(fmul(dm[i], z), sg));
  }
  return out;
}

CrossEntropyOut cross_entropy(const std::vector<float>& logits, const std::vector<int32_t>& labels, int64_t T,
                              int64_t V, const ElementaryFns& fns) {
  require_size(logits.size(), T * V, "cross_entropy: logits");
  require_size(labels.size(), T, "cross_entropy: labels");
  CrossEntropyOut out{std::vector<float>(size_t(T)), std::vector<bf16>(size_t(T * V))};
  for (int64_t t = 0; t < T; ++t) {
    const float* lr = logits.data() + t * V;
    const int64_t y = labels[size_t(t)];
    require(y >= 0 && y < V, "cross_entropy: label out of range");
    const float m = block_max(V, [&](int64_t j) { return lr[j]; });
    const float z = block_sum(V, [&](int64_t j) { return fns.exp(fsub(lr[j], m)); });
    out.loss[size_t(t)] = fsub(fadd(fns.log(z), m), lr[y]);
    for (int64_t j = 0; j < V; ++j)
      out.dlogits[size_t(t * V + j)] =
          float_to_bf16_rne(fdiv(fsub(fdiv(fns.exp(fsub(lr[j], m)), z), j == y ? 1.0f : 0.0f), float(T)));
  }
  return out;
}

void embedding_bwd(const std::vector<float>& dx, const std::vector<int32_t>& tok, std::vector<float>& de, int64_t T,
                   int64_t H) {
  require_size(dx.size(), T * H, "embedding_bwd: dx");
  require_size(tok.size(), T, "embedding_bwd: tok");
  require(H > 0 && de.size() % size_t(H) == 0, "embedding_bwd: dE is not [V, H]");
  const int64_t V = int64_t(de.size()) / H;
  for (int64_t t = 0; t < T; ++t) require(tok[size_t(t)] >= 0 && tok[size_t(t)] < V, "embedding_bwd: token");
  for (int64_t c = 0; c < H; ++c)
    for (int64_t t = 0; t < T; ++t) {
      float& d = de[size_t(int64_t(tok[size_t(t)]) * H + c)];
      d = fadd(d, dx[size_t(t * H + c)]);
    }
}

std::vector<bf16> to_bf16(const std::vector<float>& x) {
  std::vector<bf16> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = float_to_bf16_rne(x[i]);
  return y;
}

}  // namespace fh::model_ref
