// mutation_kill_matrix: the harness's power as the mutation tools measured it (issue 32). One case
// per kill matrix (was the run complete; the per-layer counts) and one per mutant: killed in every
// rep by some test (the first killing check's message kept), a survivor, a flaky kill or a mutant
// that did not build fails; one argued equivalent in the catalog is not run with its reason (and
// fails if a test killed it after all). Rule mutants must die by two independent units (tests,
// configurations or cases), since one hyperparameter setting alone is thin coverage.
#include <array>
#include <map>

#include "suites/claims/claim_entries.h"
#include "suites/claims/external_common.h"

namespace fh {

namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "none" : s;
}

std::string or_none(const std::string& s) { return s.empty() ? "none" : s; }

}  // namespace

void claim_mutation_kill_matrix(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  if (inputs_absent(cfg.kill_matrix, report, "mutation_kill_matrix",
                    "no kill matrix: run forge-verify --kill-matrix out/kill_matrix.json (scripts/mutate.py, "
                    "scripts/mutate_gpu.py)"))
    return;
  int matrix = 0;
  for (const KillMatrix& m : claim_inputs(cfg).kill_matrices) {
    const std::string slice = m.tool == "scripts/mutate_gpu.py" ? "gpu" : "cpu";
    CaseRecord& run = report.add_case("mutation_kill_matrix", "matrix" + std::to_string(++matrix) + "." + slice);
    run.set_attr("file", m.path).set_attr("tool", m.tool).set_attr("device", m.device.empty() ? "this machine" : m.device);
    std::map<std::string, std::array<int64_t, 5>> layers;  // killed, survived, flaky, build_error, equivalent
    for (const KillMatrixMutant& k : m.mutants) {
      auto& n = layers[k.layer];
      const bool equivalent = !k.equivalent.empty() && k.status != "killed";
      n[equivalent ? 4 : k.status == "killed" ? 0 : k.status == "survived" ? 1 : k.status == "flaky" ? 2 : 3]++;
      CaseRecord& cs = report.add_case("mutation_kill_matrix", slice + "." + k.layer + "." + k.id);
      cs.set_attr("file", or_none(k.file)).set_attr("why", or_none(k.why)).set_attr("status", k.status)
          .set_attr("killed_by", joined(k.killed_by)).set_attr("first_failing_check", or_none(k.first_message.substr(0, 2000)));
      cs.add_i64("kill_units", {int64_t(k.kill_units.size())}, "independent killing units (tests, configurations, cases)");
      if (equivalent) {
        cs.add_check(Check::not_run("killed_in_every_rep", "argued equivalent in the catalog: " + k.equivalent));
        continue;
      }
      const int64_t killers = int64_t(k.killed_by.size());
      std::string why_not;
      if (!k.equivalent.empty()) why_not = "marked equivalent in the catalog, but " + joined(k.killed_by) + " killed it";
      else if (k.status != "killed")
        why_not = k.status + (k.flaky_kills.empty() ? "" : " (killed in some reps only by " + joined(k.flaky_kills) + ")") +
                  (k.expected_but_survived.empty() ? "" : "; the catalog's tests that let it live: " + joined(k.expected_but_survived)) +
                  (k.status == "build_error" ? ": " + k.first_message.substr(0, 500) : "");
      cs.add_check(judge_and("killed_in_every_rep", "killing_tests", double(killers), 1, PassIf::at_least,
                             k.equivalent.empty(), why_not));
      if (k.layer == "rules" && k.status == "killed")
        cs.add_check(judge("two_independent_kills", "kill_units", double(k.kill_units.size()), 2, PassIf::at_least,
                           "a rule defect seen by " + joined(k.kill_units) + " alone"));
    }
    std::vector<int64_t> per_layer;
    std::vector<std::string> names;
    for (const auto& [layer, n] : layers) {
      per_layer.insert(per_layer.end(), n.begin(), n.end());
      names.push_back(layer);
    }
    run.set_attr("per_layer_rows", joined(names));
    run.add_i64("per_layer", per_layer, "5 per layer (the layers in attribute per_layer_rows): killed, survived, flaky, "
                                        "build_error, equivalent");
    run.add_i64("mutants", {int64_t(m.mutants.size())}, "mutants measured");
    run.add_check(m.complete ? judge("run_complete", "mutants", double(m.mutants.size()), 1, PassIf::at_least)
                             : Check::not_run("run_complete", "the run stopped after " + std::to_string(m.mutants.size()) +
                                                                  " mutants; the rest of its catalog was not measured"));
    progress.note(m.tool + ": " + std::to_string(m.mutants.size()) + " mutants");
  }
}

}  // namespace fh
