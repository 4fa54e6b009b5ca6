// Host-twin claims (no GPU): Proposition 1 bitwise, schedule invariance, Corollary 1 on the CPU,
// the non-separable falsifier, and the power of these suites against planted defects. The
// runners live beside the twin (kernels/twin/twin_claims.h); this file maps the configuration
// in and the results into the report.
#include <cmath>

#include "kernels/twin/twin_claims.h"
#include "reports/claim_record.h"
#include "suites/forge_verify/verify_config.h"

namespace fh {
namespace {

void record(Report& report, const std::vector<ClaimCaseResult>& results, const std::string& claim) {
  record_claim_cases(report, results, claim);
}

std::vector<RuleId> rule_ids(const VerifyConfig& cfg) {
  std::vector<RuleId> ids;
  for (const auto& rc : cfg.rules) ids.push_back(rc.id);
  return ids;
}

void run_prop1(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  Prop1Config pc;
  pc.seed = cfg.seed;
  pc.steps = int(cfg.steps);
  TwinShapeCase shape;
  shape.out = cfg.out; shape.in = cfg.in; shape.T = cfg.tokens;
  pc.shapes = {shape};
  pc.rules = rule_ids(cfg);
  pc.rule_configs = cfg.rules;
  pc.formats = cfg.formats;
  pc.stores = cfg.stores;
  const auto results = run_prop1_cases(pc);
  record(report, results, "prop1_twin");
  progress.note(std::to_string(results.size()) + " cases, " + std::to_string(cfg.steps) + " steps each, shape " + shape.label());
}

void run_schedule(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  ScheduleInvarianceConfig sc;
  sc.seed = cfg.seed;
  const auto results = run_schedule_invariance_cases(sc);
  record(report, results, "schedule_invariance");
  progress.note(std::to_string(results.size()) + " cases");
}

void run_corollary1(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  Corollary1Config cc;
  cc.seed = cfg.seed;
  cc.rules = rule_ids(cfg);
  cc.rule_configs = cfg.rules;
  cc.stores = cfg.stores;
  const auto results = run_corollary1_cases(cc);
  record(report, results, "corollary1_cpu");
  progress.note(std::to_string(results.size()) + " cases");
}

void run_nonseparable(const VerifyConfig& cfg, Report& report, const Progress&) {
  NonseparableConfig nc;
  nc.seed = cfg.seed;
  record(report, run_nonseparable_cases(nc), "nonseparable_falsifier");
}

void run_planted(const VerifyConfig& cfg, Report& report, const Progress&) {
  record(report, run_planted_defect_cases("", cfg.seed), "suite_power_planted_defects");
}

}  // namespace

void add_twin_claims(std::vector<ClaimSpec>& out) {
  out.push_back({"prop1_twin", "Proposition 1: fused twin equals the order-matched two-phase step, bitwise", false, run_prop1});
  out.push_back({"schedule_invariance", "tile order/shape and TK change no bit; grouping or split-K moves the verdict to bounded", false, run_schedule});
  out.push_back({"corollary1_cpu", "Corollary 1: twin vs exact-gradient step differs only through G", false, run_corollary1});
  out.push_back({"nonseparable_falsifier", "a non-separable update (tile-local LAMB trust ratio) must break under tiling", false, run_nonseparable});
  out.push_back({"suite_power_planted_defects", "each planted defect makes its claim fail", false, run_planted});
}

}  // namespace fh
