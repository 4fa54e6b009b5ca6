// Adding an optimizer rule: the rule is one header (kernels/rules/<name>.h) plus its line in
// kernels/rules/all_rules.h (RuleId, kAllRules, visit_rule, AnyHyper). What must still be
// written by hand beside it is checked here, so that forgetting it fails CI: the device
// instantiation unit (kernels/gpu/rule_family_<name>.cu), the MPFR twin
// (reference/mpfr_rules.cpp), the bound note (oracles/RULE_BOUNDS.md) and the hyperparameter
// names (kernels/rules/hyper_fields.h). Help text and messages list kAllRules themselves.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>

#include "kernels/rules/all_rules.h"
#include "kernels/rules/hyper_fields.h"
#include "reference/mpfr_rules.h"

namespace {
namespace fs = std::filesystem;
const fs::path kRoot = FH_SOURCE_DIR;

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(rule_registry, EveryRuleHasItsPieces) {
  static_assert(std::variant_size_v<fh::AnyHyper> == std::size(fh::kAllRules),
                "AnyHyper and kAllRules must list the same rules");
  const std::string bounds = slurp(kRoot / "oracles/RULE_BOUNDS.md");
  for (fh::RuleId id : fh::kAllRules) {
    const std::string name = fh::rule_name(id);
    EXPECT_EQ(fh::parse_rule(name), id) << name;
    EXPECT_TRUE(fs::exists(kRoot / "kernels/rules" / (name + ".h"))) << name << ": no kernels/rules/" << name << ".h";
    const fs::path family = kRoot / "kernels/gpu" / ("rule_family_" + name + ".cu");
    ASSERT_TRUE(fs::exists(family)) << name << ": no device instantiation " << family;
    EXPECT_NE(slurp(family).find("FH_GPU_INSTANTIATE_RULE_FAMILY("), std::string::npos) << family;
    EXPECT_NE(bounds.find("\n| " + name + " |"), std::string::npos)
        << name << ": oracles/RULE_BOUNDS.md has no measured-bound row for it";
    const fh::RuleConfig rc = fh::default_rule_config(id);
    EXPECT_FALSE(fh::describe_hyper(rc).empty()) << name;
    // The MPFR twin exists and bounds an ordinary element.
    const float st[fh::kMaxStates] = {};
    fh::RuleRefResult ref;
    ASSERT_NO_THROW(ref = fh::mpfr_rule_step(rc, 1, 0.5f, 0.25f, st)) << name << ": no MPFR twin";
    EXPECT_TRUE(ref.in_range) << name;
  }
}

}  // namespace
