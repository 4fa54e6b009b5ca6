// The model step's host references (reference/model_kernels_host.h), each checked on the CPU
// against an independent double-precision implementation, written the straightforward way (no
// block trees, no shim), within a bound derived per kernel from the fp32 operations the reference
// performs, plus identities: the causal mask's exact zeros, softmax rows summing to 1, the
// cross-entropy gradient being the softmax minus the one-hot (bitwise, across the two kernels),
// the grouped-KV reduction undoing the expansion, and the double gradients of RMSNorm and the
// SiLU gate against central finite differences, so that the formulas the bounds trust are not
// merely the reference's formulas restated.
//
// Bounds, with u = 2^-24 (fp32) and ub = 2^-8 (bf16 round to nearest): an fp32 chain of n
// roundings has relative error at most about n u on a sum of same-signed terms and n u times the
// sum of magnitudes otherwise; a block sum over H elements is a chain of ceil(H / 256) + 8
// additions per term; a bf16 output rounds an fp32 value v' = v (1 + d) to within ub |v'| + |d v|
// of v. Each bound below is the bf16 term (itself a worst case) plus twice the fp32 estimate, so a
// pass is not a near miss of rounding, while a real defect in an operation (a dropped factor, a
// wrong index, a wrong mask, a wrong sign) exceeds it by orders of magnitude; the planted RMSNorm
// backward shows one being caught. What these checks cannot see is a change of summation order
// alone (a different tree stays within the bounds): that is the GPU suite's bitwise verdict.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/common/bf16.h"
#include "reference/case_gen.h"
#include "reference/model_kernel_cases.h"
#include "reference/model_kernels_host.h"

namespace {

using namespace fh;
using namespace fh::model_ref;

constexpr double kU = 0x1p-24, kUb = 0x1p-8;

uint64_t suite_seed() {
  static const uint64_t seed = announce_seed("test_model_kernels_host", 0x6d6f64656c726566ull);
  return seed;
}
// The seed of sub-stream k.
uint64_t seed_for(uint64_t k) { return stream_seed(suite_seed(), "test_model_kernels_host/cases", k); }

// One tolerance rule for every comparison: got within bound of want; counts the elements that are
// not, keeps the worst |got - want| / bound and the first fault, and prints itself.
struct BoundCheck {
  std::string what;
  int64_t n = 0, bad = 0, first_bad = -1;
  double worst = 0.0, first_got = 0.0, first_want = 0.0, first_bound = 0.0;

