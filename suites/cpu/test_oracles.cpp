// CPU suite for the comparison oracles: ulp distances (oracles/ulp.h), the bitwise oracle's
// evidence (oracles/bitwise.h, DESIGN contract 7) and the dot-product forward-error bounds
// (oracles/dot_bound.h). Crafted cases pin each rule; the bounds are shown to hold on random
// dot products and to be nearly attained on crafted worst cases, so they are not vacuous.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "kernels/common/bf16.h"
#include "kernels/twin/mma_model.h"
#include "oracles/bitwise.h"
#include "oracles/dot_bound.h"
#include "oracles/ulp.h"
#include "reference/case_gen.h"
#include "reference/exact_gradient.h"

namespace {

using fh::kUlpNaN;

float f_of(uint32_t u) { return std::bit_cast<float>(u); }
uint32_t bits_of(float x) { return std::bit_cast<uint32_t>(x); }
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

// bf16 of a float bf16 holds exactly.
fh::bf16 bf(float x) {
  const uint32_t u = bits_of(x);
  EXPECT_EQ(u & 0xFFFFu, 0u) << "not a bf16 value: " << x;
  return fh::bf16::from_bits(uint16_t(u >> 16));
}
// bf16 by its bits.
fh::bf16 bb(uint16_t bits) { return fh::bf16::from_bits(bits); }

// ---------------------------------------------------------------- ulp distance

TEST(Ulp, Fp32Distances) {
  EXPECT_EQ(fh::ulp_distance_f32(0.0f, -0.0f), 0u);
  EXPECT_EQ(fh::ulp_distance_f32(1.0f, 1.0f), 0u);
  EXPECT_EQ(fh::ulp_distance_f32(1.0f, std::nextafter(1.0f, 2.0f)), 1u);
  EXPECT_EQ(fh::ulp_distance_f32(1.0f, std::nextafter(1.0f, 0.0f)), 1u);
  // Across zero: -min_sub, (-0 = +0), +min_sub.
  EXPECT_EQ(fh::ulp_distance_f32(-f_of(1), f_of(1)), 2u);
  EXPECT_EQ(fh::ulp_distance_f32(-0.0f, f_of(1)), 1u);
  EXPECT_EQ(fh::ulp_distance_f32(std::numeric_limits<float>::max(), kInf), 1u);
  EXPECT_EQ(fh::ulp_distance_f32(-kInf, kInf), 2u * 0x7F800000u);
  EXPECT_EQ(fh::ulp_distance_f32(-1.0f, 1.0f), 2u * 0x3F800000u);
  EXPECT_EQ(fh::ulp_distance_f32(2.0f, 1.0f), uint64_t(1) << 23);  // one binade
  EXPECT_EQ(fh::ulp_distance_f32(kNaN, 1.0f), kUlpNaN);
  EXPECT_EQ(fh::ulp_distance_f32(1.0f, kNaN), kUlpNaN);
  EXPECT_EQ(fh::ulp_distance_f32(kNaN, kNaN), kUlpNaN);
  EXPECT_EQ(fh::ulp_distance_f32(f_of(0xFFC00001u), -kInf), kUlpNaN);  // negative NaN
  // Symmetric, and additive along a monotone path.
  fh::CaseRng rng(7);
  for (int k = 0; k < 2000; ++k) {
    const float a = f_of(uint32_t(rng.next_u64()) & 0xFF7FFFFFu);  // no inf/NaN exponent
    const float b = f_of(uint32_t(rng.next_u64()) & 0xFF7FFFFFu);
    ASSERT_EQ(fh::ulp_distance_f32(a, b), fh::ulp_distance_f32(b, a));
    const float lo = std::min(a, b), hi = std::max(a, b);
    if (lo < 0.0f && hi > 0.0f) {  // via zero: |lo| steps down, |hi| steps up
      ASSERT_EQ(fh::ulp_distance_f32(lo, hi),
                fh::ulp_distance_f32(lo, 0.0f) + fh::ulp_distance_f32(0.0f, hi));
    }
  }
}

TEST(Ulp, Bf16Distances) {
  EXPECT_EQ(fh::ulp_distance_bf16(bb(0x0000), bb(0x8000)), 0u);
  EXPECT_EQ(fh::ulp_distance_bf16(bf(1.0f), bb(uint16_t(bf(1.0f).bits + 1))), 1u);
  EXPECT_EQ(fh::ulp_distance_bf16(bb(0x8001), bb(0x0001)), 2u);
  EXPECT_EQ(fh::ulp_distance_bf16(bb(0x7F7F), bb(0x7F80)), 1u);  // max finite to inf
  EXPECT_EQ(fh::ulp_distance_bf16(bf(-1.0f), bf(1.0f)), 2u * 0x3F80u);
  EXPECT_EQ(fh::ulp_distance_bf16(bb(0x7FC0), bf(1.0f)), kUlpNaN);
  EXPECT_EQ(fh::ulp_distance_bf16(bb(0x7F81), bb(0x7F81)), kUlpNaN);
}

TEST(Ulp, Fp32UlpOfValue) {
  EXPECT_EQ(fh::ulp_f32(1.0f), 0x1p-23);
  EXPECT_EQ(fh::ulp_f32(-1.0f), 0x1p-23);
  EXPECT_EQ(fh::ulp_f32(1.999f), 0x1p-23);
  EXPECT_EQ(fh::ulp_f32(2.0f), 0x1p-22);
  EXPECT_EQ(fh::ulp_f32(0.0f), 0x1p-149);
  EXPECT_EQ(fh::ulp_f32(-0.0f), 0x1p-149);
  EXPECT_EQ(fh::ulp_f32(f_of(1)), 0x1p-149);
  EXPECT_EQ(fh::ulp_f32(std::numeric_limits<float>::min()), 0x1p-149);
  EXPECT_EQ(fh::ulp_f32(std::numeric_limits<float>::max()), 0x1p104);
  EXPECT_EQ(fh::ulp_f32(kInf), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(fh::ulp_f32(kNaN)));
  // Against the library's nextafter on random finite values below FLT_MAX.
  fh::CaseRng rng(11);
  for (int k = 0; k < 5000; ++k) {
    const float x = std::fabs(f_of(uint32_t(rng.next_u64()) & 0x7F7FFFFFu));
    if (x == std::numeric_limits<float>::max()) continue;
    ASSERT_EQ(fh::ulp_f32(x), double(std::nextafter(x, kInf)) - double(x)) << x;
  }
}

// ---------------------------------------------------------------- bitwise oracle

TEST(Bitwise, EqualTensors) {
  std::vector<float> a = {1.0f, -0.0f, kNaN, kInf, 3.5f, f_of(1)};
  const fh::BitwiseReport r = fh::compare_bitwise(a, a, 2, 3, {"W", {1, 2}, 4});
  EXPECT_TRUE(r.equal());
  EXPECT_EQ(r.n_differ, 0);
  EXPECT_EQ(r.first_row, -1);
  EXPECT_EQ(r.first_tile_index, -1);
  EXPECT_NE(r.to_string().find("bitwise equal"), std::string::npos) << r.to_string();
  EXPECT_NE(r.to_string().find("step 4"), std::string::npos) << r.to_string();
}

TEST(Bitwise, SignedZeroDiffers) {
  std::vector<float> a = {1.0f, 0.0f, 2.0f}, b = {1.0f, -0.0f, 2.0f};
  const fh::BitwiseReport r = fh::compare_bitwise(a, b, 1, 3);
  EXPECT_FALSE(r.equal());
  EXPECT_EQ(r.n_differ, 1);
  EXPECT_EQ(r.max_ulp, 0u);  // they differ, by zero ulp
  EXPECT_EQ(r.first_row, 0);
  EXPECT_EQ(r.first_col, 1);
  EXPECT_EQ(r.first_a_bits, 0u);
  EXPECT_EQ(r.first_b_bits, 0x80000000u);
  std::vector<fh::bf16> c = {bb(0x0000)}, d = {bb(0x8000)};
  EXPECT_EQ(fh::compare_bitwise(c, d, 1, 1).n_differ, 1);
}

TEST(Bitwise, CountsFirstCoordinateTileAndMaxUlp) {
  // [5, 7] tensor, tiles 2 x 4: differences at (2, 5), (3, 1), (4, 6). Row-major first is
  // (2, 5), although (3, 1) has the smaller column and (4, 6) the larger distance.
  const int64_t R = 5, C = 7;
  std::vector<float> a(R * C), b;
  for (int64_t i = 0; i < R * C; ++i) a[size_t(i)] = float(i) * 0.25f - 3.0f;
  b = a;
  auto at = [&](std::vector<float>& v, int64_t r, int64_t c) -> float& { return v[size_t(r * C + c)]; };
  at(b, 2, 5) = std::nextafter(at(a, 2, 5), 100.0f);                       // 1 ulp
  at(b, 3, 1) = f_of(bits_of(at(a, 3, 1)) + 3);                             // 3 ulp
  at(b, 4, 6) = f_of(bits_of(at(a, 4, 6)) - 40);                            // 40 ulp
  const fh::BitwiseReport r = fh::compare_bitwise(a, b, R, C, {"G", {2, 4}, 9});
  EXPECT_EQ(r.n_differ, 3);
  EXPECT_EQ(r.max_ulp, 40u);
  EXPECT_EQ(r.max_ulp_row, 4);
  EXPECT_EQ(r.max_ulp_col, 6);
  EXPECT_EQ(r.first_row, 2);
  EXPECT_EQ(r.first_col, 5);
  EXPECT_EQ(r.first_a_bits, bits_of(at(a, 2, 5)));
  EXPECT_EQ(r.first_b_bits, bits_of(at(b, 2, 5)));
  // Tile grid is 3 x 2 (7 columns in tiles of 4: 2 per row). (2, 5) is tile (1, 1), index 3,
  // element (0, 1).
  EXPECT_EQ(r.first_tile_row, 1);
  EXPECT_EQ(r.first_tile_col, 1);
  EXPECT_EQ(r.first_tile_index, 3);
  EXPECT_EQ(r.first_in_tile_row, 0);
  EXPECT_EQ(r.first_in_tile_col, 1);
  EXPECT_EQ(r.step, 9);
  const std::string s = r.to_string();
  for (const char* part : {"G [5, 7] fp32", "step 9", "3 of 35 differ", "max distance 40 ulp",
                           "first at (2, 5)", "tile 3 (1, 1) of 2x4", "element (0, 1)"})
    EXPECT_NE(s.find(part), std::string::npos) << "missing '" << part << "' in: " << s;
  // Without a tile shape there are no tile coordinates.
  const fh::BitwiseReport nt = fh::compare_bitwise(a, b, R, C);
  EXPECT_EQ(nt.first_tile_index, -1);
  EXPECT_EQ(nt.first_row, 2);
}

TEST(Bitwise, NaNPayloadsAndTheSentinel) {
  std::vector<float> a = {kNaN, 1.0f}, b = {kNaN, 1.0f};
  EXPECT_TRUE(fh::compare_bitwise(a, b, 1, 2).equal());  // identical NaN bits are equal
  b[0] = f_of(0x7FC00001u);                              // another payload
  fh::BitwiseReport r = fh::compare_bitwise(a, b, 1, 2);
  EXPECT_EQ(r.n_differ, 1);
  EXPECT_EQ(r.max_ulp, kUlpNaN);
  EXPECT_NE(r.to_string().find("max distance NaN"), std::string::npos) << r.to_string();
  b = {1.0f, kNaN};
  a = {1.0f, 2.0f};
  r = fh::compare_bitwise(a, b, 2, 1);
  EXPECT_EQ(r.first_row, 1);
  EXPECT_EQ(r.first_col, 0);
  EXPECT_EQ(r.max_ulp, kUlpNaN);
}

TEST(Bitwise, Bf16AndU8) {
  std::vector<fh::bf16> a = {bf(1.0f), bf(2.0f), bf(-3.0f), bf(4.0f)}, b = a;
  b[3] = bb(uint16_t(b[3].bits + 2));
  b[2] = bb(uint16_t(b[2].bits - 1));  // -3 -> smaller magnitude: 1 ulp
  fh::BitwiseReport r = fh::compare_bitwise(a, b, 2, 2, {"w", {1, 1}, -1});
  EXPECT_EQ(r.format, "bf16");
  EXPECT_EQ(r.n_differ, 2);
  EXPECT_EQ(r.max_ulp, 2u);
  EXPECT_EQ(r.first_row, 1);
  EXPECT_EQ(r.first_col, 0);
  EXPECT_EQ(r.first_tile_index, 2);  // tiles 1x1 over 2 columns: (1, 0) -> 2
  std::vector<uint8_t> qa = {0x00, 0x7F, 0x05}, qb = {0xFF, 0x7F, 0x01};
  r = fh::compare_bitwise(qa, qb, 1, 3);
  EXPECT_EQ(r.n_differ, 2);
  EXPECT_EQ(r.max_ulp, 255u);  // unsigned codes 0 vs 255
  fh::BitwiseContext sc;
  sc.signed_codes = true;
  r = fh::compare_bitwise(qa, qb, 1, 3, sc);
  EXPECT_EQ(r.max_ulp, 4u);  // signed: 0 vs -1 is 1, 5 vs 1 is 4
  EXPECT_EQ(r.max_ulp_col, 2);
  EXPECT_NE(r.to_string().find("codes"), std::string::npos) << r.to_string();
}

TEST(Bitwise, RandomAgainstAPlainCount) {
  fh::CaseRng rng(fh::case_seed(1234));
  const int64_t R = 37, C = 53;
  std::vector<float> a = fh::gen_weights_f32(rng, R * C, 1.0), b = a;
  int64_t expect = 0, first = -1;
  for (int64_t i = 0; i < R * C; ++i)
    if (rng.uniform01() < 0.05) {
      b[size_t(i)] = f_of(bits_of(b[size_t(i)]) ^ (1u << rng.below(32)));
      ++expect;
      if (first < 0) first = i;
    }
  const fh::BitwiseReport r = fh::compare_bitwise(a, b, R, C, {"rand", {8, 16}, 1});
  EXPECT_EQ(r.n_differ, expect);
  ASSERT_GE(first, 0);
  EXPECT_EQ(r.first_row, first / C);
  EXPECT_EQ(r.first_col, first % C);
  EXPECT_EQ(r.first_tile_index, (first / C / 8) * 4 + (first % C) / 16);
}

TEST(Bitwise, BadInputIsRefused) {
  std::vector<float> a(6), b(5);
  EXPECT_THROW(fh::compare_bitwise(a, b, 2, 3), std::invalid_argument);
  EXPECT_THROW(fh::compare_bitwise(a, a, 2, 4), std::invalid_argument);
  EXPECT_THROW(fh::compare_bitwise_f32(a.data(), a.data(), -1, 3), std::invalid_argument);
  EXPECT_THROW(fh::compare_bitwise_f32(nullptr, a.data(), 2, 3), std::invalid_argument);
  EXPECT_THROW(fh::compare_bitwise(a, a, 2, 3, {"", {0, 4}, 0}), std::invalid_argument);
  EXPECT_THROW(fh::compare_bitwise(a, a, 2, 3, {"", {-1, -1}, 0}), std::invalid_argument);
}

// ---------------------------------------------------------------- dot-product bounds

// |s_hat - s| for a computed value against an exact sum, exactly, then rounded to double.
double abs_error(const fh::ExactSum& exact, float computed) {
  fh::ExactSum r = exact;
  r.add_float(fh::fneg(computed));
  return std::fabs(r.to_double_rne());
}

float seq_fp32_dot(const std::vector<fh::bf16>& a, const std::vector<fh::bf16>& b) {
  float acc = 0.0f;
  for (size_t k = 0; k < a.size(); ++k)
    acc = fh::fadd(acc, fh::fmul(fh::bf16_to_float(a[k]), fh::bf16_to_float(b[k])));
  return acc;
}

TEST(DotBound, Gamma) {
  EXPECT_EQ(fh::gamma_fp32(0), 0.0);
  EXPECT_GE(fh::gamma_fp32(1), 0x1p-24 / (1 - 0x1p-24));
  EXPECT_LE(fh::gamma_fp32(1), 0x1p-24 * (1 + 0x1p-20));
  EXPECT_GE(fh::gamma_fp32(1000), 1000 * 0x1p-24);
  EXPECT_EQ(fh::gamma_fp32(int64_t(1) << 24), std::numeric_limits<double>::infinity());
  EXPECT_THROW(fh::gamma_fp32(-1), std::invalid_argument);
  EXPECT_THROW(fh::seq_fp32_dot_bound(3, -1.0), std::invalid_argument);
  EXPECT_THROW(fh::seq_fp32_dot_bound(3, 1.0, 4), std::invalid_argument);
  EXPECT_EQ(fh::seq_fp32_dot_bound(0, 0.0), 0.0);
  const double flt_max = std::numeric_limits<float>::max();
  EXPECT_EQ(fh::seq_fp32_dot_bound(4, flt_max * (1 - 0x1p-30)), std::numeric_limits<double>::infinity());
  EXPECT_LT(fh::seq_fp32_dot_bound(4, flt_max * (1 - 0x1p-20)), flt_max * 0x1p-21);
}

// Recursive summation's worst case: 1 followed by K-1 terms u(1 + 2^-7), each just above half an
// ulp of the partial sum, so every add rounds up by nearly u: the error is (K-1) u (1 - 2^-7),
// within 1% of gamma_{K-1} * sum|x|. A bound with gamma_{K/2} (or any much smaller factor) fails.
TEST(DotBound, SequentialNearlyAttained) {
  for (int64_t K : {2, 17, 100, 1000}) {
    std::vector<fh::bf16> a(size_t(K), bf(0x1p-24f * (1.0f + 0x1p-7f))), b(size_t(K), bf(1.0f));
    a[0] = bf(1.0f);
    const fh::ExactDot ex = fh::exact_dot_bf16(a.data(), 1, b.data(), 1, K);
    const float s_hat = seq_fp32_dot(a, b);
    const double err = abs_error(ex.sum, s_hat);
    const double bound = fh::seq_fp32_dot_bound(K, ex.abs_sum_upper, ex.tiny_products);
    EXPECT_DOUBLE_EQ(err, double(K - 1) * 0x1p-24 * (1 - 0x1p-7)) << "K=" << K;
    EXPECT_LE(err, bound) << "K=" << K;
    EXPECT_GE(err, 0.98 * bound) << "K=" << K << ": the bound is loose here, err/bound = " << err / bound;
  }
}

// Products below 2^-126 are rounded in fp32: the underflow term must cover them.
TEST(DotBound, SequentialUnderflowTerm) {
  // Each product is 1.5 * 2^-150: fl gives 2^-149 (error 2^-151 each), the adds are exact.
  const int64_t K = 64;
  std::vector<fh::bf16> a(size_t(K), bf(0x1p-75f * 1.5f)), b(size_t(K), bf(0x1p-75f));
  const fh::ExactDot ex = fh::exact_dot_bf16(a.data(), 1, b.data(), 1, K);
  EXPECT_EQ(ex.tiny_products, K);
  const double err = abs_error(ex.sum, seq_fp32_dot(a, b));
  EXPECT_EQ(err, double(K) * 0x1p-151);
  EXPECT_LE(err, fh::seq_fp32_dot_bound(K, ex.abs_sum_upper, ex.tiny_products));
  EXPECT_GT(err, fh::gamma_fp32(K - 1) * ex.abs_sum_upper) << "the case needs the underflow term";
  // One product of 2^-160 (1 + 2^-7) flushes to 0 entirely.
  std::vector<fh::bf16> c = {bf(0x1p-80f * (1 + 0x1p-7f))}, d = {bf(0x1p-80f)};
  const fh::ExactDot e1 = fh::exact_dot_bf16(c.data(), 1, d.data(), 1, 1);
  const double err1 = abs_error(e1.sum, seq_fp32_dot(c, d));
  EXPECT_GT(err1, 0.0);
  EXPECT_LE(err1, fh::seq_fp32_dot_bound(1, e1.abs_sum_upper, e1.tiny_products));
}

TEST(DotBound, SequentialHoldsOnRandomDots) {
  const uint64_t seed = fh::case_seed(20260622);
  std::printf("DotBound.SequentialHoldsOnRandomDots seed=%llu\n", (unsigned long long)seed);
  fh::CaseRng rng(seed);
  fh::CaseDistParams wide;
  wide.exp_lo = -70;
  wide.exp_hi = 60;
  double worst = 0.0;
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t K = 1 + int64_t(rng.below(600));
    const auto dist = trial % 3 == 0 ? fh::CaseDistribution::wide_exponent
                      : trial % 3 == 1 ? fh::CaseDistribution::normal : fh::CaseDistribution::sparse;
    const auto a = fh::gen_bf16(rng, K, dist, wide), b = fh::gen_bf16(rng, K, dist, wide);
    const fh::ExactDot ex = fh::exact_dot_bf16(a.data(), 1, b.data(), 1, K);
    const double err = abs_error(ex.sum, seq_fp32_dot(a, b));
    const double bound = fh::seq_fp32_dot_bound(K, ex.abs_sum_upper, ex.tiny_products);
    ASSERT_LE(err, bound) << "seed=" << seed << " trial=" << trial << " K=" << K;
    if (bound > 0) worst = std::max(worst, err / bound);
  }
  std::printf("  largest err/bound on random dots: %.3g\n", worst);
}

