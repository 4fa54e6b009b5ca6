// Seeded inputs for the tensor-core instruction probe (kernels/gpu/mma_probe.cu), shared by the
// GPU suite that proves the model on the H200 (suites/gpu/test_gpu_mma_model.cu) and the CPU
// suite that re-checks the model against the recorded H200 outputs
// (suites/cpu/test_mma_golden.cpp). A case is (category, seed): everything else regenerates from
// it, so the golden file stores only seeds and hardware outputs. Host only; integer arithmetic
// only, so every platform regenerates the same bits. Changing a generator invalidates the golden
// file (each record also stores a hash of its inputs, so that shows as "inputs changed").
#pragma once
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "kernels/common/bf16.h"
#include "kernels/common/splitmix64.h"

namespace fh::gpu {

enum class ProbeCategory : uint32_t {
  random_normal = 0,        // moderate exponents, random signs
  wide_spread,              // exponents across the whole bf16 range
  cancellation,             // pairs of equal and opposite products, partly perturbed
  large_c_small_products,   // C far above the products: alignment truncation
  zero_c_tiny_mixed,        // C = +-0, tiny products of mixed sign near the clamp
  subnormals,               // bf16 and fp32 subnormal inputs
  overflow,                 // products and sums beyond fp32's range
  nan_inf,                  // NaN, infinities and inf * 0
  chained_k_blocks,         // chains of 8 instructions
  raw_bits,                 // uniformly random bit patterns
  clamp_region,             // all products below the -133 alignment clamp
  small_integers,           // exact arithmetic (sanity)
  count
};
inline constexpr int kProbeCategories = int(ProbeCategory::count);

inline const char* probe_category_name(ProbeCategory c) {
  static const char* names[] = {"random_normal", "wide_spread", "cancellation", "large_c_small_products",
                                "zero_c_tiny_mixed", "subnormals", "overflow", "nan_inf",
                                "chained_k_blocks", "raw_bits", "clamp_region", "small_integers"};
  return uint32_t(c) < uint32_t(ProbeCategory::count) ? names[uint32_t(c)] : "?";
}

// Chain length (instructions per instance) of a category.
inline int probe_chain_length(ProbeCategory c) {
  switch (c) {
    case ProbeCategory::chained_k_blocks: return 8;
    case ProbeCategory::random_normal: case ProbeCategory::cancellation: return 2;
    default: return 1;
  }
}

// The seed of instance i of a category in the GPU suite's sweep.
inline uint64_t probe_seed(ProbeCategory c, uint64_t i) {
  return (uint64_t(c) + 1) * 0x100000000ull + i;
}

struct ProbeRng {
  uint64_t s;
  uint64_t next() { return splitmix64_next(s); }
  uint32_t below(uint32_t n) { return uint32_t(next() % n); }
  // bf16 with unbiased exponent in [elo, ehi] (normal numbers), random sign and mantissa.
  uint16_t bf16_exp(int elo, int ehi) {
    const uint64_t r = next();
    int e = elo + int(r % uint64_t(ehi - elo + 1));
    if (e < -126) e = -126;
    if (e > 127) e = 127;
    return uint16_t(((r >> 20) & 1) << 15 | uint32_t(e + 127) << 7 | ((r >> 24) & 0x7f));
  }
  uint32_t f32_exp(int elo, int ehi) {
    const uint64_t r = next();
    int e = elo + int(r % uint64_t(ehi - elo + 1));
    if (e < -126) e = -126;
    if (e > 127) e = 127;
    return uint32_t(((r >> 20) & 1) << 31) | uint32_t(e + 127) << 23 | uint32_t((r >> 32) & 0x7fffff);
  }
};

inline uint32_t f32_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_f32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

// One instance: A [chain][16][16], B [chain][8][16] (B[k][n] at [n][k]), C [16][8].
struct ProbeCase {
  std::vector<bf16> a, b;
  std::vector<float> c;
  int chain = 1;
};

inline ProbeCase make_probe_case(ProbeCategory cat, uint64_t seed) {
  ProbeCase pc;
  pc.chain = probe_chain_length(cat);
  pc.a.resize(size_t(pc.chain) * 256);
  pc.b.resize(size_t(pc.chain) * 128);
  pc.c.resize(128);
  ProbeRng rng{seed * 0xD1B54A32D192ED03ull + uint64_t(cat)};
  auto fill = [&](auto&& fa, auto&& fb, auto&& fc) {
    for (auto& v : pc.a) v = bf16::from_bits(fa());  // the generators draw bit patterns
    for (auto& v : pc.b) v = bf16::from_bits(fb());
    for (auto& v : pc.c) v = bits_f32(fc());
  };
  switch (cat) {
    case ProbeCategory::random_normal:
    case ProbeCategory::chained_k_blocks:
      fill([&] { return rng.bf16_exp(-6, 6); }, [&] { return rng.bf16_exp(-6, 6); },
           [&] { return rng.f32_exp(-6, 6); });
      break;
    case ProbeCategory::wide_spread:
      fill([&] { return rng.bf16_exp(-70, 63); }, [&] { return rng.bf16_exp(-70, 63); },
           [&] { return rng.f32_exp(-126, 120); });
      break;
    case ProbeCategory::cancellation: {
      fill([&] { return rng.bf16_exp(-4, 4); }, [&] { return rng.bf16_exp(-4, 4); },
           [&] { return rng.below(4) ? 0u : rng.f32_exp(-30, 0); });
      // Pair k with k+1 in every row of A / column of B: a[k+1] = a[k], b[k+1] = -b[k], except
      // one mantissa bit flipped now and then, so sums cancel exactly or nearly.
      for (int s = 0; s < pc.chain; ++s)
        for (int m = 0; m < 16; ++m)
          for (int k = 0; k + 1 < 16; k += 2) {
            bf16* row = &pc.a[size_t(s) * 256 + size_t(m) * 16];
            row[k + 1] = rng.below(8) ? row[k] : bf16::from_bits(uint16_t(row[k].bits ^ 1u));
          }
      for (int s = 0; s < pc.chain; ++s)
        for (int n = 0; n < 8; ++n)
          for (int k = 0; k + 1 < 16; k += 2) {
            bf16* col = &pc.b[size_t(s) * 128 + size_t(n) * 16];
            col[k + 1] = bf16::from_bits(uint16_t(col[k].bits ^ 0x8000u));
          }
      break;
    }
    case ProbeCategory::large_c_small_products:
      fill([&] { return rng.bf16_exp(-12, 0); }, [&] { return rng.bf16_exp(-12, 0); },
           [&] { return rng.f32_exp(8, 30); });
      break;
    case ProbeCategory::zero_c_tiny_mixed:
      fill([&] { return rng.bf16_exp(-70, -60); }, [&] { return rng.bf16_exp(-70, -60); },
           [&] { return rng.below(2) ? 0x80000000u : 0u; });
      break;
    case ProbeCategory::subnormals:
      fill([&] { return rng.below(2) ? uint16_t((rng.below(2) << 15) | rng.below(128)) : rng.bf16_exp(-126, -100); },
           [&] { return rng.below(3) ? rng.bf16_exp(-10, 10) : uint16_t((rng.below(2) << 15) | rng.below(128)); },
           [&] { return rng.below(2) ? (rng.below(2) << 31) | rng.below(1u << 23) : rng.f32_exp(-126, -110); });
      break;
    case ProbeCategory::overflow:
      fill([&] { return rng.bf16_exp(56, 64); }, [&] { return rng.bf16_exp(56, 64); },
           [&] { return rng.f32_exp(110, 127); });
      break;
    case ProbeCategory::nan_inf: {
      fill([&] { return rng.bf16_exp(-8, 8); }, [&] { return rng.bf16_exp(-8, 8); },
           [&] { return rng.f32_exp(-8, 8); });
      const uint16_t specials[] = {0x7f80, 0xff80, 0x7fc0, 0xffc1, 0x7f81, 0x0000, 0x8000};
      for (auto& v : pc.a) if (rng.below(64) == 0) v = bf16::from_bits(specials[rng.below(7)]);
      for (auto& v : pc.b) if (rng.below(64) == 0) v = bf16::from_bits(specials[rng.below(7)]);
      const uint32_t cspecials[] = {0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u, 0x7f800001u};
      for (auto& v : pc.c) if (rng.below(32) == 0) v = bits_f32(cspecials[rng.below(5)]);
      break;
    }
    case ProbeCategory::raw_bits:
      fill([&] { return uint16_t(rng.next()); }, [&] { return uint16_t(rng.next()); },
           [&] { return uint32_t(rng.next()); });
      break;
    case ProbeCategory::clamp_region:
      // Every product below 2^-133 (the alignment clamp) and C mostly zero, so the clamp sets the
      // grid the terms are truncated to; a quarter of the C values are fp32 subnormals.
      fill([&] { return rng.below(8) ? rng.bf16_exp(-76, -67) : uint16_t((rng.below(2) << 15) | rng.below(128)); },
           [&] { return rng.bf16_exp(-76, -67); },
           [&] { return rng.below(4) ? 0u : (rng.below(2) << 31) | rng.below(1u << 23); });
      break;
    case ProbeCategory::small_integers: {
      auto small_int = [&] {  // integers -8..8 as bf16 (exact)
        const int v = int(rng.below(17)) - 8;
        return uint16_t(f32_bits(float(v)) >> 16);
      };
      fill(small_int, small_int, [&] { return f32_bits(float(int(rng.below(2001)) - 1000)); });
      break;
    }
    case ProbeCategory::count: break;
  }
  return pc;
}

// FNV-1a over a case's input bits (the golden file records it to tell "inputs changed" apart
// from "model changed").
inline uint64_t probe_case_hash(const ProbeCase& pc) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto eat = [&](const void* p, size_t n) {
    const unsigned char* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) { h ^= b[i]; h *= 0x100000001b3ull; }
  };
  eat(pc.a.data(), pc.a.size() * sizeof(bf16));
  eat(pc.b.data(), pc.b.size() * sizeof(bf16));
  eat(pc.c.data(), pc.c.size() * 4);
  return h;
}

