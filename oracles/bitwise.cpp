#include "oracles/bitwise.h"

#include <bit>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "oracles/ulp.h"

namespace fh {

namespace {

struct F32Traits {
  using T = float;
  static constexpr const char* kFormat = "fp32";
  static uint32_t bits(float x) { return std::bit_cast<uint32_t>(x); }
  static uint64_t distance(float a, float b, bool) { return ulp_distance_f32(a, b); }
};
struct Bf16Traits {
  using T = bf16;
  static constexpr const char* kFormat = "bf16";
  static uint32_t bits(bf16 x) { return x.bits; }
  static uint64_t distance(bf16 a, bf16 b, bool) { return ulp_distance_bf16(a, b); }
};
struct U8Traits {
  using T = uint8_t;
  static constexpr const char* kFormat = "u8";
  static uint32_t bits(uint8_t x) { return x; }
  static uint64_t distance(uint8_t a, uint8_t b, bool signed_codes) {
    const int x = signed_codes ? int(int8_t(a)) : int(a);
    const int y = signed_codes ? int(int8_t(b)) : int(b);
    return uint64_t(x > y ? x - y : y - x);
  }
};

void check_args(const void* a, const void* b, int64_t rows, int64_t cols, const BitwiseContext& ctx) {
  if (rows < 0 || cols < 0)
    throw std::invalid_argument("compare_bitwise: negative shape [" + std::to_string(rows) + ", " +
                                std::to_string(cols) + "]");
  if (rows * cols > 0 && (!a || !b)) throw std::invalid_argument("compare_bitwise: null data");
  const TileShape& t = ctx.tile;
  if (t.rows < 0 || t.cols < 0 || ((t.rows == 0) != (t.cols == 0)))
    throw std::invalid_argument("compare_bitwise: tile shape must be positive (or 0 x 0 for none), got " +
                                std::to_string(t.rows) + " x " + std::to_string(t.cols));
}

template <class Tr>
BitwiseReport compare_typed(const typename Tr::T* a, const typename Tr::T* b, int64_t rows,
                            int64_t cols, const BitwiseContext& ctx) {
  check_args(a, b, rows, cols, ctx);
  BitwiseReport r;
  r.name = ctx.name;
  r.format = Tr::kFormat;
  r.rows = rows;
  r.cols = cols;
  r.step = ctx.step;
  r.tile = ctx.tile;
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t col = 0; col < cols; ++col) {
      const int64_t i = row * cols + col;
      const uint32_t ba = Tr::bits(a[i]), bb = Tr::bits(b[i]);
      if (ba == bb) continue;
      if (r.n_differ == 0) {
        r.first_row = row;
        r.first_col = col;
        r.first_a_bits = ba;
        r.first_b_bits = bb;
      }
      ++r.n_differ;
      const uint64_t d = Tr::distance(a[i], b[i], ctx.signed_codes);
      if (r.max_ulp_row < 0 || d > r.max_ulp) {
        r.max_ulp = d;
        r.max_ulp_row = row;
        r.max_ulp_col = col;
      }
    }
  if (r.n_differ > 0 && ctx.tile.rows > 0) {
    const int64_t tiles_per_row = (cols + ctx.tile.cols - 1) / ctx.tile.cols;
    r.first_tile_row = r.first_row / ctx.tile.rows;
    r.first_tile_col = r.first_col / ctx.tile.cols;
    r.first_tile_index = r.first_tile_row * tiles_per_row + r.first_tile_col;
    r.first_in_tile_row = r.first_row % ctx.tile.rows;
    r.first_in_tile_col = r.first_col % ctx.tile.cols;
  }
  return r;
}

std::string describe_bits(const std::string& format, uint32_t bits) {
  char buf[96];
  if (format == "fp32") {
    std::snprintf(buf, sizeof buf, "0x%08x (%.9g)", bits, double(std::bit_cast<float>(bits)));
  } else if (format == "bf16") {
    std::snprintf(buf, sizeof buf, "0x%04x (%.4g)", bits,
                  double(std::bit_cast<float>(uint32_t(bits) << 16)));
  } else {
    std::snprintf(buf, sizeof buf, "0x%02x (%u)", bits, bits);
  }
  return buf;
}

}  // namespace

std::string BitwiseReport::to_string() const {
  std::string s = (name.empty() ? std::string("tensor") : name) + " [" + std::to_string(rows) +
                  ", " + std::to_string(cols) + "] " + format;
  if (step >= 0) s += " step " + std::to_string(step);
  if (n_differ == 0) return s + ": bitwise equal";
  s += ": " + std::to_string(n_differ) + " of " + std::to_string(rows * cols) + " differ";
  s += ", max distance " + (max_ulp == kUlpNaN ? std::string("NaN") : std::to_string(max_ulp)) +
       (format == "u8" ? " codes" : " ulp") + " at (" + std::to_string(max_ulp_row) + ", " +
       std::to_string(max_ulp_col) + ")";
  s += "; first at (" + std::to_string(first_row) + ", " + std::to_string(first_col) + ")";
  if (first_tile_index >= 0)
    s += " = tile " + std::to_string(first_tile_index) + " (" + std::to_string(first_tile_row) +
         ", " + std::to_string(first_tile_col) + ") of " + std::to_string(tile.rows) + "x" +
         std::to_string(tile.cols) + ", element (" + std::to_string(first_in_tile_row) + ", " +
         std::to_string(first_in_tile_col) + ")";
  s += ": " + describe_bits(format, first_a_bits) + " vs " + describe_bits(format, first_b_bits);
  return s;
}

BitwiseReport compare_bitwise_f32(const float* a, const float* b, int64_t rows, int64_t cols,
                                  const BitwiseContext& ctx) {
  return compare_typed<F32Traits>(a, b, rows, cols, ctx);
}
BitwiseReport compare_bitwise_bf16(const bf16* a, const bf16* b, int64_t rows,
                                   int64_t cols, const BitwiseContext& ctx) {
  return compare_typed<Bf16Traits>(a, b, rows, cols, ctx);
}
BitwiseReport compare_bitwise_u8(const uint8_t* a, const uint8_t* b, int64_t rows, int64_t cols,
                                 const BitwiseContext& ctx) {
  return compare_typed<U8Traits>(a, b, rows, cols, ctx);
}

namespace {
template <class V>
void check_sizes(const V& a, const V& b, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0 || a.size() != size_t(rows * cols) || b.size() != size_t(rows * cols))
    throw std::invalid_argument("compare_bitwise: sizes " + std::to_string(a.size()) + " and " +
                                std::to_string(b.size()) + " do not match [" +
                                std::to_string(rows) + ", " + std::to_string(cols) + "]");
}
}  // namespace

BitwiseReport compare_bitwise(const std::vector<float>& a, const std::vector<float>& b,
                              int64_t rows, int64_t cols, const BitwiseContext& ctx) {
  check_sizes(a, b, rows, cols);
  return compare_bitwise_f32(a.data(), b.data(), rows, cols, ctx);
}
BitwiseReport compare_bitwise(const std::vector<bf16>& a, const std::vector<bf16>& b,
                              int64_t rows, int64_t cols, const BitwiseContext& ctx) {
  check_sizes(a, b, rows, cols);
  return compare_bitwise_bf16(a.data(), b.data(), rows, cols, ctx);
}
BitwiseReport compare_bitwise(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                              int64_t rows, int64_t cols, const BitwiseContext& ctx) {
  check_sizes(a, b, rows, cols);
  return compare_bitwise_u8(a.data(), b.data(), rows, cols, ctx);
}

}  // namespace fh
