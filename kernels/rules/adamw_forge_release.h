// AdamW as the released FORGE package computes it (github dk4248/FORGE 7cba611, Triton 3.6 on
// sm_90): a host model of the element-wise step of its kernels, read from the PTX and
// SASS Triton produced on the H200 for `_optimizer_only_adamw_kernel` (the fused kernels carry
// the same epilogue source). Scalars arrive as the Python wrapper passes them: lr, beta1, beta2,
// eps, weight_decay and bc1 = 1 - beta1**t, bc2 = 1 - beta2**t (computed in double by Python),
// each rounded once to fp32 at the launch. Per element, everything fp32:
//   m    <- fma(1 - b1, g, b1 * m)                       (sub.f32, mul.f32, fma.rn.f32)
//   v    <- fma((1 - b2) * g, g, b2 * v)
//   m^   <- div.full(m, bc1),  v^ <- div.full(v, bc2)
//   den  <- sqrt.approx.ftz(v^) + eps
//   w    <- fma(fma(-lr, wd, 1), w, -div.full(lr * m^, den))
// div.full.f32 a/b (SASS): if |b| > 2^126 both are scaled by 1/4, if |b| < 2^-126 both by 2^24,
// then a * MUFU.RCP(b). MUFU.RCP and MUFU.SQRT are hardware approximations NVIDIA does not
// specify bit for bit (at most about 1 ulp): the host models them as round-to-nearest (ftz),
// unless a table measured on the GPU lists the input (RcpApproxHostModel, SqrtApproxHostModel).
// So m and v are modelled exactly; w is exact given the two instructions' outputs.
// Versus torch.optim.AdamW(fused=True) (adamw_torch_fused.h) the arithmetic differs in every line:
// torch decays p first with fma(p, -lr*wd, p), forms m and v as fma(b, s, fma(-b, g, g)), divides
// sqrt(v) by sqrt(bc2) with IEEE division and sqrt, and uses step_size = lr / bc1.
#pragma once
#include <cstdint>
#include "kernels/common/cuda_powf.h"
#include "kernels/rules/rule_common.h"

namespace fh {

// Host model of sqrt.approx.ftz.f32: round-to-nearest sqrt, subnormal input and output flushed,
// unless the measured table lists the input.
struct SqrtApproxHostModel {
  const uint32_t* in_bits = nullptr;   // ascending
  const uint32_t* out_bits = nullptr;
  size_t count = 0;
  float operator()(float x) const {
    uint32_t u = f2u(x);
    if (fisnan(x)) return u2f(0x7fffffffu);
    if ((u & 0x7f800000u) == 0) u &= 0x80000000u;   // ftz input
    uint32_t measured;
    if (approx_table_lookup(in_bits, out_bits, count, u, measured)) return u2f(measured);
    const uint32_t r = f2u(fsqrt(u2f(u)));
    return u2f((r & 0x7f800000u) == 0 ? (r & 0x80000000u) : r);
  }
};

struct ForgeReleaseAdamW {
  static constexpr const char* kName = "adamw_forge_release";
  struct Hyper {
    double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01;
  };
  struct Scalars {
    float lr, beta1, beta2, eps, weight_decay;
    float bc1, bc2;                  // fp32(1 - beta**t), the power taken in double
    float one_minus_b1, one_minus_b2;
    float decay;                     // fma(-lr, wd, 1)
  };
  static Scalars scalars(const Hyper& h, int64_t t) {
    if (t < 1) throw std::invalid_argument(std::string(kName) + ": step must be >= 1");
    Scalars s;
    s.lr = round_scalar(h.lr);
    s.beta1 = round_scalar(h.beta1);
    s.beta2 = round_scalar(h.beta2);
    s.eps = round_scalar(h.eps);
    s.weight_decay = round_scalar(h.weight_decay);
    s.bc1 = round_scalar(1.0 - std::pow(h.beta1, double(t)));
    s.bc2 = round_scalar(1.0 - std::pow(h.beta2, double(t)));
    s.one_minus_b1 = fsub(1.0f, s.beta1);
    s.one_minus_b2 = fsub(1.0f, s.beta2);
    s.decay = ffma(fneg(s.lr), s.weight_decay, 1.0f);
    return s;
  }
  // div.full.f32 as ptxas lowers it on sm_90.
  static float div_full(float a, float b, const RcpApproxHostModel& rcp) {
    const float ab = fabs_(b);
    if (ab > 8.50705917302346158658e+37f) { a = fmul(a, 0.25f); b = fmul(b, 0.25f); }
    if (!(fabs_(b) >= 1.175494350822287508e-38f)) { a = fmul(a, 16777216.0f); b = fmul(b, 16777216.0f); }
    return fmul(a, rcp(b));
  }
  // One element; w, m, v are the fp32 values loaded (bf16 storage widens exactly and the caller
  // rounds the stores to nearest even, as the kernel's .to(dtype) does).
  static void update(const Scalars& s, float& w, float g, float& m, float& v,
                     const RcpApproxHostModel& rcp = {}, const SqrtApproxHostModel& sqrt_approx = {}) {
    m = ffma(s.one_minus_b1, g, fmul(s.beta1, m));
    v = ffma(fmul(s.one_minus_b2, g), g, fmul(s.beta2, v));
    const float m_hat = div_full(m, s.bc1, rcp);
    const float v_hat = div_full(v, s.bc2, rcp);
    const float den = fadd(sqrt_approx(v_hat), s.eps);
    w = ffma(s.decay, w, fneg(div_full(fmul(s.lr, m_hat), den, rcp)));
  }
};

}  // namespace fh
