#include "reference/case_gen.h"

#include <algorithm>
#include <cstdio>

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include "kernels/common/bf16.h"

namespace fh {

uint64_t CaseRng::next_u64() { return splitmix64_next(state_); }

double CaseRng::uniform01() { return double(next_u64() >> 11) * 0x1.0p-53; }

uint64_t CaseRng::below(uint64_t n) {
  if (n == 0) throw std::invalid_argument("CaseRng::below: n must be positive");
  // Reject the top partial copy of [0, n) so that every residue is equally likely.
  const uint64_t limit = uint64_t(0) - (uint64_t(0) - n) % n;  // largest multiple of n, mod 2^64
  for (;;) {
    const uint64_t x = next_u64();
    if (limit == 0 || x < limit) return x % n;
  }
}

int64_t CaseRng::range(int64_t lo, int64_t hi) {
  if (lo > hi) throw std::invalid_argument("CaseRng::range: lo > hi");
  const uint64_t span = uint64_t(hi) - uint64_t(lo) + 1;
  return span == 0 ? int64_t(next_u64()) : int64_t(uint64_t(lo) + below(span));
}

double CaseRng::normalish() {
  double s = 0.0;
  for (int k = 0; k < 12; ++k) s += uniform01();
  return s - 6.0;
}

const char* case_distribution_name(CaseDistribution d) {
  switch (d) {
    case CaseDistribution::normal: return "normal";
    case CaseDistribution::wide_exponent: return "wide_exponent";
    case CaseDistribution::small_integer: return "small_integer";
    case CaseDistribution::sparse: return "sparse";
  }
  return "?";
}

namespace {

bf16 draw_normal_bf16(CaseRng& rng, double scale) {
  return float_to_bf16_rne(float(scale * rng.normalish()));
}

// Random sign, leading bit at 2^e, random bits below it (a bf16 subnormal below 2^-126).
bf16 draw_wide_bf16(CaseRng& rng, int e) {
  const uint64_t r = rng.next_u64();
  const uint16_t sign = (r & 1u) ? 0x8000u : 0u;
  const uint16_t frac7 = uint16_t((r >> 1) & 0x7Fu);
  if (e >= -126) return bf16::from_bits(uint16_t(sign | uint16_t((e + 127) << 7) | frac7));
  const int lead = e + 133;  // bit index of the leading bit in the subnormal field, 0..6
  const uint16_t below = uint16_t(frac7 & ((1u << lead) - 1u));
  return bf16::from_bits(uint16_t(sign | uint16_t(1u << lead) | below));
}

void check_params(CaseDistribution dist, const CaseDistParams& p) {
  switch (dist) {
    case CaseDistribution::normal:
    case CaseDistribution::sparse:
      if (!(p.scale > 0.0) || !(p.scale < 1e30))
        throw std::invalid_argument("gen_bf16: scale must be positive and finite");
      if (dist == CaseDistribution::sparse && !(p.zero_fraction >= 0.0 && p.zero_fraction <= 1.0))
        throw std::invalid_argument("gen_bf16: zero_fraction must be in [0, 1]");
      break;
    case CaseDistribution::wide_exponent:
      if (p.exp_lo > p.exp_hi || p.exp_lo < -133 || p.exp_hi > 127)
        throw std::invalid_argument("gen_bf16: need -133 <= exp_lo <= exp_hi <= 127, got [" +
                                    std::to_string(p.exp_lo) + ", " + std::to_string(p.exp_hi) + "]");
      break;
    case CaseDistribution::small_integer:
      if (p.int_max < 0 || p.int_max > 256)
        throw std::invalid_argument("gen_bf16: int_max must be in [0, 256] (bf16 holds them exactly)");
      break;
    default: throw std::invalid_argument("gen_bf16: unknown distribution");
  }
}

}  // namespace

std::vector<bf16> gen_bf16(CaseRng& rng, int64_t n, CaseDistribution dist,
                               const CaseDistParams& p) {
  if (n < 0) throw std::invalid_argument("gen_bf16: negative count");
  check_params(dist, p);
  std::vector<bf16> v(static_cast<size_t>(n));
  for (auto& b : v) {
    switch (dist) {
      case CaseDistribution::normal: b = draw_normal_bf16(rng, p.scale); break;
      case CaseDistribution::wide_exponent:
        b = draw_wide_bf16(rng, int(rng.range(p.exp_lo, p.exp_hi)));
        break;
      case CaseDistribution::small_integer:
        b = float_to_bf16_rne(float(rng.range(-p.int_max, p.int_max)));  // exact for |x| <= 256
        break;
      case CaseDistribution::sparse:
        if (rng.uniform01() < p.zero_fraction)
          b = bf16::from_bits((rng.next_u64() & 1u) ? 0x8000u : 0x0000u);  // -0 and +0 both appear
        else
          b = draw_normal_bf16(rng, p.scale);
        break;
    }
  }
  return v;
}

std::vector<float> gen_weights_f32(CaseRng& rng, int64_t n, double scale) {
  if (n < 0) throw std::invalid_argument("gen_weights_f32: negative count");
  if (!(scale >= 0.0) || !(scale < 1e30)) throw std::invalid_argument("gen_weights_f32: bad scale");
  std::vector<float> w(static_cast<size_t>(n));
  for (auto& x : w) x = float(scale * rng.normalish());
  return w;
}

std::string WgradCase::describe() const {
  return "seed=" + std::to_string(seed) + " T=" + std::to_string(T) + " in=" + std::to_string(in) +
         " out=" + std::to_string(out) + " dist=" + case_distribution_name(dist);
}

WgradCase make_wgrad_case(uint64_t seed, int64_t T, int64_t in, int64_t out, CaseDistribution dist,
                          const CaseDistParams& x_params, const CaseDistParams& dy_params) {
  if (T < 0 || in <= 0 || out <= 0)
    throw std::invalid_argument("make_wgrad_case: need T >= 0, in > 0, out > 0");
  WgradCase c;
  c.seed = seed;
  c.T = T;
  c.in = in;
  c.out = out;
  c.dist = dist;
  CaseRng rng(seed);
  c.X = gen_bf16(rng, T * in, dist, x_params);
  c.dY = gen_bf16(rng, T * out, dist, dy_params);
  c.w0 = gen_weights_f32(rng, out * in);
  return c;
}

namespace {

std::mutex g_seed_mutex;
bool g_run_seed_set = false;
uint64_t g_run_seed = 0;
std::vector<uint64_t> g_seeds_drawn;

}  // namespace

uint64_t parse_seed(const char* text, const char* what) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text, &end, 0);
  if (!*text || errno != 0 || !end || *end != '\0' || *text == '-' || *text == '+' || *text == ' ')
    throw std::invalid_argument(std::string(what) + " is not an unsigned integer: '" + text + "'");
  return uint64_t(v);
}

