// Sharded fused updates on simulated ranks (reference/sharding.h).
#include "reference/sharding.h"

#include <numeric>
#include <stdexcept>

#include "kernels/common/ieee_shim.h"
#include "reference/two_phase_host.h"

namespace fh {

const char* tp_kind_name(TpKind k) { return k == TpKind::column ? "column-parallel" : "row-parallel"; }

const char* dataflow_name(Dataflow d) {
  switch (d) {
    case Dataflow::tp: return "tp";
    case Dataflow::sp_megatron: return "sp_megatron";
    case Dataflow::sp_referee: return "sp_referee";
    case Dataflow::dp: return "dp";
  }
  return "?";
}

namespace {

std::vector<int> order_of(const SimCollectives& c) {  // the gather order, checked
  if (c.gather_order.empty()) {
    std::vector<int> o(static_cast<size_t>(c.p));
    std::iota(o.begin(), o.end(), 0);
    return o;
  }
  if (int(c.gather_order.size()) != c.p) throw std::invalid_argument("SimCollectives: gather_order must name every rank once");
  return c.gather_order;
}

void require_parts(size_t n, int p, const char* what) {
  if (int(n) != p) throw std::invalid_argument(std::string(what) + ": one part per rank expected");
}

}  // namespace

std::string SimCollectives::describe() const {
  std::string order;
  for (int r : order_of(*this)) order += (order.empty() ? "" : ",") + std::to_string(r);
  return "simulated ranks: " + std::to_string(p) + ", gather order " + order + ", sums in rank order";
}

std::vector<bf16> SimCollectives::all_gather_rows(const std::vector<std::vector<bf16>>& parts, int64_t cols) const {
  require_parts(parts.size(), p, "all_gather_rows");
  std::vector<bf16> out;
  for (int r : order_of(*this)) {
    if (int64_t(parts[size_t(r)].size()) % cols != 0) throw std::invalid_argument("all_gather_rows: ragged part");
    out.insert(out.end(), parts[size_t(r)].begin(), parts[size_t(r)].end());
  }
  return out;
}

std::vector<float> SimCollectives::all_gather_cols(const std::vector<std::vector<float>>& parts, int64_t rows) const {
  require_parts(parts.size(), p, "all_gather_cols");
  std::vector<int64_t> width(static_cast<size_t>(p));
  int64_t total = 0;
  for (int r = 0; r < p; ++r) total += width[size_t(r)] = int64_t(parts[size_t(r)].size()) / rows;
  std::vector<float> out(size_t(rows * total));
  int64_t c0 = 0;
  for (int r : order_of(*this)) {
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < width[size_t(r)]; ++j)
        out[size_t(i * total + c0 + j)] = parts[size_t(r)][size_t(i * width[size_t(r)] + j)];
    c0 += width[size_t(r)];
  }
  return out;
}

std::vector<float> SimCollectives::all_reduce_ordered(const std::vector<std::vector<float>>& parts) const {
  require_parts(parts.size(), p, "all_reduce_ordered");
  std::vector<float> sum = parts[0];
  for (int r = 1; r < p; ++r) {
    if (parts[size_t(r)].size() != sum.size()) throw std::invalid_argument("all_reduce_ordered: parts differ in size");
    for (size_t i = 0; i < sum.size(); ++i) sum[i] = fadd(sum[i], parts[size_t(r)][i]);
  }
  return sum;
}

std::vector<bf16> take_rows(const std::vector<bf16>& a, int64_t cols, int64_t r0, int64_t r1) {
  return std::vector<bf16>(a.begin() + r0 * cols, a.begin() + r1 * cols);
}

std::vector<bf16> take_cols(const std::vector<bf16>& a, int64_t rows, int64_t cols, int64_t c0, int64_t c1) {
  std::vector<bf16> out;
  out.reserve(size_t(rows * (c1 - c0)));
  for (int64_t i = 0; i < rows; ++i) out.insert(out.end(), a.begin() + i * cols + c0, a.begin() + i * cols + c1);
  return out;
}

void even_share(int64_t n, int p, int r, int64_t& begin, int64_t& end, const char* what) {
  if (p < 1 || n % p != 0)
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(n) + " does not split evenly over " +
                                std::to_string(p) + " ranks");
  begin = n / p * r;
  end = begin + n / p;
}

ShardedLayer ShardedLayer::split(const HostParam& full, TpKind kind, Dataflow flow, int p) {
  ShardedLayer l;
  l.kind = kind;
  l.flow = flow;
  l.p = p;
  for (int r = 0; r < p; ++r) {
    int64_t a, b;
    if (flow == Dataflow::dp) {
      l.ranks.push_back(full);  // a replica
    } else if (kind == TpKind::column) {
      even_share(full.rows, p, r, a, b, "column-parallel split of out");
      l.ranks.push_back(full.slice(a, b, 0, full.cols));
    } else {
      even_share(full.cols, p, r, a, b, "row-parallel split of in");
      l.ranks.push_back(full.slice(0, full.rows, a, b));
    }
  }
  return l;
}

HostParam ShardedLayer::gathered(const HostParam& like) const {
  if (flow == Dataflow::dp) return ranks.at(0);
  HostParam full = like;
  for (const HostParam& s : ranks) full.place(s);
  return full;
}

void check_fusable(Dataflow flow, bool token_partial_param, const std::string& what) {
  if (flow == Dataflow::dp || token_partial_param)
    throw std::invalid_argument(what + ": its gradient on each rank covers only that rank's tokens (" +
                                (flow == Dataflow::dp ? std::string("data parallel") : std::string("token-partial under ") +
                                                                                           dataflow_name(flow)) +
                                "); a fused in-place update would apply a partial gradient. Use the fallback: "
                                "materialize each rank's gradient, reduce it in rank order, then the standard step");
}

