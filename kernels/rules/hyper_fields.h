// Hyperparameters by name (host only), so the CLI and the report can set and print them with
// torch.optim's names: "lr", "betas" is split into "beta1"/"beta2", booleans are 0/1.
#pragma once
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include "kernels/rules/all_rules.h"

namespace fh {

struct HyperField {
  const char* name;
  double* number = nullptr;
  bool* flag = nullptr;
};

inline std::vector<HyperField> hyper_fields(AdamW::Hyper& h) {
  return {{"lr", &h.lr}, {"beta1", &h.beta1}, {"beta2", &h.beta2}, {"eps", &h.eps},
          {"weight_decay", &h.weight_decay}, {"maximize", nullptr, &h.maximize}};
}
inline std::vector<HyperField> hyper_fields(NAdam::Hyper& h) {
  return {{"lr", &h.lr}, {"beta1", &h.beta1}, {"beta2", &h.beta2}, {"eps", &h.eps},
          {"weight_decay", &h.weight_decay}, {"momentum_decay", &h.momentum_decay},
          {"decoupled_weight_decay", nullptr, &h.decoupled_weight_decay}, {"maximize", nullptr, &h.maximize}};
}
inline std::vector<HyperField> hyper_fields(RAdam::Hyper& h) {
  return {{"lr", &h.lr}, {"beta1", &h.beta1}, {"beta2", &h.beta2}, {"eps", &h.eps},
          {"weight_decay", &h.weight_decay},
          {"decoupled_weight_decay", nullptr, &h.decoupled_weight_decay}, {"maximize", nullptr, &h.maximize}};
}
inline std::vector<HyperField> hyper_fields(Lion::Hyper& h) {
  return {{"lr", &h.lr}, {"beta1", &h.beta1}, {"beta2", &h.beta2},
          {"weight_decay", &h.weight_decay}, {"maximize", nullptr, &h.maximize}};
}
inline std::vector<HyperField> hyper_fields(RMSprop::Hyper& h) {
  return {{"lr", &h.lr}, {"alpha", &h.alpha}, {"eps", &h.eps}, {"weight_decay", &h.weight_decay},
          {"momentum", &h.momentum}, {"centered", nullptr, &h.centered}, {"maximize", nullptr, &h.maximize}};
}
inline std::vector<HyperField> hyper_fields(Adagrad::Hyper& h) {
  return {{"lr", &h.lr}, {"lr_decay", &h.lr_decay}, {"weight_decay", &h.weight_decay},
          {"initial_accumulator_value", &h.initial_accumulator_value}, {"eps", &h.eps},
          {"maximize", nullptr, &h.maximize}};
}
inline std::vector<HyperField> hyper_fields(SGD::Hyper& h) {
  return {{"lr", &h.lr}, {"weight_decay", &h.weight_decay}, {"maximize", nullptr, &h.maximize}};
}
inline std::vector<HyperField> hyper_fields(SGDMomentum::Hyper& h) {
  return {{"lr", &h.lr}, {"momentum", &h.momentum}, {"dampening", &h.dampening},
          {"weight_decay", &h.weight_decay}, {"nesterov", nullptr, &h.nesterov},
          {"maximize", nullptr, &h.maximize}};
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
