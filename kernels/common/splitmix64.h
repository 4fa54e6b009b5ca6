// SplitMix64 (Steele, Lea and Flood, 2014): the one seeded stream behind the case generators,
// the probes, the suites and the twin's random tile order, and its finalizer for mixing seeds.
// Host code (the finalizer also on the device); every draw is bit-for-bit the same on every platform.
#pragma once
#include <cstdint>

namespace fh {

#if defined(__CUDACC__)
#define FH_SPLITMIX_HD __host__ __device__
#else
#define FH_SPLITMIX_HD
#endif

// The output function: a bijective mix of the 64 bits of z.
FH_SPLITMIX_HD constexpr uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The next draw of the stream whose state is `state` (advanced by the golden-ratio increment).
inline uint64_t splitmix64_next(uint64_t& state) { return splitmix64_mix(state += 0x9E3779B97F4A7C15ull); }

}  // namespace fh