  void add(int64_t i, double got, double want, double bound) {
    ++n;
    const double err = std::fabs(got - want), ratio = bound > 0 ? err / bound : (err > 0 ? INFINITY : 0.0);
    worst = std::max(worst, ratio);
    if (!(err <= bound)) {
      if (bad++ == 0) { first_bad = i; first_got = got; first_want = want; first_bound = bound; }
    }
  }
  std::string str() const {
    char b[400];
    std::snprintf(b, sizeof b, "%s: %lld elements, %lld outside the bound, worst error/bound %.3g", what.c_str(),
                  (long long)n, (long long)bad, worst);
    std::string s = b;
    if (bad) {
      std::snprintf(b, sizeof b, "; first at %lld: got %.9g want %.9g bound %.3g (seed 0x%llx)", (long long)first_bad,
                    first_got, first_want, first_bound, (unsigned long long)suite_seed());
      s += b;
    }
    return s;
  }
};
#define EXPECT_WITHIN_BOUND(check)                 \
  do {                                             \
    std::printf("  %s\n", (check).str().c_str()); \
    EXPECT_GT((check).n, 0);                       \
    EXPECT_EQ((check).bad, 0) << (check).str();    \
  } while (0)

double bf(bf16 b) { return double(bf16_to_float(b)); }
// A bf16 output of an fp32 value with relative error d against `want`.
double bf16_bound(double want, double d) { return kUb * std::fabs(want) * (1 + d) + 2 * d * std::fabs(want) + 1e-38; }
// The chain length of a block sum over n elements: ceil(n / 256) partial additions + the tree.
double block_chain(int64_t n) { return double((n + kBlockThreads - 1) / kBlockThreads + 8); }

const CorrectlyRoundedFns kFns;

// ---------------------------------------------------------------------------------------------
// RMSNorm

const int64_t kNormShapes[][2] = {{3, 1}, {4, 200}, {3, 256}, {4, 300}, {2, 777}};

double rstd_double(const float* x, int64_t H) {
  double s = 0;
  for (int64_t c = 0; c < H; ++c) s += double(x[c]) * double(x[c]);
  return 1.0 / std::sqrt(s / double(H) + double(kNormEps));
}

// d/dx of L = sum_c dh_c g_c x_c rstd(x), for one token, at the given rstd: rstd (dh g - y mean(dh g
// y)), y = x rstd.
std::vector<double> rmsnorm_dx_double(const float* x, const bf16* g, const float* dh, double r, int64_t H) {
  double mean = 0;
  for (int64_t c = 0; c < H; ++c) mean += double(dh[c]) * bf(g[c]) * double(x[c]) * r;
  mean /= double(H);
  std::vector<double> d(static_cast<size_t>(H));
  for (int64_t c = 0; c < H; ++c) d[size_t(c)] = r * (double(dh[c]) * bf(g[c]) - double(x[c]) * r * mean);
  return d;
}

TEST(ModelKernelsHost, RmsnormForwardAgainstDouble) {
  for (auto [T, H] : kNormShapes) {
    const NormCase c = make_norm_case(seed_for(1), T, H);
    const RmsnormFwdOut out = rmsnorm_fwd(c.x, c.g, T, H, kFns);
    BoundCheck rs{"rmsnorm_fwd rstd H=" + std::to_string(H)}, hs{"rmsnorm_fwd h H=" + std::to_string(H)};
    const double d_r = (block_chain(H) + 4) * kU;  // sum, divide, add eps, rsqrt
    for (int64_t t = 0; t < T; ++t) {
      const double r = rstd_double(c.x.data() + t * H, H);
      rs.add(t, out.rstd[size_t(t)], r, 2 * d_r * r);
      for (int64_t c2 = 0; c2 < H; ++c2) {
        const double want = double(c.x[size_t(t * H + c2)]) * r * bf(c.g[size_t(c2)]);
        hs.add(t * H + c2, bf(out.h[size_t(t * H + c2)]), want, bf16_bound(want, d_r + 2 * kU));
      }
    }
    EXPECT_WITHIN_BOUND(rs);
    EXPECT_WITHIN_BOUND(hs);
  }
}

// The double gradient the next test trusts, against central differences of the double forward.
TEST(ModelKernelsHost, RmsnormDoubleGradientMatchesFiniteDifferences) {
  const int64_t H = 37;
  const NormCase c = make_norm_case(seed_for(2), 1, H);
  const auto loss = [&](const std::vector<double>& x) {
    double s = 0;
    for (double v : x) s += v * v;
    const double r = 1.0 / std::sqrt(s / double(H) + double(kNormEps));
    double l = 0;
    for (int64_t k = 0; k < H; ++k) l += double(c.dh[size_t(k)]) * bf(c.g[size_t(k)]) * x[size_t(k)] * r;
    return l;
  };
  const std::vector<double> d = rmsnorm_dx_double(c.x.data(), c.g.data(), c.dh.data(), rstd_double(c.x.data(), H), H);
  BoundCheck fd{"rmsnorm dx (double) vs central differences"};
  for (int64_t k = 0; k < H; ++k) {
    std::vector<double> xp(c.x.begin(), c.x.end()), xm = xp;
    const double step = 1e-5;
    xp[size_t(k)] += step;
    xm[size_t(k)] -= step;
    // Central difference: truncation ~ step^2 |f'''|, cancellation ~ 1e-16 |L| / step.
    fd.add(k, (loss(xp) - loss(xm)) / (2 * step), d[size_t(k)], 1e-8);
  }
  EXPECT_WITHIN_BOUND(fd);
}

// The fp32 reference against the double gradient at the same (fp32) rstd; the bound follows the
// reference's operations with absolute values: the block sum's error, then dh g, y = x rstd,
// y mean, the difference, the product with rstd and the accumulation into dx.
using RmsnormBwdDx = void (*)(const std::vector<float>&, const std::vector<bf16>&, const std::vector<float>&,
                              const std::vector<float>&, std::vector<float>&, int64_t, int64_t);
BoundCheck check_rmsnorm_bwd_dx(RmsnormBwdDx reference, const std::string& label, int64_t T, int64_t H) {
  const NormCase c = make_norm_case(seed_for(3), T, H);
  const std::vector<float> rstd = rmsnorm_fwd(c.x, c.g, T, H, kFns).rstd;
  std::vector<float> dx = c.dx0;
  reference(c.x, c.g, rstd, c.dh, dx, T, H);
  BoundCheck chk{label + " H=" + std::to_string(H)};
  for (int64_t t = 0; t < T; ++t) {
    const float* x = c.x.data() + t * H;
    const float* dh = c.dh.data() + t * H;
    const double r = rstd[size_t(t)];
    const std::vector<double> d = rmsnorm_dx_double(x, c.g.data(), dh, r, H);
    double abs_sum = 0, mean = 0;
    for (int64_t k = 0; k < H; ++k) {
      abs_sum += std::fabs(double(dh[k]) * bf(c.g[size_t(k)]) * double(x[k]) * r);
      mean += double(dh[k]) * bf(c.g[size_t(k)]) * double(x[k]) * r;
    }
    mean /= double(H);
    const double e_mean = (block_chain(H) + 4) * kU * abs_sum / double(H);
    for (int64_t k = 0; k < H; ++k) {
      const double dyg = std::fabs(double(dh[k]) * bf(c.g[size_t(k)])), y = std::fabs(double(x[k]) * r);
      const double want = double(c.dx0[size_t(t * H + k)]) + d[size_t(k)];
      const double e =
          r * (2 * kU * dyg + y * (3 * kU * std::fabs(mean) + e_mean) + 2 * kU * std::fabs(d[size_t(k)] / r)) +
                       kU * std::fabs(want);
      chk.add(t * H + k, dx[size_t(t * H + k)], want, 2 * e);
    }
  }
  return chk;
}

TEST(ModelKernelsHost, RmsnormBackwardDxAgainstDouble) {
  for (auto [T, H] : kNormShapes) {
    // The default instantiation: the planted one when built with FH_PLANT_RMSNORM_BWD_REFERENCE=1.
    const BoundCheck chk = check_rmsnorm_bwd_dx(&rmsnorm_bwd_dx<>, "rmsnorm_bwd_dx", T, H);
    EXPECT_WITHIN_BOUND(chk);
  }
}

// Planted: the projection term uses x where it should use y = x rstd. Any two producers that
// shared this error (a fused and a standard step calling the same kernel) would agree; the double
// gradient does not: the error, rstd (1 - rstd) x mean, puts every element of every shape outside
// the bound, the worst by a factor of 10^4 or more.
TEST(ModelKernelsHost, PlantedRmsnormBackwardIsCaught) {
  for (auto [T, H] : kNormShapes) {
    const BoundCheck chk = check_rmsnorm_bwd_dx(&rmsnorm_bwd_dx<true>, "PLANTED rmsnorm_bwd_dx", T, H);
    std::printf("  %s\n", chk.str().c_str());
    EXPECT_GT(chk.bad, chk.n / 2) << "the planted RMSNorm backward was not caught: " << chk.str();
    EXPECT_GT(chk.worst, 1e3) << chk.str();
  }
}

TEST(ModelKernelsHost, RmsnormBackwardDgAgainstDouble) {
  for (auto [T, H] : kNormShapes) {
    const NormCase c = make_norm_case(seed_for(4), T + 5, H);
    const int64_t TT = T + 5;
    const std::vector<float> rstd = rmsnorm_fwd(c.x, c.g, TT, H, kFns).rstd;
    const std::vector<float> dg = rmsnorm_bwd_dg(c.x, rstd, c.dh, TT, H);
    BoundCheck chk{"rmsnorm_bwd_dg H=" + std::to_string(H)};
    for (int64_t k = 0; k < H; ++k) {
      double want = 0, abs_sum = 0;
      for (int64_t t = 0; t < TT; ++t) {
        const double b = double(c.dh[size_t(t * H + k)]) * double(c.x[size_t(t * H + k)]) * double(rstd[size_t(t)]);
        want += b;
        abs_sum += std::fabs(b);
      }
      chk.add(k, dg[size_t(k)], want, 2 * double(TT + 2) * kU * abs_sum);
    }
    EXPECT_WITHIN_BOUND(chk);
  }
}

// ---------------------------------------------------------------------------------------------
// Causal softmax and its backward

const int64_t kSoftmaxShapes[][2] = {{2, 1}, {2, 7}, {3, 64}, {2, 300}};

TEST(ModelKernelsHost, CausalSoftmaxAgainstDoubleMaskAndRowSums) {
  for (auto [heads, T] : kSoftmaxShapes) {
    const std::vector<float> s = make_scores(seed_for(5), heads, T);
    const std::vector<bf16> p = causal_softmax(s, heads * T, T, kFns);
    BoundCheck vals{"causal_softmax p T=" + std::to_string(T)}, sums{"causal_softmax row sums T=" + std::to_string(T)};
    int64_t mask_faults = 0;
    for (int64_t row = 0; row < heads * T; ++row) {
      const int64_t i = row % T;
      const float* sr = s.data() + row * T;
      double m = -INFINITY, z = 0, a_max = 0;
      for (int64_t j = 0; j <= i; ++j) m = std::max(m, double(sr[j]));
      for (int64_t j = 0; j <= i; ++j) {
        z += std::exp(double(sr[j]) - m);
        a_max = std::max(a_max, std::fabs(double(sr[j]) - m));
      }
      // s - m rounds (relative u, so exp's argument moves by u |s - m|), exp, the block sum, the
      // quotient: for the term and, the same again, for z.
      const double d = (2 * (a_max + 1) + block_chain(i + 1) + 2) * kU;
      double row_sum = 0, row_bound = 0;
      for (int64_t j = 0; j < T; ++j) {
        const bf16 got = p[size_t(row * T + j)];
        if (j > i) {
          mask_faults += got.bits != 0;
          continue;
        }
        const double want = std::exp(double(sr[j]) - m) / z;
        vals.add(row * T + j, bf(got), want, bf16_bound(want, d));
        row_sum += bf(got);
        row_bound += bf16_bound(want, d);
      }
      sums.add(row, row_sum, 1.0, row_bound);
    }
    EXPECT_EQ(mask_faults, 0) << "causal mask: entries above the diagonal that are not +0";
    EXPECT_WITHIN_BOUND(vals);
    EXPECT_WITHIN_BOUND(sums);
  }
}

TEST(ModelKernelsHost, SoftmaxBackwardAgainstDouble) {
  for (auto [heads, T] : kSoftmaxShapes) {
    const std::vector<float> s = make_scores(seed_for(6), heads, T);
    const std::vector<bf16> p = causal_softmax(s, heads * T, T, kFns);
    CaseRng r(seed_for(7));
    const std::vector<float> dp = uniform_f32(r, size_t(heads * T * T), -2, 2);
    const float scale = 1.0f / std::sqrt(float(48));
    const std::vector<bf16> ds = softmax_bwd(p, dp, heads * T, T, scale);
    BoundCheck chk{"softmax_bwd T=" + std::to_string(T)};
    for (int64_t row = 0; row < heads * T; ++row) {
      double s = 0, abs_s = 0;
      for (int64_t j = 0; j < T; ++j) {
        s += double(dp[size_t(row * T + j)]) * bf(p[size_t(row * T + j)]);
        abs_s += std::fabs(double(dp[size_t(row * T + j)]) * bf(p[size_t(row * T + j)]));
      }
      const double e_s = (block_chain(T) + 1) * kU * abs_s;
      for (int64_t j = 0; j < T; ++j) {
        const double pj = bf(p[size_t(row * T + j)]), diff = double(dp[size_t(row * T + j)]) - s;
        const double want = pj * diff * double(scale);
        const double e = pj * double(scale) * (e_s + 3 * kU * std::fabs(diff));
        chk.add(row * T + j, bf(ds[size_t(row * T + j)]), want, kUb * std::fabs(want) * 1.01 + 2 * e + 1e-38);
      }
    }
    EXPECT_WITHIN_BOUND(chk);
  }
}

// ---------------------------------------------------------------------------------------------
// Grouped KV

TEST(ModelKernelsHost, ExpandKvCopiesEachKvHeadToItsGroup) {
  const int64_t T = 5, heads = 6, kvh = 2, d = 8, group = heads / kvh;
  CaseRng r(seed_for(8));
  const std::vector<bf16> kv = uniform_bf16(r, size_t(T * kvh * d), -4, 4);
  const std::vector<bf16> x = expand_kv(kv, T, heads, kvh, d);
  ASSERT_EQ(x.size(), size_t(T * heads * d));
  int64_t faults = 0;
  // Walked from the KV side: KV head g's block lands in query heads g * group .. g * group + group - 1.
  for (int64_t t = 0; t < T; ++t)
    for (int64_t g = 0; g < kvh; ++g)
      for (int64_t k = 0; k < group; ++k)
        for (int64_t c = 0; c < d; ++c)
          faults += x[size_t(t * heads * d + (g * group + k) * d + c)] != kv[size_t(t * kvh * d + g * d + c)];
  EXPECT_EQ(faults, 0);
}

TEST(ModelKernelsHost, ReduceKvAgainstDoubleAndUndoesTheExpansion) {
  const int64_t T = 4, d = 16;
  for (auto [heads, kvh] : {std::pair<int64_t, int64_t>{4, 4}, {6, 2}, {8, 2}, {8, 1}}) {
    const int64_t group = heads / kvh;
    CaseRng r(seed_for(9));
    const std::vector<float> dx = uniform_f32(r, size_t(T * heads * d), -3, 3);
    const std::vector<bf16> dkv = reduce_kv(dx, T, heads, kvh, d);
    BoundCheck chk{"reduce_kv group=" + std::to_string(group)};
    for (int64_t t = 0; t < T; ++t)
      for (int64_t g = 0; g < kvh; ++g)
        for (int64_t c = 0; c < d; ++c) {
          double want = 0, abs_sum = 0;
          for (int64_t k = 0; k < group; ++k) {
            want += double(dx[size_t(t * heads * d + (g * group + k) * d + c)]);
            abs_sum += std::fabs(double(dx[size_t(t * heads * d + (g * group + k) * d + c)]));
          }
          const int64_t i = (t * kvh + g) * d + c;
          chk.add(i, bf(dkv[size_t(i)]), want, kUb * std::fabs(want) * 1.01 + 2 * double(group) * kU * abs_sum + 1e-38);
        }
    EXPECT_WITHIN_BOUND(chk);
    // The group's copies of one bf16 value sum exactly in fp32 (at most 8 significant bits times
    // group <= 8), so the reduction of the expansion is bf16(group * kv), bit for bit.
    const std::vector<bf16> kv = uniform_bf16(r, size_t(T * kvh * d), -4, 4);
    const std::vector<bf16> x = expand_kv(kv, T, heads, kvh, d);
    std::vector<float> xf(x.size());
    for (size_t k = 0; k < x.size(); ++k) xf[k] = bf16_to_float(x[k]);
    const std::vector<bf16> back = reduce_kv(xf, T, heads, kvh, d);
    int64_t faults = 0;
    for (size_t k = 0; k < kv.size(); ++k) faults += back[k] != float_to_bf16_rne(float(group) * bf16_to_float(kv[k]));
    EXPECT_EQ(faults, 0) << "reduce_kv(expand_kv(kv)) != bf16(group kv), group " << group;
  }
}

// ---------------------------------------------------------------------------------------------
// SiLU gate

double sigmoid_d(double z) { return 1.0 / (1.0 + std::exp(-z)); }
double silu_grad_d(double z) { return sigmoid_d(z) * (1.0 + z * (1.0 - sigmoid_d(z))); }

TEST(ModelKernelsHost, GateForwardAgainstDouble) {
  CaseRng r(seed_for(10));
  const std::vector<float> z = make_gate_inputs(r, 4000);
  const std::vector<float> up = uniform_f32(r, z.size(), -2, 2);
  const std::vector<bf16> m = gate_fwd(z, up, kFns);
  BoundCheck chk{"gate_fwd"};
  for (size_t i = 0; i < z.size(); ++i) {
    const double want = double(z[i]) * sigmoid_d(z[i]) * double(up[i]);
    chk.add(int64_t(i), bf(m[i]), want, bf16_bound(want, 4 * kU));  // exp, 1 + e, z / ., * up
  }
  EXPECT_WITHIN_BOUND(chk);
}

TEST(ModelKernelsHost, GateDoubleDerivativeMatchesFiniteDifferences) {
  BoundCheck fd{"silu' (double) vs central differences"};
  for (int k = -120; k <= 120; ++k) {
    const double z = k / 10.0 + 0.0123, h = 1e-5;
    const auto silu = [](double v) { return v * sigmoid_d(v); };
    fd.add(k, (silu(z + h) - silu(z - h)) / (2 * h), silu_grad_d(z), 1e-9);
  }
  EXPECT_WITHIN_BOUND(fd);
}

TEST(ModelKernelsHost, GateBackwardAgainstDouble) {
  CaseRng r(seed_for(11));
  const std::vector<float> z = make_gate_inputs(r, 4000);
  const std::vector<float> up = uniform_f32(r, z.size(), -2, 2), dm = uniform_f32(r, z.size(), -1, 1);
  const GateBwdOut out = gate_bwd(z, up, dm, kFns);
  BoundCheck dg{"gate_bwd dgate"}, du{"gate_bwd dup"};
  for (size_t i = 0; i < z.size(); ++i) {
    const double zz = z[i], sg = sigmoid_d(zz), a = 1.0 + zz * (1.0 - sg);
    // sg: exp, 1 + e, 1 / . (3u); a = 1 + z (1 - sg) with absolute error from 1 - sg, the product
    // and the sum, which can cancel; then three products.
    const double e_a = kU * (std::fabs(zz) * (3 * sg + 2 * (1 - sg)) + 2 * std::fabs(a));
    const double want_g = double(dm[i]) * double(up[i]) * sg * a;
    const double e_g = std::fabs(double(dm[i]) * double(up[i])) * sg * (e_a + 6 * kU * std::fabs(a));
    dg.add(int64_t(i), bf(out.dgate[i]), want_g, kUb * std::fabs(want_g) * 1.01 + 2 * e_g + 1e-38);
    const double want_u = double(dm[i]) * zz * sg;
    du.add(int64_t(i), bf(out.dup[i]), want_u, bf16_bound(want_u, 5 * kU));
  }
  EXPECT_WITHIN_BOUND(dg);
  EXPECT_WITHIN_BOUND(du);
}

// ---------------------------------------------------------------------------------------------
// Cross-entropy

TEST(ModelKernelsHost, CrossEntropyAgainstDouble) {
  for (auto [T, V] : {std::pair<int64_t, int64_t>{4, 1}, {8, 100}, {6, 1000}}) {
    const CrossEntropyCase c = make_cross_entropy_case(seed_for(12), T, V);
    const std::vector<float>& logits = c.logits;
    const std::vector<int32_t>& labels = c.labels;
    const CrossEntropyOut out = cross_entropy(logits, labels, T, V, kFns);
    BoundCheck loss{"cross_entropy loss V=" + std::to_string(V)}, grad{"cross_entropy dlogits V=" + std::to_string(V)};
    for (int64_t t = 0; t < T; ++t) {
      const float* lr = logits.data() + t * V;
      double m = -INFINITY, z = 0, a_max = 0;
      for (int64_t j = 0; j < V; ++j) m = std::max(m, double(lr[j]));
      for (int64_t j = 0; j < V; ++j) {
        z += std::exp(double(lr[j]) - m);
        a_max = std::max(a_max, std::fabs(double(lr[j]) - m));
      }
      const int64_t y = labels[size_t(t)];
      const double lz = std::log(z), want_loss = lz + m - double(lr[y]);
      const double d_z = (a_max + 1 + block_chain(V)) * kU;  // relative error of z
      // log z moves by d_z (absolutely), log rounds, then + m and - l_y round.
      const double e_loss = d_z + kU * (std::fabs(lz) + std::fabs(lz + m) + std::fabs(want_loss));
      loss.add(t, out.loss[size_t(t)], want_loss, 2 * e_loss + 1e-30);
      const double d_p = (2 * (a_max + 1) + block_chain(V) + 2) * kU;
      for (int64_t j = 0; j < V; ++j) {
        const double p = std::exp(double(lr[j]) - m) / z, want = (p - (j == y ? 1.0 : 0.0)) / double(T);
        const double e = (d_p * p + kU * std::fabs(want) * double(T)) / double(T) + kU * std::fabs(want);
        grad.add(t * V + j, bf(out.dlogits[size_t(t * V + j)]), want, kUb * std::fabs(want) * 1.01 + 2 * e + 1e-38);
      }
    }
    EXPECT_WITHIN_BOUND(loss);
    EXPECT_WITHIN_BOUND(grad);
  }
}

// dlogits = (softmax - onehot) / T, across kernels: with T a power of two, off the label each
// dlogit is exactly the causal softmax's full (last) row for the same scores, divided by T, since
// both kernels run the same max, the same sum tree and the same quotient; on the label it is
// p - 1 to within the two bf16 roundings.
TEST(ModelKernelsHost, CrossEntropyGradientIsSoftmaxMinusOneHot) {
  const int64_t T = 8, V = 300;
  CaseRng r(seed_for(13));
  const std::vector<float> logits = uniform_f32(r, size_t(T * V), -6, 6);
  const std::vector<int32_t> labels = uniform_indices(r, size_t(T), V);
  const CrossEntropyOut ce = cross_entropy(logits, labels, T, V, kFns);
  int64_t off_label_faults = 0, compared = 0;
  BoundCheck on_label{"dlogits T - (p - 1) on the label"};
  for (int64_t t = 0; t < T; ++t) {
    // One "head" of V x V scores whose last row is this token's logits: its softmax is the full row.
    std::vector<float> s(size_t(V * V), 0.0f);
    std::copy(logits.begin() + t * V, logits.begin() + (t + 1) * V, s.begin() + (V - 1) * V);
    const std::vector<bf16> p = causal_softmax(s, V, V, kFns);
    for (int64_t j = 0; j < V; ++j) {
      const float pj = bf16_to_float(p[size_t((V - 1) * V + j)]);
      const float dj = bf16_to_float(ce.dlogits[size_t(t * V + j)]);
      if (j == labels[size_t(t)]) {
        on_label.add(t, double(dj) * double(T), double(pj) - 1.0, 2 * kUb);
      } else {
        ++compared;
        off_label_faults += dj != pj / float(T);
      }
    }
  }
  EXPECT_EQ(compared, T * (V - 1));
  EXPECT_EQ(off_label_faults, 0) << "off the label, dlogits != softmax / T bit for bit";
  EXPECT_WITHIN_BOUND(on_label);
}

// ---------------------------------------------------------------------------------------------
// Embedding, its backward, the bf16 narrowing

TEST(ModelKernelsHost, EmbeddingGathersRows) {
  const int64_t V = 11, H = 9, T = 20;
  CaseRng r(seed_for(14));
  const std::vector<bf16> e = uniform_bf16(r, size_t(V * H), -1, 1);
  const std::vector<int32_t> tok = uniform_indices(r, size_t(T), V);
  const std::vector<float> x = embedding(e, tok, T, H);
  int64_t faults = 0;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < H; ++c) faults += double(x[size_t(t * H + c)]) != bf(e[size_t(tok[size_t(t)] * H + c)]);
  EXPECT_EQ(faults, 0);
}

