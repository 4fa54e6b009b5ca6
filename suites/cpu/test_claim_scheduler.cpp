// forge-verify --jobs: the scheduler's rule on made-up jobs
// (suites/forge_verify/claim_scheduler.h). Every job runs once; never more than N at a time and
// never two on one worker; one GPU-lane job at a time while CPU jobs run beside it; an exclusive
// job alone, and nothing after it started before it; a free GPU lane takes its job first; a
// throwing job stops new starts and its exception comes back. (The report's sameness for every
// N: test_forge_verify_outcomes, JobsDoNotChangeTheReport.)
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "suites/forge_verify/claim_scheduler.h"

namespace {

using fh::JobKind;

// What ran: per job, its worker and its start/end in one sequence; the most running at once,
// overall and in the GPU lane.
struct Trace {
  std::mutex m;
  int running = 0, gpu_running = 0, max_running = 0, max_gpu = 0, seq = 0;
  bool overlapped_gpu = false;  // a CPU job ran while a GPU job did
  std::vector<int> runs, worker, start, end;
  std::vector<bool> worker_busy;
  explicit Trace(size_t n, int workers) : runs(n, 0), worker(n, -1), start(n, -1), end(n, -1), worker_busy(size_t(workers), false) {}

  void body(const std::vector<JobKind>& kinds, size_t j, int w, std::chrono::milliseconds hold) {
    {
      std::lock_guard<std::mutex> lock(m);
      ++runs[j];
      worker[j] = w;
      start[j] = seq++;
      EXPECT_FALSE(worker_busy.at(size_t(w))) << "worker " << w << " runs two jobs at once";
      worker_busy.at(size_t(w)) = true;
      ++running;
      if (kinds[j].gpu_lane) ++gpu_running;
      if (!kinds[j].gpu_lane && gpu_running > 0) overlapped_gpu = true;
      if (kinds[j].gpu_lane && running > gpu_running) overlapped_gpu = true;
      max_running = std::max(max_running, running);
      max_gpu = std::max(max_gpu, gpu_running);
      if (kinds[j].exclusive) {
        EXPECT_EQ(running, 1) << "exclusive job " << j << " did not run alone";
      }
    }
    std::this_thread::sleep_for(hold);
    std::lock_guard<std::mutex> lock(m);
    end[j] = seq++;
    --running;
    if (kinds[j].gpu_lane) --gpu_running;
    worker_busy.at(size_t(w)) = false;
  }
};

TEST(ClaimScheduler, EveryJobOnceAtMostNAtATime) {
  const std::vector<JobKind> kinds(24);
  Trace t(kinds.size(), 4);
  fh::run_claim_jobs(kinds, 4, [&](size_t j, int w) { t.body(kinds, j, w, std::chrono::milliseconds(5)); });
  for (size_t j = 0; j < kinds.size(); ++j) {
    EXPECT_EQ(t.runs[j], 1) << "job " << j;
    EXPECT_GE(t.worker[j], 0);
    EXPECT_LT(t.worker[j], 4);
  }
  EXPECT_LE(t.max_running, 4);
  EXPECT_GE(t.max_running, 2) << "four workers never ran two jobs at once";
}

TEST(ClaimScheduler, MoreWorkersThanJobsAndOneWorker) {
  for (int workers : {1, 64}) {
    const std::vector<JobKind> kinds(3);
    Trace t(kinds.size(), workers);
    fh::run_claim_jobs(kinds, workers, [&](size_t j, int w) { t.body(kinds, j, w, std::chrono::milliseconds(1)); });
    for (size_t j = 0; j < kinds.size(); ++j) EXPECT_EQ(t.runs[j], 1);
    EXPECT_LE(t.max_running, 3);
    if (workers == 1) {  // one worker: registry order, one after another
      EXPECT_EQ(t.max_running, 1);
      EXPECT_LT(t.start[0], t.start[1]);
      EXPECT_LT(t.start[1], t.start[2]);
    }
  }
  fh::run_claim_jobs({}, 4, [](size_t, int) { ADD_FAILURE() << "no job to run"; });
  EXPECT_THROW(fh::run_claim_jobs(std::vector<JobKind>(2), 0, [](size_t, int) {}), std::invalid_argument);
}

TEST(ClaimScheduler, OneGpuJobAtATimeWithCpuJobsBeside) {
  std::vector<JobKind> kinds(16);
  for (size_t j = 0; j < kinds.size(); j += 2) kinds[j].gpu_lane = true;
  Trace t(kinds.size(), 4);
  fh::run_claim_jobs(kinds, 4, [&](size_t j, int w) { t.body(kinds, j, w, std::chrono::milliseconds(20)); });
  for (size_t j = 0; j < kinds.size(); ++j) EXPECT_EQ(t.runs[j], 1);
  EXPECT_EQ(t.max_gpu, 1) << "two GPU-lane jobs ran at once";
  EXPECT_TRUE(t.overlapped_gpu) << "no CPU job ran beside a GPU job";
}

TEST(ClaimScheduler, AnExclusiveJobRunsAloneAndNothingAfterItStartsFirst) {
  std::vector<JobKind> kinds(12);
  kinds[5].exclusive = true;
  kinds[9].exclusive = true;
  kinds[2].gpu_lane = kinds[7].gpu_lane = true;
  Trace t(kinds.size(), 4);
  fh::run_claim_jobs(kinds, 4, [&](size_t j, int w) { t.body(kinds, j, w, std::chrono::milliseconds(10)); });
  for (size_t j = 0; j < kinds.size(); ++j) EXPECT_EQ(t.runs[j], 1);
  for (size_t x : {size_t(5), size_t(9)}) {
    for (size_t j = 0; j < kinds.size(); ++j) {
      if (j == x) continue;
      // every other job ended before it started, or started after it ended
      EXPECT_TRUE(t.end[j] < t.start[x] || t.start[j] > t.end[x]) << "job " << j << " overlapped exclusive job " << x;
      if (j > x) {
        EXPECT_GT(t.start[j], t.end[x]) << "job " << j << " started before exclusive job " << x;
      }
    }
  }
}

TEST(ClaimScheduler, AFreeGpuLaneTakesItsJobFirst) {
  // One worker: the order of starts is the rule's order. The GPU jobs go first while the lane is
  // free; the CPU jobs then in registry order.
  std::vector<JobKind> kinds(5);
  kinds[2].gpu_lane = kinds[4].gpu_lane = true;
  std::vector<size_t> order;
  fh::run_claim_jobs(kinds, 1, [&](size_t j, int) { order.push_back(j); });
  EXPECT_EQ(order, (std::vector<size_t>{2, 4, 0, 1, 3}));
  // An exclusive job is a barrier for the GPU's preference too: nothing after it goes first.
  kinds[1].exclusive = true;
  order.clear();
  fh::run_claim_jobs(kinds, 1, [&](size_t j, int) { order.push_back(j); });
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 4, 3}));
}

TEST(ClaimScheduler, AThrowingJobStopsNewStartsAndItsExceptionComesBack) {
  const std::vector<JobKind> kinds(6);
  std::atomic<int> ran{0};
  EXPECT_THROW(fh::run_claim_jobs(kinds, 1,
                                  [&](size_t j, int) {
                                    ++ran;
                                    if (j == 2) throw std::runtime_error("boom");
                                  }),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 3) << "jobs started after the one that threw";
}

TEST(ClaimScheduler, DefaultJobsAreTheMachinesCores) {
  const int n = fh::default_job_count();
  EXPECT_GE(n, 1);
  EXPECT_LE(n, fh::kMaxJobs);
  if (std::thread::hardware_concurrency() > 0) {
    EXPECT_EQ(n, std::min<int>(int(std::thread::hardware_concurrency()), fh::kMaxJobs));
  }
}

}  // namespace
