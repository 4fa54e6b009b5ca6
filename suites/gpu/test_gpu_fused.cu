// The fused kernel on the GPU against its references, bit for bit:
//   Proposition 1 on the GPU: fused == order-matched two-phase (materializer + rule kernel);
//   Twin = GPU: fused == host twin (kernels/twin/fused_twin.h), and materialized G == the model
//     chain, with the rule applied on the host (apply_rule_region) == fused;
//   Corollary 1 on cuBLAS: cuBLAS G == the model's sequential k16 chain (mismatches reported),
//     and fused == cuBLAS + rule kernel where that holds;
//   Remark 1: linear_backward's dX == cuBLAS dX on the pre-step W; a planted read-after-update
//     is caught; consumers > 1 is refused.
// Every rule x state format x weight store, several steps, ragged shapes, both tile shapes.
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <tuple>

#include "kernels/gpu/gpu_api.h"
#include "kernels/gpu/linear_backward.h"
#include "kernels/gpu/rule_family_built.h"
#include "kernels/twin/fused_twin.h"
#include "kernels/twin/mma_model.h"
#include "suites/gpu/gpu_suite_util.h"

namespace fh::gpu {
namespace {


// Every rule, or the families a kernel mutant's build holds (CMake FH_GPU_RULE_FAMILY).
std::vector<RuleId> built_rules() {
  std::vector<RuleId> rules;
  for (RuleId r : kAllRules)
    if (gpu_rule_built(r)) rules.push_back(r);
  return rules;
}

constexpr StateFormat kFormats[] = {StateFormat::fp32, StateFormat::bf16, StateFormat::int8};
constexpr WeightStore kStores[] = {WeightStore::fp32_master, WeightStore::bf16_rne, WeightStore::bf16_sr};

struct Shape {
  int64_t out, in, T;
};

// G [out, in] as the model's sequential chain from +0 (the fused kernel's and cuBLAS's order),
// parallel over rows.
std::vector<float> model_chain_wgrad(const std::vector<bf16>& X, const std::vector<bf16>& dY,
                                     int64_t T, int64_t out, int64_t in) {
  std::vector<bf16> XT(size_t(in * T)), dYT(size_t(out * T));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < in; ++i) XT[size_t(i * T + t)] = X[size_t(t * in + i)];
    for (int64_t o = 0; o < out; ++o) dYT[size_t(o * T + t)] = dY[size_t(t * out + o)];
  }
  std::vector<float> G(size_t(out * in));
  test::parallel_for(out, [&](int64_t o) {
    for (int64_t i = 0; i < in; ++i)
      G[size_t(o * in + i)] = mma_chain_dot(&dYT[size_t(o * T)], &XT[size_t(i * T)], T, 0.0f);
  });
  return G;
}

// The suite's seed: the run seed when given (--seed=N, FH_SEED), else this fixed one. Each
// case's data is draw `case_no` of a named stream of it.
uint64_t suite_seed() { return case_seed(0x6F05EDull); }

struct StepData {
  std::vector<bf16> X, dY;
  DeviceBuffer<bf16> dX, ddY;
  WgradProblem prob;
  StepData(const Shape& s, uint64_t case_no)
      : X(test::random_bf16_vec(size_t(s.T * s.in), stream_seed(suite_seed(), "test_gpu_fused/x", case_no))),
        dY(test::random_bf16_vec(size_t(s.T * s.out), stream_seed(suite_seed(), "test_gpu_fused/dy", case_no), 6, -8)),
        dX(X), ddY(dY) {
    prob = WgradProblem{dX.data(), ddY.data(), s.T, s.out, s.in};
  }
};

std::string config_name(RuleId r, StateFormat sf, WeightStore ws) {
  return std::string(rule_name(r)) + "/" + state_format_name(sf) + "/" + weight_store_name(ws);
}

HostParam make_param(RuleId r, StateFormat sf, WeightStore ws, const Shape& s, uint64_t case_no) {
  return HostParam::make(default_rule_config(r), sf, ws, s.out, s.in,
                         test::random_weights(size_t(s.out * s.in), stream_seed(suite_seed(), "test_gpu_fused/w0", case_no)),
                         stream_seed(suite_seed(), "test_gpu_fused/sr_key", case_no), uint32_t(case_no % 1000));
}

// Two steps of the fused kernel and of the order-matched path from the same parameter, at the
// 128 x 128 tile setting; their difference.
ParamEvidence fused_vs_order_matched(const std::vector<StepData>& steps, const HostParam& hp0, StateFormat sf,
                                     WeightStore ws) {
  const WgradProblem& p = steps[0].prob;
  HostParam fused_h = hp0, om_h = hp0;
  DeviceParam fused(hp0), om(hp0);
  DeviceBuffer<float> g(size_t(p.out * p.in));
  for (int st = 1; st <= 2; ++st) {
    const StepData& d = steps[size_t(st - 1)];
    fused_wgrad_update(d.prob, hp0.rule, sf, ws, fused.view(), st);
    wgrad_materialize(d.prob, g.data());
    rule_apply_device(hp0.rule, sf, ws, om.view(), st, g.data(), p.in);
  }
  fused.download_into(fused_h);
  om.download_into(om_h);
  return test::compare_params(fused_h, om_h);
}

