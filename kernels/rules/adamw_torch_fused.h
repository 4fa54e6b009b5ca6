// AdamW in PyTorch-compatible mode: torch.optim.AdamW(fused=True) of PyTorch 2.11 on CUDA, bit
// for bit (checked by scripts/torch_crosscheck.py against the real thing).
// What PyTorch's kernel computes, read from its shipped header and sm_90 machine code:
// everything in fp32, each hyperparameter rounded once from double, and per element
//   g    <- -g if maximize
//   p    <- fma(p, -lrwd, p)                     only when weight_decay != 0
//   m    <- fma(b1, m, fma(-b1, g, g))
//   v    <- fma(b2, v, fma(-b2, g*g, g*g))        g*g rounded once
//   p    <- p - (step_size * m) / (sqrt(v) / bc2s + eps)
// with, per step t (1-based, fp32 as torch keeps it):
//   bc1 = 1 - powf(b1, t),  bc2s = sqrt(1 - powf(b2, t)),  step_size = lr / bc1,
// where powf is CUDA's libdevice powf (fh::cuda_powf), not std::pow: the two differ (for
// example beta 0.95 at t = 6), and the twin must have torch's scalar bits.
// Two details the text leaves open are hyperparameters, so the cross-check can decide them:
//   lrwd_in_double = false: lrwd = fp32(lr) * fp32(wd) in fp32 (the default: "everything fp32");
//                    true:  lrwd = fp32(lr * wd computed in double);
//   powf_build: which compilation of libdevice powf PyTorch's binary has (kernels/common/cuda_powf.h).
// "weight_decay != 0" is tested on the fp32 value (a weight decay that rounds to 0 decays nothing).
// bf16 parameters: update_segment<AdamWTorchFused, StateFormat::bf16, WeightStore::bf16_rne>
// widens p, m, v exactly, runs update() in fp32 (the p update uses the unrounded new m and v,
// as torch does, because the driver stores the state only after update() returns), and stores
// each of p, m, v round-to-nearest-even. fp32 parameters: StateFormat::fp32 with
// WeightStore::fp32_master and no bf16 copy.
// Not in fh::kAllRules / visit_rule (the paper's eight rules); use it with update_segment directly.
#pragma once
#include "kernels/common/cuda_powf.h"
#include "kernels/rules/adamw.h"

namespace fh {

struct AdamWTorchFused {
  static constexpr const char* kName = "adamw_torch_fused";
  static constexpr int kStateSlots = 2;
  struct Hyper : AdamW::Hyper {
    bool lrwd_in_double = false;
    PowfBuild powf_build = PowfBuild::no_fmad;
  };
  struct Scalars {
    float lr;          // fp32(lr)
    float lrwd;        // lr * wd, rounded (see lrwd_in_double)
    float beta1, neg_beta1, beta2, neg_beta2;
    float eps;
    float bc1;         // 1 - powf(b1, t)
    float bc2_sqrt;    // sqrt(1 - powf(b2, t))
    float step_size;   // lr / bc1
    bool decay;        // fp32(weight_decay) != 0
    bool maximize;
  };
  // torch keeps the step count in fp32; past 2^24 it would stop counting.
  static constexpr int64_t kMaxStep = int64_t(1) << 24;

  static void validate(const Hyper& h) {
    validate_adam_family(kName, h.lr, h.beta1, h.beta2, h.eps, h.weight_decay);
    require_hyper(h.powf_build == PowfBuild::no_fmad || h.powf_build == PowfBuild::fmad, kName,
                  "powf_build must be no_fmad or fmad");
  }
  static StateDecls states(const Hyper&) { return adam_family_states(); }

  // The host computes what torch's kernel computes per tensor: the powf port runs the same fp32
  // operations (on the host with the rcp.approx model of cuda_powf.h; `rcp` may carry a table
  // measured on the GPU).
  static Scalars scalars(const Hyper& h, int64_t t, const RcpApproxHostModel& rcp = {}) {
    if (t < 1 || t > kMaxStep)
      throw std::invalid_argument(std::string(kName) + ": step must be in [1, 2^24], got " + std::to_string(t));
    Scalars s;
    s.lr = round_scalar(h.lr);
    const float wd = round_scalar(h.weight_decay);
    s.lrwd = h.lrwd_in_double ? round_scalar(h.lr * h.weight_decay) : fmul(s.lr, wd);
    s.decay = wd != 0.0f;
    s.beta1 = round_scalar(h.beta1);
    s.beta2 = round_scalar(h.beta2);
    s.neg_beta1 = fneg(s.beta1);
    s.neg_beta2 = fneg(s.beta2);
    s.eps = round_scalar(h.eps);
    const float tf = float(t);  // exact below 2^24
    const float pow1 = h.powf_build == PowfBuild::fmad ? cuda_powf_with<PowfBuild::fmad>(s.beta1, tf, rcp)
                                                        : cuda_powf_with<PowfBuild::no_fmad>(s.beta1, tf, rcp);
    const float pow2 = h.powf_build == PowfBuild::fmad ? cuda_powf_with<PowfBuild::fmad>(s.beta2, tf, rcp)
                                                        : cuda_powf_with<PowfBuild::no_fmad>(s.beta2, tf, rcp);
    s.bc1 = fsub(1.0f, pow1);
    s.bc2_sqrt = fsqrt(fsub(1.0f, pow2));
    s.step_size = fdiv(s.lr, s.bc1);
    s.maximize = h.maximize;
    return s;
  }

  template <class DS = IeeeDivSqrt>
  FH_HD static void update(const Scalars& s, float& p, float g, float* st, DS ds = {}) {
    g = maybe_negate(g, s.maximize);
    if (s.decay) p = ffma(p, fneg(s.lrwd), p);
    const float m = ffma(s.beta1, st[0], ffma(s.neg_beta1, g, g));
    const float gg = fmul(g, g);
    const float v = ffma(s.beta2, st[1], ffma(s.neg_beta2, gg, gg));
    const float denom = fadd(ds.div(ds.sqrt(v), s.bc2_sqrt), s.eps);
    p = fsub(p, ds.div(fmul(s.step_size, m), denom));
    st[0] = m;
    st[1] = v;
  }
};

}  // namespace fh
