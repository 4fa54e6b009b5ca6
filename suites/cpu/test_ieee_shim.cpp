// The IEEE shim's host side (kernels/common/ieee_shim.h): correctly rounded results, no
// contraction, and the GPU's NaN rule: every fp32 result that is NaN is the canonical
// 0x7FFFFFFF, whatever the operands' payloads or signs (the H200 gives 0x7FFFFFFF where x86
// would propagate a payload or make 0xFFC00000; test_gpu_fidelity's degenerate blocks compare
// those bits between the twin and the GPU).
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/common/ieee_shim.h"

namespace {

using namespace fh;

TEST(IeeeShim, EveryNaNResultIsTheGpusCanonicalNaN) {
  const float inf = INFINITY, zero = 0.0f;
  const uint32_t payloads[] = {0x7fc00000u, 0xffc00000u, 0x7fc00001u, 0xff812345u, 0x7fffffffu};
  for (uint32_t p : payloads) {
    const float n = u2f(p);
    for (float x : {1.0f, -2.5f, zero, inf}) {
      EXPECT_EQ(f2u(fadd(n, x)), 0x7fffffffu) << std::hex << p;
      EXPECT_EQ(f2u(fadd(x, n)), 0x7fffffffu) << std::hex << p;
      EXPECT_EQ(f2u(fsub(n, x)), 0x7fffffffu) << std::hex << p;
      EXPECT_EQ(f2u(fmul(x, n)), 0x7fffffffu) << std::hex << p;
      EXPECT_EQ(f2u(fdiv(n, x)), 0x7fffffffu) << std::hex << p;
      EXPECT_EQ(f2u(ffma(x, 1.0f, n)), 0x7fffffffu) << std::hex << p;
    }
    EXPECT_EQ(f2u(fsqrt(n)), 0x7fffffffu);
    EXPECT_EQ(f2u(fneg(n)), p ^ 0x80000000u) << "negation is a sign flip, not arithmetic";
  }
  // Invalid operations make the canonical NaN too (x86 alone would give 0xFFC00000).
  EXPECT_EQ(f2u(fsub(inf, inf)), 0x7fffffffu);
  EXPECT_EQ(f2u(fmul(zero, inf)), 0x7fffffffu);
  EXPECT_EQ(f2u(fdiv(zero, zero)), 0x7fffffffu);
  EXPECT_EQ(f2u(fsqrt(-1.0f)), 0x7fffffffu);
  EXPECT_EQ(f2u(ffma(zero, inf, 1.0f)), 0x7fffffffu);
}

TEST(IeeeShim, OrdinaryResultsAreOneCorrectlyRoundedOperation) {
  // 1 + 2^-24 ties to even (1); fma keeps the product exact: fma(1 + 2^-12, 1 + 2^-12, -1) is
  // 2^-11 + 2^-24 exactly, which a separate multiply would round away.
  EXPECT_EQ(fadd(1.0f, 0x1p-24f), 1.0f);
  EXPECT_EQ(ffma(1.0f + 0x1p-12f, 1.0f + 0x1p-12f, -1.0f), 0x1p-11f + 0x1p-24f);
  EXPECT_EQ(fsub(fmul(1.0f + 0x1p-12f, 1.0f + 0x1p-12f), 1.0f), 0x1p-11f);
  EXPECT_EQ(fdiv(1.0f, 3.0f), 1.0f / 3.0f);
  EXPECT_EQ(f2u(fadd(-0.0f, -0.0f)), 0x80000000u);
  EXPECT_EQ(f2u(fadd(-0.0f, 0.0f)), 0u);
}

}  // namespace
