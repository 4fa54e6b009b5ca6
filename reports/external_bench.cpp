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

// The fields both scripts write, without the rule for a finished run (a capacity run of
// forge-model-step finishes with no single peak or time).
ModelBenchResult model_bench_fields(const nlohmann::json& doc, const std::string& path, const std::string& who) {
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
  r.layers = int64_t(num("layers", -1));
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
  return r;
}

}  // namespace

ModelBenchResult read_model_bench_json(const std::string& path) {
  const std::string who = "model bench JSON '" + path + "'";
  ModelBenchResult r = model_bench_fields(parse_file(path, who), path, who);
  if (r.status == "ok" && (r.peak_bytes < 0 || r.median_ms < 0))
    throw std::invalid_argument(who + ": status ok but no peak_bytes or median_ms");
  return r;
}

ModelStepRun read_model_step_json(const std::string& path) {
  const std::string who = "model step JSON '" + path + "'";
  const nlohmann::json doc = parse_file(path, who);
  ModelStepRun r;
  r.common = model_bench_fields(doc, path, who);
  if (r.common.model == "llama31_8b") r.common.model = "llama8b";
  if (r.common.model == "qwen3_14b") r.common.model = "qwen14b";
  const auto need = [&](const char* key) -> const nlohmann::json& {
    if (!doc.contains(key) || doc[key].is_null()) throw std::invalid_argument(who + ": no \"" + key + "\"");
    return doc[key];
  };
  try {
    r.update = need("update").get<std::string>();
    r.state = need("state").get<std::string>();
    r.store = need("store").get<std::string>();
    r.layers = need("layers").get<int64_t>();
    r.common.layers = r.layers;
    r.tied = doc.value("tied", false);
    if (doc.contains("capacity_max_tried")) {
      r.capacity_max_tried = doc["capacity_max_tried"].get<int64_t>();
      if (r.common.status == "ok") r.max_layers_fit = need("max_layers_fit").get<int64_t>();
      return r;
    }
    if (r.common.status != "ok") return r;
    if (r.common.peak_bytes < 0 || r.common.median_ms < 0)
      throw std::invalid_argument(who + ": status ok but no peak_bytes or median_ms");
    for (const auto& [k, v] : need("tag_peaks").items()) r.tag_peaks[k] = v.get<int64_t>();
    for (const auto& ph : need("timeline"))
      r.timeline.push_back({ph.at("name").get<std::string>(), ph.at("in_use").get<int64_t>(), ph.at("peak").get<int64_t>(),
                            ph.at("outside_pool").get<int64_t>(),
                            ph.contains("tags") ? ph["tags"].value("gradients_unfused", int64_t(0)) : 0});
    const auto& mm = need("memory_model");
    for (const auto& t : mm.at("terms")) r.model_terms.emplace_back(t.at("name").get<std::string>(), t.at("bytes").get<int64_t>());
    r.model_total = mm.at("total").get<int64_t>();
    r.activation_bytes = mm.at("activation_bytes").get<int64_t>();
    r.outside_pool_bytes = doc.value("outside_pool_bytes", int64_t(-1));
    r.tied_gradient_bytes = doc.value("tied_gradient_bytes", int64_t(-1));
    if (r.tied && r.tied_gradient_bytes < 0) throw std::invalid_argument(who + ": tied run without \"tied_gradient_bytes\"");
    for (const auto& d : need("dx_digests_step1")) r.dx_digests.push_back(d.get<std::string>());
    for (const auto& d : need("weight_digests")) r.weight_digests.push_back(d.get<std::string>());
    for (const auto& d : need("state_digests")) r.state_digests.push_back(d.get<std::string>());
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(who + ": " + e.what());
  }
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
