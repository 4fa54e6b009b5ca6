// Seeded case generator: bf16 activations X [T, in], output gradients dY [T, out] and fp32
// initial weights W [out, in] for the weight-gradient suites (DESIGN: "a seeded case generator ->
// producers -> oracles"). Every draw is integer arithmetic (splitmix64) or correctly rounded
// IEEE double arithmetic, never libm transcendentals or std::*_distribution, so a seed gives the
// same bits on every machine and compiler. Callers print the seed; FH_SEED overrides it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/common/bf16.h"
#include "kernels/common/seed_stream.h"
#include "kernels/common/splitmix64.h"

namespace fh {

// splitmix64 (Steele, Lea & Flood, OOPSLA 2014): a tiny, full-period, well-mixed generator.
class CaseRng {
 public:
  explicit CaseRng(uint64_t seed) : state_(seed) {}
  uint64_t next_u64();
  double uniform01();                    // [0, 1), 53 random bits
  uint64_t below(uint64_t n);            // uniform in [0, n), n > 0 (rejection, unbiased)
  int64_t range(int64_t lo, int64_t hi);  // uniform in [lo, hi], lo <= hi
  // Irwin-Hall(12) - 6: mean 0, variance 1, support [-6, 6]. "Normal-ish" on purpose: exact
  // IEEE adds only, so it is reproducible everywhere (a Box-Muller needs log and cos).
  double normalish();
 private:
  uint64_t state_;
};

enum class CaseDistribution : uint8_t {
  normal,         // scale * normalish(), rounded to bf16 (RNE)
  wide_exponent,  // random sign, exponent uniform in [exp_lo, exp_hi], random 7-bit fraction
  small_integer,  // integers uniform in [-int_max, int_max]: products and sums stay exact
  sparse,         // a fraction zero_fraction of +-0 (both signs), the rest as `normal`
};
const char* case_distribution_name(CaseDistribution d);

struct CaseDistParams {
  double scale = 1.0;          // normal / sparse
  int exp_lo = -20, exp_hi = 20;  // wide_exponent: unbiased exponents, within [-133, 127]
                                  // (-127..-133 give bf16 subnormals)
  int int_max = 8;             // small_integer: |value| <= int_max <= 256 (bf16 holds it exactly)
  double zero_fraction = 0.7;  // sparse
};

// n bf16 values drawn from `dist`. Throws std::invalid_argument on bad parameters.
std::vector<bf16> gen_bf16(CaseRng& rng, int64_t n, CaseDistribution dist,
                               const CaseDistParams& params = {});
// n fp32 weights scale * normalish(), rounded once to fp32.
std::vector<float> gen_weights_f32(CaseRng& rng, int64_t n, double scale = 0.05);

// One linear-layer weight-gradient case. X, dY and w0 are drawn in that order from one stream.
struct WgradCase {
  uint64_t seed = 0;
  int64_t T = 0, in = 0, out = 0;
  CaseDistribution dist = CaseDistribution::normal;
  std::vector<bf16> X;   // [T, in] bf16, row-major
  std::vector<bf16> dY;  // [T, out] bf16, row-major
  std::vector<float> w0;     // [out, in] fp32
  std::string describe() const;  // "seed=... T=... in=... out=... dist=..." for failure messages
};
WgradCase make_wgrad_case(uint64_t seed, int64_t T, int64_t in, int64_t out, CaseDistribution dist,
                          const CaseDistParams& x_params = {}, const CaseDistParams& dy_params = {});

// The suite seed: the run seed when one was given (set_run_seed, else FH_SEED from the
// environment, decimal or 0x-hex), else `fallback`, the caller's fixed seed. Throws
// std::invalid_argument on an unparsable FH_SEED. Every value returned is kept for
// seeds_drawn(), so a failure can name the seeds its test drew.
uint64_t case_seed(uint64_t fallback);
// Parses a seed as FH_SEED and --seed take it: decimal or 0x-hex, 0..2^64-1. Throws
// std::invalid_argument naming `what` otherwise.
uint64_t parse_seed(const char* text, const char* what);
// The run seed given on a command line (a test binary's --seed=N); wins over FH_SEED.
void set_run_seed(uint64_t seed);
// The run seed when one was given (set_run_seed or FH_SEED), else nothing: each caller then
// uses its own fixed seed.
bool run_seed_given(uint64_t* seed);
// The distinct seeds case_seed returned since the last clear, in order (thread-safe).
std::vector<uint64_t> seeds_drawn();
void clear_seeds_drawn();
// case_seed, printed once as "<suite>: seed 0x... (set FH_SEED to change)" so a failure can be
// reproduced (Eigen's habit). Call it once per suite and keep the value.
uint64_t announce_seed(const char* suite, uint64_t fallback);

// A random float with exponent in [e_lo, e_hi] and a random fraction (sign optional).
float gen_spread_float(CaseRng& rng, int e_lo, int e_hi, bool negative_allowed);

}  // namespace fh
