// The model-shaped step on the GPU (kernels/gpu/model_step.h) at small shapes:
//   - Remark 1 at model scale: the fused step and the standard step (G from the fused kernel's own
//     mainloop, then the rule) give every linear's dX and every weight and state bit for bit the
//     same, over two steps, for each state format and weight store; planted dX-after-update caught;
//   - Proposition 3: the fused path's linear-gradient bytes are zero at every P (layers, widths),
//     the standard path's grow with P; a planted layer that keeps its whole G shows its bytes;
//   - the tied embedding / LM head: naive fusion (two in-place updates) differs from the standard
//     step; the fallback holds a P_tied-sized gradient, and the pool's peak shows it;
//   - the pool: the same step gives the same peaks run to run, and the tags account for the pool;
//   - a micro-batch: its sequences attend within themselves, fused == standard bitwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/gpu/model_step.h"
#include "suites/gpu/gpu_suite_util.h"

namespace fh::gpu {
namespace {

ModelDims small_dims(int64_t layers = 2, int64_t hidden = 256) {
  ModelDims d;
  d.hidden = hidden;
  d.intermediate = 2 * hidden + 64;  // not a multiple of the tile: the edge masks run
  d.heads = 4;
  d.kv_heads = 2;
  d.head_dim = hidden / 4;
  d.vocab = 1000;
  d.layers = layers;
  d.tokens = 96;
  return d;
}

struct RunResult {
  std::vector<std::vector<uint64_t>> dx;  // per step
  std::vector<uint64_t> w, st;
  std::vector<ModelStepStats> stats;
};

RunResult run_steps(const ModelStepConfig& cfg, int steps) {
  ModelStep m(cfg);
  RunResult r;
  for (int s = 1; s <= steps; ++s) {
    r.stats.push_back(m.step(s));
    r.dx.push_back(r.stats.back().dx_digests);
    EXPECT_TRUE(std::isfinite(r.stats.back().loss)) << "step " << s;
  }
  r.w = m.weight_digests();
  r.st = m.state_digests();
  return r;
}

int count_diff(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  if (a.size() != b.size()) return -1;
  int n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
  return n;
}

struct Format {
  StateFormat sf;
  WeightStore ws;
};

TEST(GpuModelStep, Remark1FusedEqualsStandardBitwise) {
  FH_REQUIRE_GPU();
  for (const Format f : {Format{StateFormat::bf16, WeightStore::bf16_rne}, Format{StateFormat::fp32, WeightStore::fp32_master},
                         Format{StateFormat::int8, WeightStore::bf16_rne}, Format{StateFormat::bf16, WeightStore::bf16_sr}}) {
    for (const bool tied : {false, true}) {
      SCOPED_TRACE(std::string(state_format_name(f.sf)) + "/" + weight_store_name(f.ws) + (tied ? "/tied" : "/untied"));
      ModelStepConfig cfg;
      cfg.dims = small_dims();
      cfg.dims.tied = tied;
      cfg.state = f.sf;
      cfg.store = f.ws;
      cfg.digests = true;
      cfg.update = ModelUpdate::fused;
      const RunResult fused = run_steps(cfg, 2);
      cfg.update = ModelUpdate::standard;
      const RunResult standard = run_steps(cfg, 2);
      ASSERT_EQ(fused.dx[0].size(), size_t(7 * cfg.dims.layers + 1));
      for (int s = 0; s < 2; ++s) EXPECT_EQ(count_diff(fused.dx[size_t(s)], standard.dx[size_t(s)]), 0) << "dX, step " << s + 1;
      EXPECT_EQ(count_diff(fused.w, standard.w), 0) << "weights";
      EXPECT_EQ(count_diff(fused.st, standard.st), 0) << "state";
      EXPECT_EQ(fused.stats[1].loss, standard.stats[1].loss);
      // The step learns: the second loss differs from the first.
      EXPECT_NE(fused.stats[0].loss, fused.stats[1].loss);
    }
  }
}

TEST(GpuModelStep, PlantedDxAfterUpdateIsCaught) {
  FH_REQUIRE_GPU();
  ModelStepConfig cfg;
  cfg.dims = small_dims();
  cfg.digests = true;
  cfg.update = ModelUpdate::standard;
  const RunResult standard = run_steps(cfg, 1);
  cfg.update = ModelUpdate::fused;
  cfg.defects.dx_after_update = true;
  const RunResult planted = run_steps(cfg, 1);
  const int dx_diff = count_diff(planted.dx[0], standard.dx[0]);
  EXPECT_EQ(dx_diff, int(planted.dx[0].size())) << "every linear's dX read the updated weight";
  EXPECT_GT(count_diff(planted.w, standard.w), 0);
  std::printf("planted dx_after_update: %d of %zu dX digests differ\n", dx_diff, planted.dx[0].size());
}

TEST(GpuModelStep, Prop3LinearGradientBytesDoNotGrowWithP) {
  FH_REQUIRE_GPU();
  struct Point { int64_t layers, hidden; };
  int64_t prev_standard = 0, prev_planted = 0;
  for (const Point pt : {Point{1, 128}, Point{2, 256}, Point{3, 384}}) {
    ModelStepConfig cfg;
    cfg.dims = small_dims(pt.layers, pt.hidden);
    cfg.update = ModelUpdate::fused;
    ModelStep fused(cfg);
    const ModelStepStats f = fused.step(1);
    cfg.update = ModelUpdate::standard;
    ModelStep standard(cfg);
    const ModelStepStats s = standard.step(1);
    cfg.update = ModelUpdate::fused;
    cfg.defects.materialize_one_layer = true;
    ModelStep planted(cfg);
    const ModelStepStats p = planted.step(1);
    const int64_t P = fused.param_count();
    const int64_t head_g = cfg.dims.vocab * cfg.dims.hidden * 4;  // the first linear reached: the LM head
    std::printf("P=%lld: fused linear-G peak %lld, standard %lld, planted %lld bytes; pool peaks %lld / %lld / %lld\n",
                (long long)P, (long long)f.tag_peak[TaggedPool::gradients], (long long)s.tag_peak[TaggedPool::gradients],
                (long long)p.tag_peak[TaggedPool::gradients], (long long)f.pool_peak, (long long)s.pool_peak,
                (long long)p.pool_peak);
    EXPECT_EQ(f.tag_peak[TaggedPool::gradients], 0) << "P " << P;
    EXPECT_EQ(s.tag_peak[TaggedPool::gradients], fused.fused_param_count() * 4)
        << "standard: every linear G (fp32) held to the end of backward";
    EXPECT_EQ(p.tag_peak[TaggedPool::gradients], head_g) << "planted: the head's whole G";
    EXPECT_GT(s.tag_peak[TaggedPool::gradients], prev_standard);
    EXPECT_GT(p.tag_peak[TaggedPool::gradients], prev_planted) << "the planted layer's G grows with P";
    EXPECT_GT(p.pool_peak, f.pool_peak);
    prev_standard = s.tag_peak[TaggedPool::gradients];
    prev_planted = p.tag_peak[TaggedPool::gradients];
  }
}

TEST(GpuModelStep, TiedNaiveFusionIsCaughtAndFallbackHoldsPTied) {
  FH_REQUIRE_GPU();
  ModelStepConfig cfg;
  cfg.dims = small_dims();
  cfg.dims.tied = true;
  cfg.update = ModelUpdate::standard;
  const RunResult standard = run_steps(cfg, 1);
  cfg.update = ModelUpdate::fused;
  ModelStep fallback(cfg);
  const ModelStepStats fb = fallback.step(1);
  const std::vector<uint64_t> fb_w = fallback.weight_digests();
  EXPECT_EQ(count_diff(fb_w, standard.w), 0) << "the fallback equals the standard step";
  const int64_t p_tied = cfg.dims.vocab * cfg.dims.hidden;
  // The tied weight's gradient (P_tied fp32) is held from the head's backward to the step.
  EXPECT_GE(fb.tag_peak[TaggedPool::gradients_unfused], p_tied * 4);
  EXPECT_EQ(fb.tag_peak[TaggedPool::gradients], 0);
  cfg.defects.naive_tied_fusion = true;
  const RunResult naive = run_steps(cfg, 1);
  EXPECT_NE(naive.w[0], standard.w[0]) << "naive fusion of the tied weight must give a different update";
  EXPECT_EQ(count_diff(naive.w, standard.w), 1) << "only the tied weight differs after one step";
  // Untied for comparison: the unfused-gradient peak is the embedding's scatter gradient plus norms.
  cfg.defects.naive_tied_fusion = false;
  cfg.dims.tied = false;
  ModelStep untied(cfg);
  const ModelStepStats un = untied.step(1);
  std::printf("tied fallback: unfused-gradient peak %lld bytes (P_tied x 4 = %lld); untied fused %lld\n",
              (long long)fb.tag_peak[TaggedPool::gradients_unfused], (long long)(p_tied * 4),
              (long long)un.tag_peak[TaggedPool::gradients_unfused]);
}

TEST(GpuModelStep, PoolPeaksRepeatAndTagsAccountForThePool) {
  FH_REQUIRE_GPU();
  ModelStepConfig cfg;
  cfg.dims = small_dims();
  std::vector<int64_t> first;
  for (int run = 0; run < 2; ++run) {
    ModelStep m(cfg);
    m.step(1);
    const ModelStepStats s = m.step(2);
    std::vector<int64_t> peaks;
    for (const auto& ph : s.timeline) {
      peaks.push_back(ph.peak);
      peaks.push_back(ph.in_use);
      // The pool may round an allocation up, never down.
      EXPECT_GE(ph.in_use, ph.tagged_in_use) << ph.name;
      EXPECT_GE(ph.peak, ph.tagged_peak) << ph.name;
    }
    ASSERT_EQ(s.timeline.front().name, "start");
    ASSERT_EQ(s.timeline.back().name, "step");
    ASSERT_EQ(s.timeline.size(), size_t(cfg.dims.layers + 5));
    if (run == 0) first = peaks;
    else EXPECT_EQ(peaks, first) << "the same step must give the same timeline";
  }
}

// A micro-batch of two sequences: attention stays within each (the batch's mean loss is the mean of
// the sequences' own, up to the GEMMs' row count changing cuBLAS's choice), fused == standard
// bitwise, and the saved softmax grows by the sequence's [heads, T, T] (the activations' tag).
TEST(GpuModelStep, MicroBatchSequencesAreIndependent) {
  FH_REQUIRE_GPU();
  ModelStepConfig cfg;
  cfg.dims = small_dims();
  const int64_t T = cfg.dims.tokens, V = cfg.dims.vocab;
  const size_t n = static_cast<size_t>(T);
  std::vector<int32_t> a(n), la(n), b(n), lb(n);
  for (int64_t i = 0; i < T; ++i) {
    a[size_t(i)] = int32_t((7 * i + 3) % V), la[size_t(i)] = int32_t((11 * i + 5) % V);
    b[size_t(i)] = int32_t((13 * i + 1) % V), lb[size_t(i)] = int32_t((17 * i + 2) % V);
  }
  ModelStep one(cfg);
  one.set_batch(a, la);
  const double loss_a = one.eval_loss();
  one.set_batch(b, lb);
  const double loss_b = one.eval_loss();
  cfg.dims.batch = 2;
  ModelStep two(cfg);  // the same seed: the same weights
  std::vector<int32_t> ab(a), lab(la);
  ab.insert(ab.end(), b.begin(), b.end());
  lab.insert(lab.end(), lb.begin(), lb.end());
  two.set_batch(ab, lab);
  const double loss_ab = two.eval_loss();
  EXPECT_NEAR(loss_ab, 0.5 * (loss_a + loss_b), 1e-5 * loss_ab) << loss_a << " " << loss_b;
  // A planted layout error (the second sequence attending over the first's keys) moves the loss:
  // it is far beyond this bound, as the two sequences' losses differ by far more.
  EXPECT_GT(std::abs(loss_a - loss_b), 1e-3);
  EXPECT_THROW(two.set_batch(a, la), std::invalid_argument);  // one sequence for a batch of two
  cfg.update = ModelUpdate::fused;
  const RunResult fused = run_steps(cfg, 2);
  cfg.update = ModelUpdate::standard;
  const RunResult standard = run_steps(cfg, 2);
  EXPECT_EQ(count_diff(fused.w, standard.w), 0);
  EXPECT_EQ(count_diff(fused.st, standard.st), 0);
  cfg.update = ModelUpdate::fused;
  cfg.dims.batch = 1;
  const RunResult single = run_steps(cfg, 1);
  const int64_t p_seq = cfg.dims.heads * T * T * 2 * cfg.dims.layers;  // one sequence's saved softmax
  EXPECT_GT(fused.stats[0].tag_peak[TaggedPool::activations] - single.stats[0].tag_peak[TaggedPool::activations], p_seq);
}

TEST(GpuModelStep, BadDimensionsAreRefused) {
  ModelStepConfig cfg;
  cfg.dims = small_dims();
  cfg.dims.kv_heads = 3;  // 4 heads are not a multiple of 3
  EXPECT_THROW(ModelStep{cfg}, std::invalid_argument);
  cfg.dims = small_dims();
  cfg.defects.naive_tied_fusion = true;  // untied
  EXPECT_THROW(ModelStep{cfg}, std::invalid_argument);
}

}  // namespace
}  // namespace fh::gpu
