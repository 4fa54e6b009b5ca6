// reports/external_bench.h, with nlohmann-json.
#include "reports/external_bench.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

namespace fh {

namespace {

nlohmann::json parse_file(const std::string& path, const std::string& who) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(who + ": cannot open the file");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw std::invalid_argument(who + ": not valid JSON (" + e.what() + ")");
  }
}

}  // namespace

ModelBenchResult read_model_bench_json(const std::string& path) {
  const std::string who = "model bench JSON '" + path + "'";
  const nlohmann::json doc = parse_file(path, who);
  if (!doc.is_object()) throw std::invalid_argument(who + ": not a JSON object");
  ModelBenchResult r;
  r.path = path;
  auto str = [&](const char* key, bool required) -> std::string {
    if (!doc.contains(key) || doc[key].is_null()) {
      if (required) throw std::invalid_argument(who + ": no \"" + key + "\"");
      return {};
    }
    return doc[key].is_string() ? doc[key].get<std::string>() : doc[key].dump();
  };
  auto num = [&](const char* key, double fallback) -> double {
    if (!doc.contains(key) || doc[key].is_null()) return fallback;
    if (!doc[key].is_number()) throw std::invalid_argument(who + ": \"" + key + "\" is not a number");
    return doc[key].get<double>();
  };
  r.config = str("config", true);
  r.model = str("model", true);
  r.status = str("status", true);
  if (r.status != "ok" && r.status != "failed")
    throw std::invalid_argument(who + ": status must be ok or failed, got '" + r.status + "'");
  r.error = str("error", false);
  r.dtype = str("dtype", false);
  r.device = str("device", false);
  r.torch = str("torch", false);
  r.triton = str("triton", false);
  r.transformers = str("transformers", false);
  r.forge_commit = str("forge_commit", false);
  r.switches = str("switches", false);
  r.state_mode = str("state_mode", false);
  r.batch = int64_t(num("batch", 0));
  r.seq = int64_t(num("seq", 0));
  r.steps = int64_t(num("steps", 0));
  r.warmup_steps = int64_t(num("warmup_steps", 0));
  r.params = int64_t(num("params", 0));
  r.fused_params = int64_t(num("fused_params", 0));
  r.peak_bytes = num("peak_bytes", -1);
  r.median_ms = num("median_ms", -1);
  if (doc.contains("step_ms") && doc["step_ms"].is_array())
    for (const auto& v : doc["step_ms"])
      if (v.is_number()) r.step_ms.push_back(v.get<double>());
  if (doc.contains("losses") && doc["losses"].is_array())
    for (const auto& v : doc["losses"]) {
      ++r.losses;
      r.nonfinite_losses += !(v.is_number() && std::isfinite(v.get<double>()));
    }
  if (r.status == "ok" && (r.peak_bytes < 0 || r.median_ms < 0))
    throw std::invalid_argument(who + ": status ok but no peak_bytes or median_ms");
  return r;
}

std::map<std::string, std::string> read_benchmark_errors(const std::string& path) {
  const std::string who = "benchmark JSON '" + path + "'";
  const nlohmann::json doc = parse_file(path, who);
  if (!doc.is_object() || !doc.contains("benchmarks") || !doc["benchmarks"].is_array())
    throw std::invalid_argument(who + ": no \"benchmarks\" array");
  std::map<std::string, std::string> errors;
  for (const auto& run : doc["benchmarks"])
    if (run.is_object() && run.value("error_occurred", false) && run.contains("name") && run["name"].is_string())
      errors[run["name"].get<std::string>()] = run.value("error_message", std::string("(no message)"));
  return errors;
}

}  // namespace fh
