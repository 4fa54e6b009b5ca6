#include "suites/claims/twin_cases.h"

#include <sstream>
#include <stdexcept>

#include "oracles/bitwise.h"

namespace fh {

std::string TwinShapeCase::label() const {
  std::ostringstream os;
  os << out << "x" << in << " T=" << T << " tile " << tile_rows << "x" << tile_cols << " "
     << case_distribution_name(dist);
  return os.str();
}

std::string format_claim_table(const std::vector<ClaimCaseResult>& rs) {
  std::ostringstream os;
  for (const auto& r : rs) {
    os << (r.not_run ? "NOT-RUN " : r.pass ? "PASS " : "FAIL ") << r.claim << " | " << r.case_name << " | differing "
       << r.differing << ", max_ulp " << r.max_ulp;
    if (r.bound != 0) os << ", metric " << r.metric << " <= " << r.bound;
    if (!r.first_diff.empty()) os << " | first: " << r.first_diff;
    if (!r.note.empty()) os << " | " << r.note;
    os << "\n";
  }
  return os.str();
}

std::vector<TwinShapeCase> default_prop1_shapes(uint64_t seed, int n_random) {
  std::vector<TwinShapeCase> v;
  // Ragged everywhere: 72 = 2*32 + 8 rows, 136 = 2*64 + 8 cols, T = 40 = 2*16 + 8.
  v.push_back({72, 136, 40, 32, 64});
  // A mid-size example: 200 x 192 with 128 x 128 tiles and T = 100 (each rule once).
  TwinShapeCase big{200, 192, 100, 128, 128};
  big.coverage = ComboCoverage::rotate_both;
  v.push_back(big);
  // Signed zeros (-0 products are not terms) and a ragged int8 end (200 = 3*64 + 8).
  TwinShapeCase sparse{48, 200, 37, 16, 64, CaseDistribution::sparse};
  v.push_back(sparse);
  // Wide exponents: alignment truncation, the -133 clamp and subnormal products.
  TwinShapeCase wide{40, 72, 33, 32, 64, CaseDistribution::wide_exponent};
  wide.x_params.exp_lo = -133;
  wide.x_params.exp_hi = -100;
  wide.dy_params.exp_lo = -30;
  wide.dy_params.exp_hi = 8;
  wide.coverage = ComboCoverage::rotate_format;
  v.push_back(wide);
  TwinShapeCase wide2{40, 72, 50, 16, 64, CaseDistribution::wide_exponent};
  wide2.x_params.exp_lo = -40;
  wide2.x_params.exp_hi = 8;
  wide2.dy_params.exp_lo = -40;
  wide2.dy_params.exp_hi = 8;
  wide2.coverage = ComboCoverage::rotate_format;
  v.push_back(wide2);
  // No tokens at all: G = +0 everywhere.
  v.push_back({24, 64, 0, 16, 64});
  CaseRng rng(seed);
  const int64_t tr_choices[] = {16, 32, 64, 128};
  for (int k = 0; k < n_random; ++k) {
    TwinShapeCase s;
    s.out = rng.range(1, 120);
    s.in = rng.range(1, 160);
    s.T = rng.range(1, 70);
    s.tile_rows = tr_choices[rng.below(4)];
    s.tile_cols = rng.below(2) ? 64 : 128;
    s.coverage = ComboCoverage::rotate_format;
    v.push_back(s);
  }
  return v;
}

std::string combo_name(RuleId r, StateFormat f, WeightStore w) {
  return std::string(rule_name(r)) + " " + state_format_name(f) + " " + weight_store_name(w);
}

std::vector<RuleId> rule_ids(const VerifyConfig& cfg) {
  std::vector<RuleId> ids;
  for (const auto& rc : cfg.rules) ids.push_back(rc.id);
  return ids;
}

// New X and dY for every step (a training run sees new data each step), one initial weight.
LayerInputs make_shape_inputs(uint64_t seed, const TwinShapeCase& s, int steps) {
  if (s.tile_rows < 1 || s.tile_cols < 1)
    throw std::invalid_argument("twin claims: bad shape case " + s.label());
  return make_layer_inputs(seed, s.out, s.in, s.T, steps, s.dist, s.x_params, s.dy_params);
}

TwinSchedule schedule_for(const TwinShapeCase& s, TileVisitOrder visit, uint64_t visit_seed,
                          const TwinPlantedDefects& defects) {
  TwinSchedule sch;
  sch.tile_rows = s.tile_rows;
  sch.tile_cols = s.tile_cols;
  sch.visit = visit;
  sch.visit_seed = visit_seed;
  sch.order = fused_kernel_order(64);
  sch.defects = defects;
  return sch;
}

std::vector<Combo> combos_for(const TwinShapeCase& s, const std::vector<RuleConfig>& rules,
                              const std::vector<StateFormat>& formats,
                              const std::vector<WeightStore>& stores, int shape_index) {
  std::vector<Combo> out;
  const size_t off = size_t(shape_index);
  for (size_t r = 0; r < rules.size(); ++r) {
    if (s.coverage == ComboCoverage::rotate_both) {
      out.push_back({rules[r], formats[(r + off) % formats.size()],
                     stores[(r / formats.size() + r + off) % stores.size()]});
      continue;
    }
    for (size_t w = 0; w < stores.size(); ++w) {
      if (s.coverage == ComboCoverage::full) {
        for (StateFormat f : formats) out.push_back({rules[r], f, stores[w]});
      } else {
        out.push_back({rules[r], formats[(r + w + off) % formats.size()], stores[w]});
      }
    }
  }
  return out;
}

bool int8_fits(const TwinShapeCase& s, int64_t tile_cols) {
  return tile_cols % kInt8Block == 0 || tile_cols >= s.in;
}

ClaimCaseResult open_twin_case(const char* claim, std::string case_name, StateFormat f, const TwinShapeCase& shape) {
  ClaimCaseResult c;
  c.claim = claim;
  c.case_name = std::move(case_name);
  progress_set_case(c.case_name);
  if (f == StateFormat::int8 && !int8_fits(shape, shape.tile_cols)) {
    c.not_run = true;
    c.note = "not run: int8 needs tile columns a multiple of 64";
  }
  return c;
}

void compare_dx(ParamEvidence& ev, const std::vector<float>& a, const std::vector<float>& b,
                int64_t T, int64_t in, int64_t step, const std::string& where) {
  if (T == 0) return;
  BitwiseContext c;
  c.name = "dX [T, in]";
  c.step = step;
  ev.add(compare_bitwise(a, b, T, in, c), where);
}

}  // namespace fh
