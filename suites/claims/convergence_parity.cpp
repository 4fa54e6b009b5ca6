// convergence_parity (issue 33): the paper's convergence parity (§3.2, Appendix F: FORGE's loss
// matches the standard optimizer's within 0.001 nats on average) judged on training runs of one
// Llama-shaped model on real text (forge-model-step --train, scripts/torch_train_reference.py;
// every run of a study on the same windows of the same corpus, suites/model_step/token_data.h).
// Cases:
//   - run.<config>.seed<S>: each run: it finished, and its setting is the study's (model, steps,
//     tokens, learning rate, weight decay, evaluation, data) — a run of another setting is not
//     compared with the others;
//   - fused_vs_standard.<state>_<store>.seed<S>: the harness's fused run against its standard run
//     (same state, store and seed): equal weight-and-state digests and equal losses at every step
//     (a contract: the fused kernel is the order-matched path's bits). A run planted with a skipped
//     update (forge-model-step --plant skip_one_update) must differ: planted_defect_seen;
//   - seeds.<config>: the final held-out loss over the seeds (mean, spread), and whether every seed
//     stayed finite to the end (finite_to_the_end, a finding: a diverged configuration is measured,
//     with the step each seed left finite values, never an error of the claim);
//   - parity.<config>: each harness configuration and each of the released package's
//     (scripts/torch_train_reference.py --optimizer forge|forge_int8, path forge_release) against
//     torch AdamW in bf16 (findings): the mean
//     final held-out losses within the larger seed spread of the two, and within 0.001 nats;
//   - floor.torch_bf16_vs_fp32: torch in bf16 against torch in fp32 on the same data, the
//     precision floor; the paper's 0.001 nats is at or above it or not (a finding: the referee's
//     objection);
//   - int8_vs_bf16.<config>: INT8 state against the same path (the harness's update and store, or
//     the released package's) with bf16 state, within 0.01 nats
//     (the gap this harness states for INT8 state; a finding), and, for the harness, its cause from
//     traced runs of one seed (forge-model-step --trace-steps): the second moments decoding to zero
//     beside a nonzero first moment per step, and the largest weight change against bf16 state's
//     (int8_update_within_10x_bf16, a finding; not run without traces);
//   - same_start.<config>.seed<S>: torch in fp32 started from the harness's own initial weights
//     (--init-from): the harness's first training loss (its bf16 forward) within 0.01 nats of this
//     independent fp32 reference on the same batch (a contract; the model step's kernels beyond
//     their own host references); where torch compared gradients (--compare-grads: the harness's
//     standard path's first-step gradients), every parameter's within 5% relative (Frobenius) of
//     torch's fp32 autograd (a contract: a backward kernel both paths share cannot hide there).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "suites/claims/claim_common.h"
#include "suites/claims/claim_entries.h"
#include "suites/claims/external_common.h"

