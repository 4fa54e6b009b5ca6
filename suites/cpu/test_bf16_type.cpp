// bf16 is a type of its own (kernels/common/bf16.h): a float, an int or a uint16_t read as bf16
// does not compile, neither as a value nor behind a pointer, so a float buffer (or a buffer of any
// other 16-bit integers) cannot be set as the wgrad GEMM's X or dY, as a weight's bf16 store or
// bf16 state, or handed to the model step's kernels as an activation. Decided by the compiler:
// the static_asserts below fail the build, each beside a positive control that must hold so that
// the negative one is not vacuous. The runtime tests check what the type promises at run time:
// its bits are its value's bits, and arrays of it are arrays of 16-bit words.
#include <gtest/gtest.h>

#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/common/bf16.h"
#include "kernels/formats/formats.h"
#include "kernels/gpu/gpu_api.h"
#include "kernels/gpu/model_kernels_api.h"
#include "reference/model_kernels_host.h"

namespace fh {
namespace {

// The value: 2 bytes of bits, copied as bytes, made only from its bits.
static_assert(sizeof(bf16) == 2 && alignof(bf16) == 2, "bf16 is its 16 bits");
static_assert(std::is_trivially_copyable_v<bf16> && std::is_standard_layout_v<bf16> &&
                  std::is_trivially_default_constructible_v<bf16>,
              "arrays of bf16 copy, upload and download as bytes");
static_assert(!std::is_aggregate_v<bf16>, "not an aggregate: bf16{u} and bf16 b = {u} do not compile");
static_assert(std::is_same_v<decltype(bf16::from_bits(uint16_t(0))), bf16> && bf16::from_bits(0x3f80).bits == 0x3f80,
              "control: made from its bits, explicitly");
static_assert(!std::is_convertible_v<float, bf16> && !std::is_convertible_v<double, bf16> &&
                  !std::is_convertible_v<int, bf16> && !std::is_convertible_v<uint16_t, bf16> &&
                  !std::is_convertible_v<uint32_t, bf16>,
              "no number becomes a bf16 implicitly");
static_assert(!std::is_constructible_v<bf16, float> && !std::is_constructible_v<bf16, uint16_t> &&
                  !std::is_constructible_v<bf16, int>,
              "nor explicitly, except through from_bits or the rounding functions");
static_assert(std::is_assignable_v<bf16&, bf16>, "control: a bf16 takes a bf16");
static_assert(!std::is_assignable_v<bf16&, float> && !std::is_assignable_v<bf16&, uint16_t> &&
                  !std::is_assignable_v<bf16&, int>,
              "a float or an integer cannot be stored as a bf16");
static_assert(!std::is_convertible_v<bf16, float> && !std::is_convertible_v<bf16, uint16_t>,
              "nor a bf16 read as a float or an integer without bf16_to_float or .bits");
static_assert(std::is_same_v<decltype(float_to_bf16_rne(0.0f)), bf16> &&
                  std::is_same_v<decltype(float_to_bf16_sr(0.0f, 0u)), bf16>,
              "rounding gives a bf16");
static_assert(std::is_invocable_v<decltype(&bf16_to_float), bf16>, "control: widening takes a bf16");
static_assert(!std::is_invocable_v<decltype(&bf16_to_float), uint16_t> &&
                  !std::is_invocable_v<decltype(&bf16_to_float), float>,
              "and only a bf16");

// Buffers: a pointer to other elements does not become a pointer to bf16.
static_assert(std::is_convertible_v<bf16*, const bf16*>, "control");
static_assert(!std::is_convertible_v<float*, const bf16*> && !std::is_convertible_v<uint16_t*, const bf16*> &&
                  !std::is_convertible_v<const uint16_t*, const bf16*> && !std::is_convertible_v<int16_t*, const bf16*>,
              "a float or 16-bit integer buffer is not a bf16 buffer");
static_assert(!std::is_convertible_v<std::vector<uint16_t>, std::vector<bf16>>, "nor a vector of them");

// The interfaces that carry bf16 take only bf16.
template <class M, class P>
constexpr bool member_takes = std::is_assignable_v<M, P>;
using ProblemX = decltype((std::declval<gpu::WgradProblem&>().x));
using ProblemDy = decltype((std::declval<gpu::WgradProblem&>().dy));
// (The mainloop's WgradTileArgs, a CUDA header, holds the same pointers: wgrad_mainloop.cuh asserts it.)
static_assert(member_takes<ProblemX, const bf16*> && member_takes<ProblemDy, const bf16*>,
              "control: the wgrad GEMM's operands are bf16");
static_assert(!member_takes<ProblemX, const float*> && !member_takes<ProblemX, const uint16_t*> &&
                  !member_takes<ProblemDy, const float*> && !member_takes<ProblemDy, const uint16_t*>,
              "a float or uint16_t buffer cannot be set as WgradProblem::x or ::dy");
using ParamBf16 = decltype((std::declval<ParamView&>().bf16));
using StateBf16 = decltype((std::declval<StateView&>().bf16));
static_assert(member_takes<ParamBf16, bf16*> && member_takes<StateBf16, bf16*>, "control");
static_assert(!member_takes<ParamBf16, uint16_t*> && !member_takes<ParamBf16, float*> &&
                  !member_takes<StateBf16, uint16_t*> && !member_takes<StateBf16, float*>,
              "nor as a weight's bf16 store or bf16 state");
static_assert(std::is_invocable_v<decltype(&gpu::cublas_dgrad), cublasHandle_t, const bf16*, const bf16*, int64_t,
                                  int64_t, int64_t, float*, cudaStream_t, float>,
              "control: cuBLAS dgrad takes bf16 dY and W");
static_assert(!std::is_invocable_v<decltype(&gpu::cublas_dgrad), cublasHandle_t, const uint16_t*, const uint16_t*,
                                   int64_t, int64_t, int64_t, float*, cudaStream_t, float>,
              "and no 16-bit integers");
// The model step's activations, on the device and in the host references.
using Bf16s = const std::vector<bf16>&;
using U16s = const std::vector<uint16_t>&;
static_assert(std::is_invocable_v<decltype(&gpu::model_api::expand_kv), Bf16s, int64_t, int64_t, int64_t, int64_t> &&
                  std::is_invocable_v<decltype(&model_ref::expand_kv), Bf16s, int64_t, int64_t, int64_t, int64_t>,
              "control: the activations are bf16");
static_assert(!std::is_invocable_v<decltype(&gpu::model_api::expand_kv), U16s, int64_t, int64_t, int64_t, int64_t> &&
                  !std::is_invocable_v<decltype(&model_ref::expand_kv), U16s, int64_t, int64_t, int64_t, int64_t>,
              "a uint16_t vector is not an activation");
static_assert(std::is_same_v<decltype(model_ref::to_bf16(std::declval<const std::vector<float>&>())), std::vector<bf16>>,
              "the host producers' bf16 buffers are bf16");

TEST(Bf16Type, BitsAreTheValue) {
  EXPECT_EQ(bf16_to_float(bf16::from_bits(0x3f80)), 1.0f);
  EXPECT_EQ(float_to_bf16_rne(1.0f).bits, 0x3f80);
  EXPECT_EQ(float_to_bf16_rne(-2.0f), bf16::from_bits(0xc000));
  EXPECT_NE(float_to_bf16_rne(0.0f), float_to_bf16_rne(-0.0f)) << "equal means equal bits: +0 != -0";
  const bf16 nan = bf16::from_bits(0x7fc1);
  EXPECT_EQ(nan, nan) << "equal means equal bits: a NaN equals itself";
  EXPECT_EQ(bf16{}.bits, 0) << "value-initialized is +0";
}

TEST(Bf16Type, ArraysAreSixteenBitWords) {
  const std::vector<uint16_t> words = {0x0000, 0x8000, 0x3f80, 0x7f80, 0xffc1, 0x0001};
  std::vector<bf16> v(words.size());
  std::memcpy(v.data(), words.data(), words.size() * sizeof(uint16_t));
  for (size_t i = 0; i < words.size(); ++i) EXPECT_EQ(v[i].bits, words[i]) << i;
  // The kernels' vector accesses: two consecutive elements in one 32-bit word, the first low.
  const uint32_t w = bf16_pack2(v[2], v[3]);
  uint32_t mem;
  std::memcpy(&mem, v.data() + 2, 4);
  EXPECT_EQ(w, mem);
  EXPECT_EQ(bf16_low(w), v[2]);
  EXPECT_EQ(bf16_high(w), v[3]);
}

}  // namespace
}  // namespace fh