// One instruction per 16 terms: start at c0 = 1; each instruction adds 15 products of
// (2 - 2^-7) 2^-25 (truncated to 2^-25 each: 15 grid units, 3 mod 4, so the round toward zero
// also drops 3 * 2^-25) and one of (1 - 2^-8) 2^-25 (truncated away). The loss per instruction is
// about 18.9 * 2^-25 against a bound of about 21 * 2^-25: within 11% of the bound.
TEST(DotBound, TensorCoreChainNearlyAttained) {
  for (int64_t J : {1, 4, 64}) {
    const int64_t K = 16 * J;
    std::vector<fh::bf16> a(static_cast<size_t>(K)), b(size_t(K), bf(1.0f));
    for (int64_t k = 0; k < K; ++k)
      a[size_t(k)] = bf(k % 16 == 15 ? 0x1p-25f * (1 - 0x1p-8f) : 0x1p-25f * (2 - 0x1p-7f));
    fh::ExactDot ex = fh::exact_dot_bf16(a.data(), 1, b.data(), 1, K);
    ex.sum.add_float(1.0f);  // c0
    const float got = fh::mma_chain_dot(a.data(), b.data(), K, 1.0f);
    EXPECT_EQ(got, 1.0f + float(J) * 0x1p-21f * 0.75f) << "J=" << J;  // 3 ulps per instruction
    const double err = abs_error(ex.sum, got);
    const double bound = fh::tc_chain_dot_bound(a.data(), 1, b.data(), 1, K, 1.0f);
    EXPECT_LE(err, bound) << "J=" << J;
    EXPECT_GE(err, 0.88 * bound) << "J=" << J << ": err/bound = " << err / bound;
    // The magnitude form is never tighter for normal factors, and holds too.
    std::vector<double> mags(static_cast<size_t>(K));
    for (int64_t k = 0; k < K; ++k)
      mags[size_t(k)] = double(fh::bf16_to_float(a[size_t(k)]));
    const double bound_m = fh::tc_chain_dot_bound_from_terms(mags.data(), K, 1.0);
    EXPECT_GE(bound_m, bound);
    EXPECT_LE(bound_m, 1.1 * bound);
  }
}

