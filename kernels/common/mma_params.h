// The description of the Hopper bf16 -> fp32 tensor-core instruction (DESIGN contract 2): data
// that both its bit-exact model (kernels/twin/mma_model.h, a producer) and the error bounds of
// its chains (oracles/dot_bound.h, an oracle) read, so it lives with the core numerics.
#pragma once
#include <stdexcept>
#include <string>

namespace fh {

struct MmaModelParams {
  int group = 16;          // products per instruction (k of the instruction)
  int align_bits = 25;     // fractional bits kept below the largest alignment exponent
  int clamp_exp = -133;    // the alignment exponent is clamped below at this value
  enum class OutRound { toward_zero, nearest_even } out_round = OutRound::toward_zero;
};

inline constexpr MmaModelParams kHopperMma{};

// Limits of the model (checked by mma_check_params): the terms of one instruction live in a
// fixed stack buffer, and the exact sum must fit a signed 64-bit integer (terms < 2^(align_bits+2),
// at most group+1 of them).
inline constexpr int kMmaMaxGroup = 64;
inline constexpr int kMmaMaxAlignBits = 48;

// Throws std::invalid_argument unless 1 <= group <= kMmaMaxGroup,
// 1 <= align_bits <= kMmaMaxAlignBits and |clamp_exp| <= 10000. Every entry point of the model and of the bounds calls it.
inline void mma_check_params(const MmaModelParams& p) {
  if (p.group < 1 || p.group > kMmaMaxGroup)
    throw std::invalid_argument("mma model: group " + std::to_string(p.group) +
                                " outside [1, " + std::to_string(kMmaMaxGroup) + "]");
  if (p.align_bits < 1 || p.align_bits > kMmaMaxAlignBits)
    throw std::invalid_argument("mma model: align_bits " + std::to_string(p.align_bits) +
                                " outside [1, " + std::to_string(kMmaMaxAlignBits) + "]");
  if (p.clamp_exp < -10000 || p.clamp_exp > 10000)
    throw std::invalid_argument("mma model: clamp_exp " + std::to_string(p.clamp_exp) +
                                " outside [-10000, 10000]");
  if (p.out_round != MmaModelParams::OutRound::toward_zero &&
      p.out_round != MmaModelParams::OutRound::nearest_even)
    throw std::invalid_argument("mma model: unknown out_round");
}

}  // namespace fh
