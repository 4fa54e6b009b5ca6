#include "kernels/twin/fused_twin.h"

#include <algorithm>
#include <stdexcept>

#include "kernels/common/splitmix64.h"
#include "kernels/twin/bf16_transpose.h"
#include "kernels/twin/mma_model.h"
#include <string>

namespace fh {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

void require_inputs(const bf16* X, const bf16* dY, int64_t T, int64_t in, int64_t out,
                    const char* who) {
  if (T < 0) throw std::invalid_argument(std::string(who) + ": negative T");
  if (out <= 0 || in <= 0)
    throw std::invalid_argument(std::string(who) + ": out and in must be positive");
  if (T > 0 && (!X || !dY)) throw std::invalid_argument(std::string(who) + ": null X or dY");
}

}  // namespace

const char* tile_visit_order_name(TileVisitOrder v) {
  switch (v) {
    case TileVisitOrder::row_major: return "row_major";
    case TileVisitOrder::col_major: return "col_major";
    case TileVisitOrder::random: return "random";
  }
  return "?";
}

void TwinSchedule::validate() const {
  if (tile_rows < 1 || tile_cols < 1)
    throw std::invalid_argument("TwinSchedule: tile shape must be positive");
  if (visit != TileVisitOrder::row_major && visit != TileVisitOrder::col_major &&
      visit != TileVisitOrder::random)
    throw std::invalid_argument("TwinSchedule: unknown tile visiting order");
  order.validate();
  if (defects.align_bits != 0) {
    MmaModelParams p = order.model_params();
    p.align_bits = defects.align_bits;
    mma_check_params(p);
  }
}

TileCoord tile_of(int64_t r, int64_t c, int64_t out, int64_t in, int64_t tile_rows,
                  int64_t tile_cols) {
  if (r < 0 || r >= out || c < 0 || c >= in || tile_rows < 1 || tile_cols < 1)
    throw std::invalid_argument("tile_of: element or tile shape out of range");
  TileCoord t;
  t.tile_row = r / tile_rows;
  t.tile_col = c / tile_cols;
  t.id = t.tile_row * ceil_div(in, tile_cols) + t.tile_col;
  t.r0 = t.tile_row * tile_rows;
  t.r1 = std::min(out, t.r0 + tile_rows);
  t.c0 = t.tile_col * tile_cols;
  t.c1 = std::min(in, t.c0 + tile_cols);
  return t;
}

std::vector<int64_t> tile_visit_sequence(int64_t n_tile_rows, int64_t n_tile_cols,
                                         TileVisitOrder visit, uint64_t seed) {
  if (n_tile_rows < 0 || n_tile_cols < 0)
    throw std::invalid_argument("tile_visit_sequence: negative grid");
  const int64_t n = n_tile_rows * n_tile_cols;
  std::vector<int64_t> seq(static_cast<size_t>(n));
  switch (visit) {
    case TileVisitOrder::row_major:
      for (int64_t i = 0; i < n; ++i) seq[size_t(i)] = i;
      break;
    case TileVisitOrder::col_major:
      for (int64_t j = 0, k = 0; j < n_tile_cols; ++j)
        for (int64_t i = 0; i < n_tile_rows; ++i) seq[size_t(k++)] = i * n_tile_cols + j;
      break;
    case TileVisitOrder::random: {
      for (int64_t i = 0; i < n; ++i) seq[size_t(i)] = i;
      uint64_t s = seed;
      for (int64_t i = n - 1; i > 0; --i) {
        const int64_t j = int64_t(splitmix64_next(s) % uint64_t(i + 1));
        std::swap(seq[size_t(i)], seq[size_t(j)]);
      }
      break;
    }
    default: throw std::invalid_argument("tile_visit_sequence: unknown order");
  }
  return seq;
}

TwinStats twin_for_each_g_tile(const bf16* X, const bf16* dY, int64_t T, int64_t in,
                               int64_t out, const TwinSchedule& sched, const GTileConsumer& consume) {
  require_inputs(X, dY, T, in, out, "twin_for_each_g_tile");
  sched.validate();
  const ReductionOrder& order = sched.order;
  MmaModelParams p = order.model_params();
  if (sched.defects.align_bits != 0) p.align_bits = sched.defects.align_bits;  // planted defect
  const int64_t TR = sched.tile_rows, TC = sched.tile_cols, TK = order.token_chunk;
  const int kg = order.k_group;
  const int64_t n_tr = ceil_div(out, TR), n_tc = ceil_div(in, TC);

  TwinStats stats;
  // The tile's G (the kernel's registers), a split-K partial when the order splits, and the
  // staged chunk of dY^T and X^T (the kernel's shared memory), bf16 +0 where nothing is loaded.
  std::vector<float> g_tile(size_t(TR * TC));
  std::vector<float> partial(order.split_k > 1 ? size_t(TR * TC) : 0);
  std::vector<bf16> dy_stage(size_t(TR * TK)), x_stage(size_t(TC * TK));
  stats.g_buffer_floats = int64_t(g_tile.size() + partial.size());

  for (int64_t id : tile_visit_sequence(n_tr, n_tc, sched.visit, sched.visit_seed)) {
    TileCoord tc;
    tc.id = id;
    tc.tile_row = id / n_tc;
    tc.tile_col = id % n_tc;
    tc.r0 = tc.tile_row * TR;
    tc.r1 = std::min(out, tc.r0 + TR);
    tc.c0 = tc.tile_col * TC;
    tc.c1 = std::min(in, tc.c0 + TC);
    const int64_t rows = tc.r1 - tc.r0, cols = tc.c1 - tc.c0;

    for (int s = 0; s < order.split_k; ++s) {
      float* acc = s == 0 ? g_tile.data() : partial.data();
      std::fill(acc, acc + TR * TC, 0.0f);  // every chain starts from +0
      int64_t tb, te;
      order.slice_bounds(T, s, tb, te);
      for (int64_t t0 = tb; t0 < te; t0 += TK) {
        for (int64_t r = 0; r < TR; ++r)
          for (int64_t k = 0; k < TK; ++k) {
            const int64_t t = t0 + k;
            dy_stage[size_t(r * TK + k)] = (r < rows && t < te) ? dY[t * out + tc.r0 + r] : bf16::from_bits(0);
          }
        for (int64_t c = 0; c < TC; ++c)
          for (int64_t k = 0; k < TK; ++k) {
            const int64_t t = t0 + k;
            x_stage[size_t(c * TK + k)] = (c < cols && t < te) ? X[t * in + tc.c0 + c] : bf16::from_bits(0);
          }
        // k-steps of k_group tokens; each element's accumulator chains in token order.
        for (int64_t r = 0; r < rows; ++r) {
          const bf16* a = dy_stage.data() + r * TK;
          for (int64_t c = 0; c < cols; ++c) {
            const bf16* b = x_stage.data() + c * TK;
            float v = acc[r * TC + c];
            for (int64_t k = 0; k < TK; k += kg) v = mma_group_dot(a + k, b + k, kg, v, p);
            acc[r * TC + c] = v;
          }
        }
        stats.instructions += rows * cols * (TK / kg);
      }
      if (s > 0)  // split-K partials summed in ascending slice order, fp32 RNE
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c)
            g_tile[size_t(r * TC + c)] = fadd(g_tile[size_t(r * TC + c)], partial[size_t(r * TC + c)]);
    }
    consume(tc, g_tile.data(), TC);
    ++stats.tiles;
  }
  return stats;
}

