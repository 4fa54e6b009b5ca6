// bf16 narrowing (kernels/common/bf16.h): stochastic rounding is exactly unbiased, checked
// exhaustively over all 2^16 random offsets for each x and summed exactly; round-to-nearest-even
// is checked against an independent long double reference on a stride of all fp32 patterns and on
// every pattern next to a rounding boundary. The seed is printed and can be set with FH_SEED.
#include <gtest/gtest.h>

#include "reference/case_gen.h"
#include <mpreal.h>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "kernels/common/bf16.h"

namespace fh {
namespace {

uint64_t test_seed() {
  static const uint64_t seed = announce_seed("test_stochastic_rounding", 0x5b0f16d00dull);
  return seed;
}

constexpr uint32_t kMaxFiniteBf16Bits = 0x7f7f0000u;  // as an fp32 pattern
constexpr uint32_t kNoOffsets = 1u << 16;

bool is_nan_bits(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }

// The bf16 spacing at |x| (x finite, not zero): 2^(E-7) with E = max(floor(log2|x|), -126).
long double bf16_quantum(long double ax) {
  int e;
  std::frexp(ax, &e);  // ax = f * 2^e, f in [0.5, 1)
  return std::ldexp(1.0L, std::max(e - 1, -126) - 7);
}

// Round-to-nearest-even to bf16, from the definition (no bit tricks): the nearest multiple of the
// quantum, ties to an even multiple, overflow to infinity when the rounded magnitude reaches 2^128.
// NaN is handled by the caller.
uint16_t rne_reference(float x) {
  const uint16_t sign = std::signbit(x) ? 0x8000u : 0u;
  if (std::isinf(x)) return sign | 0x7f80u;
  const long double ax = std::fabs((long double)x);
  if (ax == 0) return sign;
  const long double qn = bf16_quantum(ax);
  const long double k = ax / qn;  // exact: division by a power of two
  const long double kf = std::floor(k), frac = k - kf;
  long double kr = kf;
  if (frac > 0.5L || (frac == 0.5L && std::fmod(kf, 2.0L) != 0)) kr = kf + 1;
  const long double r = kr * qn;
  if (r >= std::ldexp(1.0L, 128)) return sign | 0x7f80u;
  const uint32_t rb = f2u(float(r));  // exact: r has at most 8 significant bits
  EXPECT_EQ(rb & 0xffffu, 0u);
  return sign | uint16_t(rb >> 16);
}

// Exact sum of long doubles: TwoSum watches every addition; if one was inexact, the sum is redone
// in MPFR.
struct ExactSum {
  std::vector<long double> terms;
  long double s = 0;
  bool exact = true;
  void add(long double v) {
    terms.push_back(v);
    const long double t = s + v, bv = t - s;
    if ((s - (t - bv)) + (v - bv) != 0) exact = false;
    s = t;
  }
  // sum == 65536 * x, exactly.
  bool equals_65536_times(float x) const {
    if (exact) return s == 65536.0L * (long double)x;
    mpfr::mpreal acc(0, 400);
    for (long double v : terms) acc += mpfr::mpreal(double(v), 400);  // terms are bf16 values
    return acc == mpfr::mpreal(x, 400) * 65536;
  }
};

struct MeanResult {
  bool exact_mean = true;
  bool neighbours_only = true;  // every SR(x, r) is one of the two bf16 values around x
  uint32_t first_bad_r = 0;
};

MeanResult sr_mean_over_all_offsets(float x) {
  MeanResult res;
  ExactSum sum;
  sum.terms.reserve(kNoOffsets);
  const long double ax = std::fabs((long double)x);
  const long double qn = ax == 0 ? 0 : bf16_quantum(ax);
  const long double lo = ax == 0 ? 0 : std::floor(ax / qn) * qn;
  for (uint32_t r = 0; r < kNoOffsets; ++r) {
    const float y = bf16_to_float(float_to_bf16_sr(x, r));
    sum.add(y);
    const long double ay = std::fabs((long double)y);
    const bool ok = std::signbit(y) == std::signbit(x) && (ay == lo || ay == lo + qn);
    if (!ok && res.neighbours_only) { res.neighbours_only = false; res.first_bad_r = r; }
  }
  res.exact_mean = sum.equals_65536_times(x);
  return res;
}

void expect_unbiased(uint32_t xb, const char* what) {
  const float x = u2f(xb);
  const MeanResult m = sr_mean_over_all_offsets(x);
  EXPECT_TRUE(m.exact_mean) << what << ": mean of SR over all 2^16 offsets != x for x = "
                            << std::hexfloat << x << " (0x" << std::hex << xb << ")";
  EXPECT_TRUE(m.neighbours_only) << what << ": SR(x, r) is not a bf16 neighbour of x = "
                                 << std::hexfloat << x << " at r = 0x" << std::hex << m.first_bad_r;
}

TEST(sr_exact_mean, ExactSumHelperFallsBackWhenLongDoubleRounds) {
  ExactSum s;
  s.add(std::ldexp(1.0L, 100));
  s.add(std::ldexp(1.0L, -100));  // lost in long double
  s.add(-std::ldexp(1.0L, 100));
  EXPECT_FALSE(s.exact);
  EXPECT_TRUE(s.equals_65536_times(0x1p-116f));  // the true sum 2^-100, from MPFR
  EXPECT_FALSE(s.equals_65536_times(0.0f));
}

TEST(sr_exact_mean, MeanIsExactOverAllOffsetsForRandomFloats) {
  std::mt19937_64 rng(stream_seed(test_seed(), "test_stochastic_rounding/mean_is_exact_over_all_offsets_for_random_floats"));
  for (int i = 0; i < 1500; ++i) {
    uint32_t u = uint32_t(rng());
    if ((u & 0x7fffffffu) > kMaxFiniteBf16Bits) u = (u & 0x80000000u) | (u & 0x7fffffffu) % kMaxFiniteBf16Bits;
    expect_unbiased(u, "random");
    if (HasFailure()) return;
  }
}

TEST(sr_exact_mean, MeanIsExactForSubnormalsAndEdges) {
  std::mt19937_64 rng(stream_seed(test_seed(), "test_stochastic_rounding/mean_is_exact_for_subnormals_and_edges"));
  std::vector<uint32_t> cases = {
      0x00000001u, 0x80000001u,  // the smallest subnormal
      0x00000002u, 0x0000ffffu, 0x00008000u, 0x00010001u, 0x007fffffu, 0x807fffffu,
      0x00800000u, 0x00800001u, 0x00ffffffu,  // smallest normals
      0x7f7effffu, 0x7f7e8000u, 0x7f7e0001u, 0xff7effffu, 0x7f7efffeu,  // just below max bf16
      0x3f800001u, 0x3fffffffu, 0xbf7fffffu, 0x3f808000u, 0x3f818000u,  // ties at 1
  };
  for (int i = 0; i < 300; ++i) cases.push_back(uint32_t(1 + rng() % 0x007fffffu) | (rng() & 1u) << 31);
  // fp32 subnormals below the smallest bf16 subnormal (2^-133): SR gives 0 or 2^-133.
  for (int i = 0; i < 100; ++i) cases.push_back(uint32_t(1 + rng() % 0xffffu) | (rng() & 1u) << 31);
  for (uint32_t xb : cases) expect_unbiased(xb, "edge");
}

TEST(sr_exact_mean, ExactBf16ValuesAndZerosAreFixedPoints) {
  std::mt19937_64 rng(stream_seed(test_seed(), "test_stochastic_rounding/exact_bf16_values_and_zeros_are_fixed_points"));
  std::vector<uint32_t> cases = {kMaxFiniteBf16Bits, 0xff7f0000u, 0x00010000u, 0x80010000u,
                                 0x007f0000u, 0x3f800000u, 0xbf800000u, 0x00800000u};
  for (int i = 0; i < 400; ++i) {
    uint32_t h = uint32_t(rng() % 0x7f7fu + 1);  // any finite bf16 magnitude but 0
    cases.push_back((h << 16) | (rng() & 1u) << 31);
  }
  for (uint32_t xb : cases) {
    for (uint32_t r = 0; r < kNoOffsets; ++r)
      ASSERT_EQ(float_to_bf16_sr(u2f(xb), r).bits, uint16_t(xb >> 16))
          << "exact bf16 0x" << std::hex << xb << " moved at r = 0x" << r;
    expect_unbiased(xb, "exact bf16");
  }
  for (uint32_t r = 0; r < kNoOffsets; ++r) {
    ASSERT_EQ(float_to_bf16_sr(0.0f, r).bits, 0x0000u) << "+0 at r = " << r;
    ASSERT_EQ(float_to_bf16_sr(-0.0f, r).bits, 0x8000u) << "-0 lost its sign at r = " << r;
  }
}

TEST(sr_exact_mean, AboveLargestFiniteGivesMaxOrInfWithTheDroppedFraction) {
  // x in (max bf16, FLT_MAX]: the two candidates are max bf16 (0x7f7f) and inf (0x7f80); inf
  // comes out for exactly `dropped` of the 2^16 offsets, dropped = the low 16 bits of x.
  std::mt19937_64 rng(stream_seed(test_seed(), "test_stochastic_rounding/above_largest_finite_gives_max_or_inf_with_the_dropped_fraction"));
  std::vector<uint32_t> cases = {0x7f7f0001u, 0x7f7f8000u, 0x7f7fffffu, 0x7f7f7fffu};
  for (int i = 0; i < 20; ++i) cases.push_back(0x7f7f0000u | uint32_t(1 + rng() % 0xffffu));
  for (uint32_t mag : cases)
    for (uint32_t sign : {0u, 0x80000000u}) {
      const uint32_t xb = mag | sign;
      uint32_t to_inf = 0;
      for (uint32_t r = 0; r < kNoOffsets; ++r) {
        const uint16_t y = float_to_bf16_sr(u2f(xb), r).bits;
        if (y == uint16_t((0x7f80u | sign >> 16))) ++to_inf;
        else ASSERT_EQ(y, uint16_t(0x7f7fu | sign >> 16)) << "x=0x" << std::hex << xb << " r=" << r;
      }
      EXPECT_EQ(to_inf, mag & 0xffffu) << "x = 0x" << std::hex << xb;
    }
}

TEST(sr_exact_mean, NaNStaysQuietNaNWithSignAndInfStaysInf) {
  std::mt19937_64 rng(stream_seed(test_seed(), "test_stochastic_rounding/nan_stays_quiet_nan_with_sign_and_inf_stays_inf"));
  std::vector<uint32_t> nans = {0x7fffffffu, 0xffffffffu, 0x7f800001u, 0xff800001u,
                                0x7fc00000u, 0xffc00000u, 0x7f80ffffu, 0x7f810000u, 0x7fbfffffu};
  for (int i = 0; i < 64; ++i) nans.push_back(0x7f800000u | uint32_t(1 + rng() % 0x7fffffu) | (rng() & 1u) << 31);
  for (uint32_t xb : nans) {
    const uint16_t rne = float_to_bf16_rne(u2f(xb)).bits;
    EXPECT_TRUE(is_nan_bits(uint32_t(rne) << 16) && (rne & 0x0040u) && (rne & 0x8000u) == (xb >> 16 & 0x8000u))
        << "RNE of NaN 0x" << std::hex << xb << " gave 0x" << rne;
    for (uint32_t r = 0; r < kNoOffsets; r += (xb == nans[0] || xb == nans[2]) ? 1 : 251) {
      const uint16_t y = float_to_bf16_sr(u2f(xb), r).bits;
      ASSERT_TRUE(is_nan_bits(uint32_t(y) << 16)) << "SR of NaN 0x" << std::hex << xb << " gave 0x" << y;
      ASSERT_TRUE(y & 0x0040u) << "SR of NaN 0x" << std::hex << xb << " is not quiet: 0x" << y;
      ASSERT_EQ(y & 0x8000u, xb >> 16 & 0x8000u) << "SR of NaN 0x" << std::hex << xb << " lost its sign";
    }
  }
  for (uint32_t r = 0; r < kNoOffsets; ++r) {
    ASSERT_EQ(float_to_bf16_sr(INFINITY, r).bits, 0x7f80u);
    ASSERT_EQ(float_to_bf16_sr(-INFINITY, r).bits, 0xff80u);
  }
  EXPECT_EQ(float_to_bf16_rne(INFINITY).bits, 0x7f80u);
  EXPECT_EQ(float_to_bf16_rne(-INFINITY).bits, 0xff80u);
}

TEST(sr_exact_mean, UsesOnlyTheLow16BitsOfR) {
  std::mt19937_64 rng(stream_seed(test_seed(), "test_stochastic_rounding/uses_only_the_low16_bits_of_r"));
  for (int i = 0; i < 100000; ++i) {
    const float x = u2f(uint32_t(rng()) & 0xbfffffffu);  // finite, |x| < 2
    const uint32_t r = uint32_t(rng());
    ASSERT_EQ(float_to_bf16_sr(x, r), float_to_bf16_sr(x, r & 0xffffu));
  }
}

// --- round to nearest even ----------------------------------------------------------------------

void expect_rne_matches(uint32_t u, int64_t& checked) {
  const float x = u2f(u);
  const uint16_t got = float_to_bf16_rne(x).bits;
  ++checked;
  if (is_nan_bits(u)) {
    ASSERT_TRUE(is_nan_bits(uint32_t(got) << 16) && (got & 0x40u) && (got & 0x8000u) == (u >> 16 & 0x8000u))
        << "RNE(NaN 0x" << std::hex << u << ") = 0x" << got;
    return;
  }
  ASSERT_EQ(got, rne_reference(x)) << "RNE(0x" << std::hex << u << ") = 0x" << got
                                   << ", reference 0x" << rne_reference(x);
}

TEST(RoundToNearestEven, MatchesReferenceOnAStrideOfAllPatterns) {
  int64_t checked = 0;
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 251) {
    expect_rne_matches(uint32_t(u), checked);
    if (HasFatalFailure()) return;
  }
  std::printf("RNE stride: %lld patterns\n", (long long)checked);
}

TEST(RoundToNearestEven, MatchesReferenceNextToEveryRoundingBoundary) {
  int64_t checked = 0;
  const uint32_t lows[] = {0x0000u, 0x0001u, 0x0002u, 0x7ffeu, 0x7fffu, 0x8000u,
                           0x8001u, 0x8002u, 0xfffeu, 0xffffu};
  for (uint32_t hi = 0; hi < kNoOffsets; ++hi)
    for (uint32_t lo : lows) {
      expect_rne_matches(hi << 16 | lo, checked);
      if (HasFatalFailure()) return;
    }
  // Every low half for a few high halves: subnormal, smallest normal, 1, largest finite.
  for (uint32_t hi : {0x0000u, 0x0001u, 0x0080u, 0x3f80u, 0x7f7eu, 0x7f7fu, 0xff7fu, 0x8000u})
    for (uint32_t lo = 0; lo < kNoOffsets; ++lo) expect_rne_matches(hi << 16 | lo, checked);
  std::printf("RNE boundaries: %lld patterns\n", (long long)checked);
}

TEST(RoundToNearestEven, TiesGoToEven) {
  for (uint32_t hi = 0; hi < kNoOffsets; ++hi) {
    const uint32_t u = hi << 16 | 0x8000u;
    if (is_nan_bits(u) || (u & 0x7fffffffu) == 0x7f800000u) continue;
    const uint16_t got = float_to_bf16_rne(u2f(u)).bits;
    ASSERT_EQ(got & 1u, 0u) << "tie 0x" << std::hex << u << " rounded to odd 0x" << got;
    ASSERT_TRUE(got == hi || got == hi + 1) << "tie 0x" << std::hex << u << " left its neighbours";
  }
  // The tie above the largest finite bf16 goes to infinity (its even neighbour, IEEE overflow).
  EXPECT_EQ(float_to_bf16_rne(u2f(0x7f7f8000u)).bits, 0x7f80u);
  EXPECT_EQ(float_to_bf16_rne(u2f(0x7f7f7fffu)).bits, 0x7f7fu);
  EXPECT_EQ(float_to_bf16_rne(FLT_MAX).bits, 0x7f80u);
  EXPECT_EQ(float_to_bf16_rne(-0.0f).bits, 0x8000u);
}

}  // namespace
}  // namespace fh
