// Adding an optimizer rule: its header kernels/rules/<name>.h (the rule, its hyperparameters and
// their names) plus its #include and X(name, Type) line in kernels/rules/rule_list.h; RuleId,
// kAllRules, visit_rule, AnyHyper, the MPFR scalars variant and the device entry points' extern
// declarations expand that list. The pieces that check the rule are written by hand beside it,
// and a missing one fails here, named: the device instantiation unit
// (kernels/gpu/rule_family_<name>.cu), the MPFR twin (reference/mpfr_rules.{h,cpp}; a missing
// mpfr_scalars struct or overload already fails to compile), the measured-bound row
// (oracles/RULE_BOUNDS.md) and the hyperparameter sets it is judged under
// (reference/rule_samples.cpp). Help text and messages list kAllRules themselves.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "kernels/rules/all_rules.h"
#include "kernels/rules/hyper_fields.h"
#include "reference/mpfr_rules.h"
#include "reference/rule_samples.h"

namespace {
namespace fs = std::filesystem;
// The source tree whose files are checked; FH_RULE_REGISTRY_ROOT points it at a scratch copy with a
// piece removed (scripts/test_rule_registry_planted.sh), to show each file check can fail.
const fs::path kRoot = std::getenv("FH_RULE_REGISTRY_ROOT") ? std::getenv("FH_RULE_REGISTRY_ROOT") : FH_SOURCE_DIR;

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The list as written in rule_list.h: (name, type name) per rule, in RuleId order.
struct ListedRule { fh::RuleId id; std::string name, type; };
const std::vector<ListedRule>& listed_rules() {
#define FH_LISTED_RULE(name, Type) {fh::RuleId::name, #name, #Type},
  static const std::vector<ListedRule> rules = {FH_RULES(FH_LISTED_RULE)};
#undef FH_LISTED_RULE
  return rules;
}

// The number of members of an aggregate: the most brace initializers it accepts.
struct AnyMember {
  template <class T>
  operator T() const;
};
template <class T, class... A>
constexpr size_t member_count() {
  if constexpr (requires { T{A{}..., AnyMember{}}; }) return member_count<T, A..., AnyMember>();
  else return sizeof...(A);
}

void PrintTo(const ListedRule& r, std::ostream* os) { *os << r.name; }  // readable gtest parameters

class rule_registry : public ::testing::TestWithParam<ListedRule> {};

TEST(rule_list, AgreesWithTheRuntimeRegistry) {
  static_assert(std::variant_size_v<fh::AnyHyper> == std::size(fh::kAllRules),
                "AnyHyper and kAllRules must list the same rules");
  ASSERT_EQ(listed_rules().size(), std::size(fh::kAllRules));
  for (size_t i = 0; i < listed_rules().size(); ++i) {
    EXPECT_EQ(listed_rules()[i].id, fh::kAllRules[i]);
    EXPECT_EQ(fh::parse_rule(listed_rules()[i].name), fh::kAllRules[i]) << listed_rules()[i].name;
  }
}

TEST_P(rule_registry, HasItsDeviceInstantiation) {
  const ListedRule& r = GetParam();
  EXPECT_TRUE(fs::exists(kRoot / "kernels/rules" / (r.name + ".h"))) << r.name << ": no kernels/rules/" << r.name << ".h";
  const fs::path family = kRoot / "kernels/gpu" / ("rule_family_" + r.name + ".cu");
  ASSERT_TRUE(fs::exists(family)) << r.name << ": no device instantiation " << family
                                  << " (one line: FH_GPU_INSTANTIATE_RULE_FAMILY(" << r.type << "))";
  EXPECT_NE(slurp(family).find("FH_GPU_INSTANTIATE_RULE_FAMILY(" + r.type + ")"), std::string::npos)
      << r.name << ": " << family << " does not instantiate FH_GPU_INSTANTIATE_RULE_FAMILY(" << r.type << ")";
}

TEST_P(rule_registry, HasItsBoundRow) {
  const ListedRule& r = GetParam();
  EXPECT_NE(slurp(kRoot / "oracles/RULE_BOUNDS.md").find("\n| " + r.name + " |"), std::string::npos)
      << r.name << ": oracles/RULE_BOUNDS.md has no measured-bound row \"| " << r.name << " |\"";
}

TEST_P(rule_registry, HasItsMpfrTwinAndNamesEveryHyperparameter) {
  const ListedRule& r = GetParam();
  const fh::RuleConfig rc = fh::default_rule_config(r.id);
  fh::visit_rule(r.id, [&](auto rule) {
    typename decltype(rule)::Hyper h;
    EXPECT_EQ(fh::hyper_fields(h).size(), member_count<decltype(h)>())
        << r.name << ": Hyper::fields in kernels/rules/" << r.name << ".h does not name every hyperparameter";
  });
  // The MPFR twin exists, bounds an ordinary element, and has its literal cross-check.
  const float st[fh::kMaxStates] = {};
  fh::RuleRefResult ref;
  ASSERT_NO_THROW(ref = fh::mpfr_rule_step(rc, 1, 0.5f, 0.25f, st)) << r.name << ": no MPFR twin";
  EXPECT_TRUE(ref.in_range) << r.name;
  fh::RuleElement e;
  e.p = 0.5f;
  e.g = 0.25f;
  EXPECT_NO_THROW(fh::mpfr_rule_torch_literal(rc, 1, {e})) << r.name << ": no literal MPFR formulas";
}

TEST_P(rule_registry, HasHyperparameterSetsToBeJudgedUnder) {
  const ListedRule& r = GetParam();
  const std::vector<fh::NamedRuleConfig> sets = fh::rule_hyper_sets(r.id);
  ASSERT_FALSE(sets.empty()) << r.name << ": reference/rule_samples.cpp's rule_hyper_sets gives no hyperparameter "
                             << "set, so rules_vs_mpfr would judge no sample of it";
  std::set<std::string> names;
  for (const fh::NamedRuleConfig& s : sets) {
    EXPECT_EQ(s.config.id, r.id) << r.name << "/" << s.name << ": a set of another rule";
    EXPECT_TRUE(names.insert(s.name).second) << r.name << "/" << s.name << ": named twice";
  }
  // A set says which flags it turns: a flag named in the set's name (its first word) is one it flips
  // from the default, and it flips no other. A set whose flag silently falls back to the default
  // judges nothing new (mutate.py --changed found wd0.01_maximize's maximize could be dropped unseen).
  fh::visit_rule(r.id, [&](auto rule) {
    using Hyper = typename decltype(rule)::Hyper;
    Hyper defaults;
    std::map<std::string, bool> default_flag;
    for (const fh::HyperField& f : fh::hyper_fields(defaults))
      if (f.flag) default_flag[f.name] = *f.flag;
    for (const fh::NamedRuleConfig& s : sets) {
      Hyper h = fh::hyper_of<decltype(rule)>(s.config);
      for (const fh::HyperField& f : fh::hyper_fields(h)) {
        if (!f.flag) continue;
        const std::string word = std::string(f.name).substr(0, std::string(f.name).find('_'));  // "decoupled"
        const bool named = s.name.find(word) != std::string::npos;
        EXPECT_EQ(named, *f.flag != default_flag[f.name])
            << r.name << "/" << s.name << ": flag " << f.name << " is " << *f.flag << ", the name "
            << (named ? "says it is flipped" : "does not say so");
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(EveryListedRule, rule_registry, ::testing::ValuesIn(listed_rules()),
                         [](const auto& info) { return info.param.name; });

// Every device instantiation unit belongs to a listed rule (a renamed or removed rule leaves none behind).
TEST(rule_list, EveryRuleFamilyUnitIsListed) {
  std::set<std::string> names;
  for (const ListedRule& r : listed_rules()) names.insert(r.name);
  int units = 0;
  for (const auto& entry : fs::directory_iterator(kRoot / "kernels/gpu")) {
    const std::string file = entry.path().filename().string();
    if (!file.starts_with("rule_family_") || !file.ends_with(".cu")) continue;
    ++units;
    const std::string stem = file.substr(12, file.size() - 12 - 3);
    EXPECT_TRUE(names.count(stem)) << "kernels/gpu/" << file << ": no rule " << stem << " in kernels/rules/rule_list.h";
  }
  EXPECT_EQ(units, int(listed_rules().size()));
}

}  // namespace