// (b) + (c) on small ragged shapes: fused (both tiles) vs order-matched vs the host twin.
TEST(gpu_fused_vs_twin, FusedEqualsOrderMatchedAndTwinOnRaggedShapes) {
  FH_REQUIRE_GPU();
  const Shape shapes[] = {{200, 200, 1}, {200, 200, 37}, {200, 200, 100}, {70, 130, 64}};
  const int kSteps = 3;
  int64_t compared_om = 0, diff_om = 0, compared_twin = 0, diff_twin = 0, configs = 0;
  for (const Shape& s : shapes) {
    std::vector<StepData> steps;
    for (int st = 1; st <= kSteps; ++st) steps.emplace_back(s, uint64_t(s.out * 1000003 + s.T * 101 + st));
    for (RuleId r : built_rules())
      for (StateFormat sf : kFormats)
        for (WeightStore ws : kStores)
          for (TileShape tile : {TileShape{128, 128}, TileShape{64, 64}}) {
            ++configs;
            const HostParam hp0 = make_param(r, sf, ws, s, uint64_t(configs));
            HostParam twin = hp0, fused_h = hp0, om_h = hp0;
            DeviceParam fused(hp0), om(hp0);
            DeviceBuffer<float> g(size_t(s.out * s.in));
            TwinSchedule sched;
            sched.tile_rows = tile.rows;
            sched.tile_cols = tile.cols;
            for (int st = 1; st <= kSteps; ++st) {
              const StepData& d = steps[size_t(st - 1)];
              fused_wgrad_update(d.prob, hp0.rule, sf, ws, fused.view(), st, tile);
              wgrad_materialize(d.prob, g.data(), tile);
              rule_apply_device(hp0.rule, sf, ws, om.view(), st, g.data(), s.in);
              fused_twin_step(twin, d.X.data(), d.dY.data(), s.T, st, sched);
              fused.download_into(fused_h);
              om.download_into(om_h);
              const ParamEvidence a = test::compare_params(fused_h, om_h);
              const ParamEvidence b = test::compare_params(fused_h, twin);
              compared_om += a.values; diff_om += a.differing;
              compared_twin += b.values; diff_twin += b.differing;
              const std::string where = config_name(r, sf, ws) + " tile " + std::to_string(tile.rows) + " " +
                                        fused_kernel_for(d.prob, tile, sf, hp0.rule) +
                                        " shape " + std::to_string(s.out) + "x" + std::to_string(s.in) +
                                        " T=" + std::to_string(s.T) + " step " + std::to_string(st);
              EXPECT_EQ(a.differing, 0) << "fused vs order-matched, " << where << ", first " << a.first_diff;
              EXPECT_EQ(b.differing, 0) << "fused vs twin, " << where << ", first " << b.first_diff;
            }
          }
  }
  std::printf("[fused] ragged: %lld configs x %d steps; fused vs order-matched: %lld values, %lld differ; "
              "fused vs host twin: %lld values, %lld differ\n", (long long)configs, kSteps,
              (long long)compared_om, (long long)diff_om, (long long)compared_twin, (long long)diff_twin);
}

namespace {
// The cooperative kernel's forms, each against order-matched for every rule, state format and store.
enum class CoopForm { coop, l2g, l2g_share, l2g_staged, ilv };
void coop_form_vs_order_matched(CoopForm form) {
  const FusedSchedule defaults = fused_schedule();
  FusedSchedule coop = defaults;
  coop.coop_min_tokens = kCoopMinTokens;
  coop.coop_min_tokens_int8 = kCoopMinTokens;
  coop.coop_split_max = 1;  // the kernel split over tokens has its own test (SplitKernel...)
  const bool share = form == CoopForm::l2g_share, staged = form == CoopForm::l2g_staged,
             l2g = form == CoopForm::l2g || share || staged, ilv = form == CoopForm::ilv;
  const char* name = ilv      ? "coop kernel (interleaved epilogue)"
                     : share  ? "coop kernel (G through L2, fp32 / bf16 tiles shared with the consumers)"
                     : staged ? "coop kernel (G through L2, whole tiles staged in shared memory)"
                     : l2g    ? "coop kernel (G through L2)"
                              : "coop kernel";
  coop.coop_l2g_min_tokens = coop.coop_l2g_min_tokens_light = coop.coop_l2g_min_tokens_int8 = l2g ? kCoopMinTokens : 0;
  coop.coop_ilv_min_tokens = ilv ? kCoopMinTokens : 0;
  coop.coop_l2g_light_min_tiles = 1;
  coop.coop_l2g_epilogue_rows = coop.coop_l2g_epilogue_rows_16k = 56;
  coop.coop_l2g_epilogue_rows_fp = share ? 40 : 128;
  coop.coop_l2g_staged = staged ? 1 : 0;
  set_fused_schedule(coop);
  int64_t compared = 0, differing = 0, configs = 0;
  for (const Shape& s : {Shape{304, 520, 2100}, Shape{2040, 4000, kCoopMinTokens}}) {
    std::vector<StepData> steps;
    for (int st = 1; st <= 2; ++st) steps.emplace_back(s, uint64_t(s.out * 7919 + s.T + st));
    for (RuleId r : built_rules())
      for (StateFormat sf : {StateFormat::fp32, StateFormat::bf16, StateFormat::int8})
        for (WeightStore ws : kStores) {
          ++configs;
          const HostParam hp = make_param(r, sf, ws, s, uint64_t(1000 + configs));
          EXPECT_STREQ(fused_kernel_for(steps[0].prob, TileShape{128, 128}, sf, hp.rule),
                       ilv && sf != StateFormat::int8 ? "coop_ilv_128x256"
                       : l2g && coop_l2g_class(sf, rule_declared_slots(hp.rule), rule_kept_slots(hp.rule), 1, 1) !=
                                    CoopL2gClass::none
                           ? (share && sf != StateFormat::int8 ? "coop_l2g_share_128x256" : "coop_l2g_128x256")
                           : "coop_128x256");
          const ParamEvidence e = fused_vs_order_matched(steps, hp, sf, ws);
          compared += e.values;
          differing += e.differing;
          EXPECT_EQ(e.differing, 0) << name << " fused vs order-matched, " << config_name(r, sf, ws) << " " << s.out
                                    << "x" << s.in << " T=" << s.T << ", first " << e.first_diff;
        }
  }
  std::printf("[fused] %s: %lld configs x 2 steps, fused vs order-matched: %lld values, %lld differ\n", name,
              (long long)configs, (long long)compared, (long long)differing);
  set_fused_schedule(defaults);
}
}  // namespace

// The cooperative 128 x 256 kernel, which fused_wgrad_update runs from T = coop_min_tokens on
// (coop_min_tokens_int8 for INT8 state; both set here to kCoopMinTokens): every rule, state format and weight
// store, two steps (the second from non-zero state), fused == order-matched (G materialized, then
// the rule kernel) bit for bit. 304 x 520 at T = 2100 (rows of 304 and 520 bf16 are 16-byte
// aligned, as TMA needs): ragged rows (the last tile 48 of 128 high), columns (8 of 256 wide) and
// last chunk. 2040 x 4000 at T = kCoopMinTokens: 256 tiles, more than the SMs of an H100 or H200
// (132), ragged in both directions, so blocks with one and two tiles. Twice: the cooperative
// kernel, then with its G tiles through L2 wherever that form serves (coop_l2g_class, any layer
// size: rules that keep state; SGD and RMSprop's default stay on the cooperative kernel), INT8 tiles
// split at row 56 between the epilogue warps (runs that cross into the right half) and the
// consumers, and ragged tiles among the epilogue warps' (the first 124). (That these checks can
// fail is shown by the kernel mutants, suites/mutation/kernel_catalog.json.)
TEST(GpuFused, CoopKernelEqualsOrderMatchedForEveryRule) {
  FH_REQUIRE_GPU();
  coop_form_vs_order_matched(CoopForm::coop);
  coop_form_vs_order_matched(CoopForm::l2g);
}

