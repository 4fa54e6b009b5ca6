// CPU suite for the integer model of the Hopper bf16 -> fp32 tensor-core instruction
// (kernels/twin/mma_model.h, DESIGN contract 2). Hand-derived cases pin each rule; a randomized
// comparison against an independent double-precision formulation of the same rules covers the
// whole input range; small-integer inputs must give exact integer arithmetic.
#include "kernels/twin/mma_model.h"

#include <gtest/gtest.h>

#include "reference/case_gen.h"

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

namespace {

using fh::MmaModelParams;
using Round = MmaModelParams::OutRound;

uint32_t fbits(float x) { return std::bit_cast<uint32_t>(x); }
float bits2f(uint32_t u) { return std::bit_cast<float>(u); }
float bf2f(fh::bf16 b) { return bits2f(uint32_t(b.bits) << 16); }
fh::bf16 bb(uint16_t bits) { return fh::bf16::from_bits(bits); }  // bf16 by its bits
fh::bf16 negated(fh::bf16 v) { return bb(uint16_t(v.bits ^ 0x8000u)); }

// bf16 bits of a float that bf16 holds exactly (the test's constants are chosen so).
fh::bf16 bf(float x) {
  const uint32_t u = fbits(x);
  EXPECT_EQ(u & 0xFFFFu, 0u) << "not a bf16 value: " << x;
  return bb(uint16_t(u >> 16));
}

float p2(int e) { return std::ldexp(1.0f, e); }

// One instruction on float inputs; returns the result's bits (NaN bits matter).
uint32_t dot(const std::vector<float>& a, const std::vector<float>& b, float c,
             const MmaModelParams& p = fh::kHopperMma) {
  std::vector<fh::bf16> ab, bb;
  for (float x : a) ab.push_back(bf(x));
  for (float x : b) bb.push_back(bf(x));
  return fbits(fh::mma_group_dot(ab.data(), bb.data(), int(ab.size()), c, p));
}

// The same product repeated n times.
uint32_t dot_rep(float a, float b, int n, float c, const MmaModelParams& p = fh::kHopperMma) {
  return dot(std::vector<float>(n, a), std::vector<float>(n, b), c, p);
}

MmaModelParams with_round(Round r) {
  MmaModelParams p;
  p.out_round = r;
  return p;
}

uint64_t test_seed() { return fh::announce_seed("test_mma_model", 20260211u); }

constexpr uint32_t kNaN = fh::kMmaNaNBits;
constexpr uint32_t kPosInf = 0x7F800000u, kNegInf = 0xFF800000u;

// ---------------------------------------------------------------------------------------------
// Independent formulation of the rules in double arithmetic (test-only; the model itself is
// integer-only). Products and C are exact in double; the grid scaling is a power of two, so
// std::trunc is the exact truncation toward zero; with align_bits <= 30 the sum of at most 65
// truncated terms (< 2^(align_bits+2) grid units each) is an exact double integer.
int ref_align_exp(float x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? -126 : std::ilogb(x);
}

uint32_t ref_group(const fh::bf16* a, const fh::bf16* b, int n, uint32_t cbits,
                   const MmaModelParams& p) {
  bool nan = false, pinf = false, ninf = false;
  double tv[fh::kMmaMaxGroup + 1];
  int te[fh::kMmaMaxGroup + 1];
  int nt = 0;
  for (int i = 0; i < n; ++i) {
    const float x = bf2f(a[i]), y = bf2f(b[i]);
    if (std::isnan(x) || std::isnan(y)) {
      nan = true;
    } else if (std::isinf(x) || std::isinf(y)) {
      if (x == 0 || y == 0) nan = true;
      else (std::signbit(x) != std::signbit(y) ? ninf : pinf) = true;
    } else if (x != 0 && y != 0) {
      tv[nt] = double(x) * double(y);
      te[nt++] = ref_align_exp(x) + ref_align_exp(y);
    }
  }
  const float c = bits2f(cbits);
  if (std::isnan(c)) nan = true;
  else if (std::isinf(c)) (std::signbit(c) ? ninf : pinf) = true;
  else if (c != 0) { tv[nt] = c; te[nt++] = ref_align_exp(c); }
  if (nan || (pinf && ninf)) return kNaN;
  if (pinf) return kPosInf;
  if (ninf) return kNegInf;

  int emax = p.clamp_exp;
  for (int i = 0; i < nt; ++i) emax = std::max(emax, te[i]);
  const int base = emax - p.align_bits;
  double units = 0;
  for (int i = 0; i < nt; ++i) units += std::trunc(std::ldexp(tv[i], -base));
  const double v = std::ldexp(units, base);
  if (v == 0) return 0u;
  if (std::fabs(v) >= 0x1p128) return v > 0 ? kPosInf : kNegInf;
  float f = float(v);  // round to nearest even (the default mode)
  if (p.out_round == Round::toward_zero && std::fabs(double(f)) > std::fabs(v))
    f = std::nextafter(f, 0.0f);
  if (f == 0) return 0u;
  return fbits(f);
}

uint32_t ref_chain(const fh::bf16* a, const fh::bf16* b, int64_t K, uint32_t c,
                   const MmaModelParams& p) {
  for (int64_t k = 0; k < K; k += p.group)
    c = ref_group(a + k, b + k, int(std::min<int64_t>(p.group, K - k)), c, p);
  return c;
}

// Random bf16 with biased exponent in center +- spread, and a few zeros, subnormals, infs, NaNs.
fh::bf16 rand_bf16(std::mt19937_64& rng, int center, int spread = 12) {
  const uint32_t sign = (rng() & 1u) << 15;
  const uint32_t mant = rng() & 0x7Fu;
  const int pick = int(rng() % 1000);
  if (pick < 10) return bb(uint16_t(sign));                                // +-0
  if (pick < 25) return bb(uint16_t(sign | (mant ? mant : 1u)));          // subnormal
  if (pick < 27) return bb(uint16_t(sign | 0x7F80u));                      // +-inf
  if (pick < 28) return bb(uint16_t(sign | 0x7F80u | (mant ? mant : 1u)));   // NaN
  const int e = std::clamp(center + int(rng() % (2 * spread + 1)) - spread, 1, 254);
  return bb(uint16_t(sign | uint32_t(e) << 7 | mant));
}

uint32_t rand_fp32(std::mt19937_64& rng, int center) {
  const uint32_t sign = (rng() & 1u) << 31;
  const uint32_t mant = uint32_t(rng()) & 0x7FFFFFu;
  const int pick = int(rng() % 1000);
  if (pick < 300) return sign;                                           // zero C is common
  if (pick < 330) return sign | (mant ? mant : 1u);                      // subnormal
  if (pick < 332) return sign | kPosInf;
  if (pick < 333) return sign | kPosInf | (mant ? mant : 1u);
  const int e = std::clamp(center + int(rng() % 61) - 30, 1, 254);
  return sign | uint32_t(e) << 23 | mant;
}

// A biased-exponent centre for a's (and C's) values, b staying near 1: mostly near 1, sometimes
// at the bottom of the range (subnormal results, the clamp), sometimes where products overflow,
// sometimes anywhere.
int rand_center(std::mt19937_64& rng) {
  const int pick = int(rng() % 10);
  if (pick < 6) return 127;
  if (pick < 8) return 1 + int(rng() % 8);           // a near 2^-126 .. 2^-119
  if (pick < 9) return 127 + 118 + int(rng() % 10);  // a near 2^118 .. 2^127
  return 1 + int(rng() % 254);
}

// ---------------------------------------------------------------------------------------------
// Hand-derived cases, one rule each.

TEST(MmaModel, ExactSmallIntegerSums) {
  std::vector<float> a, b;
  for (int i = 1; i <= 16; ++i) { a.push_back(float(i)); b.push_back(float(i)); }
  EXPECT_EQ(dot(a, b, 4.0f), fbits(1500.0f));  // 1^2 + ... + 16^2 = 1496
  EXPECT_EQ(dot({3, -5, 7}, {2, 4, -1}, 10.0f), fbits(-11.0f));  // n < 16: zero padding
  EXPECT_EQ(dot({}, {}, 2.5f), fbits(2.5f));                      // no products: C itself
  EXPECT_EQ(dot({0.5f, 0.25f}, {3, 6}, -0.125f), fbits(2.875f));
}

TEST(MmaModel, TruncatesTermsBelowTheGrid) {
  // C = 1 sets E_max = 0, so the grid is 2^-25 and 2^-26 truncates to nothing.
  EXPECT_EQ(dot({p2(-13)}, {p2(-13)}, 1.0f), fbits(1.0f));
  // Sixteen of them: the exact sum 1 + 2^-22 is an fp32 number, yet every term is gone first.
  EXPECT_EQ(dot_rep(p2(-13), p2(-13), 16, 1.0f), fbits(1.0f));
  // Eight terms 1.5 * 2^-25 each keep only 2^-25: 1 + 2^-22. Exact-then-truncate would give
  // 1 + 3 * 2^-23, and an fp32 fma chain loses every term (each step rounds back to 1).
  const float t = 1.5f * p2(-12), u = p2(-13);
  EXPECT_EQ(dot_rep(t, u, 8, 1.0f), fbits(1.0f + p2(-22)));
  float fma_chain = 1.0f;
  for (int i = 0; i < 8; ++i) fma_chain = std::fma(t, u, fma_chain);
  EXPECT_EQ(fma_chain, 1.0f);
  // A negative term below the grid vanishes instead of pulling the truncated result down:
  // exact (1 + 2^-23) - 2^-26 truncated toward zero would be 1.0.
  EXPECT_EQ(dot({-p2(-13)}, {p2(-13)}, 1.0f + p2(-23)), fbits(1.0f + p2(-23)));
}

TEST(MmaModel, TruncatesMagnitudesNotTwosComplement) {
  // -1.5 * 2^-25 truncates toward zero to -2^-25 (floor would give -2^-24): eight of them sum to
  // -2^-22 exactly. Floor would give 1 - 2^-21; exact-then-truncate 1 - 3 * 2^-23.
  const float t = -1.5f * p2(-12), u = p2(-13);
  EXPECT_EQ(dot_rep(t, u, 8, 1.0f), fbits(1.0f - p2(-22)));
  EXPECT_EQ(dot_rep(-t, u, 8, -1.0f), fbits(-(1.0f - p2(-22))));
  EXPECT_EQ(dot_rep(t, -u, 8, -1.0f), fbits(-(1.0f - p2(-22))));
}

TEST(MmaModel, ProductExponentIsNotRenormalized) {
  // 1.5 * 1.5 = 2.25: significand product 2.25 in [1,4), alignment exponent 0 + 0 = 0 (not 1).
  // So the grid is 2^-25 and eight terms 1.5 * 2^-25 keep 2^-25 each: 2.25 + 2^-22 (an fp32
  // number: ulp 2^-22 in [2,4)). Renormalizing to exponent 1 would give grid 2^-24 and 2.25.
  std::vector<float> a(9, 1.5f * p2(-12)), b(9, p2(-13));
  a[0] = 1.5f;
  b[0] = 1.5f;
  EXPECT_EQ(dot(a, b, 0.0f), fbits(2.25f + p2(-22)));
  // C = 2 (exponent 1) does set E_max = 1: grid 2^-24 and the small terms vanish.
  a[0] = 0.0f;
  EXPECT_EQ(dot(a, b, 2.0f), fbits(2.0f));
}

TEST(MmaModel, AlignmentExponentClampedAtMinus133) {
  // 1.4375 * 1.390625 = 2 - 2^-10 (significands 184 * 178 = 32752 / 2^14), scaled by 2^-150:
  // t1 = 2^-149 - 2^-160, alignment exponent -150, clamped to -133 => grid 2^-158.
  // t1 = 511.75 grid units -> 511; t2 = 2^-160 = 0.25 units -> 0. Sum 511 * 2^-158 < 2^-149
  // truncates to +0. Without the clamp both terms are exact and the sum is 2^-149.
  const std::vector<float> a = {1.4375f * p2(-75), p2(-80)};
  const std::vector<float> b = {1.390625f * p2(-75), p2(-80)};
  EXPECT_EQ(dot(a, b, 0.0f), 0u);
  MmaModelParams unclamped;
  unclamped.clamp_exp = -1000;
  EXPECT_EQ(dot(a, b, 0.0f, unclamped), 1u);
  // Rounding to nearest from 511 units (above half of 512) gives 2^-149 even with the clamp.
  EXPECT_EQ(dot(a, b, 0.0f, with_round(Round::nearest_even)), 1u);
}

TEST(MmaModel, SubnormalInputsAreNotFlushed) {
  const float sub_min = bf2f(bb(0x0001));  // 2^-133: significand 2^-7 at exponent -126
  ASSERT_EQ(sub_min, p2(-133));
  EXPECT_EQ(dot({sub_min}, {p2(10)}, 0.0f), fbits(p2(-123)));
  EXPECT_EQ(dot({bf2f(bb(0x8040))}, {1.0f}, 0.0f), fbits(-p2(-127)));  // fp32 subnormal output
  // The subnormal's alignment exponent is -126 (+100 = -26), not its normalized -133 (+100):
  // grid 2^-51, so a term 2^-55 vanishes. Normalized, the grid would be 2^-58 and keep it.
  EXPECT_EQ(dot({sub_min, p2(-27)}, {p2(100), p2(-28)}, 0.0f), fbits(p2(-33)));
  // fp32 subnormal C is a term as it is: 2^-149 + 2^-149.
  EXPECT_EQ(dot({p2(-75)}, {p2(-74)}, bits2f(1u)), 2u);
  // A subnormal C sets the alignment exponent -126: grid 2^-151 (a little finer than -133's).
  EXPECT_EQ(dot({p2(-75)}, {p2(-76)}, bits2f(0x10u)), 0x10u);  // 2^-145 + 2^-151 -> 2^-145
  // Subnormal times subnormal (2^-266) is far below the grid: +0.
  EXPECT_EQ(dot({sub_min}, {-sub_min}, 0.0f), 0u);
}

TEST(MmaModel, OutputTruncatesTowardZero) {
  // 1 + 1.5 * 2^-24 is 0.75 ulp above 1: truncation gives 1, RNE and an fp32 fma give 1 + 2^-23.
  const float t = 1.5f * p2(-12), u = p2(-12);
  EXPECT_EQ(dot({t}, {u}, 1.0f), fbits(1.0f));
  EXPECT_EQ(dot({-t}, {u}, -1.0f), fbits(-1.0f));
  EXPECT_EQ(std::fma(t, u, 1.0f), 1.0f + p2(-23));
  const MmaModelParams rne = with_round(Round::nearest_even);
  EXPECT_EQ(dot({t}, {u}, 1.0f, rne), fbits(1.0f + p2(-23)));
  EXPECT_EQ(dot({-t}, {u}, -1.0f, rne), fbits(-1.0f - p2(-23)));
  // RNE ties go to even.
  EXPECT_EQ(dot({p2(-12)}, {p2(-12)}, 1.0f, rne), fbits(1.0f));
  EXPECT_EQ(dot({p2(-12)}, {p2(-12)}, 1.0f + p2(-23), rne), fbits(1.0f + p2(-22)));
  // Truncation also in the subnormal range: 1.5 * 2^-149 -> 2^-149.
  EXPECT_EQ(dot({1.5f * p2(-74)}, {p2(-75)}, 0.0f), 1u);
}

TEST(MmaModel, ZeroAndUnderflowArePositiveZero) {
  EXPECT_EQ(dot({1.0f, -1.0f}, {1.0f, 1.0f}, 0.0f), 0u);
  EXPECT_EQ(dot({1.0f}, {1.0f}, -1.0f), 0u);
  EXPECT_EQ(dot({-0.0f, -0.0f}, {1.0f, 1.0f}, -0.0f), 0u);  // -0 products, -0 C: +0
  EXPECT_EQ(dot({-0.0f}, {-0.0f}, -0.0f), 0u);
  EXPECT_EQ(dot({}, {}, -0.0f), 0u);                          // an instruction with only C = -0
  EXPECT_EQ(dot({-p2(-75)}, {p2(-75)}, 0.0f), 0u);            // -2^-150 underflows to +0
  // Huge products cancel exactly (they are exact, never fp32-rounded); the 1 is below the grid.
  EXPECT_EQ(dot({p2(100), -p2(100), 1.0f}, {p2(100), p2(100), 1.0f}, 0.0f), 0u);
}

TEST(MmaModel, OverflowGivesInfinity) {
  EXPECT_EQ(dot({p2(100)}, {p2(100)}, 0.0f), kPosInf);
  EXPECT_EQ(dot({-p2(100)}, {p2(100)}, 0.0f), kNegInf);
  const float fmax = std::numeric_limits<float>::max();
  EXPECT_EQ(dot({p2(52)}, {p2(52)}, fmax), kPosInf);           // FLT_MAX + 2^104 = 2^128
  EXPECT_EQ(dot({-p2(52)}, {p2(52)}, -fmax), kNegInf);
  // Below 2^128 truncation stays finite; RNE rounds the tie up to infinity.
  EXPECT_EQ(dot({p2(52)}, {p2(51)}, fmax), fbits(fmax));        // FLT_MAX + 2^103
  EXPECT_EQ(dot({p2(52)}, {p2(51)}, fmax, with_round(Round::nearest_even)), kPosInf);
  // Products beyond fp32 whose sum comes back into range are exact.
  // 2^128 - (2^128 - 2^120) = 2^120, though neither product is a finite fp32 number.
  EXPECT_EQ(dot({p2(64), -p2(64)}, {p2(64), p2(64) - p2(56)}, 0.0f), fbits(p2(120)));
}

TEST(MmaModel, NaNAndInfinityRules) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = bits2f(0x7FC00000u);
  EXPECT_EQ(dot({inf}, {0.0f}, 1.0f), kNaN);                 // inf * 0
  EXPECT_EQ(dot({-0.0f}, {inf}, 1.0f), kNaN);
  EXPECT_EQ(dot({inf, inf}, {1.0f, -1.0f}, 0.0f), kNaN);     // +inf and -inf products
  EXPECT_EQ(dot({inf}, {1.0f}, -inf), kNaN);                 // +inf product, -inf C
  EXPECT_EQ(dot({nan}, {1.0f}, 0.0f), kNaN);                 // NaN input
  EXPECT_EQ(dot({1.0f}, {bits2f(0xFF810000u)}, 0.0f), kNaN); // negative signalling-style NaN
  EXPECT_EQ(dot({nan}, {0.0f}, 0.0f), kNaN);                 // NaN * 0 is still NaN
  EXPECT_EQ(dot({1.0f}, {1.0f}, bits2f(0xFFC00123u)), kNaN); // NaN C, any payload -> 0x7FFFFFFF
  EXPECT_EQ(dot({inf}, {2.0f}, 5.0f), kPosInf);              // a single infinity wins
  EXPECT_EQ(dot({inf}, {-2.0f}, 5.0f), kNegInf);
  EXPECT_EQ(dot({-inf}, {-inf}, 0.0f), kPosInf);             // inf * inf
  EXPECT_EQ(dot({inf, inf}, {1.0f, 3.0f}, inf), kPosInf);    // same-signed infinities
  EXPECT_EQ(dot({1.0f}, {1.0f}, -inf), kNegInf);
  EXPECT_EQ(dot({inf}, {bf2f(bb(0x0001))}, 0.0f), kPosInf);      // inf * subnormal is not inf * 0
  EXPECT_EQ(dot({inf, -p2(100)}, {1.0f, p2(100)}, 0.0f), kPosInf);  // finite overflow is no inf
}

