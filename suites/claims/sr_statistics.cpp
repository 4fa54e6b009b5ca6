#include "suites/claims/sr_statistics.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <stdexcept>

#include "kernels/gpu/gpu_step_backend.h"
#include "oracles/bitwise.h"
#include "reference/case_gen.h"
#include "suites/claims/claim_common.h"
#include "suites/claims/fidelity_common.h"

namespace fh {

namespace {

bool rounded_up(float x, bf16 b) { return (b.bits & 0x7fffu) != ((f2u(x) >> 16) & 0x7fffu); }

// Round-up indicators of one tensor of class low16 at key (seed, step, tensor): from sr_round, or
// from a fused bf16_sr step of cfg.backend, checked against sr_round and the value's lattice.
std::vector<uint8_t> sr_draws(const SrStatsConfig& cfg, uint32_t low16, const sr_key& key, SrStatsResult& res) {
  const int64_t rows = cfg.rows, cols = cfg.cols;
  std::vector<uint8_t> up(size_t(rows * cols));
  if (!cfg.through_fused_step) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const float x = sr_class_value(low16, r, c);
        up[size_t(r * cols + c)] = rounded_up(x, sr_round(x, key, r, c, cols, cfg.tile_rows, cfg.tile_cols, cfg.variant));
      }
    return up;
  }
  const SrClassStep st = sr_class_step(low16, rows, cols);
  HostParam w = HostParam::make(st.rule, StateFormat::fp32, WeightStore::bf16_sr, rows, cols, st.w0, key.seed, key.tensor_id);
  TwinSchedule sched;
  sched.tile_rows = cfg.tile_rows;
  sched.tile_cols = cfg.tile_cols;
  backend_or_twin(cfg.backend).step(w, st.X.data(), st.dY.data(), 2, key.step, sched);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = size_t(r * cols + c);
      const float x = sr_class_value(low16, r, c);
      const uint16_t down = uint16_t(f2u(x) >> 16), b = w.bf16[i].bits;  // the lattice: bits below and above
      res.off_lattice += b != down && b != uint16_t(down + 1);
      res.differ_from_stream += w.bf16[i] != sr_round(x, key, r, c, cols, cfg.tile_rows, cfg.tile_cols, SrVariant::kernel);
      ++res.draws;
      up[i] = rounded_up(x, w.bf16[i]);
    }
  return up;
}

}  // namespace