// v48 (opt-in: coop_l2g_epilogue_rows_fp below 128): the G-through-L2 form whose consumers update
// each fp32 / bf16 tile's rows from 40 down (ragged tiles among both shares), every rule that form
// serves, state format and store, fused == order-matched bit for bit. A test of its own, as the
// interleaved form's below.
TEST(GpuFused, CoopL2gShareKernelEqualsOrderMatchedForEveryRule) {
  FH_REQUIRE_GPU();
  coop_form_vs_order_matched(CoopForm::l2g_share);
}

// v51 (opt-in: coop_l2g_staged): the G-through-L2 form whose epilogue warps bring each whole fp32 /
// bf16 tile's G, weights and state into shared memory by bulk copies (both shapes' rows allow it:
// 520 and 4000 columns; the ragged tiles keep the register path), every rule that form serves,
// state format and store, fused == order-matched bit for bit.
TEST(GpuFused, CoopL2gStagedKernelEqualsOrderMatchedForEveryRule) {
  FH_REQUIRE_GPU();
  coop_form_vs_order_matched(CoopForm::l2g_staged);
}

// The same for the form with the epilogue interleaved into the next tile's mainloop (v46, opt-in:
// coop_ilv_min_tokens), fp32 and bf16 state (INT8 stays on the cooperative kernel): at T = 2100
// about one pass a chunk. A test of its own so that the mutation gate's cases keep their measured
// time (suites/mutation/gate.json).
TEST(GpuFused, CoopIlvKernelEqualsOrderMatchedForEveryRule) {
  FH_REQUIRE_GPU();
  coop_form_vs_order_matched(CoopForm::ilv);
}

