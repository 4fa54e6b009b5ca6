// Non-separable optimizers past Proposition 1's boundary, on the host twin: LAMB, Adam-mini,
// Adafactor, SM3-I, SM3-II, LARS and Muon (momentum, then Newton-Schulz on the momentum state),
// each written from its paper's algorithm (the comment at each rule in nonseparable_rules.cpp
// cites it). fp32 weights and state; per-step scalars in host double, rounded once; per-element
// code through the IEEE shim.
//
// One step runs over a region of the tensor (the whole tensor, or one tile for naive fusion) cut
// into a grid of tiles, and reads G only through a source that hands it the tiles of the region,
// once per call: the source is either a materialized G (the two-phase reference and the
// linear-fusion-only mode) or the twin's tile loop recomputing G tile by tile (the exact fused
// schedule, which never holds G). Each pass over G is one call of the source.
//
// The reduction order of every cross-tile statistic is fixed by the grid, never by the order the
// tiles arrive in (ns_order_description spells it):
//   - sums: each tile's partial is a chain of fp32 round-to-nearest adds from +0 along each of the
//     tile's rows, then those row sums chained from +0 in ascending row (ns_tile_chain; for a row
//     or column statistic: the chain along the row or down the column within the tile); the
//     partials are then added from +0 in ascending tile index (row-major tile id for a tensor sum;
//     tile column for a row sum; tile row for a column sum);
//   - maxima (SM3): order-free, so any tile order gives the same bits;
//   - sums over state vectors (Adafactor's 1^T R, Adam-mini's block sum of row sums, Muon's
//     matrix products): one fp32 chain from +0 in ascending index; Muon's Frobenius norm is a
//     tensor sum on the grid's tiles.
// The per-element arithmetic and the chains are kernels/rules/nonseparable_elements.h, shared with
// the GPU passes (kernels/gpu/nonseparable_gpu.h), which use these per-step scalars too.
// Scalars derived from fp32 statistics (norm ratios, RMS) are formed in double and rounded once.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/twin/fused_twin.h"
#include "kernels/twin/nonseparable.h"