void set_run_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(g_seed_mutex);
  g_run_seed_set = true;
  g_run_seed = seed;
}

bool run_seed_given(uint64_t* seed) {
  {
    std::lock_guard<std::mutex> lock(g_seed_mutex);
    if (g_run_seed_set) {
      *seed = g_run_seed;
      return true;
    }
  }
  const char* s = std::getenv("FH_SEED");
  if (!s || !*s) return false;
  *seed = parse_seed(s, "FH_SEED");
  return true;
}

uint64_t case_seed(uint64_t fallback) {
  uint64_t seed = fallback;
  run_seed_given(&seed);
  std::lock_guard<std::mutex> lock(g_seed_mutex);
  if (std::find(g_seeds_drawn.begin(), g_seeds_drawn.end(), seed) == g_seeds_drawn.end()) g_seeds_drawn.push_back(seed);
  return seed;
}

std::vector<uint64_t> seeds_drawn() {
  std::lock_guard<std::mutex> lock(g_seed_mutex);
  return g_seeds_drawn;
}

void clear_seeds_drawn() {
  std::lock_guard<std::mutex> lock(g_seed_mutex);
  g_seeds_drawn.clear();
}

uint64_t announce_seed(const char* suite, uint64_t fallback) {
  const uint64_t seed = case_seed(fallback);
  std::printf("%s: seed 0x%llx (set FH_SEED to change)\n", suite, (unsigned long long)seed);
  return seed;
}

float gen_spread_float(CaseRng& rng, int e_lo, int e_hi, bool negative_allowed) {
  const double frac = 1.0 + double(rng.below(1u << 23)) / double(1u << 23);
  float x = float(std::ldexp(frac, int(rng.range(e_lo, e_hi))));
  return (negative_allowed && (rng.next_u64() & 1)) ? -x : x;
}

}  // namespace fh
