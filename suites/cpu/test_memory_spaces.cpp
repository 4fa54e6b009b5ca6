// Types that say where data lives and what it holds (kernels/formats/formats.h): a host view cannot
// be handed to a GPU entry point nor a device view to a host producer (HostParamView and
// DeviceParamView do not convert into each other), and optimizer state is reached through the
// pointer of its format (StateView::f32 / bf16 / i8), so a float buffer cannot be set as bf16
// state. Most of this is decided by the compiler: the static_asserts below fail the build, each
// beside a positive control that must hold so that the negative one is not vacuous. The runtime
// tests check the one place per space where a view is made.
#include <gtest/gtest.h>

#include <type_traits>
#include <vector>

#include "kernels/formats/host_param.h"
#include "kernels/gpu/gpu_api.h"

namespace fh {
namespace {

// Can the GPU entry points, and the host producer, be called with a view of type V?
template <class V>
constexpr bool fused_takes = std::is_invocable_v<decltype(&gpu::fused_wgrad_update), const gpu::WgradProblem&,
                                                 const RuleConfig&, StateFormat, WeightStore, V, int64_t,
                                                 gpu::TileShape, cudaStream_t>;
template <class V>
constexpr bool rule_kernel_takes = std::is_invocable_v<decltype(&gpu::rule_apply_device), const RuleConfig&, StateFormat,
                                                       WeightStore, V, int64_t, const float*, int64_t, cudaStream_t>;
template <class V>
constexpr bool host_rule_takes = std::is_invocable_v<decltype(&apply_rule_region), const RuleConfig&, StateFormat,
                                                     WeightStore, V, int64_t, const float*, int64_t, int64_t, int64_t,
                                                     int64_t, int64_t>;

static_assert(fused_takes<const DeviceParamView&> && rule_kernel_takes<const DeviceParamView&>,
              "control: the GPU entry points take a device view");
static_assert(!fused_takes<const HostParamView&> && !rule_kernel_takes<const HostParamView&>,
              "a host view must not reach a kernel launch");
static_assert(!fused_takes<const ParamView&> && !rule_kernel_takes<const ParamView&>,
              "nor a view whose space nobody stated");
static_assert(host_rule_takes<const HostParamView&>, "control: the host producer takes a host view");
static_assert(!host_rule_takes<const DeviceParamView&> && !host_rule_takes<const ParamView&>,
              "a device view must not reach the host producer");
static_assert(!std::is_convertible_v<HostParamView, DeviceParamView> && !std::is_convertible_v<DeviceParamView, HostParamView>,
              "the two spaces do not convert");
static_assert(std::is_convertible_v<const DeviceParamView&, const ParamView&>,
              "control: the kernels read the plain view inside");
static_assert(!std::is_convertible_v<ParamView, DeviceParamView>, "a plain view becomes a device view only explicitly");

// State by format: each pointer takes only its own element type.
static_assert(std::is_assignable_v<float*&, float*> && std::is_assignable_v<bf16*&, bf16*>, "control");
static_assert(!std::is_assignable_v<decltype((std::declval<StateView&>().bf16)), float*>,
              "a float buffer cannot be bf16 state");
static_assert(!std::is_assignable_v<decltype((std::declval<StateView&>().f32)), bf16*>,
              "nor a bf16 buffer fp32 state");
static_assert(!std::is_assignable_v<decltype((std::declval<StateView&>().i8)), float*>, "nor a float buffer INT8 codes");

// HostParam::view() sets, for every kept slot, the pointer of the tensor's format and no other,
// and state_storage finds it.
TEST(MemorySpaces, HostViewSetsThePointerOfItsFormat) {
  for (StateFormat sf : {StateFormat::fp32, StateFormat::bf16, StateFormat::int8}) {
    const RuleConfig rule = default_rule_config(RuleId::adamw);
    HostParam hp = HostParam::make(rule, sf, WeightStore::fp32_master, 4, 64, std::vector<float>(4 * 64, 0.5f));
    const HostParamView pv = hp.view();
    int kept = 0;
    for (int k = 0; k < kMaxStates; ++k) {
      const StateView& sv = pv.state[k];
      if (!hp.decls.slot[k].kept) {
        EXPECT_FALSE(sv.present()) << state_format_name(sf) << " slot " << k;
        continue;
      }
      ++kept;
      EXPECT_TRUE(sv.present()) << state_format_name(sf) << " slot " << k;
      EXPECT_EQ(sv.f32 != nullptr, sf == StateFormat::fp32) << state_format_name(sf) << " slot " << k;
      EXPECT_EQ(sv.bf16 != nullptr, sf == StateFormat::bf16) << state_format_name(sf) << " slot " << k;
      EXPECT_EQ(sv.i8 != nullptr, sf == StateFormat::int8) << state_format_name(sf) << " slot " << k;
      EXPECT_EQ(sv.absmax != nullptr, sf == StateFormat::int8) << state_format_name(sf) << " slot " << k;
      EXPECT_NE(state_storage(sv, sf), nullptr);
      for (StateFormat other : {StateFormat::fp32, StateFormat::bf16, StateFormat::int8})
        if (other != sf) EXPECT_EQ(state_storage(sv, other), nullptr) << "a slot answers for " << state_format_name(other);
    }
    EXPECT_EQ(kept, 2) << "AdamW keeps m and v";
  }
}

}  // namespace
}  // namespace fh
