// eq6_memory_model (Eq. 6, the memory equation): the model of reference/memory_model.h evaluated
// term by term for Llama-3.1-8B and Qwen3-14B shapes (bf16 weights; bf16, fp32 and INT8 AdamW
// state; the fused path and the standard one; activations 0 here: the model step that measures
// them is not built yet). On the twin: the tiny two-block stack's measured peaks (MemoryLedger)
// against the same equations with its own activations (run_eq6_twin_cases). Judged on the CPU: the family's parameter list gives Llama-3.1-8B's
// published 8,030,261,248 parameters (so the terms are computed over the right tensors). Recorded:
// every term's bytes, and the share of P outside Eq. 6's zero-gradient scope (embedding, norms, a
// tied head). Not run here, said so in the report: the measured peak against the model, which
// needs the CUDA model-shaped step on the GPU runner (model_step_figures judges it there).
#include <cmath>

#include "oracles/param_compare.h"
#include "reference/sharded_stack.h"
#include "reports/report.h"
#include "suites/claims/claim_common.h"
#include "suites/claims/claim_entries.h"
#include "suites/claims/memory_claims.h"
#include "suites/claims/twin_cases.h"

namespace fh {

Eq6TwinRun run_eq6_twin_cases(const MemoryClaimConfig& cfg) {
  const std::string claim = "eq6_memory_model";
  const StackShape s;
  const TwinSchedule sched;
  const RuleConfig adamw = config_for(RuleId::adamw, {});
  SimCollectives one;
  one.p = 1;
  const std::vector<float> x0 = seeded_normals(size_t(s.T * s.hidden), stream_seed(cfg.seed, "eq6_memory_model/activations"), 1.0f);
  const std::vector<float> dout = seeded_normals(size_t(s.T * s.hidden), stream_seed(cfg.seed, "eq6_memory_model/output_grads"), 1e-2f);
  Eq6TwinRun run;
  std::vector<ClaimCaseResult>& results = run.cases;
  for (StateFormat sf : {StateFormat::bf16, StateFormat::fp32, StateFormat::int8}) {
    const StackParams init = StackParams::make(s, adamw, sf, WeightStore::bf16_rne, stream_seed(cfg.seed, "eq6_memory_model/params"));
    StepLayout l;
    l.state = sf;
    l.grad_bytes = 4;  // the twin's G is fp32
    l.active_tiles = 1;  // the twin runs one tile at a time
    StackDefects d;
    d.materialize_one_layer = cfg.materialize_one_layer;
    StackParams fused = init, standard = init;
    MemoryLedger lf, ls;
    const auto dx_f = stack_train_step(fused, s, x0, dout, 1, 1, Dataflow::tp, LinearUpdate::fused,
                                       twin_step_backend(), sched, one, d, &lf);
    const auto dx_s = stack_train_step(standard, s, x0, dout, 1, 1, Dataflow::tp, LinearUpdate::standard,
                                       twin_step_backend(), sched, one, {}, &ls);
    const std::string tag = std::string("tiny stack on the twin | ") + state_format_name(sf) + " state";
    const MemoryEstimate mf = step_memory(stack_param_shapes(s), l, true, stack_activation_bytes(s));
    const MemoryEstimate ms = step_memory(stack_param_shapes(s), l, false, stack_activation_bytes(s));
    auto term_note = [](const MemoryEstimate& e, const MemoryLedger& led) {
      std::string n;
      for (const auto& t : e.terms) n += (n.empty() ? "" : ", ") + t.name + " " + std::to_string(t.bytes);
      return "model: " + n + "; measured peaks: weights " + std::to_string(led.peak_of("weights")) + ", state " +
             std::to_string(led.peak_of("state")) + ", activations " + std::to_string(led.peak_of("activations")) +
             ", gradients " + std::to_string(led.peak_of("gradients")) + ", all " + std::to_string(led.total_peak);
    };
    ClaimCaseResult t;  // Eq. 6 against the fused step's measured peak
    t.claim = claim;
    t.case_name = tag + " | fused peak within 3% of Eq. 6";
    t.metric_name = "abs_residual_over_model";
    judge_case(t, std::fabs(double(lf.total_peak - mf.total())) / double(mf.total()), 0.03, PassIf::at_most);
    t.note = "residual " + std::to_string(lf.total_peak - mf.total()) + " bytes; " + term_note(mf, lf) +
             "; timeline (bytes in use / peak since the previous boundary): fused: " + lf.timeline_text() +
             "; standard: " + ls.timeline_text();
    results.push_back(t);
    ClaimCaseResult g;  // the gradient term: Eq. 6's zero (plus what it leaves out) bounds the fused path
    g.claim = claim;
    g.case_name = tag + " | fused gradient peak within Eq. 6's gradient terms";
    g.metric_name = "gradient_peak_bytes";
    judge_case(g, double(lf.peak_of("gradients")), double(mf.term("gradients_not_fusable") + mf.term("tile_workspace")),
               PassIf::at_most);
    results.push_back(g);
    ClaimCaseResult st;  // the standard path holds every gradient: its term exactly
    st.claim = claim;
    st.case_name = tag + " | standard gradient peak equals its gradients term";
    st.metric_name = "abs_difference_bytes";
    judge_case(st, std::fabs(double(ls.peak_of("gradients") - ms.term("gradients"))), 0, PassIf::at_most);
    st.note = term_note(ms, ls);
    results.push_back(st);
    ParamEvidence ev;  // Remark 1 at this scale: the input gradient and every parameter
    compare_dx(ev, dx_f, dx_s, s.T, s.hidden, 1, "dx0 fused vs standard");
    const auto pf = fused.all(), ps = standard.all();
    for (size_t i = 0; i < pf.size(); ++i) compare_params(ev, *pf[i], *ps[i], 1, TileShape{128, 128}, "fused vs standard");
    results.push_back(bitwise_case(claim, tag + " | Remark 1: fused == standard (dX and every weight)", ev));
    if (sf == StateFormat::bf16) run.timeline_fused = lf.timeline, run.timeline_standard = ls.timeline;
  }
  return run;
}

void claim_eq6_memory_model(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  for (const std::string fam : {"llama31_8b", "qwen3_14b"}) {
    const std::vector<ParamShape> ps = model_params(model_shape(fam));
    const int64_t P = param_count(ps);
    int64_t outside = 0;
    for (const auto& p : ps) outside += p.fusable() ? 0 : p.count();
    for (StateFormat sf : {StateFormat::bf16, StateFormat::fp32, StateFormat::int8}) {
      StepLayout l;
      l.state = sf;
      CaseRecord& cs = report.add_case("eq6_memory_model", fam + " | " + state_format_name(sf) + " state");
      cs.set_attr("P", std::to_string(P)).set_attr("P_outside_eq6_scope", std::to_string(outside));
      for (bool fused : {true, false}) {
        const MemoryEstimate e = step_memory(ps, l, fused, 0);
        std::vector<int64_t> bytes;
        std::string names;
        for (const auto& t : e.terms) {
          bytes.push_back(t.bytes);
          names += (names.empty() ? "" : ", ") + t.name + " = " + t.formula;
        }
        bytes.push_back(e.total());
        cs.add_i64(fused ? "fused_terms_bytes" : "standard_terms_bytes", bytes, names + ", total");
      }
      if (fam == "llama31_8b") {
        // Equal: |P - 8030261248| <= 0 (a count below the family's must fail too).
        const double off = std::fabs(double(P - 8030261248LL));
        cs.add_check(judge("param_count_matches_family", "P - 8030261248", off, 0, PassIf::at_most,
                           "the parameter list does not give Llama-3.1-8B's 8,030,261,248"));
      }
      cs.add_check(Check::not_run("measured_peak_within_3pct",
                                  "measured on the GPU runner by forge-model-step and judged by claim model_step_figures "
                                  "(forge-verify --model-step F.json), not by this host claim"));
    }
    progress.note(fam + ": P = " + std::to_string(P) + ", outside Eq. 6's scope " + std::to_string(outside));
  }
  MemoryClaimConfig mc;
  mc.seed = cfg.seed;
  const Eq6TwinRun run = run_eq6_twin_cases(mc);
  const std::vector<CaseRecord*> recs = record_claim_cases(report, run.cases, "eq6_memory_model");
  // Figure 2 on the twin: the timelines ride on the first case (bf16 state, fused peak).
  std::string phases;
  for (const auto& ph : run.timeline_fused) phases += (phases.empty() ? "" : ";") + ph.name;
  recs.at(0)->set_attr("timeline_phases", phases);
  for (const auto& [name, tl] : {std::pair{"fused", &run.timeline_fused}, {"standard", &run.timeline_standard}}) {
    std::vector<int64_t> in_use, peak;
    for (const auto& ph : *tl) in_use.push_back(ph.in_use), peak.push_back(ph.peak);
    recs.at(0)->add_i64(std::string("timeline_") + name + "_in_use", in_use, "bytes in use at each phase boundary (timeline_phases)");
    recs.at(0)->add_i64(std::string("timeline_") + name + "_peak", peak, "peak bytes since the previous boundary");
  }
}

}  // namespace fh
