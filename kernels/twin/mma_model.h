// Bit-exact integer model of the Hopper bf16 -> fp32 tensor-core instruction (mma.sync m16n8k16,
// wgmma m64nNk16), DESIGN contract 2. Host code, next to the kernels it mirrors.
// One instruction computes, per output, d = C + sum_{k<group} a_k * b_k as ONE fused sum:
// exact products, every term aligned to the largest alignment exponent (clamped below) and
// truncated toward zero to `align_bits` fractional bits, summed exactly, then rounded to fp32
// (toward zero on Hopper). A longer K chains one such sum per instruction.
#pragma once
#include <cstdint>

namespace fh {

struct MmaModelParams {
  int group = 16;          // products per instruction (k of the instruction)
  int align_bits = 25;     // fractional bits kept below the largest alignment exponent
  int clamp_exp = -133;    // the alignment exponent is clamped below at this value
  enum class OutRound { toward_zero, nearest_even } out_round = OutRound::toward_zero;
};

inline constexpr MmaModelParams kHopperMma{};

// One instruction's output element: C + sum of n <= params.group products a[i]*b[i]
// (a, b are bf16 bit patterns; missing terms up to the group are zero padding).
float mma_group_dot(const uint16_t* a, const uint16_t* b, int n, float c,
                    const MmaModelParams& params = kHopperMma);

// A K-long dot product chained one instruction per group, in order, starting from c0:
// acc = c0; for each group g: acc = mma_group_dot(a[g*group..], b[g*group..], acc).
// a and b have stride 1; the last group is zero-padded.
float mma_chain_dot(const uint16_t* a, const uint16_t* b, int64_t K, float c0,
                    const MmaModelParams& params = kHopperMma);

// Strided form for GEMM producers: a[i*a_stride], b[i*b_stride].
float mma_chain_dot_strided(const uint16_t* a, int64_t a_stride, const uint16_t* b,
                            int64_t b_stride, int64_t K, float c0,
                            const MmaModelParams& params = kHopperMma);

// The whole m16n8k16 instruction as the GPU suite feeds it: A row-major 16x16, B given as
// [n][k] (8 rows of 16, i.e. column-major 16x8), C and D row-major 16x8. D may alias C.
void mma_m16n8k16_model(const uint16_t* A, const uint16_t* B_nk, const float* C, float* D,
                        const MmaModelParams& params = kHopperMma);

}  // namespace fh
