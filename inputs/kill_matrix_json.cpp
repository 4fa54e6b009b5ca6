// inputs/kill_matrix_json.h.
#include "inputs/kill_matrix_json.h"

#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "inputs/input_file.h"
#include "inputs/text_rules.h"

namespace fh {

KillMatrix read_kill_matrix_json(const std::string& path) {
  const std::string who = "kill matrix '" + path + "'";
  const nlohmann::json doc = read_json_input(path, who);
  if (!doc.is_object()) throw std::invalid_argument(who + ": not a JSON object");
  auto text = [&](const nlohmann::json& o, const char* key, bool required, const std::string& where) -> std::string {
    if (!o.contains(key) || o[key].is_null()) {
      if (required) throw std::invalid_argument(who + ": " + where + "no \"" + key + "\"");
      return {};
    }
    if (!o[key].is_string()) throw std::invalid_argument(who + ": " + where + "\"" + key + "\" is not a string");
    const std::string s = o[key].get<std::string>();
    if (const std::string p = text_problem(s); !p.empty())
      throw std::invalid_argument(who + ": " + where + "\"" + key + "\": " + p);
    return s;
  };
  auto strings = [&](const nlohmann::json& o, const char* key, const std::string& where) {
    std::vector<std::string> v;
    if (!o.contains(key)) return v;
    for (const auto& e : json_list(o[key], who, where + key, 0)) {
      if (!e.is_string()) throw std::invalid_argument(who + ": " + where + "\"" + key + "\" holds a non-string");
      v.push_back(e.get<std::string>());
      if (const std::string p = text_problem(v.back()); !p.empty())
        throw std::invalid_argument(who + ": " + where + "\"" + key + "\": " + p);
    }
    return v;
  };
  const nlohmann::json none;  // an absent field, refused by the field's rule
  KillMatrix m;
  m.path = path;
  m.tool = text(doc, "tool", true, "");
  if (m.tool != "scripts/mutate.py" && m.tool != "scripts/mutate_gpu.py")
    throw std::invalid_argument(who + ": \"tool\" is '" + m.tool + "' (known: scripts/mutate.py, scripts/mutate_gpu.py)");
  if (!doc.contains("complete") || !doc["complete"].is_boolean())
    throw std::invalid_argument(who + ": \"complete\" must be true or false");
  m.complete = doc["complete"].get<bool>();
  m.reps = json_integer(doc.contains("reps") ? doc["reps"] : none, who, "reps", 1, 100);
  m.device = text(doc, "device", false, "");
  m.revision = text(doc, "revision", false, "");
  const nlohmann::json& rows = json_list(doc.contains("mutants") ? doc["mutants"] : none, who, "mutants", 0);
  std::set<std::string> seen;
  for (const auto& r : rows) {
    if (!r.is_object()) throw std::invalid_argument(who + ": a mutant is not a JSON object");
    KillMatrixMutant k;
    k.id = text(r, "id", true, "a mutant: ");
    const std::string where = "mutant " + k.id + ": ";
    if (const std::string p = name_problem(k.id); !p.empty()) throw std::invalid_argument(who + ": " + where + "id: " + p);
    if (!seen.insert(k.id).second) throw std::invalid_argument(who + ": mutant " + k.id + " is given twice");
    k.layer = text(r, "layer", true, where);
    k.file = text(r, "file", false, where);
    k.why = text(r, "why", false, where);
    k.status = text(r, "status", true, where);
    if (k.status != "killed" && k.status != "survived" && k.status != "flaky" && k.status != "build_error")
      throw std::invalid_argument(who + ": " + where + "\"status\" is '" + k.status +
                                  "' (known: killed, survived, flaky, build_error)");
    k.equivalent = text(r, "equivalent", false, where);
    k.killed_by = strings(r, "killed_by", where);
    k.kill_units = strings(r, "kill_units", where);
    k.flaky_kills = strings(r, "flaky_kills", where);
    k.expected_but_survived = strings(r, "expected_but_survived", where);
    if ((k.status == "killed") != !k.killed_by.empty())
      throw std::invalid_argument(who + ": " + where + "status " + k.status + " but " +
                                  std::to_string(k.killed_by.size()) + " killing tests");
    // The first killing test's message: what a reader needs to see why the mutant died.
    if (!k.killed_by.empty() && r.contains("tests") && r["tests"].is_object() && r["tests"].contains(k.killed_by[0]))
      k.first_message = text(r["tests"][k.killed_by[0]], "message", false, where);
    if (k.status == "build_error" && r.contains("build") && r["build"].is_object())
      k.first_message = text(r["build"], "error", false, where);
    m.mutants.push_back(std::move(k));
  }
  return m;
}

}  // namespace fh
