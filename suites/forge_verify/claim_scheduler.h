// forge-verify --jobs N: which claim runs when. main.cpp hands the selected claims to
// run_claim_jobs; suites/cpu/test_claim_scheduler.cpp checks the rule on made-up jobs.
//
// The rule (what makes the report the same for every N):
// - Each claim runs whole on one of up to N worker threads, into a Report of its own, with its
//   progress notes held in a buffer of its own; the main thread absorbs the parts in registry
//   order once every claim has ended (Report::absorb), then prints the tables and writes the
//   report, JSON and JUnit files on its own thread. So groups, cases, checks, datasets and their
//   order never depend on N or on which claim finished first.
// - GPU lane: a claim that uses the GPU (ClaimInfo::needs_gpu on a machine with one) runs only
//   when no other GPU claim does. The kernels' launch caches, cuBLAS handles, the fused kernel's
//   schedule and planted defect (kernels/gpu/gpu_api.cu) are process-wide; one GPU claim at a
//   time keeps them as a serial run has them. CPU claims run beside it on the other workers.
//   Inside a claim, the Proposition 2 claims run their units on the host's cores
//   (suites/claims/prop2_common.h: run_prop2_units), each with a GPU step backend of its own;
//   the backend's steps take turns on the device (kernels/gpu/gpu_step_backend.h).
// - exclusive: a claim marked ClaimInfo::exclusive runs with no other claim; no claim after it in
//   registry order starts while it waits, so it is not starved.
// - Start order: registry order, except that a waiting GPU claim goes first whenever the GPU lane
//   is free (on a GPU machine the GPU claims are the longest chain).
//
// What the claims share, audited for --jobs (nm of the libraries' writable
// data, and the sources):
// - MPFR: Debian's libmpfr is built thread-safe (mpfr_buildopt_tls_p() = 1: flags, exponent
//   range, default precision and constant caches are per thread), and no code sets a default
//   precision, rounding mode or exponent range, so an mpreal made without a precision gets
//   MPFR's default (53 bits) on every thread alike. GMP has no global state the code changes.
// - Function-local statics (exact/tracked.cpp consts<F>, reference/exact_gradient.cpp
//   pow2_table, reference/mpfr_rules.cpp one64, twin_step_backend, the registry, Eigen's cache
//   sizes) are const after C++11's thread-safe initialisation, and only read.
// - Locked already: every HDF5 call in inputs/ and reports/ (one mutex, inputs/hdf5_util.h:
//   Debian's serial HDF5 is not thread-safe; a claim that reads an external file's tensors goes
//   through it, and the report is written after the workers have ended).
// - Per thread now: progress_set_case (the heartbeat's "case"), the running-claim slots that
//   the heartbeat and the SIGINT/SIGTERM message name.
// - Read only: the VerifyConfig and the inputs it points to (inputs/run_inputs.h, parsed before
//   the claims start), the registry, getenv (FH_SEED, FH_PLANT_THROWING_CLAIM,
//   FH_PLANT_INPUT_ACCESS_THROW, FH_PLANT_BROKEN_CONTRACT; nothing calls setenv),
//   query_device_info() (probed once before the claims start).
// - GPU state a CPU claim touched: sr_statistics (twin) cleared the kernel's planted defect,
//   which sr_statistics_gpu sets for its planted run; now only the GPU run sets and clears it.
// - No claim prints: they report through Progress::note, which the scheduler buffers per claim.
// - RNGs are values made from the seed inside each claim (reference/case_gen.h, Philox keyed by
//   position); none is shared. Nothing changes the floating-point environment (rounding mode,
//   flush to zero), so every worker computes as the main thread did.
// No CPU claim needed the exclusive mark. A claim added later that sets process-wide state
// (a global setting, an unlocked cache, setenv, the current directory) must set it.
#pragma once
#include <cstddef>
#include <functional>
#include <vector>

namespace fh {

// What the rule needs to know of one job (a claim).
struct JobKind {
  bool gpu_lane = false;   // uses the GPU: one such job at a time
  bool exclusive = false;  // runs with no other job
};

// Runs body(job, worker) once for every job in [0, kinds.size()), on min(workers, jobs) threads
// of its own (worker: 0.., the thread's slot; one worker runs one job at a time), under the rule
// above; returns when every job has ended. If body throws, no further job starts, and the first
// exception is rethrown once the running jobs have ended. workers < 1 is std::invalid_argument.
void run_claim_jobs(const std::vector<JobKind>& kinds, int workers,
                    const std::function<void(size_t job, int worker)>& body);

// --jobs' default: the machine's cores (std::thread::hardware_concurrency), at least 1, at most
// kMaxJobs.
constexpr int kMaxJobs = 256;
int default_job_count();

}  // namespace fh
