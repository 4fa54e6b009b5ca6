#include "suites/claims/claim_common.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>

namespace fh {

void Progress::claim(const std::string& name, const std::string& what) const {
  if (!quiet) std::fprintf(stderr, "[%d/%d] %s: %s\n", claim_index, claim_count, name.c_str(), what.c_str());
}
void Progress::note(const std::string& text) const {
  if (quiet) return;
  if (note_sink) note_sink(text);
  else std::fprintf(stderr, "        %s\n", text.c_str());
}

namespace {
std::mutex g_case_mutex;
std::map<std::thread::id, std::string> g_current_case;  // per thread: claims run side by side
}  // namespace

void progress_set_case(const std::string& name) {
  std::lock_guard<std::mutex> lock(g_case_mutex);
  if (name.empty()) g_current_case.erase(std::this_thread::get_id());
  else g_current_case[std::this_thread::get_id()] = name;
}

std::string progress_current_case() { return progress_case_of(std::this_thread::get_id()); }

std::string progress_case_of(std::thread::id thread) {
  std::lock_guard<std::mutex> lock(g_case_mutex);
  const auto it = g_current_case.find(thread);
  return it == g_current_case.end() ? std::string() : it->second;
}

std::string case_name(RuleId r, StateFormat f, WeightStore w) {
  return std::string(rule_name(r)) + "." + state_format_name(f) + "." + weight_store_name(w);
}
std::string case_name(RuleId r, StateFormat f) {
  return std::string(rule_name(r)) + "." + state_format_name(f);
}

RunInputPaths input_paths_of(const VerifyConfig& cfg) {
  return {.external_cases = cfg.external_cases, .external_results = cfg.external_results,
          .external_model = cfg.external_model, .model_step = cfg.model_step,
          .external_timing = cfg.external_timing, .bench_json = {}, .kill_matrix = cfg.kill_matrix,
          .convergence_run = cfg.convergence_run, .tp_rank_run = cfg.tp_rank_run};
}

const RunInputs& claim_inputs(const VerifyConfig& cfg) {
  if (const char* planted = std::getenv("FH_PLANT_INPUT_ACCESS_THROW"); planted && std::string(planted) == "1")
    throw std::invalid_argument("planted defect: FH_PLANT_INPUT_ACCESS_THROW=1 (a claim's input access failed)");
  if (cfg.inputs) return *cfg.inputs;
  if (!cfg.external_cases.empty() || !cfg.external_results.empty() || !cfg.external_model.empty() ||
      !cfg.model_step.empty() || !cfg.external_timing.empty() || !cfg.kill_matrix.empty() ||
      !cfg.convergence_run.empty() || !cfg.tp_rank_run.empty())
    throw std::logic_error("claim_inputs: the configuration names input files that were not parsed (set VerifyConfig::inputs)");
  static const RunInputs none;
  return none;
}

std::vector<Combo> combos_of(const VerifyConfig& cfg) {
  std::vector<Combo> out;
  for (const RuleConfig& rc : cfg.rules)
    for (StateFormat f : cfg.formats)
      for (WeightStore w : cfg.stores) out.push_back({rc, f, w});
  return out;
}

RuleConfig config_for(RuleId id, const std::vector<RuleConfig>& configs) {
  for (const RuleConfig& rc : configs)
    if (rc.id == id) return rc;
  return default_rule_config(id);
}

LayerInputs make_layer_inputs(uint64_t seed, int64_t out, int64_t in, int64_t T, int64_t steps,
                              CaseDistribution dist, const CaseDistParams& x_params,
                              const CaseDistParams& dy_params) {
  if (steps < 1) throw std::invalid_argument("layer inputs: steps must be >= 1");
  std::vector<uint64_t> step_seeds;
  for (int64_t k = 0; k < steps; ++k) step_seeds.push_back(stream_seed(seed, "layer_inputs/step", uint64_t(k)));
  return make_layer_inputs_from_seeds(seed, step_seeds, stream_seed(seed, "layer_inputs/w0"), out, in, T, dist,
                                      x_params, dy_params);
}

LayerInputs make_layer_inputs_from_seeds(uint64_t seed, const std::vector<uint64_t>& step_seeds, uint64_t w0_seed,
                                         int64_t out, int64_t in, int64_t T, CaseDistribution dist,
                                         const CaseDistParams& x_params, const CaseDistParams& dy_params) {
  if (step_seeds.empty()) throw std::invalid_argument("layer inputs: steps must be >= 1");
  if (out <= 0 || in <= 0 || T < 0) throw std::invalid_argument("layer inputs: bad shape");
  LayerInputs li;
  li.out = out; li.in = in; li.T = T; li.seed = seed;
  for (uint64_t step_seed : step_seeds) {
    WgradCase c = make_wgrad_case(step_seed, T, in, out, dist, x_params, dy_params);
    li.steps.push_back({std::move(c.X), std::move(c.dY)});
  }
  CaseRng rng(w0_seed);
  li.w0 = gen_weights_f32(rng, out * in, 0.02);  // small enough that every rule moves bf16
  return li;
}

std::vector<CaseRecord*> record_claim_cases(Report& report, const std::vector<ClaimCaseResult>& results,
                                            const std::string& claim) {
  std::vector<CaseRecord*> made;
  for (const ClaimCaseResult& r : results) {
    CaseRecord& cs = report.add_case(claim, r.case_name);
    made.push_back(&cs);
    if (!r.note.empty()) cs.set_attr("note", r.note);
    cs.add_check(case_check(r, claim));
  }
  return made;
}

void set_attrs(const std::vector<CaseRecord*>& recs, const std::string& key, const std::string& value) {
  for (CaseRecord* r : recs) r->set_attr(key, value);
}

std::string num(double x) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

}  // namespace fh