namespace fh {

enum class NsRule : uint8_t { lamb, adam_mini, adafactor, sm3_i, sm3_ii, lars, muon };
inline constexpr NsRule kNsRules[] = {NsRule::lamb,  NsRule::adam_mini, NsRule::adafactor, NsRule::sm3_i,
                                      NsRule::sm3_ii, NsRule::lars,     NsRule::muon};
const char* ns_rule_name(NsRule r);  // "lamb", "adam_mini", ...
// True when the rule's coupling statistic is a sum (its value depends on the reduction order).
bool ns_rule_sums(NsRule r);
// True when a step's update needs a statistic of the current step's G that an earlier pass forms
// (a stale statistic from the previous step is then a defect): not SM3-II, not Muon.
bool ns_rule_has_current_statistic(NsRule r);

struct NsHyper {
  double lr = 1e-2, beta1 = 0.9, beta2 = 0.999, eps = 1e-6, weight_decay = 1e-2;
  double momentum = 0.9;           // LARS, Muon
  double trust_coefficient = 1e-3; // LARS's eta
  double eps1 = 1e-30, eps2 = 1e-3, clip_threshold = 1.0, decay_rate = -0.8;  // Adafactor
  int64_t rows_per_block = 16;     // Adam-mini: one second moment per this many output rows
  int ns_steps = 5;                // Muon's Newton-Schulz iterations
  void validate() const;
};

// Defects a suite plants to show the claim sees them; all off by default. They act on the exact
// fused path only (ns_step's `plants`), never on a reference.
struct NsPlants {
  bool reversed_tile_sum = false;    // tile partials added in DESCENDING tile index
  bool stale_statistic = false;      // the update uses the previous step's coupling statistic
  bool block_shifted_one_row = false;  // Adam-mini's block boundaries one row lower
  bool any() const { return reversed_tile_sum || stale_statistic || block_shifted_one_row; }
};

struct NsParam {
  NsRule rule = NsRule::lamb;
  int64_t rows = 0, cols = 0;
  std::vector<float> w;
  std::vector<float> m;         // first moment / momentum (LAMB, Adam-mini, LARS, Muon) [rows, cols]
  std::vector<float> v;         // LAMB's second moment [rows, cols]
  std::vector<float> row_stat;  // Adafactor R [rows]; SM3 row accumulator [rows]; Adam-mini v [blocks]
  std::vector<float> col_stat;  // Adafactor C [cols]; SM3 column accumulator [cols]
  std::vector<float> last_statistic;  // the previous step's coupling statistic (stale plant only)
  static NsParam make(NsRule rule, int64_t rows, int64_t cols, const std::vector<float>& w0,
                      const NsHyper& h);
};

// A region [r0, r1) x [c0, c1) of the tensor cut into tiles of tile_rows x tile_cols from its
// corner (the last ones ragged).
struct NsGrid {
  int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0, tile_rows = 1, tile_cols = 1;
  int64_t n_tile_rows() const;
  int64_t n_tile_cols() const;
  // The grid position of a tile of the region (throws when tc does not start on the grid).
  int64_t tile_row_of(const TileCoord& tc) const;
  int64_t tile_col_of(const TileCoord& tc) const;
  static NsGrid whole(int64_t rows, int64_t cols, int64_t tile_rows, int64_t tile_cols);
};

// Per-step scalars, host double rounded once (the twin and the GPU passes both call these).
LambScalars ns_lamb_scalars(const NsHyper& h, int64_t step);
float ns_lamb_step_size(const NsHyper& h, float w_sq, float u_sq);  // lr ||w|| / ||u|| (lr where a norm is 0)
AdamMiniScalars ns_adam_mini_scalars(const NsHyper& h, int64_t step);
struct AdafactorScalars {
  float eps1, beta2t, omb2t;
};
AdafactorScalars ns_adafactor_scalars(const NsHyper& h, int64_t step);
// alpha / max(1, RMS(U) / d), alpha = max(eps2, RMS(w)) lr, over `elements` elements.
float ns_adafactor_step_size(const NsHyper& h, float u_sq, float w_sq, int64_t elements);
LarsScalars ns_lars_scalars(const NsHyper& h, float w_sq, float g_sq);
MuonScalars ns_muon_scalars(const NsHyper& h, int64_t rows, int64_t cols);

// Calls the consumer once for every tile of the region, in any order.
using NsGSource = std::function<void(const GTileConsumer&)>;
// The tiles of a materialized G [rows, cols] (row-major), in row-major tile order; G must outlive
// the source.
NsGSource ns_materialized_source(const std::vector<float>& G, int64_t rows, int64_t cols,
                                 const NsGrid& grid);
// The twin's tile loop: every call recomputes G tile by tile (the grid must be the schedule's).
NsGSource ns_twin_source(const bf16* X, const bf16* dY, int64_t T, int64_t rows,
                         int64_t cols, const TwinSchedule& sched);

// One step at `step` (1-based) over the grid's region, statistics over that region only.
// Returns the passes over G it made (calls of the source).
int ns_step(NsParam& p, const NsHyper& h, int64_t step, const NsGrid& grid, const NsGSource& source,
            const NsPlants& plants = {});

// Naive tile fusion, the falsifier: the twin's tile loop with each tile's update using
// statistics of that tile alone (ns_step on the tile's region).
void ns_naive_fused_step(NsParam& p, const NsHyper& h, const bf16* X, const bf16* dY,
                         int64_t T, int64_t step, const TwinSchedule& sched);

// The schedule the exact fused step runs, the statistic that couples the coordinates and the
// reduction order of each cross-tile statistic, in words.
std::string ns_order_description(NsRule r);

// x points at the grid region's corner (row grid.r0, column grid.c0), leading dimension ld.
// The fp32 sum of x^2 over the region in the grid's order:
// per-tile partials in row-major element order, added in ascending row-major tile id. The norm
// statistics of LAMB, LARS and Adafactor are this sum.
float ns_tiled_sum_of_squares(const float* x, int64_t ld, const NsGrid& grid);
// Row sums of g^2 + add over the grid's columns in the grid's order (Adafactor's R before its
// moving average with add = eps1; Adam-mini's row sums with add = 0), one per region row.
std::vector<float> ns_tiled_row_sums_of_squares(const float* x, int64_t ld, const NsGrid& grid,
                                                float add);

// Newton-Schulz orthogonalisation of B [rows, cols] as Jordan (2024) publishes it
// (zeropower_via_newtonschulz5), in fp32: transpose to the wide side (X, n x k, n <= k), divide by
// the Frobenius norm + 1e-7 (the norm's square a tensor sum over X on tile_rows x tile_cols
// tiles), then `steps` times A = X X^T, B = b A + c A A, X = a X + B X with
// (a, b, c) = (3.4445, -4.7750, 2.0315); every product element one fp32 chain from +0 in
// ascending k.
std::vector<float> newton_schulz5(const float* B, int64_t ldb, int64_t rows, int64_t cols, int steps,
                                  int64_t tile_rows, int64_t tile_cols);

}  // namespace fh