TEST(DotBound, TensorCoreChainHoldsOnRandomDots) {
  const uint64_t seed = fh::case_seed(977);
  std::printf("DotBound.TensorCoreChainHoldsOnRandomDots seed=%llu\n", (unsigned long long)seed);
  fh::CaseRng rng(seed);
  double worst = 0.0;
  for (int trial = 0; trial < 400; ++trial) {
    const int64_t K = 1 + int64_t(rng.below(500));
    fh::CaseDistParams p;
    fh::CaseDistribution dist = fh::CaseDistribution::normal;
    switch (trial % 4) {
      case 0: dist = fh::CaseDistribution::wide_exponent; p.exp_lo = -60; p.exp_hi = 60; break;
      case 1: dist = fh::CaseDistribution::wide_exponent; p.exp_lo = -133; p.exp_hi = -40; break;  // subnormals
      case 2: dist = fh::CaseDistribution::sparse; break;
      default: break;
    }
    const auto a = fh::gen_bf16(rng, K, dist, p), b = fh::gen_bf16(rng, K, dist, p);
    const float c0 = trial % 5 == 0 ? float(rng.normalish()) : 0.0f;
    fh::ExactDot ex = fh::exact_dot_bf16(a.data(), 1, b.data(), 1, K);
    ex.sum.add_float(c0);
    const float got = fh::mma_chain_dot(a.data(), b.data(), K, c0);
    const double err = abs_error(ex.sum, got);
    const double bound = fh::tc_chain_dot_bound(a.data(), 1, b.data(), 1, K, c0);
    ASSERT_LE(err, bound) << "seed=" << seed << " trial=" << trial << " K=" << K;
    if (trial % 4 != 1) {  // normal factors only: the magnitude form applies
      std::vector<double> mags(static_cast<size_t>(K));
      for (int64_t k = 0; k < K; ++k)
        mags[size_t(k)] = std::fabs(double(fh::bf16_to_float(a[size_t(k)])) *
                                    double(fh::bf16_to_float(b[size_t(k)])));
      ASSERT_LE(err, fh::tc_chain_dot_bound_from_terms(mags.data(), K, std::fabs(double(c0))))
          << "seed=" << seed << " trial=" << trial;
    }
    if (bound > 0) worst = std::max(worst, err / bound);
  }
  std::printf("  largest err/bound on random dots: %.3g\n", worst);
}

TEST(DotBound, TensorCoreChainSpecials) {
  std::vector<fh::bf16> a = {bf(1.0f), bb(0x7F80)}, b = {bf(1.0f), bf(1.0f)};
  EXPECT_EQ(fh::tc_chain_dot_bound(a.data(), 1, b.data(), 1, 2), std::numeric_limits<double>::infinity());
  std::vector<fh::bf16> big = {bf(0x1p127f), bf(0x1p127f)}, one = {bf(2.0f), bf(2.0f)};
  EXPECT_EQ(fh::tc_chain_dot_bound(big.data(), 1, one.data(), 1, 2), std::numeric_limits<double>::infinity());
  EXPECT_EQ(fh::tc_chain_dot_bound(a.data(), 1, b.data(), 1, 0, 0.0f), 0.0);
  EXPECT_THROW(fh::tc_chain_dot_bound(a.data(), 1, b.data(), 1, -1), std::invalid_argument);
  const double neg[] = {-1.0};
  EXPECT_THROW(fh::tc_chain_dot_bound_from_terms(neg, 1), std::invalid_argument);
}

}  // namespace
