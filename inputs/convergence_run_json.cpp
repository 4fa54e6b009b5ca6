// inputs/convergence_run_json.h.
#include "inputs/convergence_run_json.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "inputs/input_file.h"
#include "inputs/text_rules.h"

namespace fh {

ConvergenceRun read_convergence_run_json(const std::string& path) {
  const std::string who = "convergence run '" + path + "'";
  const nlohmann::json doc = read_json_input(path, who);
  if (!doc.is_object()) throw std::invalid_argument(who + ": not a JSON object");
  const nlohmann::json none;  // an absent field, refused by the field's rule
  auto field = [&](const char* key) -> const nlohmann::json& { return doc.contains(key) ? doc[key] : none; };
  auto text = [&](const char* key, bool required) -> std::string {
    const nlohmann::json& v = field(key);
    if (v.is_null()) {
      if (required) throw std::invalid_argument(who + ": no \"" + key + "\"");
      return {};
    }
    if (!v.is_string()) throw std::invalid_argument(who + ": \"" + key + "\" is not a string");
    const std::string s = v.get<std::string>();
    if (const std::string p = text_problem(s); !p.empty()) throw std::invalid_argument(who + ": \"" + key + "\": " + p);
    return s;
  };
  ConvergenceRun r;
  r.path = path;
  if (text("kind", true) != "convergence_run")
    throw std::invalid_argument(who + ": \"kind\" is '" + text("kind", true) + "', not convergence_run");
  r.producer_path = text("path", true);
  if (r.producer_path != "harness" && r.producer_path != "torch" && r.producer_path != "forge_release")
    throw std::invalid_argument(who + ": \"path\" is '" + r.producer_path + "' (known: harness, torch, forge_release)");
  r.config = text("config", true);
  if (const std::string p = name_problem(r.config); !p.empty()) throw std::invalid_argument(who + ": \"config\": " + p);
  r.model = text("model", true);
  if (const std::string p = name_problem(r.model); !p.empty()) throw std::invalid_argument(who + ": \"model\": " + p);
  r.status = text("status", true);
  if (r.status != "ok" && r.status != "failed")
    throw std::invalid_argument(who + ": \"status\" is '" + r.status + "' (known: ok, failed)");
  r.error = text("error", r.status == "failed");
  r.device = text("device", false);
  r.planted = text("planted", false);
  r.update = text("update", r.producer_path == "harness");
  r.state = text("state", r.producer_path != "torch");
  r.store = text("store", r.producer_path == "harness");
  r.dtype = text("dtype", r.producer_path != "harness");
  r.init_from = text("init_from", false);
  if (!r.init_from.empty()) r.init_seed = json_integer(field("init_seed"), who, "init_seed", 0, int64_t(1) << 62);
  r.seed = json_integer(field("seed"), who, "seed", 0, int64_t(1) << 62);
  r.steps = json_integer(field("steps"), who, "steps", 1, 1000000);
  r.seq = json_integer(field("seq"), who, "seq", 1, 1 << 20);
  r.eval_every = json_integer(field("eval_every"), who, "eval_every", 1, 1000000);
  r.eval_batches = json_integer(field("eval_batches"), who, "eval_batches", 1, 1 << 20);
  r.lr = json_number(field("lr"), who, "lr", 0, 1);
  r.weight_decay = json_number(field("weight_decay"), who, "weight_decay", 0, 1);
  if (r.status != "ok") return r;
  const nlohmann::json& data = field("data");
  if (!data.is_object()) throw std::invalid_argument(who + ": \"data\" is not a JSON object");
  r.train_tokens = json_integer(data.contains("train_tokens") ? data["train_tokens"] : none, who, "data.train_tokens", 2,
                                kMaxJsonCount);
  r.heldout_tokens = json_integer(data.contains("heldout_tokens") ? data["heldout_tokens"] : none, who,
                                  "data.heldout_tokens", 2, kMaxJsonCount);
  auto losses = [&](const char* key, size_t n) {
    std::vector<double> v;
    const nlohmann::json& list = json_list(field(key), who, key, n);
    if (list.size() != n)
      throw std::invalid_argument(who + ": \"" + key + "\" holds " + std::to_string(list.size()) + " values, not " +
                                  std::to_string(n));
    for (const auto& x : list)
      v.push_back(x.is_null() ? std::numeric_limits<double>::quiet_NaN() : json_number(x, who, key, 0, 1e6));
    return v;
  };
  r.train_loss = losses("train_loss", size_t(r.steps));
  for (const auto& s : json_list(field("eval_steps"), who, "eval_steps", 1)) {
    const int64_t step = json_integer(s, who, "eval_steps", 0, r.steps);
    if ((r.eval_steps.empty() && step != 0) || (!r.eval_steps.empty() && step <= r.eval_steps.back()))
      throw std::invalid_argument(who + ": \"eval_steps\" must ascend from 0 (got " + std::to_string(step) + ")");
    r.eval_steps.push_back(step);
  }
  r.eval_loss = losses("eval_loss", r.eval_steps.size());
  if (r.producer_path == "harness") {
    const nlohmann::json& d = json_list(field("step_digests"), who, "step_digests", size_t(r.steps));
    if (d.size() != size_t(r.steps))
      throw std::invalid_argument(who + ": \"step_digests\" holds " + std::to_string(d.size()) + ", not one per step");
    for (const auto& x : d) {
      if (!x.is_string() || x.get<std::string>().size() != 16 ||
          x.get<std::string>().find_first_not_of("0123456789abcdef") != std::string::npos)
        throw std::invalid_argument(who + ": \"step_digests\" holds a value that is not 16 hex digits");
      r.step_digests.push_back(x.get<std::string>());
    }
  }
  r.nonfinite_losses = json_integer(field("nonfinite_losses"), who, "nonfinite_losses", 0, kMaxJsonCount);
  if (doc.contains("int8_v_total")) {
    r.int8_v_total = json_integer(field("int8_v_total"), who, "int8_v_total", 0, kMaxJsonCount);
    r.int8_v_zero = json_integer(field("int8_v_zero"), who, "int8_v_zero", 0, r.int8_v_total);
  }
  if (doc.contains("trace")) {
    const nlohmann::json& t = field("trace");
    if (!t.is_object()) throw std::invalid_argument(who + ": \"trace\" is not a JSON object");
    auto list = [&](const char* key) -> const nlohmann::json& {
      const std::string name = std::string("trace.") + key;
      const nlohmann::json& l = json_list(t.contains(key) ? t[key] : none, who, name, 1);
      if (l.size() > size_t(r.steps))
        throw std::invalid_argument(who + ": \"" + name + "\" holds more values than the run has steps");
      return l;
    };
    const nlohmann::json& upd = list("max_abs_update");
    for (const auto& x : upd)
      r.trace_max_update.push_back(x.is_null() ? std::numeric_limits<double>::quiet_NaN()
                                               : json_number(x, who, "trace.max_abs_update", 0, 1e38));
    for (const auto& x : list("max_update_param")) {
      if (!x.is_string()) throw std::invalid_argument(who + ": \"trace.max_update_param\" holds a value that is not a string");
      if (const std::string p = text_problem(x.get<std::string>()); !p.empty())
        throw std::invalid_argument(who + ": \"trace.max_update_param\": " + p);
      r.trace_update_param.push_back(x.get<std::string>());
    }
    const bool int8 = r.state == "int8" && r.int8_v_total >= 0;
    if (int8 != (t.contains("v_zero") || t.contains("v_zero_m_nonzero")) || (int8 && !t.contains("v_zero")))
      throw std::invalid_argument(who + ": \"trace\" holds v_zero lists " + (int8 ? "only in part" : "without INT8 state") +
                                  " (they come with INT8 state and int8_v_total)");
    if (int8) {
      for (const auto& x : list("v_zero")) r.trace_v_zero.push_back(json_integer(x, who, "trace.v_zero", 0, r.int8_v_total));
      for (const auto& x : list("v_zero_m_nonzero"))
        r.trace_v_zero_m_nonzero.push_back(json_integer(x, who, "trace.v_zero_m_nonzero", 0, r.int8_v_total));
    }
    const size_t n = r.trace_max_update.size();
    if (r.trace_update_param.size() != n || (int8 && (r.trace_v_zero.size() != n || r.trace_v_zero_m_nonzero.size() != n)))
      throw std::invalid_argument(who + ": the \"trace\" lists are not one value per traced step each");
    for (size_t i = 0; i < r.trace_v_zero.size(); ++i)
      if (r.trace_v_zero_m_nonzero[i] > r.trace_v_zero[i])
        throw std::invalid_argument(who + ": \"trace.v_zero_m_nonzero\" exceeds \"trace.v_zero\" at traced step " +
                                    std::to_string(i + 1));
  }
  if (doc.contains("grad_rel_err")) {
    const nlohmann::json& g = field("grad_rel_err");
    if (!g.is_object() || g.empty()) throw std::invalid_argument(who + ": \"grad_rel_err\" is not an object of parameters");
    for (const auto& [name, v] : g.items()) {
      if (const std::string p = text_problem(name); !p.empty())
        throw std::invalid_argument(who + ": a \"grad_rel_err\" name: " + p);
      r.grad_rel_err.emplace_back(name, json_number(v, who, "grad_rel_err", 0, 1e30));
    }
  }
  int64_t counted = 0;
  for (double x : r.train_loss) counted += !std::isfinite(x);
  for (double x : r.eval_loss) counted += !std::isfinite(x);
  if (counted != r.nonfinite_losses)
    throw std::invalid_argument(who + ": \"nonfinite_losses\" is " + std::to_string(r.nonfinite_losses) + " but " +
                                std::to_string(counted) + " losses are null");
  return r;
}

}  // namespace fh
