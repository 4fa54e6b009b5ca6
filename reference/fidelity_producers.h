// Producers of the low-precision fidelity claims that live outside the fused path:
// values only, no verdicts (the claims in suites/claims/ judge them through oracles/).
//   - an INT8 tile update (a copy of update_segment's INT8 path) with planted defects
//     (suites/claims/prop4_int8.h);
//   - one stochastic-rounding decision as the kernel draws it, with planted variants, and the
//     crafted SGD step whose fp32 results are exact class values (suites/claims/sr_statistics.h);
//   - the stagnation experiment's least-squares problem (suites/claims/stagnation.h);
//   - G rounded to bf16 (RNE, or truncated: a planted defect) and widened back to fp32
//     (suites/claims/gradient_fidelity.h).
// Planted defects live only here and in the claims' runners, behind explicit switches (default
// off): an INT8 tile update whose blocks straddle the tile edge, one whose absmax is taken over
// the tile row instead of the block, SR with 8 random bits, SR keyed by the position inside the
// tile (the same bits in every tile), G truncated instead of rounded.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/common/philox.h"
#include "kernels/formats/host_param.h"
#include "reference/case_gen.h"

namespace fh {

// ---- INT8 tile update: a copy of update_segment's INT8 path with planted defects ----

enum class Int8TileDefect : uint8_t {
  none,                // the driver's behaviour: blocks counted from column 0, refused edges
  straddle_tile_edge,  // blocks counted from each tile's first column, tile edge not refused
  absmax_over_tile,    // one absmax over the tile row, stored into each of its blocks
};
const char* int8_tile_defect_name(Int8TileDefect d);

// The rule of w (INT8 state, fp32_master store) on all of w with gradient G [rows, cols], tile
// columns tile_cols at a time. With Int8TileDefect::none it equals apply_rule_region bitwise (a
// test checks it) and refuses (std::invalid_argument) a tile edge that would split a block.
void int8_tiled_update_copy(HostParam& w, const std::vector<float>& G, int64_t step,
                            int64_t tile_cols, Int8TileDefect defect);

// ---- stochastic rounding on the real random stream ----

enum class SrVariant : uint8_t {
  kernel,            // sr_bits(key, global index) and float_to_bf16_sr: what store_weight does
  bits8,             // planted: only the top 8 of the 16 bits (a bias up to 1/256 ulp)
  shared_tile_bits,  // planted: keyed by the index inside the tile (every tile the same bits)
};
const char* sr_variant_name(SrVariant v);

// One SR decision for element (r, c) of a [rows, cols] tensor at key.step, as the variant draws.
bf16 sr_round(float x, const sr_key& key, int64_t r, int64_t c, int64_t cols,
                  int64_t tile_rows, int64_t tile_cols, SrVariant v);

// The value of element (r, c) in a class with dropped bits low16: sign and exponent vary with the
// row, the kept mantissa with row and column (normal numbers, far from overflow), the dropped 16
// bits are the class. Row-wise sign and exponent let one rank-2 SGD step produce these values.
float sr_class_value(uint32_t low16, int64_t r, int64_t c);

// An SGD step (lr = 1, no decay) whose fp32 result at (r, c) is exactly sr_class_value(low16, r, c):
// w0 = the value with its dropped bits cleared (a bf16), G[r][c] = w0 - value, which depends on
// the row only: -(+-1) * low16 * 2^(E_r - 23) = dY[0][r] + dY[1][r] with X = 1 (T = 2), where
// dY[0][r] carries the high byte of low16 and dY[1][r] the low byte (each exact in bf16; the
// tensor-core sum of the two products is exact). Then p - 1 * g = the value, exactly.
struct SrClassStep {
  std::vector<float> w0;
  std::vector<bf16> X, dY;  // [2, cols], [2, rows]
  RuleConfig rule;
};
SrClassStep sr_class_step(uint32_t low16, int64_t rows, int64_t cols);

// ---- the stagnation experiment's least-squares problem ----

// W [out, in] trained toward a fixed W* (entries of scale w_star_scale) on noisy targets
// y = W* x + target_noise * n. make() draws, in this order from one CaseRng(seed): W*, the start
// w0 (scale 0.01), a fixed eval batch Xe [eval_T, in] (bf16, normal) and its targets Ye.
struct LeastSquaresProblem {
  int64_t out = 0, in = 0, eval_T = 0;
  double target_noise = 0;
  std::vector<float> wstar, w0;
  std::vector<bf16> Xe;
  std::vector<double> Ye;  // [eval_T, out]

  static LeastSquaresProblem make(uint64_t seed, int64_t out, int64_t in, int64_t eval_T,
                                  double w_star_scale, double target_noise);
  // Targets of X [n, in]: X W*^T in double plus target_noise * rng.normalish() per entry, [n, out].
  std::vector<double> targets(const std::vector<bf16>& X, int64_t n, CaseRng& rng) const;
  // Predictions X W^T in double, W the bf16 weights w_bf16 [out, in], [n, out].
  std::vector<double> predict(const std::vector<bf16>& X, int64_t n,
                              const std::vector<bf16>& w_bf16) const;
  // 0.5 * sum (P - Y)^2 / n.
  static double loss(const std::vector<double>& P, const std::vector<double>& Y, int64_t n);
  // The output gradient dY = (P - Y) / T per entry, rounded to fp32 then to bf16 (RNE).
  static std::vector<bf16> output_grad_bf16(const std::vector<double>& P,
                                                const std::vector<double>& Y, int64_t T);

  // The exact minimum of the eval loss over real W (not only bf16-representable W): Xe W^T = Ye
  // solved in double by Eigen's column-pivoting Householder QR (one right-hand side per output
  // row; Xe has full column rank when eval_T >= in). No training run can go below `loss`, so the
  // gaps are measured against the true minimum rather than only against fp32 master.
  struct Optimum {
    std::vector<double> w;    // W_opt [out, in], row-major
    double loss = 0;          // eval loss at W_opt: the minimum
    double wstar_loss = 0;    // eval loss at W* (the target's generator): >= loss
    double stationarity = 0;  // ||Xe^T (Xe W_opt^T - Ye)||_F / (||Xe||_F (||Xe||_F ||W_opt||_F + ||Ye||_F)): ~1e-16 for an exact solve
    int64_t rank = 0;         // rank of Xe found by the QR
  };
  Optimum exact_optimum() const;
};

// ---- gradient fidelity: G rounded to bf16 ----

// Each g rounded to bf16 (RNE) and widened back to fp32.
std::vector<float> bf16_rne_widened(const std::vector<float>& g);
// Planted: each g truncated to bf16 (round toward zero) and widened back.
std::vector<float> bf16_truncated_widened(const std::vector<float>& g);

}  // namespace fh
