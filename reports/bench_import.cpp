// reports/bench_import.h.
#include "reports/bench_import.h"

#include <stdexcept>

#include "inputs/benchmark_json.h"

namespace fh {

void attach_benchmarks(Report& report, const std::string& json_path) {
  for (auto& b : read_benchmark_json(json_path)) {
    try {
      report.add_benchmark(std::move(b));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("benchmark JSON '" + json_path + "': " + e.what());
    }
  }
}

}  // namespace fh
