// The optimizer rules, listed once. Every per-rule list in the harness expands FH_RULES: RuleId,
// kAllRules, visit_rule and AnyHyper (all_rules.h), the MPFR twins' scalars variant
// (reference/mpfr_rules.h) and the device entry points' extern declarations
// (kernels/gpu/fused_wgrad_update.cu). A new rule is its header plus its two lines here;
// suites/cpu/test_rule_registry.cpp names each hand-written piece it still lacks.
#pragma once
#include "kernels/rules/adagrad.h"
#include "kernels/rules/adamw.h"
#include "kernels/rules/lion.h"
#include "kernels/rules/nadam.h"
#include "kernels/rules/radam.h"
#include "kernels/rules/rmsprop.h"
#include "kernels/rules/sgd.h"
#include "kernels/rules/sgd_momentum.h"

// X(name, Type): `name` is Type::kName, the RuleId enumerator and the file stem
// (kernels/rules/<name>.h, kernels/gpu/rule_family_<name>.cu); `Type` is the rule's struct.
// The order is RuleId's order, which reports and seeds depend on: append, never reorder.
// Each line ends in a backslash, so appending a rule edits no other line.
#define FH_RULES(X)             \
  X(adamw, AdamW)               \
  X(nadam, NAdam)               \
  X(radam, RAdam)               \
  X(lion, Lion)                 \
  X(rmsprop, RMSprop)           \
  X(adagrad, Adagrad)           \
  X(sgd, SGD)                   \
  X(sgd_momentum, SGDMomentum)  \
  /* a new rule's line goes above this one */
