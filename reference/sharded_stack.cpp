#include "reference/sharded_stack.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/common/bf16.h"
#include "kernels/common/splitmix64.h"
#include "kernels/twin/fused_twin.h"
#include "reference/case_gen.h"
#include "reference/two_phase_host.h"

namespace fh {
namespace {

using Vec = std::vector<float>;
using Bits = std::vector<bf16>;
constexpr float kRmsEps = 1e-6f;

Bits to_bf16(const Vec& a) {
  Bits b(a.size());
  for (size_t i = 0; i < a.size(); ++i) b[i] = float_to_bf16_rne(a[i]);
  return b;
}

// Y [T, out] = X [T, in] W^T, W [out, in] bf16, fp32 sums over in, in order.
Vec linear_fwd(const Bits& X, const Bits& W, int64_t T, int64_t in, int64_t out) {
  Vec y(size_t(T * out));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t o = 0; o < out; ++o) {
      float acc = 0.0f;
      for (int64_t k = 0; k < in; ++k) acc += bf16_to_float(X[size_t(t * in + k)]) * bf16_to_float(W[size_t(o * in + k)]);
      y[size_t(t * out + o)] = acc;
    }
  return y;
}

void add_into(Vec& a, const Vec& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
}

// RMSNorm over rows of x [T, H] with weight g [H]; rstd per token.
Vec rms_fwd(const Vec& x, const HostParam& g, int64_t T, int64_t H, Vec& rstd) {
  Vec y(x.size());
  rstd.assign(size_t(T), 0.0f);
  for (int64_t t = 0; t < T; ++t) {
    float ss = 0.0f;
    for (int64_t j = 0; j < H; ++j) ss += x[size_t(t * H + j)] * x[size_t(t * H + j)];
    const float r = 1.0f / std::sqrt(ss / float(H) + kRmsEps);
    rstd[size_t(t)] = r;
    for (int64_t j = 0; j < H; ++j) y[size_t(t * H + j)] = x[size_t(t * H + j)] * r * g.weight(j);
  }
  return y;
}

// RMSNorm backward: dx for every token.
Vec rms_bwd_dx(const Vec& x, const HostParam& g, const Vec& rstd, const Vec& dy, int64_t T, int64_t H) {
  Vec dx(x.size());
  for (int64_t t = 0; t < T; ++t) {
    const float r = rstd[size_t(t)];
    float dot = 0.0f;
    for (int64_t j = 0; j < H; ++j) dot += dy[size_t(t * H + j)] * g.weight(j) * x[size_t(t * H + j)] * r;
    for (int64_t j = 0; j < H; ++j) {
      const float xh = x[size_t(t * H + j)] * r;
      dx[size_t(t * H + j)] = r * (dy[size_t(t * H + j)] * g.weight(j) - xh * dot / float(H));
    }
  }
  return dx;
}

// The norm weight's gradient summed over tokens [t0, t1) in token order.
Vec rms_dg(const Vec& x, const Vec& rstd, const Vec& dy, int64_t H, int64_t t0, int64_t t1) {
  Vec dg(size_t(H), 0.0f);
  for (int64_t t = t0; t < t1; ++t)
    for (int64_t j = 0; j < H; ++j) dg[size_t(j)] += dy[size_t(t * H + j)] * x[size_t(t * H + j)] * rstd[size_t(t)];
  return dg;
}

float silu(float a) { return a / (1.0f + std::exp(-a)); }
float silu_grad(float a) {
  const float s = 1.0f / (1.0f + std::exp(-a));
  return s * (1.0f + a * (1.0f - s));
}

// Causal softmax attention of one rank's heads: q, k, v [T, n*hd] -> a [T, n*hd]; P kept per head.
struct Attn {
  Vec a;
  std::vector<Vec> P;  // per head [T, T]
};
Attn attn_fwd(const Vec& q, const Vec& k, const Vec& v, int64_t T, int64_t n, int64_t hd) {
  const int64_t w = n * hd;
  const float scale = 1.0f / std::sqrt(float(hd));
  Attn at;
  at.a.assign(size_t(T * w), 0.0f);
  for (int64_t h = 0; h < n; ++h) {
    Vec P(size_t(T * T), 0.0f);
    for (int64_t i = 0; i < T; ++i) {
      float mx = -INFINITY;
      for (int64_t j = 0; j <= i; ++j) {
        float s = 0.0f;
        for (int64_t d = 0; d < hd; ++d) s += q[size_t(i * w + h * hd + d)] * k[size_t(j * w + h * hd + d)];
        P[size_t(i * T + j)] = s * scale;
        mx = std::max(mx, s * scale);
      }
      float sum = 0.0f;
      for (int64_t j = 0; j <= i; ++j) sum += (P[size_t(i * T + j)] = std::exp(P[size_t(i * T + j)] - mx));
      for (int64_t j = 0; j <= i; ++j) P[size_t(i * T + j)] /= sum;
      for (int64_t d = 0; d < hd; ++d) {
        float acc = 0.0f;
        for (int64_t j = 0; j <= i; ++j) acc += P[size_t(i * T + j)] * v[size_t(j * w + h * hd + d)];
        at.a[size_t(i * w + h * hd + d)] = acc;
      }
    }
    at.P.push_back(std::move(P));
  }
  return at;
}

void attn_bwd(const Vec& q, const Vec& k, const Vec& v, const Attn& at, const Vec& da, int64_t T, int64_t n,
              int64_t hd, Vec& dq, Vec& dk, Vec& dv) {
  const int64_t w = n * hd;
  const float scale = 1.0f / std::sqrt(float(hd));
  dq.assign(size_t(T * w), 0.0f);
  dk.assign(size_t(T * w), 0.0f);
  dv.assign(size_t(T * w), 0.0f);
  for (int64_t h = 0; h < n; ++h) {
    const Vec& P = at.P[size_t(h)];
    for (int64_t i = 0; i < T; ++i) {
      Vec dP(size_t(i + 1));
      float rowdot = 0.0f;
      for (int64_t j = 0; j <= i; ++j) {
        float s = 0.0f;
        for (int64_t d = 0; d < hd; ++d) s += da[size_t(i * w + h * hd + d)] * v[size_t(j * w + h * hd + d)];
        dP[size_t(j)] = s;
        rowdot += s * P[size_t(i * T + j)];
      }
      for (int64_t j = 0; j <= i; ++j) {
        const float p = P[size_t(i * T + j)];
        const float dS = p * (dP[size_t(j)] - rowdot) * scale;
        for (int64_t d = 0; d < hd; ++d) {
          dv[size_t(j * w + h * hd + d)] += p * da[size_t(i * w + h * hd + d)];
          dq[size_t(i * w + h * hd + d)] += dS * k[size_t(j * w + h * hd + d)];
          dk[size_t(j * w + h * hd + d)] += dS * q[size_t(i * w + h * hd + d)];
        }
      }
    }
  }
}

// What a backward pass carries for the linear layers' updates.
struct BwdCtx {
  int64_t step;
  LinearUpdate how;
  const FusedStepBackend& be;
  const TwinSchedule& sched;
  const StackDefects& defects;
  MemoryLedger* ledger;
  std::vector<std::pair<HostParam*, Vec>>& pending;  // G held to the end of backward
  bool materialized_one = false;
};

void ledger_alloc(MemoryLedger* l, const char* tag, int64_t bytes) {
  if (l) l->alloc(tag, bytes);
}
void ledger_release(MemoryLedger* l, const char* tag, int64_t bytes) {
  if (l) l->release(tag, bytes);
}

// One linear layer's backward on one rank: its dX [T, in] from W before the update, and the update.
Vec linear_bwd(HostParam& w, const Bits& X, const Bits& dY, int64_t T, BwdCtx& c) {
  Vec dX;
  const bool hold = c.how == LinearUpdate::standard ||
                    (c.how == LinearUpdate::fused && c.defects.materialize_one_layer && !c.materialized_one);
  if (hold || c.how == LinearUpdate::unfused) {
    dX = twin_dgrad(dY.data(), w.bf16.data(), T, w.cols, w.rows, c.sched.order);
    Vec G = c.be.wgrad(X.data(), dY.data(), T, w.cols, w.rows, c.sched);
    ledger_alloc(c.ledger, "gradients", int64_t(G.size() * sizeof(float)));
    if (hold) {  // planted (fused) or the standard path: kept to the end of backward
      c.materialized_one = true;
      c.pending.emplace_back(&w, std::move(G));
    } else {
      apply_two_phase_update(w, G, c.step);
      ledger_release(c.ledger, "gradients", int64_t(G.size() * sizeof(float)));
    }
    return dX;
  }
  const int64_t tile = c.sched.tile_rows * c.sched.tile_cols * int64_t(sizeof(float));
  ledger_alloc(c.ledger, "gradients", tile);
  if (c.defects.dx_after_update) {  // planted: Remark 1 broken
    c.be.step(w, X.data(), dY.data(), T, c.step, c.sched);
    dX = twin_dgrad(dY.data(), w.bf16.data(), T, w.cols, w.rows, c.sched.order);
  } else {
    rank_step(c.be, w, X.data(), dY.data(), T, c.step, c.sched, &dX);
  }
  ledger_release(c.ledger, "gradients", tile);
  return dX;
}

template <class T>
int64_t bytes_of(const std::vector<T>& v) {
  return int64_t(v.size() * sizeof(T));
}

int64_t weight_storage_bytes(const HostParam& w) { return bytes_of(w.master) + bytes_of(w.bf16); }
int64_t state_storage_bytes(const HostParam& w) {
  int64_t n = 0;
  for (int k = 0; k < kMaxStates; ++k)
    n += bytes_of(w.st_f32[k]) + bytes_of(w.st_bf16[k]) + bytes_of(w.st_i8[k]) + bytes_of(w.st_absmax[k]);
  return n;
}

std::vector<HostParam> shards(const HostParam& full, TpKind kind, int p) {
  return ShardedLayer::split(full, kind, Dataflow::tp, p).ranks;
}

void gather_back(HostParam& full, const std::vector<HostParam>& parts) {
  for (const HostParam& s : parts) full.place(s);
}

}  // namespace

