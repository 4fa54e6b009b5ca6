// Philox4x32-10 (kernels/common/philox.h) and the bits stochastic rounding draws from it:
// Random123's published known-answer vectors, an independent slow implementation written from
// the algorithm's definition, keying by position (DESIGN contract 4: seed, step, tensor id,
// global element index; tile and shard layout never change a bit), and uniformity of the 16 bits
// (chi-square over 2^16 bins, fixed seed, two-sided false-alarm rate 1e-9, with its power shown
// against a planted bias). The seed is printed and can be set with FH_SEED.
#include <gtest/gtest.h>
#include <mpreal.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "kernels/common/philox.h"
#include "kernels/formats/host_param.h"

#include "reference/case_gen.h"

namespace fh {
namespace {

uint64_t test_seed() {
  static const uint64_t seed = announce_seed("test_bf16_philox", 0x9e11c0ffeeull);
  return seed;
}

using Words4 = std::array<uint32_t, 4>;

Words4 words(philox_u4 v) { return {v.x, v.y, v.z, v.w}; }

// Slow Philox4x32-R from the definition in Salmon et al. (SC'11), sharing no code with philox.h:
// round keys k_r = k + r * W (mod 2^32), 32x32 -> 64 products from 16-bit limbs, and the round
// (X0, X1, X2, X3) -> (hi(M1 X2) ^ X1 ^ k0_r, lo(M1 X2), hi(M0 X0) ^ X3 ^ k1_r, lo(M0 X0)).
struct SlowProduct { uint32_t hi, lo; };
SlowProduct slow_mul32(uint32_t a, uint32_t b) {
  const uint32_t a0 = a & 0xffff, a1 = a >> 16, b0 = b & 0xffff, b1 = b >> 16;
  const uint32_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  const uint32_t mid = (p00 >> 16) + (p01 & 0xffff) + (p10 & 0xffff);  // < 3 * 2^16
  const uint32_t lo = (mid << 16) | (p00 & 0xffff);
  const uint32_t hi = p11 + (p01 >> 16) + (p10 >> 16) + (mid >> 16);
  return {hi, lo};
}
Words4 slow_philox4x32(Words4 x, std::array<uint32_t, 2> key, int rounds) {
  const uint32_t multiplier[2] = {0xD2511F53u, 0xCD9E8D57u};
  const uint32_t weyl[2] = {0x9E3779B9u, 0xBB67AE85u};
  for (int r = 0; r < rounds; ++r) {
    const uint32_t k0 = key[0] + uint32_t(r) * weyl[0], k1 = key[1] + uint32_t(r) * weyl[1];
    const SlowProduct a = slow_mul32(multiplier[0], x[0]), b = slow_mul32(multiplier[1], x[2]);
    x = Words4{b.hi ^ x[1] ^ k0, b.lo, a.hi ^ x[3] ^ k1, a.lo};
  }
  return x;
}

struct Kat { Words4 ctr; std::array<uint32_t, 2> key; Words4 out; };
// Random123's kat_vectors for philox4x32 with 10 rounds.
const Kat kKats[] = {
    {{0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u}, {0x00000000u, 0x00000000u},
     {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
    {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu},
     {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
    {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u},
     {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
};

TEST(Philox, KnownAnswerVectors) {
  for (const Kat& k : kKats) {
    const philox_u4 got = philox4x32_10(philox_u4{k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3]},
                                        k.key[0], k.key[1]);
    EXPECT_EQ(words(got), k.out) << std::hex << "ctr " << k.ctr[0] << " key " << k.key[0];
    EXPECT_EQ(slow_philox4x32(k.ctr, k.key, 10), k.out) << "the slow reference itself is wrong";
  }
}

TEST(Philox, MatchesTheSlowDefinitionOnRandomInputs) {
  std::mt19937_64 rng(stream_seed(test_seed(), "test_bf16_philox/matches_the_slow_definition_on_random_inputs"));
  for (int i = 0; i < 200000; ++i) {
    const Words4 c = {uint32_t(rng()), uint32_t(rng()), uint32_t(rng()), uint32_t(rng())};
    const std::array<uint32_t, 2> k = {uint32_t(rng()), uint32_t(rng())};
    ASSERT_EQ(words(philox4x32_10(philox_u4{c[0], c[1], c[2], c[3]}, k[0], k[1])),
              slow_philox4x32(c, k, 10));
  }
  // The limb product against the 64-bit one, so the reference does not rest on itself.
  for (int i = 0; i < 200000; ++i) {
    const uint32_t a = uint32_t(rng()), b = uint32_t(rng());
    const uint64_t p = uint64_t(a) * b;
    const SlowProduct s = slow_mul32(a, b);
    ASSERT_EQ(s.hi, uint32_t(p >> 32));
    ASSERT_EQ(s.lo, uint32_t(p));
  }
}

// sr_bits: the top 16 bits of word x of Philox(ctr = (index lo, index hi, step, tensor id),
// key = (seed lo, seed hi)).
uint32_t sr_bits_from_definition(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t index) {
  const Words4 out = slow_philox4x32({uint32_t(index), uint32_t(index >> 32), step, tensor},
                                     {uint32_t(seed), uint32_t(seed >> 32)}, 10);
  return out[0] >> 16;
}

TEST(SrBits, LayoutOfCounterAndKey) {
  std::mt19937_64 rng(stream_seed(test_seed(), "test_bf16_philox/layout_of_counter_and_key"));
  for (int i = 0; i < 50000; ++i) {
    const sr_key key{rng(), uint32_t(rng()), uint32_t(rng())};
    const uint64_t index = rng() >> (rng() % 64);
    const uint32_t b = sr_bits(key, index);
    ASSERT_LT(b, 1u << 16);
    ASSERT_EQ(b, sr_bits_from_definition(key.seed, key.step, key.tensor_id, index));
  }
}

TEST(SrBits, KeyedByPositionOnly) {
  const sr_key base{0x0123456789abcdefull, 7, 3};
  const uint64_t i0 = 1000;
  constexpr int kDraws = 4096;
  std::vector<uint32_t> ref(kDraws);
  for (int i = 0; i < kDraws; ++i) ref[size_t(i)] = sr_bits(base, i0 + uint64_t(i));
  // Same position, same bits (a fresh key object, repeated calls).
  for (int i = 0; i < kDraws; ++i) {
    const sr_key copy{base.seed, base.step, base.tensor_id};
    ASSERT_EQ(sr_bits(copy, i0 + uint64_t(i)), ref[size_t(i)]);
  }
  // Any change of seed (either word), step, tensor id or index (either word) gives other bits: of
  // 4096 draws about 4096/65536 = 0.06 agree by chance; more than 6 has probability < 1e-12.
  struct Variant { const char* what; sr_key key; uint64_t index_offset; };
  const Variant variants[] = {
      {"seed low word", {base.seed ^ 1, base.step, base.tensor_id}, 0},
      {"seed high word", {base.seed ^ (uint64_t(1) << 40), base.step, base.tensor_id}, 0},
      {"step", {base.seed, base.step + 1, base.tensor_id}, 0},
      {"tensor id", {base.seed, base.step, base.tensor_id + 1}, 0},
      {"index + 2^32", base, uint64_t(1) << 32},
      {"index + 4096", base, kDraws},
  };
  for (const Variant& v : variants) {
    int same = 0;
    for (int i = 0; i < kDraws; ++i) same += sr_bits(v.key, i0 + v.index_offset + uint64_t(i)) == ref[size_t(i)];
    EXPECT_LE(same, 6) << v.what << " does not change the bits: " << same << " of " << kDraws << " agree";
  }
}

// Two-sided tail probability of a chi-square statistic with k degrees of freedom, from the
// regularized incomplete gamma function in MPFR.
double chi_square_two_sided_p(double stat, int k) {
  // Far tails first (Wilson-Hilferty normal approximation): beyond 12 sigma the p-value is below
  // 1e-30 on any reading, and MPFR's incomplete gamma gets slow out there.
  const double z = (std::cbrt(stat / k) - (1 - 2.0 / (9 * k))) / std::sqrt(2.0 / (9 * k));
  if (std::fabs(z) > 12) return 0.0;
  const int prec = 160;
  const mpfr::mpreal a = mpfr::mpreal(k, prec) / 2, x = mpfr::mpreal(stat, prec) / 2;
  const mpfr::mpreal upper = mpfr::gammainc(a, x) / mpfr::gamma(a);
  const mpfr::mpreal lower = 1 - upper;
  return 2 * std::min(upper.toDouble(), lower.toDouble());
}

template <class Draw>
double chi_square_16_bits(Draw draw, int64_t n) {
  std::vector<int64_t> counts(1u << 16, 0);
  for (int64_t i = 0; i < n; ++i) ++counts[draw(i) & 0xffffu];
  const double expect = double(n) / 65536.0;
  double stat = 0;
  for (int64_t c : counts) stat += (double(c) - expect) * (double(c) - expect) / expect;
  return stat;
}

TEST(SrBits, UniformOver65536BinsAtFalseAlarmRate1e9) {
  const sr_key key{0x5eed5eed5eedull, 1, 42};
  const int64_t n = int64_t(64) << 16;  // 64 per bin
  const double stat = chi_square_16_bits([&](int64_t i) { return sr_bits(key, uint64_t(i)); }, n);
  const double p = chi_square_two_sided_p(stat, 65535);
  std::printf("chi-square of sr_bits over 2^16 bins: %.1f (65535 dof), two-sided p = %.3g\n", stat, p);
  EXPECT_GT(p, 1e-9) << "sr_bits fails uniformity: chi-square " << stat;
  // Power: the same test on the same stream with every 16th draw's top bit cleared (a bias of
  // 1/32 in the top bit) must reject.
  const double biased = chi_square_16_bits([&](int64_t i) {
    const uint32_t b = sr_bits(key, uint64_t(i));
    return (i % 16 == 0) ? (b & 0x7fffu) : b;
  }, n);
  const double pb = chi_square_two_sided_p(biased, 65535);
  std::printf("with a planted top-bit bias: %.1f, p = %.3g\n", biased, pb);
  EXPECT_LT(pb, 1e-9) << "the uniformity test has no power against a 1/32 top-bit bias";
  // Also the test's own calibration: p(mean) ~ 1, p far in either tail ~ 0.
  EXPECT_GT(chi_square_two_sided_p(65535.0, 65535), 0.9);
  EXPECT_LT(chi_square_two_sided_p(69000.0, 65535), 1e-9);
  EXPECT_LT(chi_square_two_sided_p(62000.0, 65535), 1e-9);
}

// Stochastic rounding of weights through the driver: the same bits whatever the tiling and
// sharding, because bits are keyed by the global element index.
TEST(SrBits, WeightsIndependentOfTilingAndSharding) {
  const int64_t rows = 5, cols = 192;
  std::mt19937_64 rng(stream_seed(test_seed(), "test_bf16_philox/weights_independent_of_tiling_and_sharding"));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> w0(size_t(rows * cols)), g(size_t(rows * cols));
  for (float& w : w0) w = u(rng);
  for (float& v : g) v = u(rng) * 1e-3f;
  const RuleConfig rule = default_rule_config(RuleId::adamw);
  for (StateFormat sf : {StateFormat::fp32, StateFormat::int8}) {
    HostParam whole = HostParam::make(rule, sf, WeightStore::bf16_sr, rows, cols, w0, 77, 5);
    HostParam tiled = whole;
    for (int64_t t = 1; t <= 3; ++t) {
      HostParamView pw = whole.view();
      apply_rule_region(rule, sf, WeightStore::bf16_sr, pw, t, g.data(), cols, 0, rows, 0, cols);
      HostParamView pt = tiled.view();
      for (int64_t r0 : {int64_t(3), int64_t(0)})  // tiles in an unusual order
        for (int64_t c0 : {int64_t(128), int64_t(0), int64_t(64)}) {
          const int64_t r1 = r0 == 0 ? 3 : rows;
          apply_rule_region(rule, sf, WeightStore::bf16_sr, pt, t, g.data() + r0 * cols + c0, cols,
                            r0, r1, c0, c0 + 64);
        }
    }
    ASSERT_EQ(whole.bf16, tiled.bf16) << state_format_name(sf) << ": tiling changed SR weights";
    // A column shard [64, 192) as its own tensor view: element (r, c) is global (r, 64 + c).
    std::vector<float> ws(size_t(rows * 128)), gs(size_t(rows * 128));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < 128; ++c) {
        ws[size_t(r * 128 + c)] = w0[size_t(r * cols + 64 + c)];
        gs[size_t(r * 128 + c)] = g[size_t(r * cols + 64 + c)];
      }
    HostParam shard = HostParam::make(rule, sf, WeightStore::bf16_sr, rows, 128, ws, 77, 5);
    for (int64_t t = 1; t <= 3; ++t) {
      HostParamView ps = shard.view();
      ps.col0 = 64;
      ps.global_cols = cols;
      apply_rule_region(rule, sf, WeightStore::bf16_sr, ps, t, gs.data(), 128, 0, rows, 0, 128);
    }
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < 128; ++c)
        ASSERT_EQ(shard.bf16[size_t(r * 128 + c)], whole.bf16[size_t(r * cols + 64 + c)])
            << state_format_name(sf) << ": sharding changed the SR weight at (" << r << ", " << 64 + c << ")";
  }
}

}  // namespace
}  // namespace fh
