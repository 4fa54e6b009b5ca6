// forge-verify --jobs N: the scheduler (the rule is in claim_scheduler.h).
#include "suites/forge_verify/claim_scheduler.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

namespace fh {

namespace {

constexpr size_t kNone = std::numeric_limits<size_t>::max();

class Scheduler {
 public:
  Scheduler(const std::vector<JobKind>& kinds, const std::function<void(size_t, int)>& body)
      : kinds_(kinds), body_(body), started_(kinds.size(), false) {}

  void worker(int slot) {
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      if (stop_ || next_unstarted() == kNone) return;
      const size_t job = pick();
      if (job == kNone) {
        cv_.wait(lock);
        continue;
      }
      start(job);
      lock.unlock();
      std::exception_ptr err;
      try {
        body_(job, slot);
      } catch (...) {
        err = std::current_exception();
      }
      lock.lock();
      finish(job);
      if (err && !error_) error_ = err;
      if (err) stop_ = true;
      cv_.notify_all();
    }
  }

  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  size_t next_unstarted() const {
    for (size_t j = 0; j < kinds_.size(); ++j)
      if (!started_[j]) return j;
    return kNone;
  }

  // The job to start now, or kNone (under m_).
  size_t pick() const {
    if (exclusive_running_) return kNone;
    size_t first_exclusive = kNone;  // no job after it starts while it waits
    for (size_t j = 0; j < kinds_.size() && first_exclusive == kNone; ++j)
      if (!started_[j] && kinds_[j].exclusive) first_exclusive = j;
    if (!gpu_busy_)  // the GPU lane free: its first waiting job goes first
      for (size_t j = 0; j < kinds_.size() && j < first_exclusive; ++j)
        if (!started_[j] && kinds_[j].gpu_lane) return j;
    for (size_t j = 0; j < kinds_.size(); ++j) {
      if (started_[j]) continue;
      if (j == first_exclusive) return running_ == 0 ? j : kNone;
      if (kinds_[j].gpu_lane && gpu_busy_) continue;
      return j;
    }
    return kNone;
  }

  void start(size_t j) {
    started_[j] = true;
    ++running_;
    if (kinds_[j].gpu_lane) gpu_busy_ = true;
    if (kinds_[j].exclusive) exclusive_running_ = true;
  }

  void finish(size_t j) {
    --running_;
    if (kinds_[j].gpu_lane) gpu_busy_ = false;
    if (kinds_[j].exclusive) exclusive_running_ = false;
  }

  const std::vector<JobKind>& kinds_;
  const std::function<void(size_t, int)>& body_;
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<bool> started_;
  int running_ = 0;
  bool gpu_busy_ = false, exclusive_running_ = false, stop_ = false;
  std::exception_ptr error_;
};

}  // namespace

void run_claim_jobs(const std::vector<JobKind>& kinds, int workers,
                    const std::function<void(size_t job, int worker)>& body) {
  if (workers < 1) throw std::invalid_argument("run_claim_jobs: workers must be >= 1, got " + std::to_string(workers));
  if (kinds.empty()) return;
  Scheduler s(kinds, body);
  const int n = int(std::min<size_t>(size_t(workers), kinds.size()));
  std::vector<std::thread> threads;
  threads.reserve(size_t(n));
  for (int w = 0; w < n; ++w) {
    try {
      threads.emplace_back([&s, w] { s.worker(w); });
    } catch (const std::system_error&) {  // no more threads: the ones started take every job
      if (threads.empty()) throw;
      break;
    }
  }
  for (auto& t : threads) t.join();
  s.rethrow();
}

int default_job_count() {
  const unsigned cores = std::thread::hardware_concurrency();
  return std::clamp(int(cores), 1, kMaxJobs);
}

}  // namespace fh
