// INT8 block-64 codec (kernels/formats/int8_block.h, derivation in kernels/formats/INT8_CODEC.md):
// the error bound checked exactly on millions of random and adversarial blocks, the bound's own
// safety, the special blocks, determinism and idempotence, block isolation through
// update_segment, and the refusal of layouts whose blocks would straddle an edge.
// The seed is printed and can be set with FH_SEED.
#include <gtest/gtest.h>
#include <mpreal.h>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/formats/host_param.h"
#include "kernels/formats/int8_block.h"

#include "reference/case_gen.h"

namespace fh {
namespace {

uint64_t test_seed() {
  static const uint64_t seed = announce_seed("test_int8_codec", 0x1e7c0dec5eedull);
  return seed;
}

uint32_t bits(float x) { return f2u(x); }

// |xp - x| <= bound, decided exactly. xp - x is formed in long double with TwoSum; when its
// rounding error is zero the long double difference is exact (the usual case: xp and x are close),
// otherwise MPFR at 400 bits, which holds the difference of any two floats exactly.
bool abs_diff_within(float xp, float x, double bound, long double* diff_out = nullptr) {
  const long double a = xp, b = -(long double)x;
  const long double s = a + b;
  const long double bv = s - a;
  const long double err = (a - (s - bv)) + (b - bv);
  if (diff_out) *diff_out = fabsl(s);
  if (err == 0) return fabsl(s) <= (long double)bound;
  const mpfr::mpreal d = mpfr::mpreal(xp, 400) - mpfr::mpreal(x, 400);
  return mpfr::abs(d) <= mpfr::mpreal(bound, 400);
}

struct CodecStats {
  int64_t elements = 0;
  int64_t violations = 0;
  double worst_over_half_step = 0.0;  // max |x'-x| / (a/(2L)) over regular blocks
  double worst_over_bound = 0.0;      // max |x'-x| / B(a)
  int64_t beyond_half_step = 0;       // elements whose error exceeds a/(2L) (rounding terms used)
  int64_t needs_subnormal_term = 0;   // error exceeds a/(2L) + 4ua (the 2^-150 term used)
  std::string first_violation;
};

// Encode one block, check absmax, the q range, and every element against the bound exactly.
void check_block(const float* x, int n, bool nonneg, CodecStats& st) {
  uint8_t q[kInt8Block];
  float a = -1.0f;
  int8_encode_block(x, n, nonneg, q, &a);
  float expect_a = 0.0f;
  for (int i = 0; i < n; ++i) expect_a = std::max(expect_a, std::fabs(x[i]));
  const int L = int8_levels(nonneg);
  const double B = int8_codec_bound(a, nonneg);
  const double half = double(a) / (2.0 * L);
  const double no_sub = half + double(a) * 0x1p-22;
  bool ok_a = bits(a) == bits(expect_a);
  for (int i = 0; i < n; ++i) {
    const float xp = int8_decode(q[i], nonneg, a);
    long double d = 0;
    const bool ok = ok_a && abs_diff_within(xp, x[i], B, &d);
    ++st.elements;
    if (half > 0) st.worst_over_half_step = std::max(st.worst_over_half_step, double(d) / half);
    st.worst_over_bound = std::max(st.worst_over_bound, double(d) / B);
    if (d > (long double)half) ++st.beyond_half_step;
    if (d > (long double)no_sub) ++st.needs_subnormal_term;
    if (!ok) {
      if (st.violations++ == 0) {
        char buf[256];
        std::snprintf(buf, sizeof buf,
                      "x=%a (0x%08x) decoded=%a absmax=%a (expected %a) q=%d L=%d bound=%a nonneg=%d",
                      double(x[i]), bits(x[i]), double(xp), double(a), double(expect_a),
                      nonneg ? int(q[i]) : int(int8_t(q[i])), L, B, int(nonneg));
        st.first_violation = buf;
      }
    }
  }
}

// A float with random sign, random 24-bit significand and binary exponent e (may round to a
// subnormal or to zero; e is kept <= 127 so the result is finite).
float random_float_at(std::mt19937_64& rng, int e, bool nonneg) {
  const double m = 1.0 + double(rng() >> 40) * 0x1p-24;
  float v = float(std::ldexp(m, e));
  if (!nonneg && (rng() & 1)) v = -v;
  return v;
}

// Blocks whose elements spread over many binades around a random exponent (all of fp32's range).
void wide_spread_block(std::mt19937_64& rng, bool nonneg, float* x, int n) {
  const int top = int(rng() % 277) - 149;      // -149 .. 127
  const int spread = int(rng() % 61);          // 0 .. 60 binades below the top
  for (int i = 0; i < n; ++i) {
    const int e = top - int(rng() % uint64_t(spread + 1));
    x[i] = (rng() % 16 == 0) ? 0.0f : random_float_at(rng, e, nonneg);
  }
}

// Blocks uniform in [-s, s] (or [0, s]): every element lands anywhere within a step, so the
// worst error approaches the half step.
void uniform_block(std::mt19937_64& rng, bool nonneg, float* x, int n) {
  const int e = int(rng() % 254) - 126;  // normal scales
  const float s = std::ldexp(1.0f, e);
  std::uniform_real_distribution<float> u(nonneg ? 0.0f : -1.0f, 1.0f);
  for (int i = 0; i < n; ++i) x[i] = u(rng) * s;
}

// Adversarial: absmax set by element 0, every other element on (or a few ulps around) a rounding
// boundary (k + 1/2) * a / L or on a grid point k * a / L.
void boundary_block(std::mt19937_64& rng, bool nonneg, float a, float* x, int n) {
  const int L = int8_levels(nonneg);
  x[0] = (!nonneg && (rng() & 1)) ? -a : a;
  for (int i = 1; i < n; ++i) {
    const int k = int(rng() % uint64_t(L));
    const double frac = (rng() & 3) ? 0.5 : 0.0;
    float v = float((double(k) + frac) / double(L) * double(a));
    const int nudge = int(rng() % 7) - 3;
    for (int j = 0; j < nudge; ++j) v = std::nextafter(v, FLT_MAX);
    for (int j = 0; j > nudge; --j) v = std::nextafter(v, 0.0f);
    if (v > a) v = a;
    if (!nonneg && (rng() & 1)) v = -v;
    x[i] = v;
  }
}

float random_absmax(std::mt19937_64& rng) {
  switch (rng() % 4) {
    case 0: return u2f(uint32_t(1 + rng() % 0x7f7fffffu));                    // any finite > 0
    case 1: return u2f(uint32_t(1 + rng() % 0x007fffffu));                    // subnormal
    case 2: return std::ldexp(float(1.0 + double(rng() >> 40) * 0x1p-24), int(rng() % 20) - 10);
    default: {
      const float edge[] = {FLT_MAX, FLT_MIN, FLT_TRUE_MIN, 1.0f, 127.0f, 255.0f,
                            std::nextafter(FLT_MAX, 0.0f), 0x1p-140f, 3 * FLT_TRUE_MIN};
      return edge[rng() % (sizeof edge / sizeof edge[0])];
    }
  }
}

void expect_clean(const CodecStats& st, const char* what) {
  EXPECT_EQ(st.violations, 0) << what << ": " << st.violations << " of " << st.elements
                              << " elements break the bound; first: " << st.first_violation;
  std::printf("%s: %lld elements, worst |err|/half-step %.6f, worst |err|/B %.6f, "
              "%lld beyond a/(2L), %lld need the 2^-150 term\n",
              what, (long long)st.elements, st.worst_over_half_step, st.worst_over_bound,
              (long long)st.beyond_half_step, (long long)st.needs_subnormal_term);
}

TEST(int8_codec_bound, BoundHoldsExactlyOnRandomWideSpreadBlocks) {
  std::mt19937_64 rng(stream_seed(test_seed(), "test_int8_codec/bound_holds_exactly_on_random_wide_spread_blocks"));
  for (bool nonneg : {false, true}) {
    CodecStats st;
    float x[kInt8Block];
    for (int b = 0; b < (1 << 19); ++b) {
      const int n = (b % 8 == 7) ? 1 + int(rng() % kInt8Block) : kInt8Block;  // ragged row ends
      wide_spread_block(rng, nonneg, x, n);
      check_block(x, n, nonneg, st);
    }
    expect_clean(st, nonneg ? "wide spread, non-negative" : "wide spread, signed");
  }
}

TEST(int8_codec_bound, BoundHoldsAndIsNotVacuousOnUniformBlocks) {
  std::mt19937_64 rng(stream_seed(test_seed(), "test_int8_codec/bound_holds_and_is_not_vacuous_on_uniform_blocks"));
  for (bool nonneg : {false, true}) {
    CodecStats st;
    float x[kInt8Block];
    for (int b = 0; b < (1 << 17); ++b) {
      uniform_block(rng, nonneg, x, kInt8Block);
      check_block(x, kInt8Block, nonneg, st);
    }
    expect_clean(st, nonneg ? "uniform, non-negative" : "uniform, signed");
    // The half step is the bound's main part; the codec must actually come close to the bound.
    EXPECT_GE(st.worst_over_bound, 0.4) << "the bound is vacuous: errors stay far below it";
    EXPECT_GE(st.worst_over_half_step, 0.4);
  }
}

TEST(int8_codec_bound, BoundHoldsOnRoundingBoundariesAndSubnormalAbsmax) {
  std::mt19937_64 rng(stream_seed(test_seed(), "test_int8_codec/bound_holds_on_rounding_boundaries_and_subnormal_absmax"));
  for (bool nonneg : {false, true}) {
    CodecStats st;
    float x[kInt8Block];
    for (int b = 0; b < (1 << 18); ++b) {
      boundary_block(rng, nonneg, random_absmax(rng), x, kInt8Block);
      check_block(x, kInt8Block, nonneg, st);
    }
    // Every multiple of the subnormal spacing below a small subnormal absmax.
    for (uint32_t ab = 1; ab < 4096; ab += (ab < 600 ? 1 : 37)) {
      const float a = u2f(ab);
      for (uint32_t k0 = 0; k0 <= ab; k0 += kInt8Block - 1) {
        x[0] = a;
        for (int i = 1; i < kInt8Block; ++i) {
          const uint32_t k = std::min<uint32_t>(ab, k0 + uint32_t(i - 1));
          x[i] = (!nonneg && (i & 1)) ? -u2f(k) : u2f(k);
        }
        check_block(x, kInt8Block, nonneg, st);
      }
    }
    expect_clean(st, nonneg ? "boundaries + subnormal absmax, non-negative"
                            : "boundaries + subnormal absmax, signed");
    // The derivation's extra terms are needed, not decoration: some errors exceed the half step
    // (fp32 roundings move y across a rounding boundary), and with subnormal absmax some exceed
    // a/(2L) + 4ua (a decoded value rounded to the subnormal grid).
    EXPECT_GT(st.beyond_half_step, 0);
    EXPECT_GT(st.needs_subnormal_term, 0);
  }
}

TEST(int8_codec_bound, BoundFunctionIsAnUpperBoundAndTight) {
  std::mt19937_64 rng(stream_seed(test_seed(), "test_int8_codec/bound_function_is_an_upper_bound_and_tight"));
  for (bool nonneg : {false, true}) {
    const int L = int8_levels(nonneg);
    for (int i = 0; i < 100000; ++i) {
      const float a = (i == 0) ? 0.0f : random_absmax(rng);
      mpfr::mpreal A(a, 300);
      const mpfr::mpreal exact = A / (2 * L) + A * mpfr::mpreal("0x1p-22", 300, 16) +
                                 mpfr::mpreal("0x1p-150", 300, 16);
      const double B = int8_codec_bound(a, nonneg);
      ASSERT_TRUE(mpfr::mpreal(B, 300) >= exact) << "bound rounds below B(a) at a=" << a;
      ASSERT_TRUE(mpfr::mpreal(B, 300) <= exact * (1 + mpfr::mpreal("0x1p-48", 300, 16)))
          << "bound needlessly loose at a=" << a;
    }
    EXPECT_TRUE(std::isinf(int8_codec_bound(INFINITY, nonneg)));
    EXPECT_TRUE(std::isnan(int8_codec_bound(NAN, nonneg)));
  }
}

TEST(int8_codec_bound, LevelsGridAndBytes) {
  EXPECT_EQ(int8_levels(false), 127);
  EXPECT_EQ(int8_levels(true), 255);
  const float x[4] = {-3.0f, 3.0f, 0.0f, 1.5f};
  uint8_t q[4];
  float a;
  int8_encode_block(x, 4, false, q, &a);
  EXPECT_EQ(a, 3.0f);
  EXPECT_EQ(q[0], 0x81);  // -127, two's complement
  EXPECT_EQ(q[1], 0x7f);
  EXPECT_EQ(q[2], 0x00);
  EXPECT_EQ(q[3], 64);    // 63.5 rounds half to even -> 64
  EXPECT_EQ(bits(int8_decode(q[0], false, a)), bits(-3.0f));  // +-L decodes to +-a exactly
  EXPECT_EQ(bits(int8_decode(q[1], false, a)), bits(3.0f));
  const float y[3] = {0.0f, 255.0f, 127.5f};
  int8_encode_block(y, 3, true, q, &a);
  EXPECT_EQ(q[1], 255);
  EXPECT_EQ(q[2], 128);  // 127.5 -> even 128
  EXPECT_EQ(bits(int8_decode(255, true, a)), bits(255.0f));
  // Decoding never overflows, even with absmax FLT_MAX.
  const float big[2] = {FLT_MAX, -FLT_MAX * 0.99f};
  int8_encode_block(big, 2, false, q, &a);
  EXPECT_EQ(bits(int8_decode(q[0], false, a)), bits(FLT_MAX));
  EXPECT_TRUE(std::isfinite(int8_decode(q[1], false, a)));
}

// The decode's division-free quotient (int8_level_quotient) is the division's bits for every
// code of both codecs, and the decode keeps the division's form's results on special blocks.
TEST(int8_codec_bound, LevelQuotientIsTheDivision) {
  int compared = 0;
  for (bool nonneg : {false, true}) {
    const float L = float(int8_levels(nonneg));
    for (int q = -255; q <= 255; ++q, ++compared)
      ASSERT_EQ(bits(int8_level_quotient(q, nonneg)), bits(fdiv(float(q), L))) << "q " << q << " L " << L;
    for (float a : {0.0f, 1.0f, 3.0f, FLT_MAX, FLT_MIN, 1e-45f, INFINITY, NAN})
      for (int b = 0; b < 256; ++b) {
        const int q = nonneg ? b : int(int8_t(uint8_t(b)));
        const float want = std::isnan(a) ? a : (q == 0 ? 0.0f : fmul(fdiv(float(q), L), a));
        ASSERT_EQ(bits(int8_decode(uint8_t(b), nonneg, a)), bits(want)) << "byte " << b << " absmax " << a;
      }
  }
  EXPECT_EQ(compared, 1022);
}

TEST(int8_codec_bound, SpecialBlocks) {
  uint8_t q[kInt8Block];
  float a;
  float x[kInt8Block];
  for (bool nonneg : {false, true}) {
    // All zero (with -0): absmax +0, q = 0, decodes to +0.
    for (int i = 0; i < kInt8Block; ++i) x[i] = (i & 1) ? -0.0f : 0.0f;
    int8_encode_block(x, kInt8Block, nonneg, q, &a);
    EXPECT_EQ(bits(a), 0u);
    for (int i = 0; i < kInt8Block; ++i) {
      EXPECT_EQ(q[i], 0);
      EXPECT_EQ(bits(int8_decode(q[i], nonneg, a)), 0u);
    }
    // One huge outlier: the others quantise to 0, within the bound.
    for (int i = 0; i < kInt8Block; ++i) x[i] = nonneg ? 1.0f + i : (i & 1 ? 1.0f : -2.0f);
    x[17] = 1e30f;
    CodecStats st;
    check_block(x, kInt8Block, nonneg, st);
    expect_clean(st, "outlier");
    int8_encode_block(x, kInt8Block, nonneg, q, &a);
    EXPECT_EQ(a, 1e30f);
    for (int i = 0; i < kInt8Block; ++i) {
      if (i == 17) continue;
      EXPECT_EQ(q[i], 0);
      EXPECT_EQ(bits(int8_decode(q[i], nonneg, a)), 0u);
    }
    EXPECT_EQ(int8_decode(q[17], nonneg, a), 1e30f);
    // Subnormal absmax: still within the bound (checked exhaustively above), and the top element
    // decodes exactly.
    for (int i = 0; i < kInt8Block; ++i) x[i] = u2f(uint32_t(i * 1000 + 7));
    int8_encode_block(x, kInt8Block, nonneg, q, &a);
    EXPECT_EQ(a, x[kInt8Block - 1]);
    EXPECT_EQ(bits(int8_decode(q[kInt8Block - 1], nonneg, a)), bits(a));
    // NaN anywhere: absmax is the canonical quiet NaN whatever the payloads (so a warp
    // reduction and a sequential loop store the same bits), every element decodes to it.
    for (uint32_t nan_bits : {0x7fc00000u, 0xffc00001u, 0x7f800001u, 0xffffffffu}) {
      for (int i = 0; i < kInt8Block; ++i) x[i] = float(i) * 0.25f;
      x[40] = u2f(nan_bits);
      x[7] = u2f(0x7fa00003u);  // a second NaN with another payload, earlier in the block
      int8_encode_block(x, kInt8Block, nonneg, q, &a);
      EXPECT_EQ(bits(a), kInt8CanonicalNanBits);
      for (int i = 0; i < kInt8Block; ++i) {
        EXPECT_EQ(q[i], 0);
        EXPECT_EQ(bits(int8_decode(q[i], nonneg, a)), kInt8CanonicalNanBits);
      }
      // Any visiting order of the absmax steps gives the same stored absmax.
      float rev = 0.0f;
      for (int i = kInt8Block - 1; i >= 0; --i) rev = int8_absmax_step(rev, x[i]);
      EXPECT_EQ(bits(int8_canonical_absmax(rev)), bits(a));
    }
    // +-inf: absmax +inf; +inf -> L, -inf -> -L (non-negative: 0), finite -> +0.
    for (int i = 0; i < kInt8Block; ++i) x[i] = float(i) - 30.0f;
    x[3] = INFINITY;
    x[9] = -INFINITY;
    int8_encode_block(x, kInt8Block, nonneg, q, &a);
    EXPECT_EQ(bits(a), bits(INFINITY));
    for (int i = 0; i < kInt8Block; ++i) {
      const float d = int8_decode(q[i], nonneg, a);
      if (i == 3) EXPECT_EQ(bits(d), bits(INFINITY));
      else if (i == 9 && !nonneg) EXPECT_EQ(bits(d), bits(-INFINITY));
      else EXPECT_EQ(bits(d), 0u) << "element " << i;
    }
  }
  // The documented case that needs the 2^-150 term: absmax 200 * 2^-149, L = 127, x = 2^-149.
  const float sub[2] = {u2f(200), u2f(1)};
  int8_encode_block(sub, 2, false, q, &a);
  EXPECT_EQ(q[1], 1);
  EXPECT_EQ(bits(int8_decode(q[1], false, a)), 2u);  // 2 * 2^-149: error 2^-149
  EXPECT_GT(0x1p-149, double(a) / 254 + double(a) * 0x1p-22);
  EXPECT_LE(0x1p-149, int8_codec_bound(a, false));
  // Negative input to the non-negative codec clamps to q = 0 (decodes to +0); |x| counts in absmax.
  const float neg[4] = {-8.0f, 2.0f, -0.5f, 4.0f};
  int8_encode_block(neg, 4, true, q, &a);
  EXPECT_EQ(a, 8.0f);
  EXPECT_EQ(q[0], 0);
  EXPECT_EQ(q[2], 0);
  EXPECT_EQ(bits(int8_decode(q[0], true, a)), 0u);
  EXPECT_EQ(q[1], 64);  // 2/8*255 = 63.75 -> 64
  EXPECT_EQ(q[3], 128);  // 127.5 -> 128 (even)
}

TEST(int8_codec_bound, EncodingIsDeterministicAndIdempotent) {
  std::mt19937_64 rng(stream_seed(test_seed(), "test_int8_codec/encoding_is_deterministic_and_idempotent"));
  for (int b = 0; b < 200000; ++b) {
    const bool nonneg = b & 1;
    float x[kInt8Block], xd[kInt8Block];
    if (b % 3 == 0) wide_spread_block(rng, nonneg, x, kInt8Block);
    else if (b % 3 == 1) uniform_block(rng, nonneg, x, kInt8Block);
    else boundary_block(rng, nonneg, random_absmax(rng), x, kInt8Block);
    uint8_t q1[kInt8Block], q2[kInt8Block], q3[kInt8Block];
    float a1, a2, a3;
    int8_encode_block(x, kInt8Block, nonneg, q1, &a1);
    int8_encode_block(x, kInt8Block, nonneg, q2, &a2);
    ASSERT_EQ(bits(a1), bits(a2));
    ASSERT_EQ(std::memcmp(q1, q2, kInt8Block), 0) << "encode is not deterministic";
    for (int i = 0; i < kInt8Block; ++i) xd[i] = int8_decode(q1[i], nonneg, a1);
    int8_encode_block(xd, kInt8Block, nonneg, q3, &a3);
    ASSERT_EQ(bits(a3), bits(a1)) << "re-encoding changed absmax " << a1;
    ASSERT_EQ(std::memcmp(q1, q3, kInt8Block), 0) << "re-encoding changed q at absmax " << a1;
  }
  // Lossless below L * 2^-149: every absmax A * 2^-149 with A <= L and every element k * 2^-149.
  for (bool nonneg : {false, true}) {
    const int L = int8_levels(nonneg);
    for (uint32_t A = 1; A <= uint32_t(L); ++A)
      for (uint32_t k0 = 0; k0 <= A; k0 += kInt8Block - 1) {
        float x[kInt8Block];
        uint8_t q[kInt8Block];
        float a;
        x[0] = u2f(A);
        for (int i = 1; i < kInt8Block; ++i) {
          const uint32_t k = std::min(A, k0 + uint32_t(i - 1));
          x[i] = (!nonneg && (i & 1)) ? -u2f(k) : u2f(k);
        }
        int8_encode_block(x, kInt8Block, nonneg, q, &a);
        for (int i = 0; i < kInt8Block; ++i) {
          const float xd = int8_decode(q[i], nonneg, a);
          ASSERT_EQ(bits(xd), bits(std::fabs(x[i]) == 0.0f ? 0.0f : x[i]))
              << "not lossless at absmax " << A << " * 2^-149, element " << x[i];
        }
      }
  }
  float x[kInt8Block], xd[kInt8Block];
  uint8_t q1[kInt8Block], q3[kInt8Block];
  float a1, a3;
  // The documented exception: a non-negative block whose absmax came from a negative element.
  const float neg[3] = {-8.0f, 2.0f, 4.0f};
  int8_encode_block(neg, 3, true, q1, &a1);
  for (int i = 0; i < 3; ++i) xd[i] = int8_decode(q1[i], true, a1);
  int8_encode_block(xd, 3, true, q3, &a3);
  EXPECT_NE(bits(a1), bits(a3));
  EXPECT_NE(std::memcmp(q1, q3, 3), 0);
  // Zero, NaN and inf blocks re-encode to themselves.
  for (float special : {0.0f, NAN, INFINITY}) {
    for (int i = 0; i < kInt8Block; ++i) x[i] = special == 0.0f ? 0.0f : float(i);
    x[5] = special;
    x[6] = -special;
    int8_encode_block(x, kInt8Block, false, q1, &a1);
    for (int i = 0; i < kInt8Block; ++i) xd[i] = int8_decode(q1[i], false, a1);
    int8_encode_block(xd, kInt8Block, false, q3, &a3);
    EXPECT_EQ(bits(a1), bits(a3));
    EXPECT_EQ(std::memcmp(q1, q3, kInt8Block), 0);
  }
}

// --- block isolation through the one driver (update_segment via apply_rule_region) -------------

struct Int8Run {
  HostParam hp;
  explicit Int8Run(int64_t rows, int64_t cols) {
    std::vector<float> w0(size_t(rows * cols));
    std::mt19937_64 rng(stream_seed(test_seed(), "test_int8_codec/int8_run_weights"));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (float& w : w0) w = u(rng);
    hp = HostParam::make(default_rule_config(RuleId::adamw), StateFormat::int8,
                         WeightStore::fp32_master, rows, cols, w0);
  }
  // One step, applied in two column tiles [0, 128) and [128, cols) as a tiled producer would.
  void step(int64_t t, const std::vector<float>& g) {
    HostParamView pv = hp.view();
    const int64_t split = std::min<int64_t>(128, hp.cols);
    apply_rule_region(hp.rule, hp.state_format, hp.weight_store, pv, t, g.data(), hp.cols, 0,
                      hp.rows, 0, split);
    if (split < hp.cols)
      apply_rule_region(hp.rule, hp.state_format, hp.weight_store, pv, t, g.data() + split,
                        hp.cols, 0, hp.rows, split, hp.cols);
  }
};

TEST(int8_codec_bound, PoisonedGradientStaysInItsBlock) {
  const int64_t rows = 3, cols = 200;  // blocks [0,64) [64,128) [128,192) [192,200)
  const int64_t bpr = (cols + kInt8Block - 1) / kInt8Block;
  std::mt19937_64 rng(stream_seed(test_seed(), "test_int8_codec/poisoned_gradient_stays_in_its_block"));
  std::normal_distribution<float> nd(0.0f, 1e-2f);
  std::vector<std::vector<float>> grads(5, std::vector<float>(size_t(rows * cols)));
  for (auto& g : grads)
    for (float& v : g) v = nd(rng);
  struct Poison { int64_t r, c; float v; };
  for (Poison p : {Poison{1, 70, NAN}, Poison{2, 195, INFINITY}, Poison{0, 0, -INFINITY},
                   Poison{0, 127, NAN}}) {
    Int8Run clean(rows, cols), poisoned(rows, cols);
    for (int64_t t = 1; t <= 5; ++t) {
      std::vector<float> g = grads[size_t(t - 1)];
      clean.step(t, g);
      if (t == 3) g[size_t(p.r * cols + p.c)] = p.v;
      poisoned.step(t, g);
    }
    const int64_t pb = p.c / kInt8Block;
    int64_t poisoned_block_differs = 0;
    for (int k = 0; k < kMaxStates; ++k) {
      if (!clean.hp.decls.slot[k].kept) continue;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t b = 0; b < bpr; ++b) {
          const size_t blk = size_t(r * bpr + b);
          const int64_t c0 = b * kInt8Block, c1 = std::min(cols, c0 + kInt8Block);
          const bool same_absmax = bits(clean.hp.st_absmax[k][blk]) == bits(poisoned.hp.st_absmax[k][blk]);
          const bool same_bytes = std::memcmp(clean.hp.st_i8[k].data() + r * cols + c0,
                                              poisoned.hp.st_i8[k].data() + r * cols + c0,
                                              size_t(c1 - c0)) == 0;
          if (r == p.r && b == pb) {
            poisoned_block_differs += !(same_absmax && same_bytes);
            continue;
          }
          EXPECT_TRUE(same_absmax && same_bytes)
              << "state slot " << k << " block (" << r << ", " << b << ") changed by a poisoned "
              << "gradient at (" << p.r << ", " << p.c << ")";
        }
    }
    EXPECT_GT(poisoned_block_differs, 0) << "the poisoned block itself should change";
    for (int64_t i = 0; i < rows * cols; ++i) {
      const int64_t r = i / cols, c = i % cols;
      if (r == p.r && c / kInt8Block == pb) continue;
      ASSERT_EQ(bits(clean.hp.weight(i)), bits(poisoned.hp.weight(i)))
          << "weight (" << r << ", " << c << ") outside the poisoned block changed";
    }
    if (std::isnan(p.v)) {
      // The NaN reached the block's absmax, so the whole block's weights are NaN by now.
      for (int64_t c = pb * kInt8Block; c < std::min(cols, (pb + 1) * kInt8Block); ++c)
        EXPECT_TRUE(std::isnan(poisoned.hp.weight(p.r * cols + c)));
    }
  }
}

// --- refusal of layouts whose blocks straddle an edge ------------------------------------------

TEST(int8_codec_bound, StraddlingLayoutsAreRefused) {
  EXPECT_THROW(require_block_aligned(StateFormat::int8, 96, 256, "tile"), std::invalid_argument);
  EXPECT_THROW(require_block_aligned(StateFormat::int8, 32, 256, "shard"), std::invalid_argument);
  EXPECT_THROW(require_block_aligned(StateFormat::int8, 200, 256, "tile"), std::invalid_argument);
  EXPECT_NO_THROW(require_block_aligned(StateFormat::int8, 0, 256, "tile"));
  EXPECT_NO_THROW(require_block_aligned(StateFormat::int8, 128, 256, "tile"));
  EXPECT_NO_THROW(require_block_aligned(StateFormat::int8, 256, 256, "tile"));
  EXPECT_NO_THROW(require_block_aligned(StateFormat::int8, 200, 200, "tile"));  // ragged end
  EXPECT_NO_THROW(require_block_aligned(StateFormat::fp32, 96, 256, "tile"));   // only int8 cares
  EXPECT_NO_THROW(require_block_aligned(StateFormat::bf16, 96, 256, "tile"));
  // Edges outside the tensor are bad input, not an aligned layout.
  EXPECT_THROW(require_block_aligned(StateFormat::int8, -64, 256, "tile"), std::invalid_argument);
  EXPECT_THROW(require_block_aligned(StateFormat::int8, 320, 256, "tile"), std::invalid_argument);
  try {
    require_block_aligned(StateFormat::int8, 96, 256, "tile");
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("96"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tile"), std::string::npos) << e.what();
  }

  const int64_t rows = 2, cols = 256;
  std::vector<float> w0(size_t(rows * cols), 0.5f), g(size_t(rows * cols), 1e-3f);
  for (StateFormat sf : {StateFormat::int8, StateFormat::fp32}) {
    HostParam hp = HostParam::make(default_rule_config(RuleId::adamw), sf,
                                   WeightStore::fp32_master, rows, cols, w0);
    HostParamView pv = hp.view();
    auto region = [&](int64_t c0, int64_t c1) {
      apply_rule_region(hp.rule, sf, hp.weight_store, pv, 1, g.data(), cols, 0, rows, c0, c1);
    };
    if (sf == StateFormat::int8) {
      EXPECT_THROW(region(32, 256), std::invalid_argument);
      EXPECT_THROW(region(0, 96), std::invalid_argument);
      EXPECT_NO_THROW(region(64, 128));
      EXPECT_NO_THROW(region(128, 256));
    } else {
      EXPECT_NO_THROW(region(32, 256));
    }
  }
  // A ragged tensor end (200 columns) is accepted; a tile edge at 100 is not.
  {
    std::vector<float> w(2 * 200, 0.5f), gg(2 * 200, 1e-3f);
    HostParam hp = HostParam::make(default_rule_config(RuleId::adamw), StateFormat::int8,
                                   WeightStore::fp32_master, 2, 200, w);
    HostParamView pv = hp.view();
    EXPECT_NO_THROW(apply_rule_region(hp.rule, hp.state_format, hp.weight_store, pv, 1, gg.data(),
                                      200, 0, 2, 128, 200));
    EXPECT_THROW(apply_rule_region(hp.rule, hp.state_format, hp.weight_store, pv, 1, gg.data(),
                                   200, 0, 2, 0, 100), std::invalid_argument);
  }
  // A shard that starts mid-block (global column 32 of 256) is refused even when the region's
  // global edges (64, 256) are aligned: its local blocks would straddle global blocks.
  {
    std::vector<float> w(2 * 224, 0.5f), gg(2 * 224, 1e-3f);
    HostParam hp = HostParam::make(default_rule_config(RuleId::adamw), StateFormat::int8,
                                   WeightStore::fp32_master, 2, 224, w);
    HostParamView pv = hp.view();
    pv.col0 = 32;
    pv.global_cols = 256;
    EXPECT_THROW(apply_rule_region(hp.rule, hp.state_format, hp.weight_store, pv, 1, gg.data(),
                                   224, 0, 2, 32, 224), std::invalid_argument);
    pv.col0 = 64;  // an aligned shard [64, 288) would run past the tensor: refused too
    EXPECT_THROW(apply_rule_region(hp.rule, hp.state_format, hp.weight_store, pv, 1, gg.data(),
                                   224, 0, 2, 0, 192), std::invalid_argument);
    pv.global_cols = 288;  // aligned shard ending at the tensor's (ragged) end: accepted
    EXPECT_NO_THROW(apply_rule_region(hp.rule, hp.state_format, hp.weight_store, pv, 1, gg.data(),
                                      224, 0, 2, 0, 224));
  }
}

}  // namespace
}  // namespace fh