TEST(MmaModel, ChainingIsPerInstruction) {
  // K = 32: [1, 2^-12 | 2^-12, ...] . [1, 2^-12 | 2^-12, ...]. Instruction 1: 1 + 2^-24 -> 1.
  // Instruction 2: 1 + 2^-24 -> 1. One fused 32-term sum keeps both: 1 + 2^-23.
  std::vector<fh::bf16> a(32, bb(0)), b(32, bb(0));
  a[0] = b[0] = bf(1.0f);
  a[1] = b[1] = bf(p2(-12));
  a[16] = b[16] = bf(p2(-12));
  EXPECT_EQ(fbits(fh::mma_chain_dot(a.data(), b.data(), 32, 0.0f)), fbits(1.0f));
  MmaModelParams fused;
  fused.group = 32;
  EXPECT_EQ(fbits(fh::mma_group_dot(a.data(), b.data(), 32, 0.0f, fused)),
            fbits(1.0f + p2(-23)));
  // c0 is the first instruction's C only.
  EXPECT_EQ(fbits(fh::mma_chain_dot(a.data(), b.data(), 32, 2.0f)), fbits(3.0f));
  // K == 0 runs no instruction.
  EXPECT_EQ(fbits(fh::mma_chain_dot(a.data(), b.data(), 0, -0.0f)), fbits(-0.0f));
}