// The kernel split over tokens (fused_wgrad_coop_split.cuh): the S slices' partials summed in
// ascending slice order, the order fused_order_for describes, which wgrad_materialize follows.
//   - 304 x 520 at T = 2100 (9 ragged 128 x 256 tiles, a ragged last chunk), S forced to 2, 3 and
//     the largest the cost model allows without overhead (11: 99 units, one a block): fused ==
//     order-matched for every rule, state format and weight store at S = 11, AdamW's three formats
//     at S = 2 and 3, two steps (the second from non-zero state);
//   - 136 x 264 at T = 1100 (4 tiles, 18 chunks), S = 3 and 9: fused == the host twin in
//     cublas_wgrad_order(S, 64), an order the GPU's materializer does not share code with;
//   - the default schedule at 1024 x 1024, T = 16384, and 2048 x 1024, T = 8192 (32 and 64 tiles):
//     the split is chosen (4 and 2 slices on 132 SMs), fused == order-matched for AdamW's three
//     formats.
TEST(GpuFused, SplitKernelEqualsOrderMatchedAndTwin) {
  FH_REQUIRE_GPU();
  const FusedSchedule defaults = fused_schedule();
  auto forced = [&](int max_splits) {
    FusedSchedule f = defaults;
    f.coop_split_max = max_splits;
    f.coop_split_min_tokens = 0;
    f.coop_split_overhead_chunks = 0;
    f.coop_split_gain_pct = 0;
    f.coop_split_unit_chunks = 0;
    f.coop_split_min_slice_tokens = 0;
    return f;
  };
  int64_t compared = 0, differing = 0, configs = 0;
  // The kernel a split problem runs: one wave where tiles x S fit the SMs, waves otherwise.
  auto split_kernel = [&](const WgradProblem& p, int splits) {
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    const int64_t tiles = ((p.out + 127) / 128) * ((p.in + 255) / 256);
    return tiles * splits <= sms ? "coop_split_128x256" : "coop_split_waves_128x256";
  };
  int64_t waves_configs = 0;
  auto run = [&](const std::vector<StepData>& steps, RuleId r, StateFormat sf, WeightStore ws, int want_splits) {
    ++configs;
    const WgradProblem& p = steps[0].prob;
    const HostParam hp = make_param(r, sf, ws, Shape{p.out, p.in, p.tokens}, uint64_t(3000 + configs));
    const int splits = fused_token_splits(p);
    if (want_splits > 0) EXPECT_EQ(splits, want_splits) << p.out << "x" << p.in << " T=" << p.tokens;
    EXPECT_GT(splits, 1);
    const char* kernel = fused_kernel_for(p, TileShape{128, 128}, sf, hp.rule);
    EXPECT_STREQ(kernel, split_kernel(p, splits));
    waves_configs += std::string(kernel) == "coop_split_waves_128x256";
    const ParamEvidence e = fused_vs_order_matched(steps, hp, sf, ws);
    compared += e.values;
    differing += e.differing;
    EXPECT_EQ(e.differing, 0) << "split (S = " << splits << ") fused vs order-matched, " << config_name(r, sf, ws)
                              << " " << p.out << "x" << p.in << " T=" << p.tokens << ", first " << e.first_diff;
  };
  const Shape ragged{304, 520, 2100};
  std::vector<StepData> rsteps;
  for (int st = 1; st <= 2; ++st) rsteps.emplace_back(ragged, uint64_t(ragged.out * 7919 + ragged.T + 10 * st));
  for (auto [max_splits, want] : {std::pair{2, 2}, std::pair{3, 3}, std::pair{16, 11}}) {
    set_fused_schedule(forced(max_splits));
    for (RuleId r : built_rules())
      for (StateFormat sf : kFormats)
        for (WeightStore ws : kStores)
          if (max_splits == 16 || (r == RuleId::adamw && ws == WeightStore::fp32_master)) run(rsteps, r, sf, ws, want);
  }

  // The split in waves (tiles x S above the SMs: 81 tiles of 128 x 256 here, ragged both ways, rows
  // 16-byte aligned as TMA needs), every rule x format x store at the larger S, AdamW at the smaller.
  const Shape wide{1096, 2104, 2100};
  std::vector<StepData> wsteps;
  for (int st = 1; st <= 2; ++st) wsteps.emplace_back(wide, uint64_t(wide.out * 7919 + wide.T + 10 * st));
  const int64_t waves_before = waves_configs;
  const HostParam hw = make_param(RuleId::adamw, StateFormat::fp32, WeightStore::fp32_master, wide, 6);
  for (int max_splits : {3, 16}) {
    set_fused_schedule(forced(max_splits));
    std::printf("[fused] split in waves: %lldx%lld T=%lld, at most %d slices: %d (%s)\n", (long long)wide.out,
                (long long)wide.in, (long long)wide.T, max_splits, fused_token_splits(wsteps[0].prob),
                fused_kernel_for(wsteps[0].prob, TileShape{128, 128}, StateFormat::fp32, hw.rule));
    for (RuleId r : built_rules())
      for (StateFormat sf : kFormats)
        for (WeightStore ws : kStores)
          if (max_splits == 16 || (r == RuleId::adamw && ws == WeightStore::fp32_master)) run(wsteps, r, sf, ws, 0);
  }
  EXPECT_GT(waves_configs - waves_before, 0) << "no configuration ran the split in waves (the SM count?)";

  // The host twin in the split order.
  int64_t twin_compared = 0, twin_differing = 0;
  const Shape small{136, 264, 1100};
  StepData sd(small, 77);
  for (auto [max_splits, want] : {std::pair{3, 3}, std::pair{16, 9}}) {
    set_fused_schedule(forced(max_splits));
    EXPECT_EQ(fused_token_splits(sd.prob), want);
    TwinSchedule sched;
    sched.order = fused_order_for(sd.prob);
    EXPECT_EQ(sched.order.split_k, want) << sched.order.describe();
    for (auto [sf, ws] : {std::pair{StateFormat::fp32, WeightStore::fp32_master},
                          std::pair{StateFormat::int8, WeightStore::bf16_sr}}) {
      const HostParam hp = make_param(RuleId::adamw, sf, ws, small, uint64_t(4000 + max_splits));
      HostParam fused_h = hp, twin = hp;
      DeviceParam fused(hp);
      for (int st = 1; st <= 2; ++st) {
        fused_wgrad_update(sd.prob, hp.rule, sf, ws, fused.view(), st);
        fused_twin_step(twin, sd.X.data(), sd.dY.data(), small.T, st, sched);
      }
      fused.download_into(fused_h);
      const ParamEvidence e = test::compare_params(fused_h, twin);
      twin_compared += e.values;
      twin_differing += e.differing;
      EXPECT_EQ(e.differing, 0) << "split (S = " << want << ") fused vs host twin, " << config_name(RuleId::adamw, sf, ws)
                                << ", first " << e.first_diff;
    }
  }

  // The default schedule where the split pays.
  set_fused_schedule(defaults);
  int64_t default_configs = 0;
  // The wider layers split in waves: with the waves' model on (kCoopSplitUnitChunks) whatever the
  // default says.
  FusedSchedule waves_on = defaults;
  waves_on.coop_split_unit_chunks = kCoopSplitUnitChunks;
  for (const Shape& s : {Shape{1024, 1024, 16384}, Shape{2048, 1024, 8192}, Shape{1024, 2560, 16384},
                         Shape{1024, 5120, 16384}, Shape{2560, 4096, 16384}}) {
    set_fused_schedule(s.out * s.in > 2048 * 1024 ? waves_on : defaults);
    std::vector<StepData> steps;
    for (int st = 1; st <= 2; ++st) steps.emplace_back(s, uint64_t(s.out * 31 + s.in + st));
    for (auto [sf, ws] : {std::pair{StateFormat::fp32, WeightStore::fp32_master},
                          std::pair{StateFormat::bf16, WeightStore::bf16_rne},
                          std::pair{StateFormat::int8, WeightStore::fp32_master}}) {
      run(steps, RuleId::adamw, sf, ws, 0);
      ++default_configs;
    }
    std::printf("[fused] split: %lldx%lld T=%lld at the default schedule (waves on): %d slices (%s)\n", (long long)s.out,
                (long long)s.in, (long long)s.T, fused_token_splits(steps[0].prob),
                fused_order_for(steps[0].prob).describe().c_str());
  }
  set_fused_schedule(defaults);
  std::printf("[fused] split kernel: %lld configs x 2 steps (%lld in waves, %lld at the default schedule), fused vs order-matched: "
              "%lld values, %lld differ; fused vs host twin: %lld values, %lld differ\n",
              (long long)configs, (long long)waves_configs, (long long)default_configs, (long long)compared, (long long)differing,
              (long long)twin_compared, (long long)twin_differing);
}