std::vector<float> twin_wgrad(const bf16* X, const bf16* dY, int64_t T, int64_t in,
                              int64_t out, const TwinSchedule& sched) {
  std::vector<float> G(size_t(out * in));
  twin_for_each_g_tile(X, dY, T, in, out, sched, [&](const TileCoord& tc, const float* g, int64_t ldg) {
    for (int64_t r = tc.r0; r < tc.r1; ++r)
      std::copy(g + (r - tc.r0) * ldg, g + (r - tc.r0) * ldg + (tc.c1 - tc.c0), G.data() + r * in + tc.c0);
  });
  return G;
}

std::vector<float> twin_dgrad(const bf16* dY, const bf16* Wb, int64_t T, int64_t in,
                              int64_t out, const ReductionOrder& order) {
  if (T < 0 || out <= 0 || in <= 0) throw std::invalid_argument("twin_dgrad: bad shape");
  if (T > 0 && (!dY || !Wb)) throw std::invalid_argument("twin_dgrad: null input");
  order.validate();
  const MmaModelParams p = order.model_params();
  std::vector<float> dX(size_t(T * in));
  const std::vector<bf16> Wt = transpose_bf16(Wb, out, in);  // [in, out]
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < in; ++i)
      dX[size_t(t * in + i)] = mma_chain_dot(dY + t * out, Wt.data() + i * out, out, 0.0f, p);
  return dX;
}

TwinStats fused_twin_step(HostParam& w, const bf16* X, const bf16* dY, int64_t T,
                          int64_t step, const TwinSchedule& sched, std::vector<float>* dX) {
  const int64_t out = w.rows, in = w.cols;
  require_inputs(X, dY, T, in, out, "fused_twin_step");
  if (step < 1) throw std::invalid_argument("fused_twin_step: step counts from 1");
  sched.validate();
  // INT8 blocks live inside tiles (DESIGN contract 5): refuse before touching anything.
  for (int64_t c0 = 0; c0 < in; c0 += sched.tile_cols) {
    require_block_aligned(w.state_format, c0, in, "twin tile");
    require_block_aligned(w.state_format, std::min(in, c0 + sched.tile_cols), in, "twin tile");
  }
  const int64_t bad_tile = sched.defects.state_row_offset_tile;
  if (bad_tile >= 0) {
    const int64_t n_tc = ceil_div(in, sched.tile_cols);
    if (bad_tile >= ceil_div(out, sched.tile_rows) * n_tc || (bad_tile / n_tc + 1) * sched.tile_rows >= out)
      throw std::invalid_argument("planted defect: state_row_offset_tile must have a row below it");
  }

  // Remark 1: dX reads W before any tile of W is overwritten.
  if (dX && !sched.defects.dx_after_update)
    *dX = twin_dgrad(dY, w.bf16.data(), T, in, out, sched.order);

  const HostParamView pv = w.view();
  TwinStats stats = twin_for_each_g_tile(X, dY, T, in, out, sched,
      [&](const TileCoord& tc, const float* g, int64_t ldg) {
        HostParamView tile_view = pv;
        if (tc.id == bad_tile) {  // planted defect: this tile's state is one row off
          for (auto& sv : tile_view.state) {
            if (sv.f32) sv.f32 += in;
            if (sv.bf16) sv.bf16 += in;
            if (sv.i8) {
              sv.i8 += in;
              sv.absmax += w.blocks_per_row();
            }
          }
        }
        apply_rule_region(w.rule, w.state_format, w.weight_store, tile_view, step, g, ldg, tc.r0,
                          tc.r1, tc.c0, tc.c1);
      });

  if (dX && sched.defects.dx_after_update)  // planted defect: reads W after updating it
    *dX = twin_dgrad(dY, w.bf16.data(), T, in, out, sched.order);
  return stats;
}

}  // namespace fh
