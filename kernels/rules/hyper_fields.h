// Hyperparameters by name (host only), so the CLI and the report can set and print them with
// torch.optim's names: "lr", "betas" is split into "beta1"/"beta2", booleans are 0/1.
#pragma once
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>
#include "kernels/rules/all_rules.h"

namespace fh {

struct HyperField {
  const char* name;
  double* number = nullptr;
  bool* flag = nullptr;
};

// The named fields of any rule's Hyper, from its fields() list (a number is a double, a flag a bool).
template <class Hyper>
std::vector<HyperField> hyper_fields(Hyper& h) {
  std::vector<HyperField> out;
  h.fields([&](const char* name, auto& value) {
    using T = std::remove_reference_t<decltype(value)>;
    static_assert(std::is_same_v<T, double> || std::is_same_v<T, bool>, "a hyperparameter is a double or a bool");
    if constexpr (std::is_same_v<T, bool>) out.push_back({name, nullptr, &value});
    else out.push_back({name, &value});
  });
  return out;
}

// Sets `key` to `value` if the rule has such a hyperparameter; returns whether it has one.
// Throws std::invalid_argument for a non-finite number or a flag other than 0/1, and then
// validates the whole set with the rule's own checks.
inline bool set_hyper(RuleConfig& cfg, const std::string& key, double value) {
  bool found = false;
  std::visit([&](auto& h) {
    for (HyperField& f : hyper_fields(h)) {
      if (key != f.name) continue;
      found = true;
      if (!std::isfinite(value))
        throw std::invalid_argument(std::string(rule_name(cfg.id)) + ": " + key + " must be finite");
      if (f.flag) {
        if (value != 0.0 && value != 1.0)
          throw std::invalid_argument(std::string(rule_name(cfg.id)) + ": " + key + " must be 0 or 1");
        *f.flag = value != 0.0;
      } else {
        *f.number = value;
      }
    }
  }, cfg.hyper);
  if (found) visit_rule(cfg.id, [&](auto r) { decltype(r)::validate(hyper_of<decltype(r)>(cfg)); });
  return found;
}

// The shortest decimal that reads back as the same double.
inline std::string shortest_double(double x) {
  char buf[40];
  for (int prec = 6; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  return buf;
}

// "lr=0.001 beta1=0.9 ..." for reports and tables.
inline std::string describe_hyper(const RuleConfig& cfg) {
  RuleConfig copy = cfg;
  std::string out;
  std::visit([&](auto& h) {
    for (HyperField& f : hyper_fields(h)) {
      if (!out.empty()) out += ' ';
      out += f.name;
      out += '=';
      if (f.flag) out += *f.flag ? "1" : "0";
      else out += shortest_double(*f.number);
    }
  }, copy.hyper);
  return out;
}

}  // namespace fh