// A few configurations on one ragged shape, every kernel of the set once: small enough for
// compute-sanitizer (scripts/gpu_runner.sh with FH_SANITIZE=1 runs memcheck, racecheck and
// initcheck on this test and the linear_backward one; the kernel mutants' skipped barriers are
// racecheck's to find, suites/mutation/kernel_catalog.json). The 128 x 128 setting runs four
// times: the block-tile kernels, then the cooperative kernel, its form with G through L2 and its
// interleaved form (each forced from T = 1; rows of 200 bf16 are 16-byte aligned, as their TMA
// loads need).
TEST(GpuFused, SanitizerSmoke) {
  FH_REQUIRE_GPU();
  const Shape s{200, 200, 37};
  const FusedSchedule defaults = fused_schedule();
  FusedSchedule coop = defaults, coop_l2g = defaults;
  coop.coop_min_tokens = coop.coop_min_tokens_int8 = 1;
  coop.coop_split_max = 1;
  coop.coop_l2g_min_tokens = coop.coop_l2g_min_tokens_light = coop.coop_l2g_min_tokens_int8 = 0;
  coop_l2g = coop;
  coop_l2g.coop_l2g_min_tokens = coop_l2g.coop_l2g_min_tokens_light = coop_l2g.coop_l2g_min_tokens_int8 = 1;
  coop_l2g.coop_l2g_light_min_tiles = 1;
  FusedSchedule coop_ilv = coop;
  coop_ilv.coop_ilv_min_tokens = 1;
  StepData d(s, 31337);
  // FH_SMOKE_NO_CUBLAS=1 leaves cuBLAS out (gpu_runner.sh sets it for initcheck only): cuBLAS's
  // Hopper kernels store G through the TMA engine, whose writes initcheck does not track, so every
  // later read of that G is reported as uninitialized although it is not.
  const char* no_cublas_env = std::getenv("FH_SMOKE_NO_CUBLAS");
  const bool with_cublas = !(no_cublas_env && std::string(no_cublas_env) == "1");
  if (!with_cublas) std::printf("[fused] sanitizer smoke: cuBLAS part skipped (FH_SMOKE_NO_CUBLAS=1)\n");
  std::unique_ptr<CublasHandle> h;
  if (with_cublas) h = std::make_unique<CublasHandle>();
  int64_t differing = 0, compared = 0;
  const std::tuple<RuleId, StateFormat, WeightStore> configs[] = {
      {RuleId::adamw, StateFormat::fp32, WeightStore::fp32_master},
      {RuleId::adamw, StateFormat::int8, WeightStore::bf16_sr},
      {RuleId::lion, StateFormat::bf16, WeightStore::bf16_rne}};
  struct Pass { const char* name; const FusedSchedule* schedule; TileShape tile; };
  const Pass passes[] = {{"block 128", &defaults, {128, 128}}, {"block 64", &defaults, {64, 64}},
                         {"coop", &coop, {128, 128}}, {"coop G via L2", &coop_l2g, {128, 128}},
                         {"coop interleaved", &coop_ilv, {128, 128}}};
  for (const auto& [r, sf, ws] : configs)
    for (const Pass& pass : passes) {
      if (!gpu_rule_built(r)) continue;
      set_fused_schedule(*pass.schedule);
      const TileShape tile = pass.tile;
      const HostParam hp0 = make_param(r, sf, ws, s, 12);
      const std::string kernel = fused_kernel_for(d.prob, tile, sf, hp0.rule);
      if (pass.schedule != &defaults) EXPECT_EQ(kernel.rfind("coop", 0), 0u) << pass.name << " ran " << kernel;
      HostParam a = hp0, b = hp0;
      DeviceParam fused(hp0), om(hp0), cub(hp0);
      DeviceBuffer<float> g(size_t(s.out * s.in)), gc(size_t(s.out * s.in));
      fused_wgrad_update(d.prob, hp0.rule, sf, ws, fused.view(), 1, tile);
      wgrad_materialize(d.prob, g.data(), tile);
      rule_apply_device(hp0.rule, sf, ws, om.view(), 1, g.data(), s.in);
      if (with_cublas) {
        cublas_wgrad(h->get(), d.prob, gc.data());
        rule_apply_device(hp0.rule, sf, ws, cub.view(), 1, gc.data(), s.in);
      }
      fused.download_into(a);
      om.download_into(b);
      const ParamEvidence x = test::compare_params(a, b);
      compared += x.values;
      differing += x.differing;
      EXPECT_EQ(x.differing, 0) << config_name(r, sf, ws) << " " << pass.name << " (" << kernel << "), first "
                                << x.first_diff;
    }
  set_fused_schedule(defaults);
  std::printf("[fused] sanitizer smoke: %lld values, %lld differ\n", (long long)compared, (long long)differing);
}

// (b) + (c) at 1024 x 1024, T = 512: fused == order-matched for every config; the materialized G
// == the model chain; fused == the host rule applied to that G.
TEST(gpu_fused_vs_order_matched, FusedEqualsOrderMatchedAndHostRuleAt1024) {
  FH_REQUIRE_GPU();
  const Shape s{1024, 1024, 512};
  const int kSteps = 2;
  std::vector<StepData> steps;
  std::vector<std::vector<float>> g_model;
  int64_t g_compared = 0, g_diff = 0;
  for (int st = 1; st <= kSteps; ++st) {
    steps.emplace_back(s, uint64_t(777 + st));
    g_model.push_back(model_chain_wgrad(steps.back().X, steps.back().dY, s.T, s.out, s.in));
    DeviceBuffer<float> g(size_t(s.out * s.in));
    wgrad_materialize(steps.back().prob, g.data());
    const ParamEvidence d = test::compare_floats("G", g.download(), g_model.back());
    g_compared += d.values; g_diff += d.differing;
    EXPECT_EQ(d.differing, 0) << "materialized G vs model chain, step " << st << ", first " << d.first_diff;
  }
  int64_t compared_om = 0, diff_om = 0, compared_host = 0, diff_host = 0, configs = 0;
  for (RuleId r : built_rules())
    for (StateFormat sf : kFormats)
      for (WeightStore ws : kStores) {
        ++configs;
        HostParam hp0 = make_param(r, sf, ws, s, uint64_t(5000 + configs));
        HostParam host = hp0, fused_h = hp0, om_h = hp0;
        DeviceParam fused(hp0), om(hp0);
        DeviceBuffer<float> g(size_t(s.out * s.in));
        for (int st = 1; st <= kSteps; ++st) {
          const StepData& d = steps[size_t(st - 1)];
          fused_wgrad_update(d.prob, hp0.rule, sf, ws, fused.view(), st);
          wgrad_materialize(d.prob, g.data());
          rule_apply_device(hp0.rule, sf, ws, om.view(), st, g.data(), s.in);
          apply_rule_region(host.rule, sf, ws, host.view(), st, g_model[size_t(st - 1)].data(), s.in, 0,
                            s.out, 0, s.in);
          fused.download_into(fused_h);
          om.download_into(om_h);
          const ParamEvidence a = test::compare_params(fused_h, om_h);
          const ParamEvidence b = test::compare_params(fused_h, host);
          compared_om += a.values; diff_om += a.differing;
          compared_host += b.values; diff_host += b.differing;
          EXPECT_EQ(a.differing, 0) << "fused vs order-matched, " << config_name(r, sf, ws) << " step " << st << ", first " << a.first_diff;
          EXPECT_EQ(b.differing, 0) << "fused vs host rule on model G, " << config_name(r, sf, ws) << " step " << st << ", first " << b.first_diff;
        }
      }
  std::printf("[fused] 1024x1024 T=512: materialized G vs model chain: %lld values, %lld differ; %lld configs x %d steps; "
              "fused vs order-matched: %lld values, %lld differ; fused vs host rule on model G: %lld values, %lld differ\n",
              (long long)g_compared, (long long)g_diff, (long long)configs, kSteps, (long long)compared_om,
              (long long)diff_om, (long long)compared_host, (long long)diff_host);
}

