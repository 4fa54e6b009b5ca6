// inputs/external_bench.h, with nlohmann-json.
#include "inputs/external_bench.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "inputs/input_file.h"
#include "inputs/text_rules.h"

namespace fh {

namespace {

constexpr int64_t kMaxLayers = 1000;               // forge-model-step's --layers and --capacity limit
constexpr int64_t kMaxBytes = int64_t(1) << 50;    // any byte count a measurement records

// `s` unless it is none of `known`.
const std::string& one_of(const std::string& s, std::initializer_list<const char*> known, const std::string& who,
                          const std::string& field) {
  std::string list;
  for (const char* k : known) {
    if (s == k) return s;
    list += (list.empty() ? "" : ", ") + std::string(k);
  }
  throw std::invalid_argument(who + ": \"" + field + "\" is '" + s + "' (known: " + list + ")");
}

// The fields both scripts write, without the rule for a finished run (a capacity run of
// forge-model-step finishes with no single peak or time). The model is canonicalised
// (llama31_8b -> llama8b, qwen3_14b -> qwen14b: scripts/forge_model_bench.py's names).
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
  // Absent, null or negative: not measured (a finished run without one is refused below).
  auto num = [&](const char* key, double fallback) -> double {
    if (!doc.contains(key) || doc[key].is_null()) return fallback;
    if (!doc[key].is_number()) throw std::invalid_argument(who + ": \"" + key + "\" is not a number");
    return doc[key].get<double>();
  };
  auto count = [&](const char* key, int64_t fallback, int64_t lo, int64_t hi) -> int64_t {
    if (!doc.contains(key) || doc[key].is_null()) return fallback;
    return json_integer(doc[key], who, key, lo, hi);
  };
  r.config = str("config", true);
  r.model = str("model", true);
  if (r.model == "llama31_8b") r.model = "llama8b";
  if (r.model == "qwen3_14b") r.model = "qwen14b";
  one_of(r.model, {"llama8b", "qwen14b", "qwen3_0p6b", "qwen3_1p7b", "qwen3_4b", "qwen3_8b", "gpt2_124m", "tiny"}, who,
         "model");
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
  // Each reaches the report as a case attribute and config.model names the case: the report must
  // take them (a NUL or a '/' failed the claim). Found by fuzzing: suites/fuzz/regressions/model_*.
  for (const auto& [field, value] : {std::pair<const char*, const std::string*>{"config", &r.config}, {"status", &r.status},
                                     {"error", &r.error}, {"dtype", &r.dtype}, {"device", &r.device}, {"torch", &r.torch},
                                     {"triton", &r.triton}, {"transformers", &r.transformers},
                                     {"forge_commit", &r.forge_commit}, {"switches", &r.switches},
                                     {"state_mode", &r.state_mode}})
    if (const std::string why = text_problem(*value); !why.empty())
      throw std::invalid_argument(who + ": \"" + field + "\": " + why);
  if (const std::string why = name_problem(r.config); !why.empty())
    throw std::invalid_argument(who + ": \"config\" names the report's case (config.model): " + why);
  r.batch = count("batch", 0, 0, kMaxJsonCount);
  r.seq = count("seq", 0, 0, kMaxJsonCount);
  r.steps = count("steps", 0, 0, kMaxJsonCount);
  r.warmup_steps = count("warmup_steps", 0, 0, kMaxJsonCount);
  r.params = count("params", 0, 0, kMaxJsonCount);
  r.fused_params = count("fused_params", 0, 0, kMaxJsonCount);
  r.layers = count("layers", -1, 1, kMaxLayers);
  r.peak_bytes = num("peak_bytes", -1);
  r.median_ms = num("median_ms", -1);
  // Lists of measurements: a finished run's cannot be empty (it would pass for a run that timed
  // nothing); a failed run keeps what it measured before it failed, maybe nothing.
  const auto measured = [&](const char* key) -> const nlohmann::json* {
    if (!doc.contains(key) || doc[key].is_null()) return nullptr;
    return &json_list(doc[key], who, key, r.status == "ok" ? 1 : 0);
  };
  if (const nlohmann::json* times = measured("step_ms"))
    for (size_t i = 0; i < times->size(); ++i)
      r.step_ms.push_back(json_number((*times)[i], who, "step_ms[" + std::to_string(i) + "]", 0, HUGE_VAL));
  if (const nlohmann::json* losses = measured("losses"))
    for (const auto& v : *losses) {
      ++r.losses;
      r.nonfinite_losses += !(v.is_number() && std::isfinite(v.get<double>()));
    }
  return r;
}

}  // namespace

ModelBenchResult read_model_bench_json(const std::string& path) {
  const std::string who = "model bench JSON '" + path + "'";
  const nlohmann::json doc = read_json_input(path, who);
  // forge-model-step writes "update"; scripts/forge_model_bench.py never does.
  if (doc.is_object() && doc.contains("update"))
    throw std::invalid_argument(who + ": a forge-model-step run (it has \"update\"), not forge_model_bench.py's; "
                                "give it as --model-step");
  ModelBenchResult r = model_bench_fields(doc, path, who);
  if (r.status == "ok" && (r.peak_bytes < 0 || r.median_ms < 0))
    throw std::invalid_argument(who + ": status ok but no peak_bytes or median_ms");
  return r;
}

