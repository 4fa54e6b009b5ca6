// sr_statistics (issue 5): stochastic rounding on the real Philox stream, on the host twin
// (sr_statistics) and on the fused kernel (sr_statistics_gpu, every step also checked against the
// twin). Every draw is a fused step's bf16_sr store (an SGD step crafted so that each element's
// fp32 result is an exact class value) or, for the planted variants, the copy sr_round:
//   - per value class (fixed dropped 16 bits) a binomial test (claim field sr_binomial) of the
//     round-up fraction against low16 / 2^16, with the guaranteed power against a 1/256-ulp bias;
//   - independence (sr_independence): neighbouring elements, the same place in neighbouring
//     tiles, consecutive steps;
//   - each fused draw equal to the sr_bits stream (sr_stream);
//   - layout invariance over tile shapes and visit orders (sr_layout_invariance).
// Producers: the config's FusedStepBackend, sr_round / sr_class_step (reference/fidelity_producers.h).
// Oracles: oracles/fidelity (binomial_mean_test, hoeffding_power), oracles/bitwise.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/twin/step_backend.h"
#include "oracles/evidence.h"
#include "oracles/fidelity.h"
#include "reference/fidelity_producers.h"
#include "reports/report.h"
#include "suites/claims/claim_config.h"

namespace fh {

struct SrStatsConfig {
  uint64_t seed = 0x5EED0F5Eull;
  int64_t rows = 256, cols = 256;       // one tensor per value class
  int64_t tile_rows = 128, tile_cols = 128;
  int steps = 64;                       // 2^16 elements x 64 steps = 2^22 draws per class
  double alpha = 1e-9;
  SrVariant variant = SrVariant::kernel;
  // Where the draws come from. false: sr_round (the copy that carries the planted variants).
  // true: the fused step itself (backend, null = twin): per class an SGD step (lr 1, T = 2)
  // crafted so that the element's fp32 result is exactly the class value, its bf16_sr store
  // read back; the variant must then be kernel (the GPU plants its defects in the kernel).
  bool through_fused_step = false;
  const FusedStepBackend* backend = nullptr;
};
struct SrStatsResult {
  std::vector<ClaimCaseResult> cases;
  std::vector<double> class_low16, class_observed, class_expected, class_threshold;
  // through_fused_step: draws whose stored bf16 is neither of the class value's two neighbours
  // (the crafted step failed), and draws that differ from sr_round's (the kernel's stream).
  int64_t off_lattice = 0, differ_from_stream = 0, draws = 0;
  double power_vs_1_256 = 0;  // guaranteed power against a bias of 255/65536 (~1/256 ulp)
};
// Binomial test per value class (dropped 16 bits fixed per class) and the independence tests.
SrStatsResult run_sr_statistics(const SrStatsConfig& cfg);

// The fused bf16_sr step under several tile shapes and visit orders gives identical bits (the
// backend's: the GPU has two tile shapes, i.e. two launch grids); with a variant other than
// kernel, the copy sr_round is compared across tile shapes instead.
std::vector<ClaimCaseResult> run_sr_layout_invariance(uint64_t seed, SrVariant variant,
                                                      const FusedStepBackend* backend = nullptr);

// forge-verify's entry, one per variant (twin, GPU). Honour --seed only (fixed sizes).
void claim_sr_statistics(const VerifyConfig& cfg, Report& report, const Progress& progress,
                         const ClaimVariant& variant);

}  // namespace fh
