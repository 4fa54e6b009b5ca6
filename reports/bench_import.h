// Google Benchmark's JSON (forge-bench --benchmark_out=FILE --benchmark_out_format=json) into
// the report's /benchmarks group: one BenchmarkData per run name, with the real time of each
// repetition in ns and their median.
#pragma once
#include <string>
#include <vector>

#include "reports/report.h"

namespace fh {

// Parses the JSON file at `path`. Runs are grouped by Google Benchmark's run_name (its name when
// the JSON predates run_name), in the order they first appear. Iteration runs are the
// repetitions; the median is theirs. When the JSON holds only aggregates (a benchmark registered
// with ReportAggregatesOnly), the "median" aggregate is kept and the repetitions are empty.
// Other aggregates (mean, stddev, cv, BigO, RMS) and runs that reported an error are skipped.
// Throws std::invalid_argument naming `path` when the file cannot be read, is not valid or
// complete JSON (reports/input_file.h: a regular file within the limit, no duplicate key), has
// no "benchmarks" array, or a run lacks name, a finite real_time >= 0 or a known time_unit, or
// a name or run_name that cannot name a benchmark in the report (empty, over 1024 characters, a
// NUL) or an error_message that the report cannot hold.
std::vector<BenchmarkData> read_benchmark_json(const std::string& path);

// Adds every benchmark of read_benchmark_json(json_path) to `report` (Report::add_benchmark).
// Throws std::invalid_argument naming the file, as above, or a benchmark already in the report.
void attach_benchmarks(Report& report, const std::string& json_path);

}  // namespace fh
