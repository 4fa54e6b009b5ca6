// Bitwise comparison of two [rows, cols] row-major tensors, with the evidence DESIGN contract 7
// asks of a bitwise check: how many elements differ, the largest ulp distance, and the first
// differing coordinate as (row, col), as (tile, element within the tile) for a tile shape the
// caller names, and the step the caller is at. "Equal" means equal bits: +0 and -0 differ
// (distance 0 ulp, but they differ), identical NaN bits are equal, different NaN payloads differ.
// The oracle never computes the values it judges (DESIGN: a producer never judges).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/common/bf16.h"

namespace fh {

struct TileShape {
  int64_t rows = 0, cols = 0;  // 0 x 0: no tile evidence
};

struct BitwiseContext {
  std::string name;       // what is compared, e.g. "W after step 3"
  TileShape tile;         // tile shape for the tile coordinates (optional)
  int64_t step = -1;      // the step the caller is at (-1: none)
  bool signed_codes = false;  // u8 only: read bytes as int8 for the code distance
};

struct BitwiseReport {
  std::string name, format;  // format: "fp32", "bf16", "u8"
  int64_t rows = 0, cols = 0;
  int64_t step = -1;
  TileShape tile;

  int64_t n_differ = 0;   // elements whose bits differ
  uint64_t max_ulp = 0;   // largest ulp (u8: code) distance among them; kUlpNaN if a NaN differs
  int64_t max_ulp_row = -1, max_ulp_col = -1;  // first element (row-major) reaching max_ulp

  // First differing element in row-major order; -1 when equal.
  int64_t first_row = -1, first_col = -1;
  uint32_t first_a_bits = 0, first_b_bits = 0;  // the two bit patterns there
  // The same element in tile coordinates (when a tile shape was given): the tile's (row, col) in
  // the tile grid, its row-major index in that grid, and the element's (row, col) inside it.
  int64_t first_tile_row = -1, first_tile_col = -1, first_tile_index = -1;
  int64_t first_in_tile_row = -1, first_in_tile_col = -1;

  bool equal() const { return n_differ == 0; }
  std::string to_string() const;
};

// Throws std::invalid_argument on negative shapes, null data with nonzero size, or a tile shape
// with exactly one zero or a negative side.
BitwiseReport compare_bitwise_f32(const float* a, const float* b, int64_t rows, int64_t cols,
                                  const BitwiseContext& ctx = {});
BitwiseReport compare_bitwise_bf16(const bf16* a, const bf16* b, int64_t rows,
                                   int64_t cols, const BitwiseContext& ctx = {});
BitwiseReport compare_bitwise_u8(const uint8_t* a, const uint8_t* b, int64_t rows, int64_t cols,
                                 const BitwiseContext& ctx = {});

// Vector forms: the sizes must both equal rows * cols.
BitwiseReport compare_bitwise(const std::vector<float>& a, const std::vector<float>& b,
                              int64_t rows, int64_t cols, const BitwiseContext& ctx = {});
BitwiseReport compare_bitwise(const std::vector<bf16>& a, const std::vector<bf16>& b,
                              int64_t rows, int64_t cols, const BitwiseContext& ctx = {});
BitwiseReport compare_bitwise(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                              int64_t rows, int64_t cols, const BitwiseContext& ctx = {});

}  // namespace fh