SrStatsResult run_sr_statistics(const SrStatsConfig& cfg) {
  if (cfg.through_fused_step && cfg.variant != SrVariant::kernel)
    throw std::invalid_argument("run_sr_statistics: a planted variant lives in sr_round, not in the fused step");
  if (cfg.rows < 2 * cfg.tile_rows || cfg.cols < 2 * cfg.tile_cols || cfg.steps < 2)
    throw std::invalid_argument("run_sr_statistics: needs 2 x 2 tiles and 2 steps");
  SrStatsResult res;
  const uint32_t classes[] = {0x0001, 0x00ff, 0x3fff, 0x4000, 0x8000, 0x80ff, 0xc0ff, 0xffff};
  const int64_t n_el = cfg.rows * cfg.cols;
  const int64_t n = n_el * cfg.steps;
  res.power_vs_1_256 = hoeffding_power(n, cfg.alpha, 255.0 / 65536.0);
  const std::string tag = std::string(" variant=") + sr_variant_name(cfg.variant) +
                          (cfg.through_fused_step ? " via " + backend_or_twin(cfg.backend).name + " fused step" : "");
  for (size_t ci = 0; ci < std::size(classes); ++ci) {
    int64_t k = 0;
    for (int s = 1; s <= cfg.steps; ++s)
      for (uint8_t u : sr_draws(cfg, classes[ci], sr_key{cfg.seed, uint32_t(s), uint32_t(ci + 1)}, res)) k += u;
    const double p = double(classes[ci]) / 65536.0;
    const MeanTest t = binomial_mean_test(n, k, p, cfg.alpha);
    res.class_low16.push_back(classes[ci]);
    res.class_observed.push_back(t.observed);
    res.class_expected.push_back(p);
    res.class_threshold.push_back(t.threshold);
    ClaimCaseResult cr;
    cr.claim = "sr_binomial";
    char name[64];
    std::snprintf(name, sizeof name, "dropped bits 0x%04x", classes[ci]);
    cr.case_name = name + tag;
    cr.metric_name = "abs_dev_from_expected";
    judge_case(cr, std::fabs(t.observed - t.expected), t.threshold, PassIf::at_most);  // t.reject's test
    cr.note = t.to_string() + fidelity_fmt("; power >= %.6f against a 1/256-ulp bias", res.power_vs_1_256);
    res.cases.push_back(cr);
  }

  // Independence on the p = 1/2 class: products of indicator pairs against p^2 = 1/4.
  const uint32_t half = 0x8000;
  std::vector<uint8_t> prev;
  int64_t nb_pairs = 0, nb11 = 0, tl_pairs = 0, tl11 = 0, st_pairs = 0, st11 = 0;
  for (int s = 1; s <= cfg.steps; ++s) {
    const std::vector<uint8_t> cur = sr_draws(cfg, half, sr_key{stream_seed(cfg.seed, "sr_statistics/independence_key"), uint32_t(s), 100}, res);
    for (int64_t r = 0; r < cfg.rows; ++r)
      for (int64_t c = 0; c + 1 < cfg.cols; c += 2) {
        ++nb_pairs;
        nb11 += cur[size_t(r * cfg.cols + c)] & cur[size_t(r * cfg.cols + c + 1)];
      }
    // Element (r, c) of tile (0, 0) against the same place in tile (0, 1) (even c) and in tile
    // (1, 0) (odd c): disjoint pairs, so the products are independent under the null.
    for (int64_t r = 0; r < cfg.tile_rows; ++r)
      for (int64_t c = 0; c < cfg.tile_cols; ++c) {
        const int64_t j = c % 2 == 0 ? r * cfg.cols + c + cfg.tile_cols : (r + cfg.tile_rows) * cfg.cols + c;
        ++tl_pairs;
        tl11 += cur[size_t(r * cfg.cols + c)] & cur[size_t(j)];
      }
    if (s % 2 == 0)
      for (int64_t i = 0; i < n_el; ++i) {
        ++st_pairs;
        st11 += prev[size_t(i)] & cur[size_t(i)];
      }
    prev = cur;
  }
  auto indep_case = [&](const char* what, int64_t pairs, int64_t n11) {
    const MeanTest t = binomial_mean_test(pairs, n11, 0.25, cfg.alpha);
    ClaimCaseResult cr;
    cr.claim = "sr_independence";
    cr.case_name = std::string(what) + tag;
    cr.metric_name = "abs_dev_from_expected";
    judge_case(cr, std::fabs(t.observed - t.expected), t.threshold, PassIf::at_most);  // t.reject's test
    // A correlation rho of two fair indicators moves E[XY] by rho/4.
    cr.note = t.to_string() + fidelity_fmt("; power >= %.6f against correlation 0.05", hoeffding_power(pairs, cfg.alpha, 0.05 / 4));
    res.cases.push_back(cr);
  };
  indep_case("neighbouring elements", nb_pairs, nb11);
  indep_case("same place in neighbouring tiles", tl_pairs, tl11);
  indep_case("consecutive steps", st_pairs, st11);
  if (cfg.through_fused_step) {
    // The fused step's store draws exactly the stream sr_round describes, from exact class values.
    ClaimCaseResult cr;
    cr.claim = "sr_stream";
    cr.case_name = "fused bf16_sr store == sr_bits stream, every draw" + tag;
    cr.differing = res.off_lattice + res.differ_from_stream;
    judge_case(cr, double(cr.differing), 0, PassIf::at_most, res.draws > 0);  // no draw is no evidence
    cr.note = std::to_string(res.draws) + " draws: " + std::to_string(res.off_lattice) + " off the value's two bf16 neighbours, " +
              std::to_string(res.differ_from_stream) + " differ from float_to_bf16_sr(x, sr_bits(key, index))";
    res.cases.push_back(cr);
  }
  return res;
}

std::vector<ClaimCaseResult> run_sr_layout_invariance(uint64_t seed, SrVariant variant, const FusedStepBackend* backend) {
  std::vector<ClaimCaseResult> out;
  const int64_t o = 96, in = 160, T = 32;
  struct Sched { int64_t tr, tc; TileVisitOrder v; };
  const Sched scheds[] = {{128, 128, TileVisitOrder::row_major}, {64, 64, TileVisitOrder::col_major},
                          {32, 64, TileVisitOrder::col_major},   {64, 32, TileVisitOrder::random},
                          {96, 160, TileVisitOrder::row_major},  {16, 48, TileVisitOrder::random}};
  const FusedStepBackend& be = backend_or_twin(backend);
  // The GPU has two tile shapes (two launch grids here: 2 x 1 and 3 x 2 blocks); the twin all six.
  const size_t n_sched = be.name == "twin" ? std::size(scheds) : 2;
  const std::string tag = std::string(" variant=") + sr_variant_name(variant);
  if (variant == SrVariant::kernel) {
    // The fused step's own bf16_sr store (the random bits as store_weight draws them).
    std::vector<std::vector<bf16>> results;
    for (size_t si = 0; si < n_sched; ++si) {
      const Sched& sc = scheds[si];
      HostParam w = HostParam::make(default_rule_config(RuleId::adamw), StateFormat::fp32, WeightStore::bf16_sr,
                                    o, in, make_wgrad_case(seed, T, in, o, CaseDistribution::normal).w0, seed, 7);
      TwinSchedule sched;
      sched.tile_rows = sc.tr;
      sched.tile_cols = sc.tc;
      sched.visit = sc.v;
      sched.visit_seed = seed;
      for (int s = 1; s <= 2; ++s) {
        const WgradCase c = make_wgrad_case(stream_seed(seed, "sr_layout_invariance/step_inputs", uint64_t(s)), T, in, o, CaseDistribution::normal);
        be.step(w, c.X.data(), c.dY.data(), T, s, sched);
      }
      results.push_back(w.bf16);
    }
    for (size_t i = 1; i < results.size(); ++i)
      out.push_back(fidelity_bitwise_case("sr_layout_invariance",
                                          be.name + " bf16_sr tile " + std::to_string(scheds[i].tr) + "x" + std::to_string(scheds[i].tc) +
                                              (be.name == "twin" ? std::string(" ") + tile_visit_order_name(scheds[i].v) : std::string()) +
                                              " vs 128x128",
                                          {compare_bitwise(results[0], results[i], o, in, {"W bf16", {scheds[i].tr, scheds[i].tc}, 2})}));
  }
  // The SR decision alone, over tile shapes (the copy that can carry a planted variant).
  std::vector<std::vector<bf16>> bits;
  const sr_key key{seed, 3, 9};
  for (const Sched& sc : scheds) {
    std::vector<bf16> b(size_t(o * in));
    for (int64_t r = 0; r < o; ++r)
      for (int64_t c = 0; c < in; ++c) b[size_t(r * in + c)] = sr_round(sr_class_value(0x8000, r, c), key, r, c, in, sc.tr, sc.tc, variant);
    bits.push_back(b);
  }
  for (size_t i = 1; i < bits.size(); ++i)
    out.push_back(fidelity_bitwise_case("sr_layout_invariance",
                                        "sr_round tile " + std::to_string(scheds[i].tr) + "x" + std::to_string(scheds[i].tc) + " vs 128x128" + tag,
                                        {compare_bitwise(bits[0], bits[i], o, in, {"SR bits"})}));
  return out;
}