// (d) cuBLAS's G against the model's sequential chain, and fused against cuBLAS + rule kernel.
void check_cublas_shape(const Shape& s) {
  StepData d(s, uint64_t(s.out * 31 + s.T));
  CublasHandle h;
  DeviceBuffer<float> g_cublas(size_t(s.out * s.in)), g_mat(size_t(s.out * s.in));
  cublas_wgrad(h.get(), d.prob, g_cublas.data());
  wgrad_materialize(d.prob, g_mat.data());
  cuda_check(cudaDeviceSynchronize(), "cublas_wgrad");
  const std::vector<float> gc = g_cublas.download();
  const std::vector<float> model = model_chain_wgrad(d.X, d.dY, s.T, s.out, s.in);
  const ParamEvidence vs_model = test::compare_floats("G", gc, model);
  const ParamEvidence vs_mat = test::compare_floats("G", gc, g_mat.download());
  std::printf("[cublas] %lldx%lld T=%lld: cuBLAS G vs model chain: %lld values, %lld differ%s%s; "
              "cuBLAS G vs materializer: %lld differ\n", (long long)s.out, (long long)s.in, (long long)s.T,
              (long long)vs_model.values, (long long)vs_model.differing, vs_model.differing ? ", first " : "",
              vs_model.first_diff.c_str(), (long long)vs_mat.differing);
  EXPECT_EQ(vs_model.differing, 0) << "cuBLAS no longer computes the sequential k16 chain for this shape";
  EXPECT_EQ(vs_mat.differing, 0);
  // Fused vs the cuBLAS two-phase step for AdamW in the two benchmarked configurations.
  for (auto [sf, ws] : {std::pair{StateFormat::fp32, WeightStore::fp32_master},
                        std::pair{StateFormat::bf16, WeightStore::bf16_rne}}) {
    const HostParam hp0 = make_param(RuleId::adamw, sf, ws, s, 99);
    HostParam a = hp0, b = hp0;
    DeviceParam fused(hp0), cub(hp0);
    fused_wgrad_update(d.prob, hp0.rule, sf, ws, fused.view(), 1);
    rule_apply_device(hp0.rule, sf, ws, cub.view(), 1, g_cublas.data(), s.in);
    fused.download_into(a);
    cub.download_into(b);
    const ParamEvidence w = test::compare_params(a, b);
    std::printf("[cublas] %lldx%lld T=%lld adamw/%s/%s: fused vs cuBLAS+rule: %lld values, %lld differ\n",
                (long long)s.out, (long long)s.in, (long long)s.T, state_format_name(sf), weight_store_name(ws),
                (long long)w.values, (long long)w.differing);
    EXPECT_EQ(w.differing, 0) << "first " << w.first_diff;
  }
}

TEST(gpu_cublas_order, CublasGEqualsModelChain4096) {
  FH_REQUIRE_GPU();
  check_cublas_shape({4096, 4096, 512});
}

TEST(gpu_cublas_order, CublasGEqualsModelChainRagged1000) {
  FH_REQUIRE_GPU();
  check_cublas_shape({1000, 1000, 500});
}

// (e) Remark 1.
TEST(GpuFused, LinearBackwardReadsOldWeightsAndRefusesSharedWeights) {
  FH_REQUIRE_GPU();
  const Shape s{300, 200, 77};
  StepData d(s, 4242);
  RuleConfig rule = default_rule_config(RuleId::adamw);
  std::get<AdamW::Hyper>(rule.hyper).lr = 0.05;  // large enough that the bf16 weights change
  const HostParam hp0 = HostParam::make(rule, StateFormat::fp32, WeightStore::bf16_rne, s.out, s.in,
                                        test::random_weights(size_t(s.out * s.in), 17));
  CublasHandle h;
  // Reference: cuBLAS dX on the pre-step weights.
  DeviceBuffer<bf16> w_old(hp0.bf16);
  DeviceBuffer<float> dx_ref(size_t(s.T * s.in)), dx(size_t(s.T * s.in)), dx_planted(size_t(s.T * s.in));
  cublas_dgrad(h.get(), d.ddY.data(), w_old.data(), s.T, s.out, s.in, dx_ref.data());

  DeviceParam p(hp0), alone(hp0), planted(hp0);
  LinearBackwardArgs a;
  a.problem = d.prob;
  a.rule = rule;
  a.state_format = StateFormat::fp32;
  a.weight_store = WeightStore::bf16_rne;
  a.param = p.view();
  a.step = 1;
  a.dx = dx.data();
  linear_backward(h.get(), a);
  fused_wgrad_update(d.prob, rule, StateFormat::fp32, WeightStore::bf16_rne, alone.view(), 1);
  LinearBackwardArgs ap = a;
  ap.param = planted.view();
  ap.dx = dx_planted.data();
  ap.planted_read_after_update = true;
  linear_backward(h.get(), ap);
  cuda_check(cudaDeviceSynchronize(), "linear_backward");

  const std::vector<float> ref = dx_ref.download();
  const ParamEvidence dxd = test::compare_floats("dX", dx.download(), ref);
  const ParamEvidence pld = test::compare_floats("dX", dx_planted.download(), ref);
  HostParam after = hp0, after_alone = hp0;
  p.download_into(after);
  alone.download_into(after_alone);
  const ParamEvidence wd = test::compare_params(after, after_alone);
  const ParamEvidence changed = test::compare_params(after, hp0);
  std::printf("[linear_backward] dX vs cuBLAS dX on old W: %lld values, %lld differ; planted read-after-update: "
              "%lld differ (must be > 0); W vs fused alone: %lld differ; W elements changed by the step: %lld\n",
              (long long)dxd.values, (long long)dxd.differing, (long long)pld.differing,
              (long long)wd.differing, (long long)changed.differing);
  EXPECT_EQ(dxd.differing, 0) << "first " << dxd.first_diff;
  EXPECT_GT(pld.differing, 0) << "the planted read-after-update went unnoticed";
  EXPECT_EQ(wd.differing, 0) << "first " << wd.first_diff;
  EXPECT_GT(changed.differing, 0) << "the step did not change W, so the dX check proves nothing";

  // Shared weights are refused before anything runs.
  DeviceParam shared(hp0);
  LinearBackwardArgs as = a;
  as.param = shared.view();
  as.consumers = 2;
  EXPECT_THROW(linear_backward(h.get(), as), std::invalid_argument);
  HostParam shared_after = hp0;
  shared.download_into(shared_after);
  EXPECT_EQ(test::compare_params(shared_after, hp0).differing, 0) << "a refused call changed W";
}