TEST(MmaModel, ChainMatchesComposedGroupsAndStrides) {
  std::mt19937_64 rng(test_seed());
  for (int rep = 0; rep < 200; ++rep) {
    const int64_t K = 1 + int64_t(rng() % 80);  // often not a multiple of 16
    const int center = rand_center(rng);
    std::vector<fh::bf16> a(K), b(K);
    for (auto& x : a) x = rand_bf16(rng, center);
    for (auto& x : b) x = rand_bf16(rng, 127);
    const float c0 = bits2f(rand_fp32(rng, center));
    // Composition of single instructions, the last one given only the leftover terms.
    float acc = c0;
    for (int64_t k = 0; k < K; k += 16)
      acc = fh::mma_group_dot(a.data() + k, b.data() + k, int(std::min<int64_t>(16, K - k)), acc);
    const uint32_t chained = fbits(fh::mma_chain_dot(a.data(), b.data(), K, c0));
    ASSERT_EQ(chained, fbits(acc)) << "K=" << K;
    // Zero padding to a whole group changes nothing.
    std::vector<fh::bf16> ap(a), bp(b);
    ap.resize((K + 15) / 16 * 16, bb(0));
    bp.resize(ap.size(), bb(0));
    ASSERT_EQ(fbits(fh::mma_chain_dot(ap.data(), bp.data(), int64_t(ap.size()), c0)), chained);
    // Strided layout (a interleaved with junk, b reversed in a wider buffer).
    std::vector<fh::bf16> as(K * 3, bb(0x7FC0)), bs(K * 5, bb(0x7FC0));  // junk is NaN: must be unread
    for (int64_t i = 0; i < K; ++i) { as[i * 3] = a[i]; bs[i * 5] = b[i]; }
    ASSERT_EQ(fbits(fh::mma_chain_dot_strided(as.data(), 3, bs.data(), 5, K, c0)), chained);
  }
}

