// Google Benchmark's JSON (forge-bench --benchmark_out=FILE --benchmark_out_format=json, or an
// adapter's per-layer timings) as typed values: one BenchmarkData per run name, with the real
// time of each repetition in ns and their median. The report stores them under /benchmarks.
#pragma once
#include <limits>
#include <string>
#include <vector>

namespace fh {

// One benchmark's timings, as Google Benchmark reported them (read_benchmark_json imports
// its JSON): the real time of every repetition, in ns, and their median. The repetitions are
// kept, not only the median, so that a diff can test whether a slowdown is significant.
struct BenchmarkData {
  std::string name;                    // Google Benchmark's run name, e.g. "adamw_.../manual_time"
  std::vector<double> repetitions_ns;  // real time per repetition; empty when the JSON kept only aggregates
  double median_ns = std::numeric_limits<double>::quiet_NaN();  // median of repetitions_ns (else Google Benchmark's median)
  std::string unit = "ns";             // the unit of repetitions_ns and median_ns; always "ns"
  friend bool operator==(const BenchmarkData&, const BenchmarkData&) = default;
};

// The median of `values` (the mean of the two middle ones for an even count); NaN when empty.
double median_of(std::vector<double> values);
// The /benchmarks member that holds benchmark `name`: the name with '%' and '/' percent-encoded
// (a benchmark name contains '/', an HDF5 link name cannot), so the mapping is one to one.
std::string benchmark_key(const std::string& name);

// Parses the JSON file at `path`. Runs are grouped by Google Benchmark's run_name (its name when
// the JSON predates run_name), in the order they first appear. Iteration runs are the
// repetitions; the median is theirs. When the JSON holds only aggregates (a benchmark registered
// with ReportAggregatesOnly), the "median" aggregate is kept and the repetitions are empty.
// Other aggregates (mean, stddev, cv, BigO, RMS) and runs that reported an error are skipped.
// Throws std::invalid_argument naming `path` when the file cannot be read, is not valid or
// complete JSON (inputs/input_file.h: a regular file within the limit, no duplicate key), has
// no "benchmarks" array, or a run lacks name, a finite real_time >= 0 or a known time_unit, holds
// a cpu_time that is not a finite number >= 0 or a count or index (repetitions, threads,
// iterations, ...) that is not an integer in its range, or
// a name or run_name that cannot name a benchmark in the report (empty, over 1024 characters, a
// NUL) or an error_message that the report cannot hold.
std::vector<BenchmarkData> read_benchmark_json(const std::string& path);

}  // namespace fh
