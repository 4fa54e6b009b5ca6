// Philox4x32-10 (Salmon et al., SC'11), counter-based, identical on host and device.
// Random bits are keyed by position, never by thread (DESIGN contract 4): the counter is
// (element index low, element index high, step, tensor id) and the key is the seed.
#pragma once
#include "kernels/common/ieee_shim.h"

namespace fh {

struct philox_u4 { uint32_t x, y, z, w; };

FH_HD void philox_mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  uint64_t p = uint64_t(a) * uint64_t(b);
  hi = uint32_t(p >> 32);
  lo = uint32_t(p);
}

FH_HD philox_u4 philox4x32_10(philox_u4 ctr, uint32_t k0, uint32_t k1) {
  constexpr uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
  constexpr uint32_t W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    philox_mulhilo(M0, ctr.x, hi0, lo0);
    philox_mulhilo(M1, ctr.z, hi1, lo1);
    ctr = philox_u4{hi1 ^ ctr.y ^ k0, lo1, hi0 ^ ctr.w ^ k1, lo0};
    k0 += W0;
    k1 += W1;
  }
  return ctr;
}

// Where a stochastic-rounding decision draws its bits from.
struct sr_key {
  uint64_t seed = 0;
  uint32_t step = 0;
  uint32_t tensor_id = 0;
};

// The 16 random bits for one element: the top 16 bits of Philox's first output word.
FH_HD uint32_t sr_bits(const sr_key& key, uint64_t element_index) {
  philox_u4 ctr{uint32_t(element_index), uint32_t(element_index >> 32), key.step, key.tensor_id};
  philox_u4 out = philox4x32_10(ctr, uint32_t(key.seed), uint32_t(key.seed >> 32));
  return out.x >> 16;
}

}  // namespace fh
