// Bit-exact integer model of the Hopper bf16 -> fp32 tensor-core instruction (mma.sync m16n8k16,
// wgmma m64nNk16), DESIGN contract 2. Host code, next to the kernels it mirrors.
// One instruction computes, per output, d = C + sum_{k<group} a_k * b_k as ONE fused sum:
// exact products, every term aligned to the largest alignment exponent (clamped below) and
// truncated toward zero to `align_bits` fractional bits, summed exactly, then rounded to fp32
// (toward zero on Hopper). A longer K chains one such sum per instruction.
#pragma once
#include <cstdint>

#include "kernels/common/bf16.h"
#include "kernels/common/mma_params.h"

namespace fh {

// The one NaN the instruction produces, whatever NaN (or inf*0, or +inf with -inf) caused it.
inline constexpr uint32_t kMmaNaNBits = 0x7FFFFFFFu;


// Output-level rules that every entry point follows (Hopper, verified on the H200):
// zero products and a zero C are not terms; a zero or underflowed result is +0 whatever its sign;
// a sum whose truncated magnitude reaches 2^128 gives +-inf (never +-FLT_MAX); any NaN input,
// inf*0, or +inf together with -inf gives kMmaNaNBits; otherwise any infinity gives that infinity.
// bf16 and fp32 subnormals are inputs as they are (alignment exponent -126, no flush).

// One instruction's output element: C + sum of n <= params.group products a[i]*b[i]
// (a, b are bf16; missing terms up to the group are zero padding).
float mma_group_dot(const bf16* a, const bf16* b, int n, float c,
                    const MmaModelParams& params = kHopperMma);

// A K-long dot product chained one instruction per group, in order, starting from c0:
// acc = c0; for each group g: acc = mma_group_dot(a[g*group..], b[g*group..], acc).
// a and b have stride 1; the last group is zero-padded. K == 0 returns c0 unchanged (no
// instruction runs).
float mma_chain_dot(const bf16* a, const bf16* b, int64_t K, float c0,
                    const MmaModelParams& params = kHopperMma);

// Strided form for GEMM producers: a[i*a_stride], b[i*b_stride].
float mma_chain_dot_strided(const bf16* a, int64_t a_stride, const bf16* b,
                            int64_t b_stride, int64_t K, float c0,
                            const MmaModelParams& params = kHopperMma);

// The whole m16n8k16 instruction as the GPU suite feeds it: A row-major 16x16, B given as
// [n][k] (8 rows of 16, i.e. column-major 16x8), C and D row-major 16x8. D may alias C.
// D[i][j] = mma_group_dot(A row i, B_nk row j, C[i][j]); params.group must be 16.
void mma_m16n8k16_model(const bf16* A, const bf16* B_nk, const float* C, float* D,
                        const MmaModelParams& params = kHopperMma);

}  // namespace fh