ModelStepRun read_model_step_json(const std::string& path) {
  const std::string who = "model step JSON '" + path + "'";
  const nlohmann::json doc = read_json_input(path, who);
  ModelStepRun r;
  r.common = model_bench_fields(doc, path, who);
  const auto need = [&](const char* key) -> const nlohmann::json& {
    if (!doc.contains(key) || doc[key].is_null()) throw std::invalid_argument(who + ": no \"" + key + "\"");
    return doc[key];
  };
  const auto bytes = [&](const nlohmann::json& v, const std::string& field) { return json_integer(v, who, field, 0, kMaxBytes); };
  try {
    // Each of these picks which checks run: an unknown one would silently drop them.
    r.update = one_of(need("update").get<std::string>(), {"fused", "standard", "standard_cublas"}, who, "update");
    r.state = one_of(need("state").get<std::string>(), {"bf16", "fp32", "int8"}, who, "state");
    r.store = one_of(need("store").get<std::string>(), {"bf16_rne", "bf16_sr", "fp32_master"}, who, "store");
    r.layers = json_integer(need("layers"), who, "layers", 1, kMaxLayers);
    r.common.layers = r.layers;
    r.tied = doc.value("tied", false);
    if (doc.contains("tp")) r.tp = json_integer(doc["tp"], who, "tp", 1, 64);
    if (doc.contains("collective_bytes_modeled"))
      r.collective_bytes_modeled = bytes(doc["collective_bytes_modeled"], "collective_bytes_modeled");
    if (doc.contains("collective_bytes_allocated"))
      r.collective_bytes_allocated = bytes(doc["collective_bytes_allocated"], "collective_bytes_allocated");
    if (doc.contains("device_total_bytes")) r.device_total_bytes = bytes(doc["device_total_bytes"], "device_total_bytes");
    if (doc.contains("device_used_at_start"))
      r.device_used_at_start = bytes(doc["device_used_at_start"], "device_used_at_start");
    if (doc.contains("capacity_batch_max_tried")) {
      r.capacity_batch_max_tried = json_integer(doc["capacity_batch_max_tried"], who, "capacity_batch_max_tried", 1, 4096);
      if (r.common.status == "ok")
        r.max_batch_fit = json_integer(need("max_batch_fit"), who, "max_batch_fit", 0, r.capacity_batch_max_tried);
      return r;
    }
    if (doc.contains("capacity_max_tried")) {
      r.capacity_max_tried = json_integer(doc["capacity_max_tried"], who, "capacity_max_tried", 1, kMaxLayers);
      if (r.common.status == "ok")
        r.max_layers_fit = json_integer(need("max_layers_fit"), who, "max_layers_fit", 0, r.capacity_max_tried);
      return r;
    }
    if (r.common.status != "ok") return r;
    if (r.common.peak_bytes < 0 || r.common.median_ms < 0)
      throw std::invalid_argument(who + ": status ok but no peak_bytes or median_ms");
    // Tag, phase and term names are listed in the report's descriptions and attributes.
    const auto text = [&](const std::string& s, const std::string& field) -> const std::string& {
      if (const std::string why = text_problem(s); !why.empty())
        throw std::invalid_argument(who + ": " + field + ": " + why);
      return s;
    };
    for (const auto& [k, v] : need("tag_peaks").items()) r.tag_peaks[text(k, "a tag_peaks key")] = bytes(v, "tag_peaks." + k);
    for (const auto& ph : need("timeline")) {
      const std::string at = "timeline." + text(ph.at("name").get<std::string>(), "a timeline name") + ".";
      r.timeline.push_back({ph.at("name").get<std::string>(), bytes(ph.at("in_use"), at + "in_use"),
                            bytes(ph.at("peak"), at + "peak"),
                            json_integer(ph.at("outside_pool"), who, at + "outside_pool", -kMaxBytes, kMaxBytes),
                            ph.contains("tags") && ph["tags"].contains("gradients_unfused")
                                ? bytes(ph["tags"]["gradients_unfused"], at + "tags.gradients_unfused")
                                : 0});
    }
    const auto& mm = need("memory_model");
    for (const auto& t : mm.at("terms"))
      r.model_terms.emplace_back(text(t.at("name").get<std::string>(), "a memory_model term name"),
                                 bytes(t.at("bytes"), "memory_model.terms.bytes"));
    r.model_total = bytes(mm.at("total"), "memory_model.total");
    r.activation_bytes = bytes(mm.at("activation_bytes"), "memory_model.activation_bytes");
    if (doc.contains("outside_pool_bytes"))
      r.outside_pool_bytes = json_integer(doc["outside_pool_bytes"], who, "outside_pool_bytes", -kMaxBytes, kMaxBytes);
    if (doc.contains("tied_gradient_bytes")) r.tied_gradient_bytes = bytes(doc["tied_gradient_bytes"], "tied_gradient_bytes");
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
  const nlohmann::json doc = read_json_input(path, who);
  if (!doc.is_object() || !doc.contains("benchmarks") || !doc["benchmarks"].is_array())
    throw std::invalid_argument(who + ": no \"benchmarks\" array");
  std::map<std::string, std::string> errors;
  for (const auto& run : doc["benchmarks"])
    if (run.is_object() && run.value("error_occurred", false) && run.contains("name") && run["name"].is_string())
      errors[run["name"].get<std::string>()] =
          run.contains("error_message") && run["error_message"].is_string() ? run["error_message"].get<std::string>()
                                                                             : "(no message)";
  return errors;
}

}  // namespace fh