TEST(MmaModel, M16n8k16Layout) {
  std::mt19937_64 rng(fh::stream_seed(test_seed(), "test_mma_model/layout"));
  std::vector<fh::bf16> A(16 * 16), B(8 * 16);
  std::vector<int> Ai(16 * 16), Bi(8 * 16);
  std::vector<float> C(16 * 8), D(16 * 8);
  for (int i = 0; i < 256; ++i) { Ai[i] = int(rng() % 33) - 16; A[i] = bf(float(Ai[i])); }
  for (int i = 0; i < 128; ++i) { Bi[i] = int(rng() % 33) - 16; B[i] = bf(float(Bi[i])); }
  for (int i = 0; i < 128; ++i) C[i] = float(int(rng() % 2001) - 1000);
  fh::mma_m16n8k16_model(A.data(), B.data(), C.data(), D.data());
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 8; ++j) {
      int64_t s = int64_t(C[i * 8 + j]);
      for (int k = 0; k < 16; ++k) s += int64_t(Ai[i * 16 + k]) * Bi[j * 16 + k];  // B is [n][k]
      ASSERT_EQ(fbits(D[i * 8 + j]), fbits(s == 0 ? 0.0f : float(s))) << "i=" << i << " j=" << j;
    }
  }
  // D may alias C.
  std::vector<float> CD(C);
  fh::mma_m16n8k16_model(A.data(), B.data(), CD.data(), CD.data());
  for (int i = 0; i < 128; ++i) ASSERT_EQ(fbits(CD[i]), fbits(D[i]));
}

