// Real NCCL ranks (kernels/gpu/nccl/nccl_collectives.h) against the simulated ones
// (reference/sharding.h), bit for bit: the all-gathers and the ordered all-reduce, and a
// sharded layer whose collectives run on NCCL gathers to the unsharded fused update. Needs at
// least 2 GPUs; with fewer every case but the refusal skips as not applicable (the real
// multi-GPU run is not yet lent a machine).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "kernels/gpu/nccl/nccl_collectives.h"
#include "reference/sharding.h"
#include "suites/claims/prop2_common.h"
#include "suites/gpu/gpu_suite_util.h"

namespace {

// Too few GPUs is "not applicable" (the runner lacks them), not a skip the runner could avoid.
#define FH_NEED_GPUS(n)                                                                              \
  do {                                                                                               \
    const int visible = fh::nccl_visible_gpus();                                                     \
    if (visible < (n)) FH_NOT_APPLICABLE() << "needs " << (n) << " GPUs, " << visible << " visible"; \
  } while (0)

TEST(NcclCollectives, RefusesMoreRanksThanGpus) {
  const int visible = fh::nccl_visible_gpus();
  try {
    fh::NcclCollectives c(std::max(2, visible + 1));
    FAIL() << "constructed with more ranks than GPUs";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("visible"), std::string::npos) << e.what();
  }
}

TEST(NcclCollectives, EqualSimulatedRanksBitForBit) {
  FH_NEED_GPUS(2);
  const int visible = fh::nccl_visible_gpus();
  std::mt19937_64 rng(fh::stream_seed(fh::case_seed(20261204), "test_nccl_collectives/rank_data"));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int p = 2; p <= std::min(visible, 8); p *= 2) {
    fh::NcclCollectives nccl(p);
    fh::SimCollectives sim;
    sim.p = p;
    std::printf("[nccl] %s\n", nccl.describe().c_str());
    std::vector<std::vector<float>> f(static_cast<size_t>(p));
    std::vector<std::vector<fh::bf16>> h(static_cast<size_t>(p));
    for (int r = 0; r < p; ++r) {
      for (int i = 0; i < 4096; ++i) f[size_t(r)].push_back(nd(rng) * float(1 << (i % 20)));
      for (int i = 0; i < 4096; ++i) h[size_t(r)].push_back(fh::bf16::from_bits(uint16_t(rng())));
    }
    EXPECT_EQ(nccl.all_gather_rows(h, 64), sim.all_gather_rows(h, 64)) << "p=" << p;
    EXPECT_EQ(nccl.all_gather_cols(f, 32), sim.all_gather_cols(f, 32)) << "p=" << p;
    const auto a = nccl.all_reduce_ordered(f), b = sim.all_reduce_ordered(f);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << "p=" << p;
  }
}

TEST(NcclCollectives, ShardedLayerOnNcclGathersToTheUnshardedUpdate) {
  FH_NEED_GPUS(2);
  fh::Prop2Config cfg;
  cfg.steps = 2;
  const uint64_t seed = fh::case_seed(7);
  const fh::LayerInputs inp = fh::make_layer_inputs(fh::stream_seed(seed, "test_nccl_collectives/layer_inputs"), cfg.out, cfg.in, cfg.T, cfg.steps);
  const fh::TwinSchedule sched = fh::prop2_schedule(cfg.out, cfg.in, cfg.T);
  const fh::Combo cb{fh::config_for(fh::RuleId::adamw, {}), fh::StateFormat::fp32, fh::WeightStore::fp32_master};
  const fh::UnshardedRun u = fh::run_unsharded(cb, inp, sched, 3, fh::stream_seed(seed, "test_nccl_collectives/sr_key"), nullptr);
  fh::NcclCollectives nccl(2);
  for (fh::TpKind kind : {fh::TpKind::column, fh::TpKind::row})
    for (fh::Dataflow flow : {fh::Dataflow::tp, fh::Dataflow::sp_megatron}) {
      fh::ShardedLayer layer = fh::ShardedLayer::split(u.initial, kind, flow, 2);
      for (size_t k = 0; k < inp.steps.size(); ++k)
        fh::sharded_fused_step(layer, inp.steps[k].X.data(), inp.steps[k].dY.data(), cfg.T, int64_t(k) + 1, sched, nccl);
      const auto c = fh::bitwise_case("nccl", "nccl", layer.gathered(u.initial), u.final_param, cfg.steps, "NCCL ranks");
      EXPECT_TRUE(c.pass) << fh::tp_kind_name(kind) << " " << fh::dataflow_name(flow) << ": " << c.first_diff;
    }
}

}  // namespace