// Golden file (suites/golden/mma_h200.bin), little-endian:
//   magic "FHMMAGL1" (8 bytes), u32 record count, u32 reserved (0), then per record:
//   u32 category, u32 chain, u64 seed, u64 input hash, 128 x u32 hardware D (row-major 16 x 8).
inline constexpr char kGoldenMagic[8] = {'F', 'H', 'M', 'M', 'A', 'G', 'L', '1'};
struct GoldenRecord {
  uint32_t category = 0, chain = 0;
  uint64_t seed = 0, input_hash = 0;
  uint32_t d[128] = {};
};
// The wgmma golden file (suites/golden/wgmma_h200.bin): the same layout, magic "FHWGMGL1". Each
// record is a diagonal 16 x 8 block (w, w) of a wgmma m64n128k16 probe instance: its A, B and C are
// exactly case (category, seed)'s (suites/claims/mma_probe_judge.h), and d is what the real wgmma gave.
inline constexpr char kWgmmaGoldenMagic[8] = {'F', 'H', 'W', 'G', 'M', 'G', 'L', '1'};

// Writes a golden file with the given magic; false and err on failure.
inline bool write_golden_file(const std::string& path, const char (&magic)[8], const std::vector<GoldenRecord>& recs,
                              std::string& err) {
  std::ofstream f(path, std::ios::binary);
  if (!f) { err = "cannot write"; return false; }
  const uint32_t count = uint32_t(recs.size()), reserved = 0;
  f.write(magic, 8);
  f.write(reinterpret_cast<const char*>(&count), 4);
  f.write(reinterpret_cast<const char*>(&reserved), 4);
  for (const GoldenRecord& g : recs) {
    f.write(reinterpret_cast<const char*>(&g.category), 4);
    f.write(reinterpret_cast<const char*>(&g.chain), 4);
    f.write(reinterpret_cast<const char*>(&g.seed), 8);
    f.write(reinterpret_cast<const char*>(&g.input_hash), 8);
    f.write(reinterpret_cast<const char*>(g.d), 512);
  }
  if (!f.good()) { err = "write failed"; return false; }
  return true;
}

// Reads a golden file written with `magic`; false and err on a missing, foreign or short file.
inline bool read_golden_file(const std::string& path, const char (&magic)[8], std::vector<GoldenRecord>& out,
                             std::string& err) {
  std::ifstream f(path, std::ios::binary);
  if (!f) { err = "cannot open"; return false; }
  char m[8];
  uint32_t count = 0, reserved = 0;
  f.read(m, 8);
  f.read(reinterpret_cast<char*>(&count), 4);
  f.read(reinterpret_cast<char*>(&reserved), 4);
  if (!f || std::memcmp(m, magic, 8) != 0) { err = "bad magic (not a " + std::string(magic, 8) + " file)"; return false; }
  out.resize(count);
  for (GoldenRecord& g : out) {
    f.read(reinterpret_cast<char*>(&g.category), 4);
    f.read(reinterpret_cast<char*>(&g.chain), 4);
    f.read(reinterpret_cast<char*>(&g.seed), 8);
    f.read(reinterpret_cast<char*>(&g.input_hash), 8);
    f.read(reinterpret_cast<char*>(g.d), 512);
  }
  if (!f) { err = "truncated (" + std::to_string(count) + " records announced)"; return false; }
  return true;
}

}  // namespace fh::gpu