// ---------------------------------------------------------------------------------------------
// Randomized.

TEST(MmaModel, RandomSmallIntegersAreExact) {
  // Integers |a|, |b| <= 16 and partial sums < 2^24: every product and sum is exact, every term
  // sits on the grid (E_max <= 20, grid <= 2^-5), so the model must equal integer arithmetic.
  // A common power-of-two scale (kept inside the normal range) must not change that.
  std::mt19937_64 rng(fh::stream_seed(test_seed(), "test_mma_model/small_integers"));
  for (int rep = 0; rep < 20000; ++rep) {
    const int64_t K = 1 + int64_t(rng() % 100);
    const int sa = int(rng() % 41) - 20, sb = int(rng() % 41) - 20;
    std::vector<fh::bf16> a(K), b(K);
    int64_t s = int64_t(rng() % (1u << 21)) - (1 << 20);
    const float c0 = std::ldexp(float(s), sa + sb);
    for (int64_t i = 0; i < K; ++i) {
      const int x = int(rng() % 33) - 16, y = int(rng() % 33) - 16;
      a[i] = bf(std::ldexp(float(x), sa));
      b[i] = bf(std::ldexp(float(y), sb));
      s += int64_t(x) * y;
    }
    const float want = s == 0 ? 0.0f : std::ldexp(float(s), sa + sb);
    ASSERT_EQ(fbits(fh::mma_chain_dot(a.data(), b.data(), K, c0)), fbits(want))
        << "rep=" << rep << " K=" << K << " exact=" << s;
  }
}

