// The falsifier: a deliberately NON-separable update, LAMB's layer-wise trust ratio
// (You et al. 2020), whose norms are taken over whatever the producer sees: the whole tensor in
// the two-phase step, one tile in the fused twin. Proposition 1 does not cover it, so run
// through the twin it must differ from its two-phase version; a suite that cannot see that
// difference has no power to see a wrong fusion.
//   m <- b1*m + (1-b1)*g;  v <- b2*v + (1-b2)*g*g
//   u  = (m / bc1) / (sqrt(v / bc2) + eps) + wd*p
//   ratio = ||p||_region / ||u||_region   (1 when either norm is 0; norms in double, rounded once)
//   p <- p - (lr * ratio) * u
// fp32 weights and fp32 state only: the falsifier needs no formats to make its point.
#pragma once
#include <cstdint>
#include <vector>
#include "kernels/rules/nonseparable_elements.h"
#include "kernels/twin/fused_twin.h"

namespace fh {

struct LambHyper {
  double lr = 1e-2, beta1 = 0.9, beta2 = 0.999, eps = 1e-6, weight_decay = 1e-2;
  void validate() const;
};

// LAMB's per-step scalars (host double, rounded once); its element-wise part (the moments and the
// update direction u) is kernels/rules/nonseparable_elements.h, shared with the GPU passes.
LambScalars lamb_scalars(const LambHyper& h, int64_t step);

struct LambParam {
  int64_t rows = 0, cols = 0;
  std::vector<float> w, m, v;  // [rows, cols]
  static LambParam make(int64_t rows, int64_t cols, const std::vector<float>& w0);
};

// The update on [r0, r1) x [c0, c1) with G for that region (leading dimension ldg); the trust
// ratio is computed over this region only.
void lamb_update_region(LambParam& p, const LambHyper& h, int64_t step, const float* g,
                        int64_t ldg, int64_t r0, int64_t r1, int64_t c0, int64_t c1);

// Through the twin's tile loop: one trust ratio per tile.
void lamb_fused_twin_step(LambParam& p, const LambHyper& h, const bf16* X, const bf16* dY,
                          int64_t T, int64_t step, const TwinSchedule& sched);

// Its two-phase reference (one trust ratio for the tensor): reference/lamb_two_phase.h.

}  // namespace fh
