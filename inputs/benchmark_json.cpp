// Google Benchmark JSON -> BenchmarkData (benchmark_json.h), with nlohmann-json.
#include "inputs/benchmark_json.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "inputs/input_file.h"
#include "inputs/text_rules.h"

namespace fh {

namespace {

// A run's name goes into the report (/benchmarks/<benchmark_key(name)>) after the claims ran and
// through the claims' name patterns (std::regex, which recurses once per character: a name of
// 100000 characters overflowed the stack). Found by fuzzing: suites/fuzz/regressions/bench_json.
constexpr size_t kMaxNameChars = 1024;

// What keeps `name` from naming a benchmark in the report ("" when nothing).
std::string run_name_problem(const std::string& name) {
  if (name.size() > kMaxNameChars)
    return "is " + std::to_string(name.size()) + " characters long, over the limit of " + std::to_string(kMaxNameChars);
  if (auto p = text_problem(name); !p.empty()) return p;
  if (auto p = name_problem(benchmark_key(name)); !p.empty()) return "cannot name a benchmark: " + p;
  return {};
}

// `name` for a message: at most 80 characters of it, control characters as \xNN.
std::string shown(const std::string& name) {
  std::string out;
  for (size_t k = 0; k < name.size() && k < 80; ++k) {
    const unsigned char c = static_cast<unsigned char>(name[k]);
    if (c < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += std::string("\\x") + hex[c >> 4] + hex[c & 15];
    } else {
      out += char(c);
    }
  }
  return name.size() > 80 ? out + "..." : out;
}

// Google Benchmark's time units (benchmark::TimeUnit) in ns.
double ns_per(const std::string& unit) {
  if (unit == "ns") return 1;
  if (unit == "us") return 1e3;
  if (unit == "ms") return 1e6;
  if (unit == "s") return 1e9;
  return std::nan("");
}

struct Pending {
  std::vector<double> repetitions_ns;
  double aggregate_median_ns = std::nan("");
};

}  // namespace

std::vector<BenchmarkData> read_benchmark_json(const std::string& path) {
  const std::string who = "benchmark JSON '" + path + "'";
  const nlohmann::json doc = read_json_input(path, who);
  if (!doc.is_object() || !doc.contains("benchmarks") || !doc["benchmarks"].is_array())
    throw std::invalid_argument(who + ": no \"benchmarks\" array (is it Google Benchmark's --benchmark_out JSON?)");

  std::vector<std::string> order;  // run names, first appearance first
  std::map<std::string, Pending> runs;
  size_t index = 0;
  for (const auto& run : doc["benchmarks"]) {
    const std::string where = who + ": benchmarks[" + std::to_string(index++) + "]";
    if (!run.is_object()) throw std::invalid_argument(where + " is not an object");
    auto str = [&](const char* key, bool required) -> std::string {
      if (!run.contains(key)) {
        if (required) throw std::invalid_argument(where + " has no \"" + key + "\"");
        return {};
      }
      if (!run[key].is_string()) throw std::invalid_argument(where + ": \"" + key + "\" is not a string");
      return run[key].get<std::string>();
    };
    const std::string name = str("name", true);
    if (const std::string why = run_name_problem(name); !why.empty())
      throw std::invalid_argument(where + ": \"name\" '" + shown(name) + "' " + why);
    // Google Benchmark's own numbers, in every run that has them (the user's counters are free):
    // counts and indices integers in range, cpu_time a time like real_time (checked below).
    for (const auto& [key, lo] : {std::pair<const char*, int64_t>{"repetitions", 1}, {"repetition_index", 0},
                                  {"threads", 1}, {"iterations", 0}, {"family_index", 0},
                                  {"per_family_instance_index", 0}})
      if (run.contains(key)) json_integer(run[key], where, key, lo, kMaxJsonCount);
    if (run.contains("cpu_time")) json_number(run["cpu_time"], where, "cpu_time", 0, HUGE_VAL);
    if (run.contains("error_occurred") && !run["error_occurred"].is_boolean())
      throw std::invalid_argument(where + " ('" + name + "'): \"error_occurred\" is not true or false");
    if (run.value("error_occurred", false)) {
      // A failed run has no time to compare; its message becomes a check's reason.
      const std::string message = str("error_message", false);
      if (const std::string why = text_problem(message); !why.empty())
        throw std::invalid_argument(where + " ('" + name + "'): \"error_message\": " + why);
      continue;
    }
    const std::string run_name = run.contains("run_name") ? str("run_name", true) : name;
    if (const std::string why = run_name_problem(run_name); !why.empty())
      throw std::invalid_argument(where + ": \"run_name\" '" + shown(run_name) + "' " + why);
    const std::string run_type = run.contains("run_type") ? str("run_type", true) : "iteration";
    const std::string aggregate = str("aggregate_name", false);
    if (run_type == "aggregate" && aggregate != "median") continue;
    if (!run.contains("real_time") || !run["real_time"].is_number())
      throw std::invalid_argument(where + " ('" + name + "') has no numeric \"real_time\"");
    const std::string unit = str("time_unit", false);
    const double scale = ns_per(unit.empty() ? "ns" : unit);  // Google Benchmark's default is ns
    if (std::isnan(scale))
      throw std::invalid_argument(where + " ('" + name + "'): unknown time_unit '" + unit + "'");
    // A negative or infinite time would turn a ratio's verdict around.
    const double t_ns = run["real_time"].get<double>() * scale;
    if (!std::isfinite(t_ns) || t_ns < 0)
      throw std::invalid_argument(where + " ('" + name + "'): \"real_time\" must be finite and >= 0, got " +
                                  run["real_time"].dump());
    if (!runs.count(run_name)) order.push_back(run_name);
    Pending& p = runs[run_name];
    if (run_type == "aggregate") p.aggregate_median_ns = t_ns;
    else p.repetitions_ns.push_back(t_ns);
  }

  std::vector<BenchmarkData> out;
  for (const auto& name : order) {
    Pending& p = runs[name];
    BenchmarkData b;
    b.name = name;
    b.repetitions_ns = std::move(p.repetitions_ns);
    b.median_ns = b.repetitions_ns.empty() ? p.aggregate_median_ns : median_of(b.repetitions_ns);
    out.push_back(std::move(b));
  }
  return out;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + mid);
  return lower + (upper - lower) / 2;
}

std::string benchmark_key(const std::string& name) {
  std::string key;
  for (char ch : name) {
    if (ch == '%') key += "%25";
    else if (ch == '/') key += "%2F";
    else key += ch;
  }
  // "." and ".." cannot be link names: encode a name made only of dots.
  if (!key.empty() && key.find_first_not_of('.') == std::string::npos) {
    std::string dots;
    for (size_t i = 0; i < key.size(); ++i) dots += "%2E";
    key = dots;
  }
  return key;
}

}  // namespace fh