// Inputs are multiples of 1/16 below 64 in magnitude, so every fp32 sum is exact and the double
// scatter-add must match bit for bit, repeated tokens included.
TEST(ModelKernelsHost, EmbeddingBackwardExactOnExactInputs) {
  const int64_t V = 7, H = 300, T = 40;
  CaseRng r(seed_for(15));
  const std::vector<int32_t> tok = uniform_indices(r, size_t(T), V);
  std::vector<float> dx(size_t(T * H)), de(size_t(V * H));
  for (auto& v : dx) v = float(r.range(-1024, 1023)) / 16.0f;
  for (auto& v : de) v = float(r.range(-1024, 1023)) / 16.0f;
  std::vector<double> want(de.begin(), de.end());
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < H; ++c) want[size_t(tok[size_t(t)] * H + c)] += double(dx[size_t(t * H + c)]);
  embedding_bwd(dx, tok, de, T, H);
  int64_t faults = 0;
  for (size_t k = 0; k < de.size(); ++k) faults += double(de[k]) != want[k];
  EXPECT_EQ(faults, 0);
}

// Round to nearest even, decided in double from the two bf16 neighbours of x.
TEST(ModelKernelsHost, ToBf16IsRoundToNearestEven) {
  CaseRng r(seed_for(16));
  std::vector<float> x = uniform_f32(r, 20000, -1e4, 1e4);
  for (uint32_t bits : {0x3f808000u, 0x3f818000u, 0xbf808000u, 0x00008000u, 0x7f7fffffu, 0x3f800001u, 0x3f807fffu})
    x.push_back(u2f(bits));  // ties to even (both directions), a subnormal tie, overflow, near-ties
  const std::vector<bf16> y = to_bf16(x);
  int64_t faults = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const uint16_t lo = uint16_t(f2u(x[i]) >> 16), hi = uint16_t(lo + 1);  // bits: |lo| <= |x| < |hi|
    // Past the largest finite bf16 the upper neighbour is 2^128 (rounding as if the exponent were
    // unbounded, then overflowing), which is how IEEE decides overflow under round to nearest.
    const double vhi = (hi & 0x7fff) == 0x7f80 ? std::copysign(0x1p128, double(x[i])) : bf(bf16::from_bits(hi));
    const double dlo = std::fabs(double(x[i]) - bf(bf16::from_bits(lo))), dhi = std::fabs(vhi - double(x[i]));
    const uint16_t want = dlo < dhi ? lo : dhi < dlo ? hi : ((lo & 1) ? hi : lo);
    faults += y[i].bits != want;
  }
  EXPECT_EQ(faults, 0);
}

}  // namespace
