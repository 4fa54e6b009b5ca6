// Google Benchmark JSON into the report's /benchmarks group (the JSON itself is read by
// inputs/benchmark_json.h).
#pragma once
#include <string>

#include "reports/report.h"

namespace fh {

// Adds every benchmark of read_benchmark_json(json_path) to `report` (Report::add_benchmark).
// Throws std::invalid_argument naming the file, as read_benchmark_json does, or a benchmark
// already in the report.
void attach_benchmarks(Report& report, const std::string& json_path);

}  // namespace fh