TEST(MmaModel, RandomMatchesDoubleFormulation) {
  std::mt19937_64 rng(fh::stream_seed(test_seed(), "test_mma_model/double_formulation"));
  std::vector<MmaModelParams> variants(7);
  variants[1].out_round = Round::nearest_even;
  variants[2].align_bits = 24;
  variants[3].align_bits = 30;
  variants[4].clamp_exp = -140;
  variants[5].group = 8;
  variants[6].group = 32;
  variants[6].out_round = Round::nearest_even;
  int64_t specials = 0, zeros = 0, subnormal_out = 0, infs = 0;
  for (size_t v = 0; v < variants.size(); ++v) {
    const MmaModelParams& p = variants[v];
    for (int rep = 0; rep < 60000; ++rep) {
      const int n = 1 + int(rng() % p.group);
      // Tiny: every term near or below 2^-126 (subnormal results); deep: products near 2^-150,
      // below the clamp, where truncation to 2^-158 and underflow to +0 decide results.
      const int regime = int(rng() % 20);
      const bool tiny = regime < 2, deep = regime == 1;
      const int ca = tiny ? 1 + int(rng() % 4) : rand_center(rng);
      const int cb = deep ? 127 - 28 + int(rng() % 8)
                          : tiny ? 127 - 10 + int(rng() % 8) : 127 + int(rng() % 9) - 4;
      std::vector<fh::bf16> a(n), b(n);
      for (auto& x : a) x = rand_bf16(rng, ca, tiny ? 3 : 12);
      for (auto& x : b) x = rand_bf16(rng, cb, 3);
      uint32_t c = rand_fp32(rng, ca + cb - 127);
      if (tiny && (c & 0x7F800000u) != 0x7F800000u) c &= 0x807FFFFFu;  // subnormal or zero C
      if (rng() % 10 == 0) {  // exact cancellation: the second half negates the first
        for (int i = 0; i + n / 2 < n && i < n / 2; ++i) {
          a[i + n / 2] = negated(a[i]);
          b[i + n / 2] = b[i];
        }
        if (n % 2) a[n - 1] = b[n - 1] = bb(0);
        c &= 0x80000000u;  // +-0
      }
      const uint32_t want = ref_group(a.data(), b.data(), n, c, p);
      const uint32_t got = fbits(fh::mma_group_dot(a.data(), b.data(), n, bits2f(c), p));
      ASSERT_EQ(got, want) << "variant " << v << " rep " << rep << " n " << n;
      specials += want == kNaN;
      infs += (want & 0x7FFFFFFFu) == kPosInf;
      zeros += want == 0;
      subnormal_out += want != 0 && (want & 0x7F800000u) == 0;
    }
  }
  // The generator must actually reach every regime.
  EXPECT_GT(specials, 1000);
  EXPECT_GT(infs, 1000);
  EXPECT_GT(zeros, 1000);
  EXPECT_GT(subnormal_out, 1000);
  std::printf("[ coverage ] NaN %lld, inf %lld, +0 %lld, subnormal %lld\n", (long long)specials,
              (long long)infs, (long long)zeros, (long long)subnormal_out);
  // Chained, against the reference chained the same way.
  for (int rep = 0; rep < 5000; ++rep) {
    const int64_t K = 1 + int64_t(rng() % 200);
    const int center = rand_center(rng);
    std::vector<fh::bf16> a(K), b(K);
    for (auto& x : a) x = rand_bf16(rng, center);
    for (auto& x : b) x = rand_bf16(rng, 127);
    const uint32_t c = rand_fp32(rng, center);
    ASSERT_EQ(fbits(fh::mma_chain_dot(a.data(), b.data(), K, bits2f(c))),
              ref_chain(a.data(), b.data(), K, c, fh::kHopperMma))
        << "rep " << rep << " K " << K;
  }
}

