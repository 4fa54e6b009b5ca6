// fh::AdamWTorchFused (kernels/rules/adamw_torch_fused.h), the PyTorch-compatible AdamW:
//  - a small case whose every operation is exact, computed by hand;
//  - the per-element formula (fma placement) against a second writing of it, and that it is not
//    the project's AdamW (the formulas differ in their roundings);
//  - the scalars: fp32, bias corrections from CUDA's powf (beta 0.95 at t = 6, where std::pow
//    gives other bits), the lrwd and powf-build switches, the step range;
//  - weight_decay = 0 skips the decay (visible in the sign of a zero), maximize negates g;
//  - bf16 storage through update_segment: the p update uses the unrounded m and v.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/formats/formats.h"
#include "kernels/rules/adamw_torch_fused.h"

namespace fh {
namespace {

using R = AdamWTorchFused;

R::Hyper hyper(double lr, double b1, double b2, double eps, double wd, bool maximize = false) {
  R::Hyper h;
  h.lr = lr; h.beta1 = b1; h.beta2 = b2; h.eps = eps; h.weight_decay = wd; h.maximize = maximize;
  return h;
}

TEST(AdamWTorchFused, HandComputedExactCase) {
  // b1 = 1/2, b2 = 1/4, lr = 1/2, wd = 1/2, eps = 1/4, t = 1: powf(2^-k, 1) is exact.
  const R::Scalars s = R::scalars(hyper(0.5, 0.5, 0.25, 0.25, 0.5), 1);
  EXPECT_EQ(s.bc1, 0.5f);                 // 1 - 0.5
  EXPECT_EQ(s.bc2_sqrt, std::sqrt(0.75f)); // sqrt(1 - 0.25)
  EXPECT_EQ(s.step_size, 1.0f);           // 0.5 / 0.5
  EXPECT_EQ(s.lrwd, 0.25f);
  float p = 2.0f, st[kMaxStates] = {0.5f, 4.0f, 0.0f};
  R::update(s, p, 1.0f, st);
  // p <- 2 - 0.25 * 2 = 1.5; m <- 0.5 * 0.5 + (1 - 0.5) * 1 = 0.75; v <- 0.25 * 4 + 0.75 * 1 = 1.75
  EXPECT_EQ(st[0], 0.75f);
  EXPECT_EQ(st[1], 1.75f);
  // denom = sqrt(1.75) / sqrt(0.75) + 0.25, each rounded; p = 1.5 - 0.75 / denom
  const float denom = std::sqrt(1.75f) / std::sqrt(0.75f) + 0.25f;
  EXPECT_EQ(p, 1.5f - (1.0f * 0.75f) / denom);
  EXPECT_NEAR(p, 1.5 - 0.75 / (std::sqrt(1.75 / 0.75) + 0.25), 1e-6);
}

// The formula written out a second time with the C library (contraction is off in this build).
void reference_update(const R::Scalars& s, float& p, float g, float& m, float& v) {
  if (s.maximize) g = -g;
  if (s.decay) p = std::fmaf(p, -s.lrwd, p);
  m = std::fmaf(s.beta1, m, std::fmaf(-s.beta1, g, g));
  const float gg = g * g;
  v = std::fmaf(s.beta2, v, std::fmaf(-s.beta2, gg, gg));
  p = p - (s.step_size * m) / (std::sqrt(v) / s.bc2_sqrt + s.eps);
}

TEST(AdamWTorchFused, FormulaMatchesTorchsFmaPlacementAndIsNotPlainAdamW) {
  std::mt19937_64 gen(3);
  std::normal_distribution<float> nd;
  const R::Hyper h = hyper(1e-3, 0.9, 0.999, 1e-8, 1e-2);
  AdamW::Hyper ha;  // same numbers, the project's AdamW
  int64_t differs_from_adamw = 0;
  for (int t = 1; t <= 5; ++t) {
    const R::Scalars s = R::scalars(h, t);
    const AdamW::Scalars sa = AdamW::scalars(ha, t);
    for (int i = 0; i < 20000; ++i) {
      const float p0 = nd(gen), g = std::ldexp(nd(gen), int(gen() % 30) - 20);
      const float m0 = std::ldexp(nd(gen), -10), v0 = std::ldexp(std::fabs(nd(gen)), -20);
      float p = p0, st[kMaxStates] = {m0, v0, 0.0f};
      R::update(s, p, g, st);
      float pr = p0, mr = m0, vr = v0;
      reference_update(s, pr, g, mr, vr);
      ASSERT_EQ(f2u(p), f2u(pr)) << "t " << t << " i " << i;
      ASSERT_EQ(f2u(st[0]), f2u(mr));
      ASSERT_EQ(f2u(st[1]), f2u(vr));
      float pa = p0, sta[kMaxStates] = {m0, v0, 0.0f};
      AdamW::update(sa, pa, g, sta);
      differs_from_adamw += f2u(pa) != f2u(p) || f2u(sta[0]) != f2u(st[0]) || f2u(sta[1]) != f2u(st[1]);
    }
  }
  EXPECT_GT(differs_from_adamw, 1000);
}

TEST(AdamWTorchFused, BiasCorrectionsComeFromCudaPowf) {
  // beta 0.95 at t = 6: CUDA's powf gives 0x3F3C2EFA, std::pow the correctly rounded 0x3F3C2EFB.
  const R::Scalars s = R::scalars(hyper(1e-3, 0.95, 0.95, 1e-8, 0.0), 6);
  EXPECT_EQ(f2u(s.bc1), 0x3E87A20Cu);                       // 1 - 0x3F3C2EFA
  EXPECT_NE(f2u(s.bc1), f2u(1.0f - std::pow(0.95f, 6.0f))); // what std::pow would give
  EXPECT_EQ(f2u(s.bc2_sqrt), f2u(std::sqrt(u2f(0x3E87A20Cu))));
  EXPECT_EQ(f2u(s.step_size), f2u(1e-3f / u2f(0x3E87A20Cu)));
  EXPECT_EQ(s.beta1, 0.95f);
  EXPECT_EQ(f2u(s.neg_beta1), f2u(-0.95f));
  EXPECT_EQ(s.eps, 1e-8f);
  // Every step of a run, against cuda_powf directly.
  const R::Hyper h = hyper(3e-4, 0.9, 0.999, 1e-6, 0.1);
  for (int t = 1; t <= 2000; ++t) {
    const R::Scalars st = R::scalars(h, t);
    ASSERT_EQ(f2u(st.bc1), f2u(fsub(1.0f, cuda_powf(0.9f, float(t))))) << t;
    ASSERT_EQ(f2u(st.bc2_sqrt), f2u(fsqrt(fsub(1.0f, cuda_powf(0.999f, float(t)))))) << t;
    ASSERT_EQ(f2u(st.step_size), f2u(fdiv(3e-4f, st.bc1))) << t;
  }
  // The fmad build is selectable and changes this value (with the round-to-nearest rcp model).
  R::Hyper hf = hyper(1e-3, 0.95, 0.95, 1e-8, 0.0);
  hf.powf_build = PowfBuild::fmad;
  EXPECT_EQ(f2u(R::scalars(hf, 6).bc1), f2u(fsub(1.0f, cuda_powf_fmad(0.95f, 6.0f))));
  EXPECT_NE(f2u(R::scalars(hf, 6).bc1), f2u(s.bc1));
  // A measured reciprocal table reaches the scalars.
  const float x = fadd(0.95f, 1.0f);
  float rd, ru;
  rcp_neighbours(x, rd, ru);
  const uint32_t in[1] = {f2u(x)};
  const uint32_t out[1] = {f2u(RcpApproxHostModel{}(x)) == f2u(rd) ? f2u(ru) : f2u(rd)};
  EXPECT_NE(f2u(R::scalars(hf, 6, RcpApproxHostModel{in, out, 1}).bc1), f2u(R::scalars(hf, 6).bc1));
}

TEST(AdamWTorchFused, LrTimesWeightDecayRoundingIsSelectable) {
  R::Hyper h = hyper(1e-3, 0.9, 0.999, 1e-8, 1e-2);
  EXPECT_EQ(f2u(R::scalars(h, 1).lrwd), 0x3727C5ADu);  // fp32(1e-3) * fp32(1e-2), rounded
  h.lrwd_in_double = true;
  EXPECT_EQ(f2u(R::scalars(h, 1).lrwd), 0x3727C5ACu);  // fp32(1e-3 * 1e-2)
}

TEST(AdamWTorchFused, StepRangeAndValidation) {
  const R::Hyper h;
  EXPECT_THROW(R::scalars(h, 0), std::invalid_argument);
  EXPECT_THROW(R::scalars(h, R::kMaxStep + 1), std::invalid_argument);
  EXPECT_NO_THROW(R::scalars(h, R::kMaxStep));
  EXPECT_THROW(R::validate(hyper(1e-3, 1.0, 0.999, 1e-8, 0.0)), std::invalid_argument);
  EXPECT_THROW(R::validate(hyper(-1.0, 0.9, 0.999, 1e-8, 0.0)), std::invalid_argument);
  R::Hyper bad;
  bad.powf_build = PowfBuild(7);
  EXPECT_THROW(R::validate(bad), std::invalid_argument);
  EXPECT_NO_THROW(R::validate(h));
  EXPECT_STREQ(R::kName, "adamw_torch_fused");
  EXPECT_EQ(R::states(h).count(), 2);
}

TEST(AdamWTorchFused, ZeroWeightDecaySkipsTheDecayAndMaximizeNegates) {
  // A -0 parameter with g = 0: fma(-0, -lrwd, -0) = +0, so the sign shows whether decay ran.
  auto run = [](double wd) {
    const R::Scalars s = R::scalars(hyper(1e-3, 0.9, 0.999, 1e-8, wd), 1);
    float p = -0.0f, st[kMaxStates] = {0.0f, 0.0f, 0.0f};
    R::update(s, p, 0.0f, st);
    return f2u(p);
  };
  EXPECT_EQ(run(0.0), 0x80000000u);
  EXPECT_EQ(run(1e-50), 0x80000000u);  // rounds to 0 in fp32: no decay
  EXPECT_EQ(run(0.1), 0x00000000u);
  // maximize with g is minimize with -g, bit for bit.
  std::mt19937_64 gen(9);
  std::normal_distribution<float> nd;
  const R::Scalars smax = R::scalars(hyper(1e-2, 0.8, 0.99, 1e-6, 0.05, true), 3);
  const R::Scalars smin = R::scalars(hyper(1e-2, 0.8, 0.99, 1e-6, 0.05, false), 3);
  int64_t moved = 0;
  for (int i = 0; i < 10000; ++i) {
    const float p0 = nd(gen), g = nd(gen), m0 = nd(gen) * 0.1f, v0 = std::fabs(nd(gen)) * 0.01f;
    float a = p0, sa[kMaxStates] = {m0, v0, 0.0f};
    float b = p0, sb[kMaxStates] = {m0, v0, 0.0f};
    R::update(smax, a, g, sa);
    R::update(smin, b, -g, sb);
    ASSERT_EQ(f2u(a), f2u(b));
    ASSERT_EQ(f2u(sa[0]), f2u(sb[0]));
    float c = p0, sc[kMaxStates] = {m0, v0, 0.0f};
    R::update(smin, c, g, sc);
    moved += f2u(c) != f2u(a);
  }
  EXPECT_GT(moved, 9000);
}

// Runs update_segment over a 1 x n view.
template <StateFormat SF, WeightStore WS>
void run_segment(const R::Scalars& s, std::vector<float>* master, std::vector<bf16>* wbf16, void* m,
                 void* v, const std::vector<float>& g) {
  ParamView pv;
  pv.rows = 1;
  pv.cols = pv.global_cols = int64_t(g.size());
  pv.master = master ? master->data() : nullptr;
  pv.bf16 = wbf16 ? wbf16->data() : nullptr;
  if constexpr (SF == StateFormat::fp32) {
    pv.state[0].f32 = static_cast<float*>(m);
    pv.state[1].f32 = static_cast<float*>(v);
  } else {
    pv.state[0].bf16 = static_cast<bf16*>(m);
    pv.state[1].bf16 = static_cast<bf16*>(v);
  }
  pv.state[1].nonnegative = true;
  update_segment<R, SF, WS>(s, pv, 0, 0, int(g.size()), g.data());
}

TEST(AdamWTorchFused, Bf16StorageRoundsOnceAndUsesUnroundedMoments) {
  const int n = 50000;
  std::mt19937_64 gen(21);
  std::normal_distribution<float> nd;
  std::vector<bf16> p(n), m(n), v(n);
  std::vector<float> g(n);
  for (int i = 0; i < n; ++i) {
    p[i] = float_to_bf16_rne(nd(gen));
    m[i] = float_to_bf16_rne(nd(gen) * 0.01f);
    v[i] = float_to_bf16_rne(std::fabs(nd(gen)) * 1e-4f);
    g[i] = bf16_to_float(float_to_bf16_rne(nd(gen) * 0.01f));  // torch's grads are bf16 too
  }
  const R::Scalars s = R::scalars(hyper(1e-2, 0.9, 0.999, 1e-8, 1e-2), 4);
  std::vector<bf16> p2 = p, m2 = m, v2 = v;
  run_segment<StateFormat::bf16, WeightStore::bf16_rne>(s, nullptr, &p2, m2.data(), v2.data(), g);
  int64_t rounded_first_differs = 0;
  for (int i = 0; i < n; ++i) {
    // Widen exactly, update in fp32, round each of p, m, v once.
    float pw = bf16_to_float(p[i]), st[kMaxStates] = {bf16_to_float(m[i]), bf16_to_float(v[i]), 0.0f};
    R::update(s, pw, g[i], st);
    ASSERT_EQ(p2[i], float_to_bf16_rne(pw)) << i;
    ASSERT_EQ(m2[i], float_to_bf16_rne(st[0])) << i;
    ASSERT_EQ(v2[i], float_to_bf16_rne(st[1])) << i;
    // The alternative torch does not do: round m and v to bf16 before the p update.
    float pa = bf16_to_float(p[i]);
    if (s.decay) pa = ffma(pa, fneg(s.lrwd), pa);
    const float ma = bf16_to_float(float_to_bf16_rne(st[0])), va = bf16_to_float(float_to_bf16_rne(st[1]));
    pa = fsub(pa, fdiv(fmul(s.step_size, ma), fadd(fdiv(fsqrt(va), s.bc2_sqrt), s.eps)));
    rounded_first_differs += float_to_bf16_rne(pa) != p2[i];
  }
  EXPECT_GT(rounded_first_differs, 0);  // the check above can tell the two apart
  std::printf("[adamw_torch_fused] bf16: rounding m, v first would change %lld of %d parameters\n",
              (long long)rounded_first_differs, n);
}

TEST(AdamWTorchFused, Fp32StorageThroughUpdateSegment) {
  const int n = 4096;
  std::mt19937_64 gen(22);
  std::normal_distribution<float> nd;
  std::vector<float> p(n), m(n, 0.0f), v(n, 0.0f), g(n);
  for (int i = 0; i < n; ++i) { p[i] = nd(gen); g[i] = nd(gen) * 1e-3f; }
  std::vector<float> p2 = p, m2 = m, v2 = v;
  const R::Hyper h = hyper(1.0, 0.9, 0.999, 1e-8, 0.1);
  for (int t = 1; t <= 3; ++t) {
    const R::Scalars s = R::scalars(h, t);
    run_segment<StateFormat::fp32, WeightStore::fp32_master>(s, &p2, nullptr, m2.data(), v2.data(), g);
    for (int i = 0; i < n; ++i) {
      float st[kMaxStates] = {m[i], v[i], 0.0f};
      R::update(s, p[i], g[i], st);
      m[i] = st[0];
      v[i] = st[1];
    }
  }
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(f2u(p2[i]), f2u(p[i])) << i;
    ASSERT_EQ(f2u(m2[i]), f2u(m[i])) << i;
    ASSERT_EQ(f2u(v2[i]), f2u(v[i])) << i;
  }
}

}  // namespace
}  // namespace fh
