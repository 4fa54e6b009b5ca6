// ext_variant: an external path that is a variant of another of the same producer (its /meta
// `variant_of` names the base path: the same kernel with one setting changed, e.g. the FORGE
// release's Sm90 EVT kernel with m and v staged through pooled shared memory) must equal its base
// bit for bit, W and state after every step. The record says at which step the two first part and
// the first differing element there: a defect that a zero state hides at the first step (m = v = 0)
// shows as equal at step 0 and different from step 1 on.
#include "suites/claims/claim_entries.h"
#include "suites/claims/external_common.h"

namespace fh {

void claim_ext_variant(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  if (external_absent(cfg, report, "ext_variant")) return;
  const ExternalRun& run = external_run(cfg);
  bool any = false;
  for (const auto& f : run.results) {
    const auto base_name = f->meta().find("variant_of");
    if (base_name == f->meta().end()) continue;
    any = true;
    const ext::ResultsFile* base = nullptr;
    for (const auto& p : run.results)
      if (p->producer() == f->producer() && p->path_name() == base_name->second) base = p.get();
    if (!base) {
      report.add_case("ext_variant", f->path_name() + ".all")
          .set_attr("producer", f->producer()).set_attr("path", f->path_name()).set_attr("variant_of", base_name->second)
          .add_check(Check::not_run("variant_equals_base", "no results file of path " + base_name->second + " (producer " +
                                                               f->producer() + ") was given"));
      continue;
    }
    int64_t judged = 0;
    for (const ext::CaseSpec& c : run.cases->cases()) {
      if (c.kind == "order_probe") continue;
      if (!f->find(c.id) && !base->find(c.id)) continue;
      CaseRecord& cs = report.add_case("ext_variant", f->path_name() + "_vs_" + base->path_name() + "." + c.id);
      set_external_attrs(cs, *f);
      cs.set_attr("variant_of", base->path_name());
      if (record_not_ok(cs, *f, c.id) || record_not_ok(cs, *base, c.id, false)) continue;
      progress_set_case(f->path_name() + " vs " + base->path_name() + " " + c.id);
      const std::vector<ParamEvidence> per_step = compare_outputs_per_step(*f, *base, c);
      std::vector<int64_t> differing;
      int64_t first_step = -1;
      for (size_t s = 0; s < per_step.size(); ++s) {
        differing.push_back(per_step[s].differing);
        if (first_step < 0 && per_step[s].differing > 0) first_step = int64_t(s);
      }
      cs.add_i64("differing_per_step", differing, "elements of W and the state that differ from the base path, per step");
      cs.add_i64("first_differing_step", {first_step}, "the first step (0-based) whose outputs differ; -1: none");
      cs.set_attr("state_at_first_step", c.first_step > 1 ? "non-zero (step " + std::to_string(c.first_step) + ")" : "zero");
      cs.add_check(bitwise_check("variant_equals_base", fold(per_step),
                                 first_step < 0 ? std::string()
                                                : "the variant parts from " + base->path_name() + " at step " +
                                                      std::to_string(first_step) + " (steps before it equal)"));
      ++judged;
    }
    progress.note(f->path_name() + " vs " + base->path_name() + ": " + std::to_string(judged) + " cases compared");
  }
  if (!any)
    report.add_case("ext_variant", "all").add_check(
        Check::not_run("variant_equals_base", "no results file names a base path (/meta variant_of)"));
}

}  // namespace fh
