// Host twin of the fused FORGE kernel: the kernel's schedule executed on the CPU, bit for bit.
//
// For each TR x TC tile of G over (out, in), visited in a configurable order:
//   - the token axis is staged in chunks of TK tokens (dY^T and X^T slices of the tile, bf16,
//     zero-padded with bf16 +0 past T and past the tensor's edges, as the kernel fills shared
//     memory); every chunk runs all of its TK / k_group instructions (an all-padding instruction
//     leaves the accumulator unchanged, so this equals stopping at T);
//   - each element's accumulator is chained through the instruction model in token order from +0
//     across all T tokens (per split-K slice when the order splits; slices then summed ascending
//     with fp32 RNE adds);
//   - with the tile's G complete in ONE tile-sized fp32 buffer, the rule's update runs on that
//     tile through apply_rule_region (the shared rule code), writing weight and state tiles; the
//     buffer is then reused for the next tile. A full G is never held.
// dX = dY * W is computed from the bf16 weights the backward pass reads, before any tile of W is
// overwritten (Remark 1, DESIGN contract 6).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>
#include "kernels/formats/host_param.h"
#include "kernels/common/reduction_order.h"

namespace fh {

enum class TileVisitOrder : uint8_t { row_major, col_major, random };
const char* tile_visit_order_name(TileVisitOrder v);

// Defects a suite plants in the twin to show that it can see them. All off by default; the twin
// never turns one on by itself.
struct TwinPlantedDefects {
  // != 0: the twin's instructions align to this many fractional bits while its order
  // description still says instr.align_bits (a wrong alignment width in the model).
  int align_bits = 0;
  // >= 0: the tile with this row-major grid id has its state pointers offset by one row
  // (it must not be in the last tile row, which has no row below it).
  int64_t state_row_offset_tile = -1;
  // true: dX is computed after the tiles have updated W, i.e. the step reads W after updating it
  // (breaks Remark 1).
  bool dx_after_update = false;
  bool any() const { return align_bits != 0 || state_row_offset_tile >= 0 || dx_after_update; }
};

struct TwinSchedule {
  int64_t tile_rows = 128;  // TR, over out
  int64_t tile_cols = 128;  // TC, over in (a multiple of 64 for int8 state)
  TileVisitOrder visit = TileVisitOrder::row_major;
  uint64_t visit_seed = 0;  // for TileVisitOrder::random
  ReductionOrder order = fused_kernel_order();  // order.token_chunk is TK
  TwinPlantedDefects defects;
  void validate() const;
};

// A tile of G: grid coordinates, row-major grid id, and its region [r0, r1) x [c0, c1).
struct TileCoord {
  int64_t tile_row = 0, tile_col = 0, id = 0;
  int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0;
};

// The tile containing element (r, c) for a tile shape.
TileCoord tile_of(int64_t r, int64_t c, int64_t out, int64_t in, int64_t tile_rows,
                  int64_t tile_cols);

// The order the tiles of an n_rows x n_cols grid are visited in (row-major grid ids). The random
// order is a Fisher-Yates shuffle driven by splitmix64(seed), the same on every platform.
std::vector<int64_t> tile_visit_sequence(int64_t n_tile_rows, int64_t n_tile_cols,
                                         TileVisitOrder visit, uint64_t seed);

struct TwinStats {
  int64_t tiles = 0;             // tiles visited
  int64_t instructions = 0;      // instruction-model calls for G (per element per k-step)
  int64_t g_buffer_floats = 0;   // fp32 G storage held at once (tile + split-K partial)
};

// Receives one finished G tile (valid region only, leading dimension ldg). The buffer is reused
// after the call returns.
using GTileConsumer = std::function<void(const TileCoord&, const float* g, int64_t ldg)>;

// The twin's G loop alone: X [T, in], dY [T, out] bf16 bits, row-major. Shapes are passed as
// (T, in, out), the order reference/exact_gradient.h and reference/case_gen.h use.
TwinStats twin_for_each_g_tile(const bf16* X, const bf16* dY, int64_t T, int64_t in,
                               int64_t out, const TwinSchedule& sched, const GTileConsumer& consume);

// G [out, in] in the twin's order (assembled from its tiles; for comparisons only).
std::vector<float> twin_wgrad(const bf16* X, const bf16* dY, int64_t T, int64_t in,
                              int64_t out, const TwinSchedule& sched);

// dX [T, in] = dY [T, out] * Wb [out, in] with Wb bf16 bits, each element a chain of k_group
// instructions over `out` from +0 (order's instruction model, no split), kept in fp32.
std::vector<float> twin_dgrad(const bf16* dY, const bf16* Wb, int64_t T, int64_t in,
                              int64_t out, const ReductionOrder& order);

// One fused optimizer step of w ([out, in] = [w.rows, w.cols]) at `step` (1-based).
// dX, if given, receives dY * W computed from the weights before the step.
TwinStats fused_twin_step(HostParam& w, const bf16* X, const bf16* dY, int64_t T,
                          int64_t step, const TwinSchedule& sched, std::vector<float>* dX = nullptr);

}  // namespace fh