// The launch schedule (the first wave's stagger) is timing only. 4096^2 at T = 512 (1024
// tiles: a first wave and three more, so late and on-time blocks both run) and a ragged shape,
// every schedule against the defaults, bit for bit; with the default schedule, fused == cuBLAS +
// rule and the ragged sweep above pin the bits themselves.
TEST(GpuFused, ScheduleSettingsChangeNoBits) {
  FH_REQUIRE_GPU();
  const FusedSchedule defaults = fused_schedule();
  std::vector<FusedSchedule> variants;
  for (int stagger : {0, 10, 25})
    for (int stride : {0, 1}) variants.push_back(FusedSchedule{stagger, stride});
  // The cooperative kernel (forced from 64 tokens, INT8 state too), unstaggered and in 2 and 4
  // groups of late starts.
  // Its tile order: row-major and groups of three tile rows (a ragged last group) beside the
  // default eight.
  // With its G tiles through L2 in the default and the three-row order, by three and by two
  // epilogue warps, INT8 tiles whole on the epilogue warps or split at row 24.
  // v48: fp32 / bf16 tiles shared at row 72 with three warps and at row 8 with two.
  // v50: two G slices a block (fp32 / bf16 state; INT8 keeps one), whole tiles on three warps, and
  // fp32 / bf16 tiles shared at row 72 (4096^2: 512 128 x 256 tiles, 3 or 4 a block on 132 SMs, so
  // a slice is reused).
  // v51: whole fp32 / bf16 tiles staged in shared memory, by three warps with one G slice and by two
  // with two slices.
  for (auto [us, groups, rows, l2g, warps, erows, erows_fp, slices, staged] :
       {std::tuple{0, 1, kCoopGroupRows, 0, 3, 128, 128, 1, 0}, std::tuple{10, 2, kCoopGroupRows, 0, 3, 128, 128, 1, 0},
        std::tuple{4, 4, kCoopGroupRows, 0, 3, 128, 128, 1, 0}, std::tuple{0, 1, 1, 0, 3, 128, 128, 1, 0},
        std::tuple{0, 1, 3, 0, 3, 128, 128, 1, 0}, std::tuple{0, 1, kCoopGroupRows, 64, 3, 128, 128, 1, 0},
        std::tuple{0, 1, 3, 64, 3, 24, 128, 1, 0}, std::tuple{0, 1, kCoopGroupRows, 64, 2, 24, 128, 1, 0},
        std::tuple{0, 1, kCoopGroupRows, 64, 3, 128, 72, 1, 0}, std::tuple{0, 1, 3, 64, 2, 24, 8, 1, 0},
        std::tuple{0, 1, kCoopGroupRows, 64, 3, 128, 128, 2, 0}, std::tuple{0, 1, 3, 64, 3, 24, 72, 2, 0},
        std::tuple{0, 1, kCoopGroupRows, 64, 3, 128, 128, 1, 1}, std::tuple{0, 1, 3, 64, 2, 128, 128, 2, 1}}) {
    FusedSchedule coop = defaults;
    coop.coop_min_tokens = coop.coop_min_tokens_int8 = 64;
    coop.coop_stagger_us = us;
    coop.coop_stagger_groups = groups;
    coop.coop_group_rows = rows;
    coop.coop_l2g_min_tokens = coop.coop_l2g_min_tokens_light = coop.coop_l2g_min_tokens_int8 = l2g;
    coop.coop_l2g_epilogue_warps = warps;
    coop.coop_l2g_epilogue_rows = coop.coop_l2g_epilogue_rows_16k = erows;
    coop.coop_l2g_epilogue_rows_fp = erows_fp;
    coop.coop_l2g_g_slices = slices;
    coop.coop_l2g_staged = staged;
    coop.coop_l2g_light_min_tiles = 1;
    variants.push_back(coop);
  }
  int64_t compared = 0, differing = 0, runs = 0;
  // 4096^2: several waves of blocks; 1000^2 and 2048 x 1000 at T = 77: ragged tiles and a ragged
  // last chunk.
  for (const Shape& s : {Shape{4096, 4096, 512}, Shape{1000, 1000, 500}, Shape{2048, 1000, 77}}) {
    StepData d(s, uint64_t(s.out + s.T));
    for (auto [sf, ws] : {std::pair{StateFormat::fp32, WeightStore::fp32_master},
                          std::pair{StateFormat::bf16, WeightStore::bf16_sr},
                          std::pair{StateFormat::int8, WeightStore::bf16_rne}}) {
      const HostParam hp0 = make_param(RuleId::adamw, sf, ws, s, 41);
      HostParam want = hp0, got = hp0;
      {
        DeviceParam p(hp0);
        set_fused_schedule(defaults);
        fused_wgrad_update(d.prob, hp0.rule, sf, ws, p.view(), 1);
        p.download_into(want);
      }
      for (const FusedSchedule& v : variants) {
        DeviceParam p(hp0);
        set_fused_schedule(v);
        fused_wgrad_update(d.prob, hp0.rule, sf, ws, p.view(), 1);
        p.download_into(got);
        const ParamEvidence e = test::compare_params(got, want);
        ++runs;
        compared += e.values;
        differing += e.differing;
        EXPECT_EQ(e.differing, 0) << "schedule: stagger " << v.stagger_us
                                  << " us stride " << v.stagger_stride << ", coop from T = " << v.coop_min_tokens
                                  << " (INT8 " << v.coop_min_tokens_int8 << "), coop stagger " << v.coop_stagger_us
                                  << " us x " << v.coop_stagger_groups << " groups, tile groups of "
                                  << v.coop_group_rows << " rows, G through L2 from T = " << v.coop_l2g_min_tokens
                                  << " by " << v.coop_l2g_epilogue_warps << " warps on "
                                  << v.coop_l2g_epilogue_rows << " rows (fp32 / bf16 " << v.coop_l2g_epilogue_rows_fp << "), "
                                  << v.coop_l2g_g_slices << " G slices, staged " << v.coop_l2g_staged
                                  << ": "
                                  << config_name(RuleId::adamw, sf, ws) << " " << s.out << "x" << s.in
                                  << ", first " << e.first_diff;
      }
    }
  }
  std::printf("[fused] schedule settings: %lld runs against the default schedule, %lld values, %lld differ\n",
              (long long)runs, (long long)compared, (long long)differing);
}