namespace fh {

namespace {

constexpr double kPaperNats = 0.001;  // §3.2: "within 0.001 nats on average"
constexpr double kInt8Nats = 0.01;    // the INT8 state gap this harness states (issue 33)
// The harness's first loss against torch fp32 from the same weights: bf16 operands and activations
// against fp32 throughout (at the llama_30m shape the difference is a few 1e-3 nats).
constexpr double kFirstLossNats = 0.01;
// The harness's gradients (bf16 operands and activations, fp32 accumulation) against torch's fp32
// autograd on the same weights and batch: ||G_h - G_t|| / ||G_t|| per parameter. A stated bound,
// several times the bf16 rounding of the activations (2^-8 relative) compounded over the layers; a
// wrong backward kernel moves its parameters' gradients by O(1).
constexpr double kGradRel = 0.05;

std::string setting_of(const ConvergenceRun& r) {
  return r.model + ", " + std::to_string(r.steps) + " steps of " + std::to_string(r.seq) + " tokens, lr " +
         std::to_string(r.lr) + ", weight decay " + std::to_string(r.weight_decay) + ", held-out loss every " +
         std::to_string(r.eval_every) + " steps over " + std::to_string(r.eval_batches) + " windows, data " +
         std::to_string(r.train_tokens) + " + " + std::to_string(r.heldout_tokens) + " tokens";
}

struct Group {
  std::vector<const ConvergenceRun*> runs;  // one per seed, finished, of the study's setting
  double mean = NAN, spread = NAN;          // final held-out loss over the seeds
};

double final_eval(const ConvergenceRun& r) { return r.eval_loss.empty() ? NAN : r.eval_loss.back(); }

// The first step whose training loss is not finite (0: none): where a run diverged.
int64_t first_nonfinite_step(const ConvergenceRun& r) {
  for (size_t k = 0; k < r.train_loss.size(); ++k)
    if (!std::isfinite(r.train_loss[k])) return int64_t(k) + 1;
  return 0;
}

// A run left finite values: a training loss, or its final held-out loss.
bool diverged(const ConvergenceRun& r) { return first_nonfinite_step(r) > 0 || !std::isfinite(final_eval(r)); }

// "N of M seeds diverged (first non-finite loss at steps a, b)", or "" when none did.
std::string divergence_of(const std::vector<const ConvergenceRun*>& runs) {
  std::string at;
  int n = 0;
  for (const ConvergenceRun* r : runs)
    if (diverged(*r)) at += (n++ ? ", " : "") + std::to_string(first_nonfinite_step(*r));
  if (n == 0) return {};
  return std::to_string(n) + " of " + std::to_string(runs.size()) + " seeds diverged (first non-finite training loss at step " +
         at + ")";
}
// The same as a reason's tail: " (N of M seeds diverged ...)", or "".
std::string divergence_note(const std::vector<const ConvergenceRun*>& runs) {
  const std::string d = divergence_of(runs);
  return d.empty() ? d : " (" + d + ")";
}

// The largest of a trace's per-step update maxima (NaN: a traced step's weights left finite values).
double max_traced_update(const ConvergenceRun& r) {
  double m = 0.0;
  for (double x : r.trace_max_update) {
    if (std::isnan(x)) return NAN;
    m = std::max(m, x);
  }
  return m;
}

// Where the INT8 trace first leaves 10x bf16's change at the same step (or leaves finite values):
// the step, the parameter, both changes and the second moments decoding to zero beside a nonzero
// first moment at the step before it (the state that update read).
std::string first_step_over_10x(const ConvergenceRun& i8, const ConvergenceRun& bf) {
  const size_t n = std::min(i8.trace_max_update.size(), bf.trace_max_update.size());
  for (size_t s = 0; s < n; ++s) {
    const double ui = i8.trace_max_update[s], ub = bf.trace_max_update[s];
    if (!(std::isnan(ui) || ui > 10 * ub)) continue;
    std::string at = "first at step " + std::to_string(s + 1) + ": " + i8.trace_update_param[s] + " changed by " +
                     num(ui) + " against bf16 state's largest change " + num(ub);
    if (s > 0 && s - 1 < i8.trace_v_zero_m_nonzero.size())
      at += "; after step " + std::to_string(s) + ", " + std::to_string(i8.trace_v_zero_m_nonzero[s - 1]) + " of " +
            std::to_string(i8.int8_v_total) + " second moments decoded to 0 beside a nonzero first moment";
    return at;
  }
  return "no traced step over 10x";
}

}  // namespace

void claim_convergence_parity(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  const char* kClaim = "convergence_parity";
  if (inputs_absent(cfg.convergence_run, report, kClaim,
                    "no convergence runs: run forge-verify --convergence-run F.json (forge-model-step --train, "
                    "scripts/torch_train_reference.py)"))
    return;
  const std::vector<ConvergenceRun>& runs = claim_inputs(cfg).convergence_runs;
  const ConvergenceRun* study = nullptr;  // the first finished run sets the study's setting
  for (const ConvergenceRun& r : runs)
    if (r.status == "ok") {
      study = &r;
      break;
    }
  std::map<std::string, Group> groups;
  for (const ConvergenceRun& r : runs) {
    CaseRecord& cs = report.add_case(kClaim, "run." + r.config + ".seed" + std::to_string(r.seed));
    cs.set_attr("file", r.path).set_attr("path", r.producer_path).set_attr("config", r.config)
        .set_attr("device", r.device.empty() ? "unknown" : r.device).set_attr("planted", r.planted.empty() ? "none" : r.planted)
        .set_attr("setting", setting_of(r));
    cs.add_check(judge_true("ran", "failed", r.status == "ok", "the run did not finish: " + r.error));
    if (r.status != "ok") continue;
    cs.add_f64("train_loss", r.train_loss, "each step's training loss (NaN: not finite)");
    cs.add_f64("eval_loss", r.eval_loss, "the mean held-out loss at each evaluation step (NaN: not finite)");
    std::vector<double> at(r.eval_steps.begin(), r.eval_steps.end());
    cs.add_f64("eval_steps", at, "the steps after which the held-out loss was taken (0: before training)");
    cs.add_i64("nonfinite_losses", {r.nonfinite_losses}, "losses that were not finite");
    const bool same = setting_of(r) == setting_of(*study);
    cs.add_check(judge_true("setting_matches_the_study", "differs", same,
                            "this run's setting is not the study's (" + setting_of(*study) + ", from " + study->path +
                                "): it is compared with no other run"));
    if (!same) continue;
    Group& g = groups[r.config];
    bool repeated = false;
    for (const ConvergenceRun* o : g.runs) repeated |= o->seed == r.seed;
    cs.add_check(judge_true("one_run_per_seed", "repeated", !repeated,
                            "configuration " + r.config + " has two runs of seed " + std::to_string(r.seed)));
    if (!repeated) g.runs.push_back(&r);
  }

  // The first run of the study that `pred` accepts (null: none).
  auto find_run = [&](auto pred) -> const ConvergenceRun* {
    for (const auto& [config, g] : groups)
      for (const ConvergenceRun* o : g.runs)
        if (pred(*o)) return o;
    return nullptr;
  };
  // Fused against standard: the same bits at every step.
  for (auto& [config, g] : groups)
    for (const ConvergenceRun* f : g.runs) {
      if (f->producer_path != "harness" || f->update != "fused") continue;
      const ConvergenceRun* s = find_run([&](const ConvergenceRun& o) {
        return o.producer_path == "harness" && o.update == "standard" && o.state == f->state && o.store == f->store &&
               o.seed == f->seed && o.planted.empty();
      });
      CaseRecord& cs = report.add_case(kClaim, "fused_vs_standard." + f->state + "_" + f->store +
                                                   (f->planted.empty() ? "" : "_planted_" + f->planted) + ".seed" +
                                                   std::to_string(f->seed));
      const std::string name = f->planted.empty() ? "bitwise_every_step" : "planted_defect_seen";
      if (!s) {
        cs.add_check(Check::not_run(name, "no standard run of state " + f->state + ", store " + f->store + ", seed " +
                                              std::to_string(f->seed)));
        continue;
      }
      cs.set_attr("fused_file", f->path).set_attr("standard_file", s->path);
      int64_t differing = 0;
      std::string first;
      for (int64_t k = 0; k < f->steps; ++k) {
        const bool loss_same = std::memcmp(&f->train_loss[size_t(k)], &s->train_loss[size_t(k)], sizeof(double)) == 0;
        if (f->step_digests[size_t(k)] != s->step_digests[size_t(k)] || !loss_same) {
          if (first.empty())
            first = "step=" + std::to_string(k + 1) + (loss_same ? " (weights or state)" : " (loss)");
          ++differing;
        }
      }
      cs.add_f64("final_eval_gap", {final_eval(*f) - final_eval(*s)}, "fused minus standard final held-out loss, nats");
      if (f->planted.empty()) {
        cs.add_check(judge("bitwise_every_step", "differing_steps", double(differing), 0, PassIf::at_most,
                           "the fused run leaves the standard run's bits at " + first)
                         .bitwise(differing, 0, first));
      } else {
        cs.add_check(judge("planted_defect_seen", "differing_steps", double(differing), 1, PassIf::at_least,
                           "the planted " + f->planted + " left every step's bits equal: the comparison cannot see it"));
      }
    }

  // Seeds: the final held-out loss per configuration.
  for (auto& [config, g] : groups) {
    if (g.runs.empty() || !g.runs.front()->planted.empty()) continue;  // a planted run is no configuration
    CaseRecord& cs = report.add_case(kClaim, "seeds." + config);
    std::vector<double> finals, seeds;
    for (const ConvergenceRun* r : g.runs) finals.push_back(final_eval(*r)), seeds.push_back(double(r->seed));
    double sum = 0;
    for (double x : finals) sum += x;
    g.mean = sum / double(finals.size());
    g.spread = *std::max_element(finals.begin(), finals.end()) - *std::min_element(finals.begin(), finals.end());
    cs.add_f64("final_eval_loss", finals, "each seed's final held-out loss, nats (seeds in dataset seeds)");
    cs.add_f64("seeds", seeds, "the seeds");
    cs.add_f64("mean_and_spread", {g.mean, g.spread}, "the seeds' mean final held-out loss and max - min, nats");
    cs.add_check(finals.size() >= 3 ? judge("three_seeds", "seeds", double(finals.size()), 3, PassIf::at_least)
                                    : Check::not_run("three_seeds", "only " + std::to_string(finals.size()) +
                                                                        " seed(s): the study asks for 3 to show a spread"));
    // A configuration that diverged is a finding on its method (the INT8 state of the paper's
    // Proposition 4 does at this learning rate), not a broken contract of the harness.
    std::vector<double> first_bad;
    double diverged_seeds = 0;
    for (const ConvergenceRun* r : g.runs)
      first_bad.push_back(double(first_nonfinite_step(*r))), diverged_seeds += diverged(*r);
    cs.add_f64("first_nonfinite_step", first_bad, "per seed, the first step whose training loss is not finite (0: none)");
    cs.add_check(judge("finite_to_the_end", "diverged_seeds", diverged_seeds, 0, PassIf::at_most, divergence_of(g.runs))
                     .as_finding());
  }
  auto find = [&](auto pred) -> const Group* {
    for (const auto& [config, g] : groups)
      if (!g.runs.empty() && pred(*g.runs.front())) return &g;
    return nullptr;
  };
  const Group* torch_bf16 = find([](const ConvergenceRun& r) {
    return r.producer_path == "torch" && r.dtype == "bf16" && r.init_from.empty();
  });
  const Group* torch_fp32 = find([](const ConvergenceRun& r) {
    return r.producer_path == "torch" && r.dtype == "fp32" && r.init_from.empty();
  });
  // Torch from the harness's initial weights: the same first loss.
  for (const auto& [config, g] : groups)
    for (const ConvergenceRun* t : g.runs) {
      if (t->init_from.empty()) continue;
      CaseRecord& cs = report.add_case(kClaim, "same_start." + config + ".seed" + std::to_string(t->init_seed));
      const ConvergenceRun* h = find_run([&](const ConvergenceRun& o) {
        return o.producer_path == "harness" && o.seed == t->init_seed && o.planted.empty();
      });
      if (!h) {
        cs.add_check(Check::not_run("first_loss_within_0p01_nats", "no harness run of seed " + std::to_string(t->init_seed)));
        continue;
      }
      cs.set_attr("harness_file", h->path).set_attr("torch_file", t->path).set_attr("torch_dtype", t->dtype);
      const double gap = h->train_loss.front() - t->train_loss.front();
      cs.add_f64("first_loss_gap", {gap}, "harness minus torch first training loss (same weights, same batch), nats");
      cs.add_check(judge("first_loss_within_0p01_nats", "abs_gap_nats", std::fabs(gap), kFirstLossNats, PassIf::at_most,
                         "the harness's forward pass is more than 0.01 nats from torch's on the same weights and batch"));
      if (t->grad_rel_err.empty()) continue;
      std::vector<double> errs;
      std::pair<std::string, double> worst{"", -1.0};
      for (const auto& [name, e] : t->grad_rel_err) {
        errs.push_back(e);
        if (e > worst.second) worst = {name, e};
      }
      cs.add_f64("grad_rel_err", errs, "per parameter (the torch file's order), ||G_harness - G_torch|| / ||G_torch|| at step 1");
      cs.set_attr("grad_worst_parameter", worst.first);
      cs.add_check(judge("gradients_within_5pct", "max_rel_err", worst.second, kGradRel, PassIf::at_most,
                         "a parameter's gradient (" + worst.first + ") is more than 5% from torch fp32's on the same "
                         "weights and batch"));
    }

  // Each harness or released-package configuration against torch in bf16: the paper's parity.
  for (const auto& [config, g] : groups) {
    if (g.runs.empty() || g.runs.front()->producer_path == "torch" || !g.runs.front()->planted.empty()) continue;
    CaseRecord& cs = report.add_case(kClaim, "parity." + config);
    if (!torch_bf16) {
      for (const char* n : {"within_seed_spread_of_torch_bf16", "within_0p001_nats_of_torch_bf16"})
        cs.add_check(Check::not_run(n, "no torch bf16 run (scripts/torch_train_reference.py --dtype bf16)").as_finding());
      continue;
    }
    // A diverged configuration's gap is not finite (it fails); the bound is then torch's spread.
    const double gap = g.mean - torch_bf16->mean;
    const double spread = std::isfinite(g.spread) ? std::max(g.spread, torch_bf16->spread) : torch_bf16->spread;
    const std::string why = divergence_note(g.runs);
    cs.add_f64("gap_and_spread", {gap, spread}, "mean final held-out loss minus torch bf16's, and the larger seed spread, nats");
    if (g.runs.size() < 2 || torch_bf16->runs.size() < 2)
      cs.add_check(Check::not_run("within_seed_spread_of_torch_bf16", "a spread needs two seeds on each side").as_finding());
    else
      cs.add_check(judge("within_seed_spread_of_torch_bf16", "abs_gap_nats", std::fabs(gap), spread, PassIf::at_most,
                         "the gap to torch bf16 exceeds the seeds' spread" + why)
                       .as_finding());
    cs.add_check(judge("within_0p001_nats_of_torch_bf16", "abs_gap_nats", std::fabs(gap), kPaperNats, PassIf::at_most,
                       "the mean final held-out loss is more than 0.001 nats from torch bf16's" + why)
                     .as_finding());
  }
  // The floor: bf16 against fp32 training on the same data.
  {
    CaseRecord& cs = report.add_case(kClaim, "floor.torch_bf16_vs_fp32");
    if (!torch_bf16 || !torch_fp32) {
      cs.add_check(Check::not_run("paper_tolerance_above_precision_floor",
                                  "needs torch runs in bf16 and fp32 (scripts/torch_train_reference.py --dtype)")
                       .as_finding());
    } else {
      const double floor = std::fabs(torch_bf16->mean - torch_fp32->mean);
      cs.add_f64("floor_nats", {floor}, "|torch bf16 - torch fp32| mean final held-out loss, nats");
      cs.add_check(judge("paper_tolerance_above_precision_floor", "floor_nats", floor, kPaperNats, PassIf::at_most,
                         "bf16 and fp32 training differ by more than the paper's 0.001 nats on this data: the "
                         "tolerance lies below the precision floor, so it cannot be an algorithmic invariant")
                       .as_finding());
    }
  }
  // INT8 state against bf16 state on the same path.
  for (const auto& [config, g] : groups) {
    if (g.runs.empty()) continue;
    const ConvergenceRun& r = *g.runs.front();
    if (r.producer_path == "torch" || r.state != "int8" || !r.planted.empty()) continue;
    const Group* b = find([&](const ConvergenceRun& o) {
      return o.producer_path == r.producer_path && o.state == "bf16" && o.update == r.update && o.store == r.store &&
             o.planted.empty();
    });
    CaseRecord& cs = report.add_case(kClaim, "int8_vs_bf16." + config);
    if (!b) {
      cs.add_check(Check::not_run("int8_within_0p01_nats_of_bf16", "no bf16-state run of update " + r.update +
                                                                       ", store " + r.store).as_finding());
      continue;
    }
    cs.add_f64("gap_nats", {g.mean - b->mean}, "INT8 minus bf16 state mean final held-out loss, nats");
    std::vector<double> zero_fraction;  // the measured suspect: second moments that decode to zero
    for (const ConvergenceRun* x : g.runs)
      zero_fraction.push_back(x->int8_v_total > 0 ? double(x->int8_v_zero) / double(x->int8_v_total) : NAN);
    cs.add_f64("v_zero_fraction", zero_fraction, "per seed, the share of second moments decoding to zero at the end");
    cs.add_check(judge("int8_within_0p01_nats_of_bf16", "abs_gap_nats", std::fabs(g.mean - b->mean), kInt8Nats,
                       PassIf::at_most, "INT8 state ends more than 0.01 nats from bf16 state" + divergence_note(g.runs))
                     .as_finding());
    if (r.producer_path != "harness") continue;  // the released package's runs carry no trace
    // The cause, where a traced run (forge-model-step --trace-steps) of this configuration and one of
    // the bf16 configuration share a seed: per traced step, the second moments decoding to zero beside
    // a first moment that does not (their update is m / eps), and the largest weight change of each.
    const ConvergenceRun* ti = nullptr;
    const ConvergenceRun* tb = nullptr;
    for (const ConvergenceRun* x : g.runs)
      for (const ConvergenceRun* y : b->runs)
        if (!ti && !x->trace_v_zero.empty() && !y->trace_max_update.empty() && x->seed == y->seed) ti = x, tb = y;
    if (!ti) {
      cs.add_check(Check::not_run("int8_update_within_10x_bf16",
                                  "no traced INT8 and bf16 runs of one seed (forge-model-step --trace-steps)").as_finding());
      continue;
    }
    cs.set_attr("traced_int8_file", ti->path).set_attr("traced_bf16_file", tb->path);
    std::vector<double> vz(ti->trace_v_zero_m_nonzero.begin(), ti->trace_v_zero_m_nonzero.end());
    cs.add_f64("traced_v_zero_m_nonzero", vz, "per traced step of the INT8 run, second moments decoding to 0 beside a first moment that does not");
    std::vector<double> all_zero(ti->trace_v_zero.begin(), ti->trace_v_zero.end());
    cs.add_f64("traced_v_zero", all_zero, "per traced step of the INT8 run, second moments decoding to 0");
    cs.add_f64("traced_max_update_int8", ti->trace_max_update, "per traced step, the largest |change| of a bf16 weight, INT8 state (NaN: not finite)");
    cs.add_f64("traced_max_update_bf16", tb->trace_max_update, "the same with bf16 state, same seed");
    const double ui = max_traced_update(*ti), ub = max_traced_update(*tb);
    // INT8 over bf16; INT8 weights that left finite values, or an INT8 change beside no bf16 change
    // (or a bf16 trace that left finite values), are unbounded.
    const double ratio = std::isnan(ui) ? INFINITY : ub > 0 ? ui / ub : ui > 0 ? INFINITY : 1.0;
    cs.add_check(judge("int8_update_within_10x_bf16", "max_update_ratio", ratio, 10, PassIf::at_most,
                       "over the traced steps INT8 state's largest weight change is more than 10x bf16 state's (" +
                           first_step_over_10x(*ti, *tb) + ")")
                     .as_finding());
  }
  progress.note(std::to_string(runs.size()) + " convergence runs, " + std::to_string(groups.size()) + " configurations");
}

}  // namespace fh