TEST(MmaModel, RandomNegationSymmetry) {
  // Sign-magnitude truncation and truncating output make the model odd: negating every a and C
  // negates the result (+0 stays +0, NaN stays 0x7FFFFFFF).
  std::mt19937_64 rng(fh::stream_seed(test_seed(), "test_mma_model/negation_symmetry"));
  for (int rep = 0; rep < 100000; ++rep) {
    const int center = rand_center(rng);
    std::vector<fh::bf16> a(16), na(16), b(16);
    for (int i = 0; i < 16; ++i) {
      a[i] = rand_bf16(rng, center);
      na[i] = negated(a[i]);
      b[i] = rand_bf16(rng, 127);
    }
    const uint32_t c = rand_fp32(rng, center);
    const uint32_t r = fbits(fh::mma_group_dot(a.data(), b.data(), 16, bits2f(c)));
    const uint32_t nr = fbits(fh::mma_group_dot(na.data(), b.data(), 16, bits2f(c ^ 0x80000000u)));
    const uint32_t expect = (r == 0 || r == kNaN) ? r : (r ^ 0x80000000u);
    ASSERT_EQ(nr, expect) << "rep " << rep;
  }
}

TEST(MmaModel, RejectsBadParameters) {
  const fh::bf16 a[1] = {bb(0x3F80)}, b[1] = {bb(0x3F80)};
  MmaModelParams p;
  p.group = 0;
  EXPECT_THROW(fh::mma_group_dot(a, b, 0, 0.0f, p), std::invalid_argument);
  p.group = fh::kMmaMaxGroup + 1;
  EXPECT_THROW(fh::mma_chain_dot(a, b, 1, 0.0f, p), std::invalid_argument);
  p = MmaModelParams{};
  p.align_bits = fh::kMmaMaxAlignBits + 1;
  EXPECT_THROW(fh::mma_chain_dot_strided(a, 1, b, 1, 1, 0.0f, p), std::invalid_argument);
  EXPECT_THROW(fh::mma_group_dot(a, b, 17, 0.0f), std::invalid_argument);  // n > group
  EXPECT_THROW(fh::mma_chain_dot(a, b, -1, 0.0f), std::invalid_argument);
  p = MmaModelParams{};
  p.group = 8;
  float C[128] = {}, D[128];
  fh::bf16 A[256] = {}, B[128] = {};
  EXPECT_THROW(fh::mma_m16n8k16_model(A, B, C, D, p), std::invalid_argument);
}

