#include "suites/claims/suite_power_planted_defects.h"

#include <stdexcept>

#include "suites/claims/corollary1_cpu.h"
#include "suites/claims/prop1_twin.h"
#include "suites/claims/schedule_invariance.h"

namespace fh {

std::vector<ClaimCaseResult> run_planted_defect_cases(const std::string& claim, uint64_t seed) {
  if (!claim.empty() && claim != "prop1_twin" && claim != "schedule_invariance" && claim != "corollary1")
    throw std::invalid_argument("run_planted_defect_cases: unknown claim '" + claim + "'");
  struct Planted { std::string name; TwinPlantedDefects d; };
  std::vector<Planted> planted(3);
  planted[0].name = "align_bits 24 in the twin's instruction model";
  planted[0].d.align_bits = 24;
  planted[1].name = "tile 0's state pointer one row off";
  planted[1].d.state_row_offset_tile = 0;
  planted[2].name = "dX computed from W after the update";
  planted[2].d.dx_after_update = true;

  // The defect is seen when the claim's verdict is FAIL: some case fails.
  auto seen_case = [](const std::string& case_name, const std::vector<ClaimCaseResult>& rs) {
    ClaimCaseResult r;
    r.claim = "planted_defects";
    r.case_name = case_name;
    int64_t failed = 0;
    for (const auto& c : rs)
      if (!c.pass && !c.not_run) {
        if (failed++ == 0) {
          r.first_diff = c.case_name + ": " + (c.first_diff.empty() ? c.note : c.first_diff);
          r.max_ulp = c.max_ulp;
        }
        r.differing += c.differing;
      }
    judge_case(r, double(failed), 0, PassIf::above);  // failing cases: > 0 is the verdict (the defect is seen)
    r.note = std::to_string(failed) + " of " + std::to_string(rs.size()) + " cases fail" +
             (failed > 0 ? " (defect seen)" : " (defect NOT seen)");
    return r;
  };
  std::vector<ClaimCaseResult> results;
  for (const auto& p : planted) {
    if (claim.empty() || claim == "prop1_twin") {
      Prop1Config c;
      c.seed = seed;
      c.steps = 2;
      c.shapes = {{72, 136, 40, 32, 64}};
      c.rules = {RuleId::adamw};
      c.formats = {StateFormat::fp32};
      c.stores = {WeightStore::fp32_master};
      c.defects = p.d;
      c.cross_check_reference = false;
      results.push_back(seen_case(p.name + " | seen by prop1_twin", run_prop1_cases(c)));
    }
    if (claim.empty() || claim == "schedule_invariance") {
      ScheduleInvarianceConfig c;
      c.seed = seed;
      c.steps = 2;
      c.combos = {{RuleId::adamw, StateFormat::fp32, WeightStore::fp32_master}};
      c.defects = p.d;
      results.push_back(seen_case(p.name + " | seen by schedule_invariance", run_schedule_invariance_cases(c)));
    }
    if (claim.empty() || claim == "corollary1") {
      Corollary1Config c;
      c.seed = seed;
      c.steps = 2;
      c.shapes = {{96, 128, 80, 64, 64}};
      c.rules = {RuleId::adamw};
      c.stores = {WeightStore::fp32_master};
      c.formats = {StateFormat::fp32};
      c.defects = p.d;
      results.push_back(seen_case(p.name + " | seen by corollary1", run_corollary1_cases(c)));
    }
  }
  return results;
}

void claim_suite_power_planted_defects(const VerifyConfig& cfg, Report& report, const Progress&) {
  record_claim_cases(report, run_planted_defect_cases("", cfg.seed), "suite_power_planted_defects");
}

}  // namespace fh