std::vector<float> seeded_normals(size_t n, uint64_t seed, float scale) {
  std::vector<float> v(n);
  uint64_t st = seed;
  for (float& x : v) {
    const double u1 = (double(splitmix64_next(st) >> 11) + 0.5) * 0x1.0p-53;
    const double u2 = double(splitmix64_next(st) >> 11) * 0x1.0p-53;
    x = scale * float(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }
  return v;
}

std::vector<ParamShape> stack_param_shapes(const StackShape& s) {
  std::vector<ParamShape> v;
  const int64_t H = s.hidden, I = s.intermediate;
  for (int b = 0; b < s.blocks; ++b) {
    const std::string p = "block" + std::to_string(b) + ".";
    v.push_back({p + "g1", 1, H, ParamKind::norm});
    for (const char* n : {"q", "k", "v", "o"}) v.push_back({p + n, H, H, ParamKind::linear});
    v.push_back({p + "g2", 1, H, ParamKind::norm});
    v.push_back({p + "gate", I, H, ParamKind::linear});
    v.push_back({p + "up", I, H, ParamKind::linear});
    v.push_back({p + "down", H, I, ParamKind::linear});
  }
  return v;
}

int64_t stack_activation_bytes(const StackShape& s) {
  const int64_t T = s.T, H = s.hidden, I = s.intermediate;
  const int64_t fp32 = 4 * (2 * T * H + 3 * T * H + T * H + s.heads * T * T + 2 * T * I + 2 * T);
  const int64_t bf16 = 2 * (2 * T * H + T * H + T * I);
  return int64_t(s.blocks) * (fp32 + bf16);
}

std::vector<const HostParam*> StackParams::all() const {
  std::vector<const HostParam*> v;
  for (const Block& b : blocks)
    for (const HostParam* q : {&b.g1, &b.wq, &b.wk, &b.wv, &b.wo, &b.g2, &b.wg, &b.wu, &b.wd}) v.push_back(q);
  return v;
}

StackParams StackParams::make(const StackShape& s, const RuleConfig& rule, StateFormat sf, WeightStore ws,
                              uint64_t seed) {
  uint32_t id = 0;
  auto linear = [&](int64_t out, int64_t in) {
    ++id;
    return HostParam::make(rule, sf, ws, out, in, seeded_normals(size_t(out * in), stream_seed(seed, "sharded_stack/linear_w0", id), 1.0f / std::sqrt(float(in))),
                           seed, id);
  };
  auto norm = [&]() {
    std::vector<float> w0 = seeded_normals(size_t(s.hidden), stream_seed(seed, "sharded_stack/norm_w0", ++id), 0.1f);
    for (float& x : w0) x += 1.0f;
    return HostParam::make(rule, sf, ws, 1, s.hidden, w0, seed, id);
  };
  StackParams p;
  for (int b = 0; b < s.blocks; ++b) {
    Block blk;
    blk.g1 = norm();
    blk.wq = linear(s.hidden, s.hidden);
    blk.wk = linear(s.hidden, s.hidden);
    blk.wv = linear(s.hidden, s.hidden);
    blk.wo = linear(s.hidden, s.hidden);
    blk.g2 = norm();
    blk.wg = linear(s.intermediate, s.hidden);
    blk.wu = linear(s.intermediate, s.hidden);
    blk.wd = linear(s.hidden, s.intermediate);
    p.blocks.push_back(std::move(blk));
  }
  return p;
}

std::vector<float> stack_train_step(StackParams& params, const StackShape& s, const std::vector<float>& x0,
                                    const std::vector<float>& dout, int64_t step, int p, Dataflow flow,
                                    LinearUpdate how, const FusedStepBackend& be, const TwinSchedule& sched,
                                    const Collectives& coll, const StackDefects& defects, MemoryLedger* ledger,
                                    std::vector<NormGradRecord>* norm_grads) {
  if (flow != Dataflow::tp && flow != Dataflow::sp_megatron)
    throw std::invalid_argument("stack_train_step: tp or sp_megatron dataflow expected");
  if (coll.ranks() != p) throw std::invalid_argument("stack_train_step: the collectives are for another rank count");
  const int64_t T = s.T, H = s.hidden, I = s.intermediate, hd = s.head_dim();
  if (s.heads % p != 0 || H % s.heads != 0)
    throw std::invalid_argument("stack_train_step: heads must split evenly over ranks and hidden over heads");
  const int64_t nh = s.heads / p, Hr = H / p, Ir = I / p;
  if (int64_t(x0.size()) != T * H || int64_t(dout.size()) != T * H)
    throw std::invalid_argument("stack_train_step: x0 and dout must be [T, hidden]");
  const bool sp = flow == Dataflow::sp_megatron;
  if (ledger && p != 1) throw std::invalid_argument("stack_train_step: the ledger counts one rank (p = 1)");
  if (ledger)
    for (const HostParam* w : params.all()) {
      ledger->alloc("weights", weight_storage_bytes(*w));
      ledger->alloc("state", state_storage_bytes(*w));
    }
  if (ledger) ledger->phase("start");
  std::vector<std::pair<HostParam*, Vec>> pending;
  BwdCtx ctx{step, how, be, sched, defects, ledger, pending};
  // SP: a tensor the column-parallel layers (or the row-parallel layers' backward) need whole is
  // all-gathered from the ranks' token shards; TP: every rank already holds it.
  auto gather = [&](const Bits& whole, int64_t cols) {
    if (!sp) return whole;
    std::vector<Bits> parts(static_cast<size_t>(p));
    for (int r = 0; r < p; ++r) {
      int64_t a, b;
      even_share(T, p, r, a, b, "sequence split");
      parts[size_t(r)] = take_rows(whole, cols, a, b);
    }
    return coll.all_gather_rows(parts, cols);
  };
  // A norm weight's gradient: TP sums all tokens on every rank; SP sums each rank's tokens, then
  // the ordered all-reduce (Megatron's finalize_model_grads).
  auto norm_grad = [&](HostParam& g, const Vec& x, const Vec& rstd, const Vec& dy) {
    Vec dg;
    if (!sp) {
      dg = rms_dg(x, rstd, dy, H, 0, T);
    } else {
      std::vector<Vec> parts(static_cast<size_t>(p));
      for (int r = 0; r < p; ++r) {
        int64_t a, b;
        even_share(T, p, r, a, b, "sequence split");
        parts[size_t(r)] = rms_dg(x, rstd, dy, H, a, b);
      }
      dg = coll.all_reduce_ordered(parts);
    }
    if (norm_grads) norm_grads->push_back(NormGradRecord{x, dy, rstd, dg, T, H});
    Vec dx = rms_bwd_dx(x, g, rstd, dy, T, H);  // g before its (deferred) step
    ledger_alloc(ledger, "gradients", bytes_of(dg));
    pending.emplace_back(&g, std::move(dg));
    return dx;
  };

  struct Saved {
    Vec x_in, rstd1, x_mid, rstd2;
    Bits h, h2;
    std::vector<Vec> q, k, v, gate, up;
    std::vector<Attn> at;
    std::vector<Bits> a, m;
    std::vector<HostParam> wq, wk, wv, wo, wg, wu, wd;
    int64_t activation_bytes() const {  // what this block saved for backward
      int64_t n = bytes_of(x_in) + bytes_of(rstd1) + bytes_of(x_mid) + bytes_of(rstd2) + bytes_of(h) + bytes_of(h2);
      for (const auto* vs : {&q, &k, &v, &gate, &up})
        for (const Vec& x : *vs) n += bytes_of(x);
      for (const Attn& t : at) {
        n += bytes_of(t.a);
        for (const Vec& P : t.P) n += bytes_of(P);
      }
      for (const auto* bs : {&a, &m})
        for (const Bits& x : *bs) n += bytes_of(x);
      return n;
    }
  };
  std::vector<Saved> saved(size_t(s.blocks));
  Vec x = x0;
  for (int bi = 0; bi < s.blocks; ++bi) {
    StackParams::Block& B = params.blocks[size_t(bi)];
    Saved& S = saved[size_t(bi)];
    S.wq = shards(B.wq, TpKind::column, p), S.wk = shards(B.wk, TpKind::column, p);
    S.wv = shards(B.wv, TpKind::column, p), S.wo = shards(B.wo, TpKind::row, p);
    S.wg = shards(B.wg, TpKind::column, p), S.wu = shards(B.wu, TpKind::column, p);
    S.wd = shards(B.wd, TpKind::row, p);
    S.x_in = x;
    S.h = gather(to_bf16(rms_fwd(x, B.g1, T, H, S.rstd1)), H);
    std::vector<Vec> y(static_cast<size_t>(p));
    for (int r = 0; r < p; ++r) {
      S.q.push_back(linear_fwd(S.h, S.wq[size_t(r)].bf16, T, H, Hr));
      S.k.push_back(linear_fwd(S.h, S.wk[size_t(r)].bf16, T, H, Hr));
      S.v.push_back(linear_fwd(S.h, S.wv[size_t(r)].bf16, T, H, Hr));
      S.at.push_back(attn_fwd(S.q.back(), S.k.back(), S.v.back(), T, nh, hd));
      S.a.push_back(to_bf16(S.at.back().a));
      y[size_t(r)] = linear_fwd(S.a.back(), S.wo[size_t(r)].bf16, T, Hr, H);
    }
    add_into(x, coll.all_reduce_ordered(y));  // TP all-reduce; SP reduce-scatter (same sums)
    S.x_mid = x;
    S.h2 = gather(to_bf16(rms_fwd(x, B.g2, T, H, S.rstd2)), H);
    std::vector<Vec> z(static_cast<size_t>(p));
    for (int r = 0; r < p; ++r) {
      S.gate.push_back(linear_fwd(S.h2, S.wg[size_t(r)].bf16, T, H, Ir));
      S.up.push_back(linear_fwd(S.h2, S.wu[size_t(r)].bf16, T, H, Ir));
      Vec m(size_t(T * Ir));
      for (size_t i = 0; i < m.size(); ++i) m[i] = silu(S.gate.back()[i]) * S.up.back()[i];
      S.m.push_back(to_bf16(m));
      z[size_t(r)] = linear_fwd(S.m.back(), S.wd[size_t(r)].bf16, T, Ir, H);
    }
    add_into(x, coll.all_reduce_ordered(z));
    ledger_alloc(ledger, "activations", S.activation_bytes());
  }

  if (ledger) ledger->phase("forward");
  Vec dx = dout;
  for (int bi = s.blocks - 1; bi >= 0; --bi) {
    StackParams::Block& B = params.blocks[size_t(bi)];
    Saved& S = saved[size_t(bi)];
    // MLP: down (row-parallel, dY gathered under SP), then gate and up (column-parallel).
    const Bits dz = gather(to_bf16(dx), H);
    std::vector<Vec> dh2(static_cast<size_t>(p));
    for (int r = 0; r < p; ++r) {
      const Vec dm = linear_bwd(S.wd[size_t(r)], S.m[size_t(r)], dz, T, ctx);
      Vec dgate(dm.size()), dup(dm.size());
      for (size_t i = 0; i < dm.size(); ++i) {
        const float g = S.gate[size_t(r)][i];
        dgate[i] = dm[i] * S.up[size_t(r)][i] * silu_grad(g);
        dup[i] = dm[i] * silu(g);
      }
      dh2[size_t(r)] = linear_bwd(S.wg[size_t(r)], S.h2, to_bf16(dgate), T, ctx);
      add_into(dh2[size_t(r)], linear_bwd(S.wu[size_t(r)], S.h2, to_bf16(dup), T, ctx));
    }
    add_into(dx, norm_grad(B.g2, S.x_mid, S.rstd2, coll.all_reduce_ordered(dh2)));
    // Attention: o (row-parallel), then q, k, v (column-parallel).
    const Bits dyo = gather(to_bf16(dx), H);
    std::vector<Vec> dh(static_cast<size_t>(p));
    for (int r = 0; r < p; ++r) {
      const Vec da = linear_bwd(S.wo[size_t(r)], S.a[size_t(r)], dyo, T, ctx);
      Vec dq, dk, dv;
      attn_bwd(S.q[size_t(r)], S.k[size_t(r)], S.v[size_t(r)], S.at[size_t(r)], da, T, nh, hd, dq, dk, dv);
      dh[size_t(r)] = linear_bwd(S.wq[size_t(r)], S.h, to_bf16(dq), T, ctx);
      add_into(dh[size_t(r)], linear_bwd(S.wk[size_t(r)], S.h, to_bf16(dk), T, ctx));
      add_into(dh[size_t(r)], linear_bwd(S.wv[size_t(r)], S.h, to_bf16(dv), T, ctx));
    }
    add_into(dx, norm_grad(B.g1, S.x_in, S.rstd1, coll.all_reduce_ordered(dh)));
    ledger_release(ledger, "activations", S.activation_bytes());
    if (ledger) ledger->phase("backward block " + std::to_string(bi));
  }
  // The end of backward: the held gradients' standard steps (norm weights; every layer on the
  // standard path), then the shards back into the whole parameters.
  for (auto& [w, G] : pending) {
    apply_two_phase_update(*w, G, step);
    ledger_release(ledger, "gradients", bytes_of(G));
  }
  if (ledger) ledger->phase("step");
  for (int bi = 0; bi < s.blocks; ++bi) {
    StackParams::Block& B = params.blocks[size_t(bi)];
    Saved& S = saved[size_t(bi)];
    for (auto [full, parts] : {std::pair{&B.wq, &S.wq}, {&B.wk, &S.wk}, {&B.wv, &S.wv}, {&B.wo, &S.wo},
                               {&B.wg, &S.wg}, {&B.wu, &S.wu}, {&B.wd, &S.wd}})
      gather_back(*full, *parts);
  }
  return dx;
}

}  // namespace fh
