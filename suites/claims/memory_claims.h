// The peak-memory claims that run on the host: eq6_memory_model (the model,
// term by term, for the named families), prop3_gradient_memory (the fused path's gradient storage
// is one G tile at every P, measured on the twin's own accounting: TwinStats::g_buffer_floats) and
// tied_embedding (naive fusion of a tied embedding / LM head is caught bitwise; the fallback keeps a
// P_tied gradient). Planted defects (off by default; the suites turn them on):
//   materialize_one_layer  the fused path's first layer materializes its whole G and holds it to
//                          the end of backward (a layer silently left on the standard path);
//   fuse_tied_naively      the refusal of a fused tied weight is skipped.
#pragma once
#include <cstdint>
#include <vector>

#include "oracles/evidence.h"
#include "reference/memory_model.h"

namespace fh {

struct MemoryClaimConfig {
  uint64_t seed = 0x3E3018ull;
  bool materialize_one_layer = false;
  bool fuse_tied_naively = false;
};

// The tiny two-block stack (reference/sharded_stack.h) for one step on the twin with a ledger, fused
// and standard, each state format: the measured peaks against step_memory's terms, and Remark 1 at
// that scale (fused == standard: dX at the input and every weight and state, bitwise).
// timeline_*: the bf16-state run's MemoryLedger timelines (fused, standard), for the report's
// Figure 2 (scripts/render_memory_timeline.py).
struct Eq6TwinRun {
  std::vector<ClaimCaseResult> cases;
  std::vector<MemoryLedger::Phase> timeline_fused, timeline_standard;
};
Eq6TwinRun run_eq6_twin_cases(const MemoryClaimConfig& cfg);
std::vector<ClaimCaseResult> run_prop3_gradient_memory_cases(const MemoryClaimConfig& cfg);
std::vector<ClaimCaseResult> run_tied_embedding_cases(const MemoryClaimConfig& cfg);

}  // namespace fh