// The fused kernel's variants (the warp-specialized 128 x 128 kernel, the decomposition's G round
// trip, the cooperative 128 x 256 tile) keep the fused kernel's bits, and the round trip's G lands
// in its buffer (so it really happened). 2048 x 1024 at T = 1000 and 4096 x 2048: several tiles per
// block, so both consumers alternate, the ring wraps many times and the cooperative kernel's G
// overwrites the ring between tiles; 1000^2 and 512 x 768: ragged edges.
TEST(GpuFused, PingpongVariantsKeepTheBits) {
  FH_REQUIRE_GPU();
  int64_t compared = 0, differing = 0;
  for (const Shape& s : {Shape{1000, 1000, 500}, Shape{512, 768, 192}, Shape{2048, 1024, 1000}, Shape{4096, 2048, 700}}) {
    StepData d(s, uint64_t(s.out + 3 * s.T));
    for (auto [sf, ws] : {std::pair{StateFormat::fp32, WeightStore::fp32_master},
                          std::pair{StateFormat::bf16, WeightStore::bf16_rne},
                          std::pair{StateFormat::int8, WeightStore::fp32_master}})
      for (FusedVariant v : {FusedVariant::pingpong_128x128, FusedVariant::g_roundtrip, FusedVariant::coop_128x256}) {
        if (sf == StateFormat::int8 && v != FusedVariant::coop_128x256) continue;  // INT8: the coop variant only
        const HostParam hp0 = make_param(RuleId::adamw, sf, ws, s, 77);
        HostParam want = hp0, got = hp0;
        DeviceParam fused(hp0), variant(hp0);
        DeviceBuffer<float> g(size_t(s.out * s.in)), g_om(size_t(s.out * s.in));
        for (int st = 1; st <= 2; ++st) {  // step 2 from non-zero state
          fused_wgrad_update(d.prob, hp0.rule, sf, ws, fused.view(), st);
          fused_wgrad_update_variant(d.prob, hp0.rule, sf, ws, variant.view(), st, v, g.data());
        }
        fused.download_into(want);
        variant.download_into(got);
        const ParamEvidence e = test::compare_params(got, want);
        compared += e.values;
        differing += e.differing;
        EXPECT_EQ(e.differing, 0) << config_name(RuleId::adamw, sf, ws) << " variant " << int(v) << ", first "
                                  << e.first_diff;
        if (v == FusedVariant::g_roundtrip) {
          wgrad_materialize(d.prob, g_om.data());
          const ParamEvidence gd = test::compare_floats("G", g.download(), g_om.download());
          EXPECT_EQ(gd.differing, 0) << "the round trip's stored G is not the order-matched G, first " << gd.first_diff;
        }
      }
  }
  // Outside its AdamW configurations a variant refuses.
  const Shape small{64, 64, 16};
  StepData d(small, 1);
  const HostParam lion = make_param(RuleId::lion, StateFormat::fp32, WeightStore::fp32_master, small, 2);
  DeviceParam lion_dev(lion);
  DeviceBuffer<float> g(size_t(small.out * small.in));
  EXPECT_THROW(fused_wgrad_update_variant(d.prob, lion.rule, StateFormat::fp32, WeightStore::fp32_master,
                                          lion_dev.view(), 1, FusedVariant::g_roundtrip, g.data()),
               std::invalid_argument);
  std::printf("[fused] variants: %lld values, %lld differ from the fused kernel\n", (long long)compared,
              (long long)differing);
}

// The warp-specialized variants load their operands by TMA, which needs 16-byte aligned rows: on
// rows of 130 bf16 they refuse, and the fused kernel (block-per-tile) runs.
TEST(GpuFused, TmaVariantsRefuseUnalignedRows) {
  FH_REQUIRE_GPU();
  const Shape s{64, 130, 16};
  StepData d(s, 6);
  const HostParam hp = make_param(RuleId::adamw, StateFormat::fp32, WeightStore::fp32_master, s, 4);
  DeviceParam p(hp);
  EXPECT_STREQ(fused_kernel_for(d.prob, TileShape{128, 128}, StateFormat::fp32, hp.rule), "block_per_tile");
  for (FusedVariant v : {FusedVariant::pingpong_128x128, FusedVariant::coop_128x256})
    EXPECT_THROW(fused_wgrad_update_variant(d.prob, hp.rule, StateFormat::fp32, WeightStore::fp32_master, p.view(), 1, v),
                 std::invalid_argument);
  EXPECT_NO_THROW(fused_wgrad_update(d.prob, hp.rule, StateFormat::fp32, WeightStore::fp32_master, p.view(), 1));
}

TEST(GpuFused, BadArgumentsAreRefused) {
  FH_REQUIRE_GPU();
  const Shape s{64, 130, 16};
  StepData d(s, 5);
  const HostParam hp = make_param(RuleId::adamw, StateFormat::int8, WeightStore::fp32_master, s, 3);
  DeviceParam p(hp);
  EXPECT_THROW(fused_wgrad_update(d.prob, hp.rule, StateFormat::int8, WeightStore::fp32_master, p.view(), 1,
                                  TileShape{96, 96}), std::invalid_argument);
  EXPECT_THROW(fused_wgrad_update(d.prob, hp.rule, StateFormat::int8, WeightStore::fp32_master, p.view(), 0),
               std::invalid_argument);
  DeviceParamView shard = p.view();
  shard.col0 = 32;  // an INT8 block would straddle the shard's edge
  shard.global_cols = 256;
  EXPECT_THROW(fused_wgrad_update(d.prob, hp.rule, StateFormat::int8, WeightStore::fp32_master, shard, 1),
               std::invalid_argument);
  WgradProblem wrong = d.prob;
  wrong.in = 129;
  EXPECT_THROW(fused_wgrad_update(wrong, hp.rule, StateFormat::int8, WeightStore::fp32_master, p.view(), 1),
               std::invalid_argument);
  std::printf("[fused] bad arguments: 4 refusals checked\n");
}

}  // namespace
}  // namespace fh::gpu