void rank_step(const FusedStepBackend& be, HostParam& w, const bf16* X, const bf16* dY, int64_t T,
               int64_t step, const TwinSchedule& sched, std::vector<float>* dX) {
  if (dX) *dX = twin_dgrad(dY, w.bf16.data(), T, w.cols, w.rows, sched.order);  // W before the step
  be.step(w, X, dY, T, step, sched);
}

void sharded_fused_step(ShardedLayer& layer, const bf16* X, const bf16* dY, int64_t T, int64_t step,
                        const TwinSchedule& sched, const Collectives& coll, std::vector<float>* dX,
                        const FusedStepBackend& be) {
  if (coll.ranks() != layer.p) throw std::invalid_argument("sharded_fused_step: the collectives are for another rank count");
  const int p = layer.p;
  const HostParam& any = layer.ranks.at(0);
  const int64_t out = layer.kind == TpKind::column && layer.flow != Dataflow::dp ? any.rows * p : any.rows;
  const int64_t in = layer.kind == TpKind::row && layer.flow != Dataflow::dp ? any.cols * p : any.cols;
  const std::vector<bf16> Xv(X, X + T * in), dYv(dY, dY + T * out);
  std::vector<std::vector<float>> dx(static_cast<size_t>(p));
  auto share = [&](int64_t n, int r, int64_t& a, int64_t& b, const char* what) { even_share(n, p, r, a, b, what); };

  if (layer.flow == Dataflow::dp || layer.flow == Dataflow::sp_referee) {
    // Each rank contracts over its own tokens only.
    for (int r = 0; r < p; ++r) {
      int64_t ta, tb;
      share(T, r, ta, tb, "token split");
      const std::vector<bf16> X_t = take_rows(Xv, in, ta, tb), dY_t = take_rows(dYv, out, ta, tb);
      HostParam& w = layer.ranks[size_t(r)];
      std::vector<bf16> X_r = X_t, dY_r = dY_t;
      if (layer.flow == Dataflow::sp_referee) {
        int64_t a, b;
        if (layer.kind == TpKind::column) {
          share(out, r, a, b, "column-parallel split of out");
          dY_r = take_cols(dY_t, tb - ta, out, a, b);
        } else {
          share(in, r, a, b, "row-parallel split of in");
          X_r = take_cols(X_t, tb - ta, in, a, b);
        }
      }
      rank_step(be, w, X_r.data(), dY_r.data(), tb - ta, step, sched, nullptr);
    }
    if (dX) dX->clear();  // no whole-layer dX in these dataflows
    return;
  }

  // tp and sp_megatron: every rank's contraction runs over all T tokens.
  std::vector<bf16> X_all = Xv, dY_all = dYv;
  if (layer.flow == Dataflow::sp_megatron) {
    // Activations arrive token-sharded; the layer's backward gathers the one it needs.
    std::vector<std::vector<bf16>> parts(static_cast<size_t>(p));
    const bool gather_x = layer.kind == TpKind::column;
    for (int r = 0; r < p; ++r) {
      int64_t ta, tb;
      share(T, r, ta, tb, "sequence split");
      parts[size_t(r)] = gather_x ? take_rows(Xv, in, ta, tb) : take_rows(dYv, out, ta, tb);
    }
    (gather_x ? X_all : dY_all) = coll.all_gather_rows(parts, gather_x ? in : out);
  }
  for (int r = 0; r < p; ++r) {
    int64_t a, b;
    HostParam& w = layer.ranks[size_t(r)];
    if (layer.kind == TpKind::column) {
      share(out, r, a, b, "column-parallel split of out");
      const std::vector<bf16> dY_r = take_cols(dY_all, T, out, a, b);
      rank_step(be, w, X_all.data(), dY_r.data(), T, step, sched, dX ? &dx[size_t(r)] : nullptr);
    } else {
      share(in, r, a, b, "row-parallel split of in");
      const std::vector<bf16> X_r = take_cols(X_all, T, in, a, b);
      rank_step(be, w, X_r.data(), dY_all.data(), T, step, sched, dX ? &dx[size_t(r)] : nullptr);
    }
  }
  if (!dX) return;
  // column: p partial products summed in rank order (TP all-reduce, SP reduce-scatter: the same
  // sums, each rank keeping its tokens); row: dX's column slices side by side.
  *dX = layer.kind == TpKind::column ? coll.all_reduce_ordered(dx) : coll.all_gather_cols(dx, T);
}

int64_t token_partial_fallback_step(ShardedLayer& layer, const bf16* X, const bf16* dY, int64_t T,
                                    int64_t step, const TwinSchedule& sched, const Collectives& coll,
                                    const FusedStepBackend& be) {
  if (layer.flow != Dataflow::dp)
    throw std::invalid_argument("token_partial_fallback_step: replicas of the whole parameter (dp) expected");
  const int p = layer.p;
  const int64_t out = layer.ranks.at(0).rows, in = layer.ranks.at(0).cols;
  const std::vector<bf16> Xv(X, X + T * in), dYv(dY, dY + T * out);
  std::vector<std::vector<float>> g(static_cast<size_t>(p));
  for (int r = 0; r < p; ++r) {
    int64_t ta, tb;
    even_share(T, p, r, ta, tb, "token split");
    const std::vector<bf16> X_t = take_rows(Xv, in, ta, tb), dY_t = take_rows(dYv, out, ta, tb);
    g[size_t(r)] = be.wgrad(X_t.data(), dY_t.data(), tb - ta, in, out, sched);
  }
  const std::vector<float> G = coll.all_reduce_ordered(g);
  for (HostParam& w : layer.ranks) apply_two_phase_update(w, G, step);
  return out * in * int64_t(sizeof(float));
}

}  // namespace fh