// ---- forge-verify ----

namespace {

void run_sr_stats(const VerifyConfig& cfg, Report& report, const Progress& progress, const Where& at) {
  const auto t0 = std::chrono::steady_clock::now();
  SrStatsConfig sc;
  sc.seed = stream_seed(cfg.seed, "sr_statistics/draws");
  sc.through_fused_step = true;  // every draw is a fused step's bf16_sr store
  sc.backend = at.be;
  const SrStatsResult r = run_sr_statistics(sc);
  const std::string sizes = "256x256 elements x 64 steps = 2^22 draws per value class, each a fused SGD step's "
                            "bf16_sr store (as the suite)";
  const auto recs = record_claim_cases(report, r.cases, at.group);
  set_attrs(recs, "sizes", sizes);
  set_attrs(recs, "alpha", num(sc.alpha));
  // The class table, and the binomial tests' power, as its own case.
  CaseRecord& table = report.add_case(at.group, "class table and power");
  table.set_attr("sizes", sizes);
  table.add_f64("class_low16", r.class_low16, "dropped 16 bits of the class")
      .add_f64("observed", r.class_observed, "observed round-up fraction")
      .add_f64("expected", r.class_expected, "exact round-up probability low16 / 2^16")
      .add_f64("threshold", r.class_threshold, "Hoeffding threshold at alpha");
  // Power must be near certain against a 1/256-ulp bias (8-bit SR), at alpha = 1e-9.
  const double want = 1 - 1e-9;
  table.add_check(judge("power_vs_1_256_ulp", "power_lower_bound", r.power_vs_1_256, want, PassIf::at_least,
                        "too few draws to see an 8-bit SR bias"));
  // Planted: 8-bit SR must be rejected by the binomial tests (the suite's power, shown), on the copy
  // sr_round's variant in both lanes. The kernel's own 8-bit store is the kernel mutant
  // gpu_sr_top8_bits (suites/mutation/kernel_catalog.json): the fused kernel holds no planted state.
  SrStatsConfig pc = sc;
  pc.through_fused_step = false;
  pc.backend = nullptr;
  pc.variant = SrVariant::bits8;
  int64_t rejected = 0;
  for (const auto& c : run_sr_statistics(pc).cases) rejected += c.claim == "sr_binomial" && !c.pass;
  CaseRecord& planted = report.add_case(at.group, "planted 8-bit SR is rejected");
  planted.set_attr("sizes", sizes).set_attr("note", "classes with low byte 0xff carry a 255/65536-ulp bias under 8-bit SR");
  planted.add_check(judge("bits8_rejected", "classes_rejected", double(rejected), 4, PassIf::at_least,
                          "the binomial tests miss a 1/256-ulp bias"));
  set_attrs(record_claim_cases(report, run_sr_layout_invariance(stream_seed(cfg.seed, "sr_statistics/layout_invariance"), SrVariant::kernel, at.be), at.group),
            "sizes", at.be ? "96x160, the kernel's 2 tile shapes (grids 2x1, 3x2), 2 steps"
                           : "96x160, 6 tile shapes and visit orders, 2 steps");
  progress.note(at.group + ": " + num(fidelity_seconds_since(t0)) + " s");
}

}  // namespace

void claim_sr_statistics(const VerifyConfig& cfg, Report& report, const Progress& progress,
                         const ClaimVariant& variant) {
  run_fidelity(run_sr_stats, variant, cfg, report, progress);
}

}  // namespace fh
