// f(i) for i in [0, n) on the host's cores (host only). The first exception stops the loop and
// is rethrown after the join.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace fh {

template <class F>
void parallel_for(int64_t n, F&& f) {
  const int64_t cores = std::max(1u, std::min(64u, std::thread::hardware_concurrency()));
  const int64_t nt = std::max<int64_t>(1, std::min<int64_t>(n, cores));
  std::atomic<int64_t> next{0};
  std::exception_ptr err;
  std::mutex err_mu;
  std::vector<std::thread> th;
  for (int64_t t = 0; t < nt; ++t)
    th.emplace_back([&] {
      for (int64_t i; (i = next.fetch_add(1)) < n;) {
        try {
          f(i);
        } catch (...) {
          std::lock_guard<std::mutex> lk(err_mu);
          if (!err) err = std::current_exception();
          next.store(n);
        }
      }
    });
  for (auto& x : th) x.join();
  if (err) std::rethrow_exception(err);
}

}  // namespace fh