TEST(MmaModel, SpeedOfHostTwinShape) {
  // The host twin's shape: G = dY^T X with 256 x 256 outputs over T = 512 tokens, strided reads
  // (dY is [T][256], X is [T][256]): 65536 chained dots of 32 instructions each.
  constexpr int kOut = 256, kIn = 256, kT = 512;
  std::mt19937_64 rng(fh::stream_seed(test_seed(), "test_mma_model/speed"));
  std::vector<fh::bf16> dy(size_t(kT) * kOut), x(size_t(kT) * kIn);
  for (auto& v : dy) v = rand_bf16(rng, 120);
  for (auto& v : x) v = bb(uint16_t((rng() & 0x8000u) | uint32_t(120 + rng() % 14) << 7 | (rng() & 0x7Fu)));
  for (auto& v : dy) if ((v.bits & 0x7F80u) == 0x7F80u) v = bb(0);  // keep it finite: the common case
  double checksum = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int o = 0; o < kOut; ++o)
    for (int i = 0; i < kIn; ++i)
      checksum += fh::mma_chain_dot_strided(dy.data() + o, kOut, x.data() + i, kIn, kT, 0.0f);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double groups = double(kOut) * kIn * (kT / 16);
  std::printf("[ speed    ] %.3f s for 256x256x512, %.1f ns per 16-term instruction (sum %g)\n",
              s, s * 1e9 / groups, checksum);
  // Loose on purpose (shared CI machines): catches a pathological slowdown, not jitter.
  EXPECT_LT(s, 2.0);
}

}  // namespace
