#include "reference/fidelity_runs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "kernels/formats/int8_block.h"
#include "oracles/bitwise.h"
#include "reference/case_gen.h"
#include "reference/mpfr_rules.h"
#include "reference/two_phase_host.h"

namespace fh {

const char* int8_tile_defect_name(Int8TileDefect d) {
  switch (d) {
    case Int8TileDefect::none: return "none";
    case Int8TileDefect::straddle_tile_edge: return "straddle_tile_edge";
    case Int8TileDefect::absmax_over_tile: return "absmax_over_tile";
  }
  return "?";
}

const char* sr_variant_name(SrVariant v) {
  switch (v) {
    case SrVariant::kernel: return "kernel";
    case SrVariant::bits8: return "bits8";
    case SrVariant::shared_tile_bits: return "shared_tile_bits";
  }
  return "?";
}

namespace {

std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

// ---- INT8 tile update copy ----

template <class Rule>
void tiled_copy_typed(HostParam& w, const typename Rule::Scalars& s, const std::vector<float>& G,
                      int64_t tile_cols, Int8TileDefect defect) {
  const int64_t rows = w.rows, cols = w.cols, bpr = w.blocks_per_row();
  const bool straddle = defect == Int8TileDefect::straddle_tile_edge;
  for (int64_t tc0 = 0; tc0 < cols; tc0 += tile_cols) {
    const int64_t tc1 = std::min(cols, tc0 + tile_cols);
    if (!straddle) {  // DESIGN contract 5, as apply_rule_region enforces it
      require_block_aligned(StateFormat::int8, tc0, cols, "copy tile");
      require_block_aligned(StateFormat::int8, tc1, cols, "copy tile");
    }
    // Segments: [start, end) with the absmax slot start / 64 (as update_segment indexes it).
    std::vector<std::pair<int64_t, int64_t>> segs;
    for (int64_t c = tc0; c < tc1;) {
      const int64_t next = straddle ? std::min(tc1, c + kInt8Block)
                                    : std::min(tc1, (c / kInt8Block + 1) * kInt8Block);
      segs.push_back({c, next});
      c = next;
    }
    std::vector<float> st_new[kMaxStates];
    for (auto& v : st_new) v.assign(size_t(tc1 - tc0), 0.0f);
    for (int64_t r = 0; r < rows; ++r) {
      for (auto [c0, c1] : segs) {
        const int64_t blk = r * bpr + c0 / kInt8Block;
        for (int64_t c = c0; c < c1; ++c) {
          const int64_t idx = r * cols + c;
          float st[kMaxStates];
          for (int k = 0; k < kMaxStates; ++k)
            st[k] = w.decls.slot[k].kept ? int8_decode(w.st_i8[k][size_t(idx)], w.decls.slot[k].nonnegative,
                                                       w.st_absmax[k][size_t(blk)])
                                         : 0.0f;
          float p = w.master[size_t(idx)];
          Rule::update(s, p, G[size_t(idx)], st);
          w.master[size_t(idx)] = p;
          w.bf16[size_t(idx)] = float_to_bf16_rne(p);
          for (int k = 0; k < kMaxStates; ++k) st_new[k][size_t(c - tc0)] = st[k];
        }
      }
      for (int k = 0; k < kMaxStates; ++k) {
        if (!w.decls.slot[k].kept) continue;
        const bool nn = w.decls.slot[k].nonnegative;
        uint8_t* bytes = w.st_i8[k].data() + r * cols;
        const float tile_a = int8_block_absmax(st_new[k].data(), int(tc1 - tc0));
        for (auto [c0, c1] : segs) {
          float* amax = w.st_absmax[k].data() + r * bpr + c0 / kInt8Block;
          const float* x = st_new[k].data() + (c0 - tc0);
          if (defect == Int8TileDefect::absmax_over_tile) {
            *amax = tile_a;
            for (int64_t c = c0; c < c1; ++c) bytes[c] = int8_encode_value(x[c - c0], tile_a, nn);
          } else {
            int8_encode_block(x, int(c1 - c0), nn, bytes + c0, amax);
          }
        }
      }
    }
  }
}

}  // namespace

void int8_tiled_update_copy(HostParam& w, const std::vector<float>& G, int64_t step,
                            int64_t tile_cols, Int8TileDefect defect) {
  if (w.state_format != StateFormat::int8 || w.weight_store != WeightStore::fp32_master)
    throw std::invalid_argument("int8_tiled_update_copy: needs int8 state and an fp32_master store");
  if (G.size() != size_t(w.rows * w.cols)) throw std::invalid_argument("int8_tiled_update_copy: G has the wrong size");
  if (tile_cols < 1 || step < 1) throw std::invalid_argument("int8_tiled_update_copy: tile_cols >= 1, step >= 1");
  visit_rule(w.rule.id, [&](auto r) {
    using Rule = decltype(r);
    tiled_copy_typed<Rule>(w, Rule::scalars(hyper_of<Rule>(w.rule), step), G, tile_cols, defect);
  });
}

namespace {

// The inputs of step s: X, dY drawn from their own seed per step; w0 from step 0's draw.
WgradCase step_inputs(const Prop4Config& cfg, int64_t s) {
  return make_wgrad_case(cfg.seed + uint64_t(s) * 0x9E3779B97F4A7C15ull, cfg.T, cfg.in, cfg.out,
                         CaseDistribution::normal);
}

// The twin's schedule. Its INT8 tiles must be block aligned; a planted straddling tile width is
// only for the defective copy, so the twin then takes whole rows.
TwinSchedule schedule_of(const Prop4Config& cfg) {
  TwinSchedule sched;
  sched.tile_rows = cfg.tile_rows;
  sched.tile_cols = cfg.tile_cols % kInt8Block == 0 ? cfg.tile_cols : cfg.in;
  return sched;
}

// A fused step of the config's backend (the twin when it has none).
void fused_step(HostParam& w, const WgradCase& c, int64_t step, const Prop4Config& cfg) {
  backend_or_twin(cfg.backend).step(w, c.X.data(), c.dY.data(), c.T, step, schedule_of(cfg));
}

// The INT8 path of a judged step: the fused step, or the defective copy on the fused path's G.
void int8_step(HostParam& w, const WgradCase& c, int64_t step, const Prop4Config& cfg) {
  const TwinSchedule sched = schedule_of(cfg);
  if (cfg.defect == Int8TileDefect::none) {
    fused_step(w, c, step, cfg);
  } else {
    const std::vector<float> G = backend_or_twin(cfg.backend).wgrad(c.X.data(), c.dY.data(), c.T, c.in, c.out, sched);
    int8_tiled_update_copy(w, G, step, cfg.tile_cols, cfg.defect);
  }
}

std::vector<float> decoded_state(const HostParam& w, int k) {
  std::vector<float> v(size_t(w.rows * w.cols));
  for (int64_t i = 0; i < w.rows * w.cols; ++i) v[size_t(i)] = w.state(k, i);
  return v;
}

// An fp32-state copy of w (INT8) holding w's decoded state and the same weights.
HostParam fp32_twin_of(const HostParam& w8) {
  HostParam wf = HostParam::make(w8.rule, StateFormat::fp32, WeightStore::fp32_master, w8.rows,
                                 w8.cols, w8.master);
  for (int k = 0; k < kMaxStates; ++k)
    if (wf.decls.slot[k].kept) wf.st_f32[k] = decoded_state(w8, k);
  wf.bf16 = w8.bf16;
  return wf;
}

ClaimCaseResult bitwise_case(const std::string& claim, const std::string& name,
                             const std::vector<BitwiseReport>& reps) {
  ClaimCaseResult c;
  c.claim = claim;
  c.case_name = name;
  for (const auto& r : reps) {
    c.differing += r.n_differ;
    c.max_ulp = std::max(c.max_ulp, double(r.max_ulp));
    if (c.first_diff.empty() && r.n_differ) c.first_diff = r.to_string();
  }
  c.metric = double(c.differing);
  c.pass = c.differing == 0;
  return c;
}

double block_bound_of(const std::vector<float>& ref, int64_t cols, int64_t r, int64_t c, bool nn) {
  const int64_t c0 = c / kInt8Block * kInt8Block;
  const int n = int(std::min<int64_t>(kInt8Block, cols - c0));
  return int8_codec_bound(int8_block_absmax(ref.data() + r * cols + c0, n), nn);
}

}  // namespace

Prop4OneStepResult run_prop4_one_step(const Prop4Config& cfg) {
  const std::string claim = "prop4_int8";
  const std::string tag = std::string(rule_name(cfg.rule.id)) + " " + std::to_string(cfg.out) + "x" +
                          std::to_string(cfg.in) + " T=" + std::to_string(cfg.T) +
                          (cfg.defect == Int8TileDefect::none ? "" : std::string(" defect=") + int8_tile_defect_name(cfg.defect));
  Prop4OneStepResult res;
  const WgradCase c0 = step_inputs(cfg, 0);
  HostParam w8 = HostParam::make(cfg.rule, StateFormat::int8, WeightStore::fp32_master, cfg.out, cfg.in, c0.w0);
  for (int s = 1; s <= cfg.warmup_steps; ++s) {
    const WgradCase c = step_inputs(cfg, s);
    fused_step(w8, c, s, cfg);
  }
  HostParam wf = fp32_twin_of(w8);

  // Step A: same decoded start, one step each.
  const int64_t sA = cfg.warmup_steps + 1;
  const WgradCase cA = step_inputs(cfg, sA);
  int8_step(w8, cA, sA, cfg);
  fused_step(wf, cA, sA, cfg);

  for (int k = 0; k < kMaxStates; ++k) {
    if (!w8.decls.slot[k].kept) continue;
    res.kept[k] = true;
    const bool nn = w8.decls.slot[k].nonnegative;
    const Int8MomentJudgement j = judge_int8_moments(decoded_state(w8, k), wf.st_f32[k], cfg.out, cfg.in, nn);
    res.moments[k] = j;
    ClaimCaseResult m;
    m.claim = claim;
    m.case_name = tag + " " + w8.decls.slot[k].name + " within codec bound";
    m.metric = j.max_ratio;
    m.bound = 1.0;
    m.differing = j.violations;
    m.first_diff = j.first_violation;
    m.pass = j.pass() && j.elements == cfg.out * cfg.in;
    m.note = fmt("max |err|/absmax %.6g vs bound/absmax %.6g (1/(2L) + 4u); ", j.max_err_rel_absmax, j.bound_rel_absmax) +
             std::to_string(j.violations) + " violations";
    res.cases.push_back(m);
    const int64_t bad_amax = count_absmax_mismatches(w8.st_absmax[k], wf.st_f32[k], cfg.out, cfg.in);
    ClaimCaseResult a;
    a.claim = claim;
    a.case_name = tag + " " + w8.decls.slot[k].name + " absmax is the block's";
    a.differing = bad_amax;
    a.metric = double(bad_amax);
    a.pass = bad_amax == 0;
    res.cases.push_back(a);
  }
  // The weight update reads the moments before they are encoded, so step A's weights agree.
  res.cases.push_back(bitwise_case(claim, tag + " step A weights identical",
                                   {compare_bitwise(w8.master, wf.master, cfg.out, cfg.in, {"W step A"})}));

  // Step B: the INT8 path starts from moments within B of the fp32 path's.
  const int64_t sB = sA + 1;
  const WgradCase cB = step_inputs(cfg, sB);
  const std::vector<float> GB = backend_or_twin(cfg.backend).wgrad(cB.X.data(), cB.dY.data(), cfg.T, cfg.in, cfg.out, schedule_of(cfg));
  const MpfrStepScalars sc = mpfr_step_scalars(cfg.rule, sB);
  std::vector<double> bound(size_t(cfg.out * cfg.in));
  bool all_bounded = true;
  for (int64_t r = 0; r < cfg.out; ++r)
    for (int64_t c = 0; c < cfg.in; ++c) {
      const int64_t i = r * cfg.in + c;
      float st_ref[kMaxStates] = {};
      double st_err[kMaxStates] = {};
      for (int k = 0; k < kMaxStates; ++k) {
        if (!res.kept[k]) continue;
        st_ref[k] = wf.st_f32[k][size_t(i)];
        st_err[k] = block_bound_of(wf.st_f32[k], cfg.in, r, c, w8.decls.slot[k].nonnegative);
      }
      const PropagatedWeightBound b = propagated_weight_bound(sc, wf.master[size_t(i)], GB[size_t(i)], st_ref, st_err);
      all_bounded = all_bounded && b.status_ok;
      bound[size_t(i)] = b.total();
    }
  int8_step(w8, cB, sB, cfg);
  fused_step(wf, cB, sB, cfg);
  ClaimCaseResult wb;
  wb.claim = claim;
  wb.case_name = tag + " step B weights within propagated bound";
  wb.bound = 1.0;
  for (size_t i = 0; i < bound.size(); ++i) {
    const mpreal d = abs(ref_real(w8.master[i]) - ref_real(wf.master[i]));
    const double dd = mpfr_get_d(d.mpfr_srcptr(), MPFR_RNDU);
    res.next_step_max_diff = std::max(res.next_step_max_diff, dd);
    const double ratio = bound[i] > 0 ? dd / bound[i] : (dd == 0 ? 0.0 : INFINITY);
    if (!(d <= ref_real(bound[i])) || std::isnan(w8.master[i])) {
      if (wb.differing++ == 0) wb.first_diff = "element " + std::to_string(i) + fmt(": |dW| %.6g bound %.6g", dd, bound[i]);
    }
    res.next_step_max_ratio = std::max(res.next_step_max_ratio, ratio);
  }
  wb.metric = res.next_step_max_ratio;
  wb.pass = wb.differing == 0 && all_bounded;
  wb.note = fmt("max |dW| %.6g, max |dW|/bound %.6g (running error analysis, oracles/rule_bounds.h)",
                res.next_step_max_diff, res.next_step_max_ratio);
  if (!all_bounded) wb.note += "; some element's bound is out of range/unbounded";
  res.cases.push_back(wb);
  return res;
}

ClaimCaseResult run_prop1_int8(const Prop4Config& cfg, int steps) {
  const WgradCase c0 = step_inputs(cfg, 0);
  HostParam wt = HostParam::make(cfg.rule, StateFormat::int8, WeightStore::fp32_master, cfg.out, cfg.in, c0.w0);
  HostParam wp = wt;
  std::vector<BitwiseReport> reps;
  for (int s = 1; s <= steps; ++s) {
    const WgradCase c = step_inputs(cfg, s);
    int8_step(wt, c, s, cfg);
    two_phase_step_host(wp, c.X.data(), c.dY.data(), cfg.T, s, GradProducer::tensor_core_chain);
    BitwiseContext ctx{"W", {cfg.tile_rows, cfg.tile_cols}, s};
    reps.push_back(compare_bitwise(wt.master, wp.master, cfg.out, cfg.in, ctx));
    for (int k = 0; k < kMaxStates; ++k) {
      if (!wt.decls.slot[k].kept) continue;
      reps.push_back(compare_bitwise_u8(wt.st_i8[k].data(), wp.st_i8[k].data(), cfg.out, cfg.in,
                                        {std::string(wt.decls.slot[k].name) + " bytes", {}, s, !wt.decls.slot[k].nonnegative}));
      reps.push_back(compare_bitwise(wt.st_absmax[k], wp.st_absmax[k], cfg.out, wt.blocks_per_row(),
                                     {std::string(wt.decls.slot[k].name) + " absmax", {}, s}));
    }
  }
  return bitwise_case("prop1_int8", std::string(rule_name(cfg.rule.id)) + " fused " + backend_or_twin(cfg.backend).name +
                                        " == two-phase, int8 state, " +
                                        std::to_string(steps) + " steps" +
                                        (cfg.defect == Int8TileDefect::none ? "" : std::string(" defect=") + int8_tile_defect_name(cfg.defect)),
                      reps);
}

std::vector<ClaimCaseResult> run_int8_degenerate_blocks(const Prop4Config& cfg_in) {
  Prop4Config cfg = cfg_in;
  if (cfg.in < 4 * kInt8Block) throw std::invalid_argument("run_int8_degenerate_blocks: needs in >= 256");
  struct Poison { const char* name; int64_t c0, c1; };  // poisoned X columns [c0, c1)
  const Poison kinds[] = {{"nan", 70, 71}, {"inf", 70, 71}, {"huge_outlier", 70, 71},
                          {"subnormal_absmax", 128, 192}, {"all_zero", 128, 192}};
  std::vector<ClaimCaseResult> out;
  const WgradCase c0 = step_inputs(cfg, 0);
  for (const Poison& pk : kinds) {
    const std::string kind = pk.name;
    auto poison = [&](WgradCase c) {
      for (int64_t t = 0; t < c.T; ++t)
        for (int64_t j = pk.c0; j < pk.c1; ++j) {
          uint16_t& x = c.X[size_t(t * c.in + j)];
          if (kind == "nan") x = t == 0 ? 0x7fc1 : x;
          else if (kind == "inf") x = t == 0 ? 0x7f80 : x;
          else if (kind == "huge_outlier") x = t == 0 ? 0x5380 : x;  // 2^40
          else if (kind == "subnormal_absmax") x = uint16_t((x & 0x8000) | (1 + (t + j) % 7));  // bf16 subnormals
          else x = 0;
        }
      return c;
    };
    HostParam clean = HostParam::make(cfg.rule, StateFormat::int8, WeightStore::fp32_master, cfg.out, cfg.in, c0.w0);
    HostParam bad = clean;
    HostParam ref = fp32_twin_of(bad);
    ClaimCaseResult res;
    res.claim = "prop4_int8_degenerate";
    res.case_name = std::string(rule_name(cfg.rule.id)) + " " + kind +
                    (cfg.defect == Int8TileDefect::none ? "" : std::string(" defect=") + int8_tile_defect_name(cfg.defect));
    res.pass = true;
    const int64_t bpr = clean.blocks_per_row();
    const int64_t pblk0 = pk.c0 / kInt8Block, pblk1 = (pk.c1 - 1) / kInt8Block;
    for (int s = 1; s <= 2; ++s) {
      const WgradCase c = step_inputs(cfg, s);
      const WgradCase cp = poison(c);
      int8_step(clean, c, s, cfg);
      int8_step(bad, cp, s, cfg);
      if (s == 1) {
        fused_step(ref, cp, s, cfg);
        for (int k = 0; k < kMaxStates; ++k) {
          if (!bad.decls.slot[k].kept) continue;
          const Int8MomentJudgement j = judge_int8_moments(decoded_state(bad, k), ref.st_f32[k], cfg.out, cfg.in,
                                                           bad.decls.slot[k].nonnegative);
          if (!j.pass()) {
            res.pass = false;
            res.differing += j.violations;
            if (res.first_diff.empty()) res.first_diff = std::string("poisoned step 1 ") + bad.decls.slot[k].name + ": " + j.first_violation;
          }
          res.metric = std::max(res.metric, j.max_ratio);
        }
      }
      // Every block outside the poisoned one: bytes, absmax and weights as in the clean run.
      for (int64_t r = 0; r < cfg.out; ++r)
        for (int64_t b = 0; b < bpr; ++b) {
          if (b >= pblk0 && b <= pblk1) continue;
          bool same = true;
          for (int64_t cc = b * kInt8Block; cc < std::min(cfg.in, (b + 1) * kInt8Block); ++cc) {
            const size_t i = size_t(r * cfg.in + cc);
            same = same && f2u(clean.master[i]) == f2u(bad.master[i]);
            for (int k = 0; k < kMaxStates; ++k)
              if (clean.decls.slot[k].kept) same = same && clean.st_i8[k][i] == bad.st_i8[k][i];
          }
          for (int k = 0; k < kMaxStates; ++k)
            if (clean.decls.slot[k].kept)
              same = same && f2u(clean.st_absmax[k][size_t(r * bpr + b)]) == f2u(bad.st_absmax[k][size_t(r * bpr + b)]);
          if (!same) {
            res.pass = false;
            if (res.differing++ == 0 || res.first_diff.empty())
              res.first_diff = "neighbour block corrupted: step " + std::to_string(s) + " row " + std::to_string(r) +
                               " block " + std::to_string(b);
          }
        }
    }
    // The poisoned block's stored absmax after step 2 follows INT8_CODEC.md's table (slot 0):
    // NaN -> the canonical NaN; inf -> +inf (m stays inf: b1*inf + (1-b1)*g);
    // huge outlier -> finite; subnormal -> 0 < a < 2^-126; all zero -> +0.
    const float a_m = bad.st_absmax[0][size_t(pblk0)];
    const uint32_t ab = f2u(a_m);
    bool documented = true;
    if (kind == "nan") documented = ab == kInt8CanonicalNanBits;
    else if (kind == "inf") documented = ab == 0x7f800000u;
    else if (kind == "huge_outlier") documented = fisfinite(a_m) && a_m > 1e6f;
    else if (kind == "subnormal_absmax") documented = a_m > 0.0f && a_m < 0x1p-126f;
    else documented = ab == 0u;
    if (!documented) {
      res.pass = false;
      res.first_diff += " poisoned block absmax not as documented";
    }
    char buf[160];
    std::snprintf(buf, sizeof buf, "poisoned block (row 0, slot 0) absmax after step 2: bits 0x%08x (%g)", ab, double(a_m));
    res.note = std::string(buf) + "; neighbours compared bitwise against the clean run after steps 1 and 2";
    res.bound = 1.0;
    out.push_back(res);
  }
  return out;
}

TrajectoryResult run_int8_trajectory(const Prop4Config& cfg, int steps) {
  TrajectoryResult tr;
  const WgradCase c0 = step_inputs(cfg, 0);
  HostParam w8 = HostParam::make(cfg.rule, StateFormat::int8, WeightStore::fp32_master, cfg.out, cfg.in, c0.w0);
  HostParam wf = HostParam::make(cfg.rule, StateFormat::fp32, WeightStore::fp32_master, cfg.out, cfg.in, c0.w0);
  double envelope = 0;
  bool ok = true;
  const size_t n = size_t(cfg.out * cfg.in);
  std::vector<uint8_t> had_zero_v(n, 0);
  for (int s = 1; s <= steps; ++s) {
    const WgradCase c = step_inputs(cfg, s);
    const std::vector<float> p8 = w8.master, pf = wf.master;
    int64_t zero_v = 0;  // AdamW: second moment decodes to 0 while the first does not
    if (cfg.rule.id == RuleId::adamw)
      for (size_t i = 0; i < n; ++i)
        if (w8.state(1, int64_t(i)) == 0.0f && w8.state(0, int64_t(i)) != 0.0f) {
          ++zero_v;
          had_zero_v[i] = 1;
        }
    tr.zero_v_nonzero_m.push_back(zero_v);
    int8_step(w8, c, s, cfg);
    fused_step(wf, c, s, cfg);
    double mx = 0, ss = 0, up8 = 0, upf = 0;
    for (size_t i = 0; i < n; ++i) {
      const double d = std::fabs(double(w8.master[i]) - double(wf.master[i]));
      if (!std::isfinite(d)) ok = false;
      mx = std::max(mx, d);
      ss += d * d;
      up8 = std::max(up8, std::fabs(double(w8.master[i]) - double(p8[i])));
      upf = std::max(upf, std::fabs(double(wf.master[i]) - double(pf[i])));
    }
    envelope += up8 + upf;  // triangle inequality: |dW(t)| <= sum of both paths' step sizes
    if (mx > envelope) ok = false;
    tr.max_abs_dev.push_back(mx);
    tr.rms_dev.push_back(std::sqrt(ss / double(n)));
    tr.max_update.push_back(upf);
    tr.max_update_int8.push_back(up8);
  }
  // Attribution: how much of the final deviation sits on elements that ever stepped with v = 0.
  std::vector<double> d(n);
  double ss_all = 0, ss_event = 0;
  for (size_t i = 0; i < n; ++i) {
    d[i] = std::fabs(double(w8.master[i]) - double(wf.master[i]));
    ss_all += d[i] * d[i];
    if (had_zero_v[i]) {
      ss_event += d[i] * d[i];
      ++tr.zero_v_elements;
    }
  }
  tr.dev_share_zero_v = ss_all > 0 ? ss_event / ss_all : 0.0;
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  const size_t top = std::max<size_t>(1, n / 100);
  std::partial_sort(order.begin(), order.begin() + long(top), order.end(), [&](size_t a, size_t b) { return d[a] > d[b]; });
  int64_t top_event = 0;
  for (size_t k = 0; k < top; ++k) top_event += had_zero_v[order[k]];
  tr.top1pct_zero_v_frac = double(top_event) / double(top);
  // Growth: slope of log(dev) against log(step) over the steps with dev > 0.
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  int m = 0;
  for (int s = 0; s < steps; ++s)
    if (tr.max_abs_dev[size_t(s)] > 0) {
      const double x = std::log(double(s + 1)), y = std::log(tr.max_abs_dev[size_t(s)]);
      sx += x; sy += y; sxx += x * x; sxy += x * y; ++m;
    }
  tr.growth_exponent = m > 1 ? (m * sxy - sx * sy) / (m * sxx - sx * sx) : 0.0;
  tr.verdict.claim = "prop4_int8_trajectory";
  tr.verdict.case_name = std::string(rule_name(cfg.rule.id)) + " " + std::to_string(cfg.out) + "x" +
                         std::to_string(cfg.in) + " T=" + std::to_string(cfg.T) + " " + std::to_string(steps) + " steps";
  tr.verdict.metric = tr.max_abs_dev.back();
  tr.verdict.bound = envelope;
  tr.verdict.pass = ok;
  tr.verdict.note = fmt("final max |W_int8 - W_fp32| %.4g, rms %.4g, growth ~ t^%.3f", tr.max_abs_dev.back(),
                        tr.rms_dev.back(), tr.growth_exponent) +
                    fmt("; elements that ever stepped with v decoded 0: %.0f, carrying %.3g of the final sum |dW|^2 "
                        "and %.3g of the largest 1%%",
                        double(tr.zero_v_elements), tr.dev_share_zero_v, tr.top1pct_zero_v_frac);
  return tr;
}

// ---- stochastic rounding ----

uint16_t sr_round(float x, const sr_key& key, int64_t r, int64_t c, int64_t cols, int64_t tile_rows,
                  int64_t tile_cols, SrVariant v) {
  switch (v) {
    case SrVariant::kernel: return float_to_bf16_sr(x, sr_bits(key, uint64_t(r * cols + c)));
    case SrVariant::bits8: return float_to_bf16_sr(x, sr_bits(key, uint64_t(r * cols + c)) & 0xff00u);
    case SrVariant::shared_tile_bits:
      return float_to_bf16_sr(x, sr_bits(key, uint64_t((r % tile_rows) * tile_cols + (c % tile_cols))));
  }
  throw std::invalid_argument("sr_round: unknown variant");
}

namespace {

// The value of element (r, c) in a class with dropped bits low16: sign and exponent vary with the
// row, the kept mantissa with row and column (normal numbers, far from overflow), the dropped 16
// bits are the class. Row-wise sign and exponent let one rank-2 SGD step produce these values.
float class_value(uint32_t low16, int64_t r, int64_t c) {
  const uint32_t sign = uint32_t(r & 1) << 31;
  const uint32_t expo = 0x70u + uint32_t((r >> 1) % 32);  // 2^-15 .. 2^16
  const uint32_t mant_hi = uint32_t((c * 37 + r * 11) & 0x7f);
  return u2f(sign | (expo << 23) | (mant_hi << 16) | low16);
}

bool rounded_up(float x, uint16_t b) { return (b & 0x7fffu) != ((f2u(x) >> 16) & 0x7fffu); }

// An SGD step (lr = 1, no decay) whose fp32 result at (r, c) is exactly class_value(low16, r, c):
// w0 = the value with its dropped bits cleared (a bf16), G[r][c] = w0 - value, which depends on
// the row only: -(+-1) * low16 * 2^(E_r - 23) = dY[0][r] + dY[1][r] with X = 1 (T = 2), where
// dY[0][r] carries the high byte of low16 and dY[1][r] the low byte (each exact in bf16; the
// tensor-core sum of the two products is exact). Then p - 1 * g = the value, exactly.
struct SrClassStep {
  std::vector<float> w0;
  std::vector<uint16_t> X, dY;  // [2, cols], [2, rows]
  RuleConfig rule;
};
SrClassStep sr_class_step(uint32_t low16, int64_t rows, int64_t cols) {
  SrClassStep st;
  SGD::Hyper h;
  h.lr = 1.0;
  st.rule = RuleConfig{RuleId::sgd, h};
  st.w0.resize(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) st.w0[size_t(r * cols + c)] = u2f(f2u(class_value(low16, r, c)) & 0xffff0000u);
  st.X.assign(size_t(2 * cols), 0x3f80);  // bf16 1.0
  st.dY.resize(size_t(2 * rows));
  for (int64_t r = 0; r < rows; ++r) {
    const float v = class_value(low16, r, 0);
    const int e = int((f2u(v) >> 23) & 0xff) - 127;
    const double sgn = f2u(v) >> 31 ? 1.0 : -1.0;  // g = w0 - value = -(sign) * low16 * 2^(e-23)
    st.dY[size_t(r)] = float_to_bf16_rne(float(sgn * double(low16 >> 8) * std::ldexp(1.0, e - 15)));
    st.dY[size_t(rows + r)] = float_to_bf16_rne(float(sgn * double(low16 & 0xff) * std::ldexp(1.0, e - 23)));
  }
  return st;
}

// Round-up indicators of one tensor of class low16 at key (seed, step, tensor): from sr_round, or
// from a fused bf16_sr step of cfg.backend, checked against sr_round and the value's lattice.
std::vector<uint8_t> sr_draws(const SrStatsConfig& cfg, uint32_t low16, const sr_key& key, SrStatsResult& res) {
  const int64_t rows = cfg.rows, cols = cfg.cols;
  std::vector<uint8_t> up(size_t(rows * cols));
  if (!cfg.through_fused_step) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const float x = class_value(low16, r, c);
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
      const float x = class_value(low16, r, c);
      const uint16_t down = uint16_t(f2u(x) >> 16), b = w.bf16[i];
      res.off_lattice += b != down && b != uint16_t(down + 1);
      res.differ_from_stream += b != sr_round(x, key, r, c, cols, cfg.tile_rows, cfg.tile_cols, SrVariant::kernel);
      ++res.draws;
      up[i] = rounded_up(x, b);
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
    cr.metric = std::fabs(t.observed - t.expected);
    cr.bound = t.threshold;
    cr.pass = !t.reject;
    cr.note = t.to_string() + fmt("; power >= %.6f against a 1/256-ulp bias", res.power_vs_1_256);
    res.cases.push_back(cr);
  }

  // Independence on the p = 1/2 class: products of indicator pairs against p^2 = 1/4.
  const uint32_t half = 0x8000;
  std::vector<uint8_t> prev;
  int64_t nb_pairs = 0, nb11 = 0, tl_pairs = 0, tl11 = 0, st_pairs = 0, st11 = 0;
  for (int s = 1; s <= cfg.steps; ++s) {
    const std::vector<uint8_t> cur = sr_draws(cfg, half, sr_key{cfg.seed ^ 0xD1CEull, uint32_t(s), 100}, res);
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
    cr.metric = std::fabs(t.observed - t.expected);
    cr.bound = t.threshold;
    cr.pass = !t.reject;
    // A correlation rho of two fair indicators moves E[XY] by rho/4.
    cr.note = t.to_string() + fmt("; power >= %.6f against correlation 0.05", hoeffding_power(pairs, cfg.alpha, 0.05 / 4));
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
    cr.metric = double(cr.differing);
    cr.pass = cr.differing == 0 && res.draws > 0;
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
    std::vector<std::vector<uint16_t>> results;
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
        const WgradCase c = make_wgrad_case(seed + uint64_t(s), T, in, o, CaseDistribution::normal);
        be.step(w, c.X.data(), c.dY.data(), T, s, sched);
      }
      results.push_back(w.bf16);
    }
    for (size_t i = 1; i < results.size(); ++i)
      out.push_back(bitwise_case("sr_layout_invariance",
                                 be.name + " bf16_sr tile " + std::to_string(scheds[i].tr) + "x" + std::to_string(scheds[i].tc) +
                                     (be.name == "twin" ? std::string(" ") + tile_visit_order_name(scheds[i].v) : std::string()) +
                                     " vs 128x128",
                                 {compare_bitwise(results[0], results[i], o, in, {"W bf16", {scheds[i].tr, scheds[i].tc}, 2})}));
  }
  // The SR decision alone, over tile shapes (the copy that can carry a planted variant).
  std::vector<std::vector<uint16_t>> bits;
  const sr_key key{seed, 3, 9};
  for (const Sched& sc : scheds) {
    std::vector<uint16_t> b(size_t(o * in));
    for (int64_t r = 0; r < o; ++r)
      for (int64_t c = 0; c < in; ++c) b[size_t(r * in + c)] = sr_round(class_value(0x8000, r, c), key, r, c, in, sc.tr, sc.tc, variant);
    bits.push_back(b);
  }
  for (size_t i = 1; i < bits.size(); ++i)
    out.push_back(bitwise_case("sr_layout_invariance",
                               "sr_round tile " + std::to_string(scheds[i].tr) + "x" + std::to_string(scheds[i].tc) + " vs 128x128" + tag,
                               {compare_bitwise(bits[0], bits[i], o, in, {"SR bits"})}));
  return out;
}

// ---- stagnation ----

const char* stagnation_defect_name(StagnationDefect d) {
  switch (d) {
    case StagnationDefect::none: return "none";
    case StagnationDefect::sr_is_rne: return "sr_is_rne";
  }
  return "?";
}

StagnationResult run_stagnation(const StagnationConfig& cfg) {
  StagnationResult res;
  const int64_t O = cfg.out, I = cfg.in, T = cfg.T;
  CaseRng prob(cfg.seed);
  const std::vector<float> wstar = gen_weights_f32(prob, O * I, cfg.w_star_scale);
  const std::vector<float> w0 = gen_weights_f32(prob, O * I, 0.01);
  const std::vector<uint16_t> Xe = gen_bf16(prob, cfg.eval_T * I, CaseDistribution::normal);
  auto targets = [&](const std::vector<uint16_t>& X, int64_t n, CaseRng& rng) {
    std::vector<double> Y(size_t(n * O));
    for (int64_t t = 0; t < n; ++t)
      for (int64_t o = 0; o < O; ++o) {
        double acc = 0;
        for (int64_t i = 0; i < I; ++i) acc += double(bf16_to_float(X[size_t(t * I + i)])) * double(wstar[size_t(o * I + i)]);
        Y[size_t(t * O + o)] = acc + cfg.target_noise * rng.normalish();
      }
    return Y;
  };
  const std::vector<double> Ye = targets(Xe, cfg.eval_T, prob);
  auto predict = [&](const std::vector<uint16_t>& X, int64_t n, const HostParam& w) {
    std::vector<double> P(size_t(n * O));
    for (int64_t t = 0; t < n; ++t)
      for (int64_t o = 0; o < O; ++o) {
        double acc = 0;
        for (int64_t i = 0; i < I; ++i)
          acc += double(bf16_to_float(X[size_t(t * I + i)])) * double(bf16_to_float(w.bf16[size_t(o * I + i)]));
        P[size_t(t * O + o)] = acc;
      }
    return P;
  };
  auto loss = [&](const std::vector<double>& P, const std::vector<double>& Y, int64_t n) {
    double s = 0;
    for (size_t i = 0; i < P.size(); ++i) s += (P[i] - Y[i]) * (P[i] - Y[i]);
    return 0.5 * s / double(n);
  };
  AdamW::Hyper h;
  h.lr = cfg.lr;
  h.weight_decay = 0;
  const RuleConfig rule{RuleId::adamw, h};
  struct Variant { const char* label; StateFormat sf; WeightStore ws; };
  const Variant variants[] = {{"fp32_master", StateFormat::fp32, WeightStore::fp32_master},
                              {"bf16_rne", StateFormat::fp32, WeightStore::bf16_rne},
                              {"bf16_sr", StateFormat::fp32, WeightStore::bf16_sr},
                              {"int8_state", StateFormat::int8, WeightStore::fp32_master}};
  auto wanted = [&](const std::string& label) {
    return label == "fp32_master" || cfg.labels.empty() ||
           std::find(cfg.labels.begin(), cfg.labels.end(), label) != cfg.labels.end();
  };
  for (const auto& l : cfg.labels)
    if (l != "fp32_master" && l != "bf16_rne" && l != "bf16_sr" && l != "int8_state")
      throw std::invalid_argument("run_stagnation: unknown variant label '" + l + "'");
  if (cfg.run_seeds.empty() || cfg.steps < 1) throw std::invalid_argument("run_stagnation: needs run seeds and steps >= 1");
  TwinSchedule sched;
  sched.tile_rows = 32;
  sched.tile_cols = 64;
  const int tail = std::max(1, cfg.steps / 10);
  for (uint64_t rs : cfg.run_seeds)
    for (const Variant& v : variants) {
      if (!wanted(v.label)) continue;
      StagnationRun run;
      run.label = v.label;
      run.run_seed = rs;
      const bool planted_rne = cfg.defect == StagnationDefect::sr_is_rne && v.ws == WeightStore::bf16_sr;
      HostParam w = HostParam::make(rule, v.sf, planted_rne ? WeightStore::bf16_rne : v.ws, O, I, w0, rs, 1);
      CaseRng data(cfg.seed ^ (rs * 0x9E3779B97F4A7C15ull));  // same data stream for every variant
      for (int s = 1; s <= cfg.steps; ++s) {
        const std::vector<uint16_t> X = gen_bf16(data, T * I, CaseDistribution::normal);
        const std::vector<double> Y = targets(X, T, data);
        const std::vector<double> P = predict(X, T, w);
        std::vector<uint16_t> dY(size_t(T * O));
        for (size_t i = 0; i < dY.size(); ++i) dY[i] = float_to_bf16_rne(float((P[i] - Y[i]) / double(T)));
        const std::vector<float> before_m = w.master;
        const std::vector<uint16_t> before_b = w.bf16;
        if (v.sf == StateFormat::int8)
          for (int64_t i = 0; i < O * I; ++i) run.zero_v_events += w.state(1, i) == 0.0f && w.state(0, i) != 0.0f;
        backend_or_twin(cfg.backend).step(w, X.data(), dY.data(), T, s, sched);
        int64_t same = 0;
        for (size_t i = 0; i < w.bf16.size(); ++i)
          same += v.ws == WeightStore::fp32_master ? f2u(w.master[i]) == f2u(before_m[i]) : w.bf16[i] == before_b[i];
        run.unchanged_frac.push_back(double(same) / double(w.bf16.size()));
        run.eval_loss.push_back(loss(predict(Xe, cfg.eval_T, w), Ye, cfg.eval_T));
      }
      double fl = 0;
      for (int s = cfg.steps - tail; s < cfg.steps; ++s) fl += run.eval_loss[size_t(s)];
      run.final_loss = fl / tail;
      res.runs.push_back(run);
    }
  // Aggregates over run seeds.
  auto finals = [&](const std::string& label) {
    std::vector<double> f;
    for (const auto& r : res.runs) if (r.label == label) f.push_back(r.final_loss);
    return f;
  };
  auto mean = [](const std::vector<double>& v) { double s = 0; for (double x : v) s += x; return s / double(v.size()); };
  const std::vector<double> f32 = finals("fp32_master"), rne = finals("bf16_rne"), sr = finals("bf16_sr"), i8 = finals("int8_state");
  res.fp32_mean = mean(f32);
  double var = 0;
  for (double x : f32) var += (x - res.fp32_mean) * (x - res.fp32_mean);
  res.fp32_std = f32.size() > 1 ? std::sqrt(var / double(f32.size() - 1)) : 0.0;
  res.rne_gap = mean(rne) / res.fp32_mean - 1;
  res.sr_gap = mean(sr) / res.fp32_mean - 1;
  res.int8_gap = mean(i8) / res.fp32_mean - 1;
  res.sr_abs_diff = std::fabs(mean(sr) - res.fp32_mean);
  double vf = 0;
  int nv = 0;
  for (const auto& r : res.runs)
    if (r.label == "bf16_rne")
      for (int s = cfg.steps / 2; s < cfg.steps; ++s) { vf += r.unchanged_frac[size_t(s)]; ++nv; }
  res.rne_vanish_frac = nv ? vf / nv : 0.0;

  const double noise = 2.0 * res.fp32_std;  // run-to-run noise of fp32 master (2 sample std)
  const bool planted = cfg.defect != StagnationDefect::none;
  const std::string dtag = planted ? std::string(" defect=") + stagnation_defect_name(cfg.defect) : "";
  // Cases only for the variants that ran (cfg.labels).
  if (!sr.empty()) {
    ClaimCaseResult csr;
    csr.claim = "stagnation";
    csr.case_name = "bf16_sr final loss within fp32_master run-to-run noise" + dtag;
    csr.metric = res.sr_abs_diff;
    csr.bound = noise;
    csr.pass = res.sr_abs_diff <= noise;
    csr.note = fmt("fp32 %.6g +- %.3g (std over seeds); SR gap %+.3f%%", res.fp32_mean, res.fp32_std, 100 * res.sr_gap);
    res.cases.push_back(csr);
  }
  if (!rne.empty()) {
    ClaimCaseResult crn;
    crn.claim = "stagnation";
    crn.case_name = "bf16_rne gap vs fp32_master (paper: ~6%)";
    crn.metric = res.rne_gap;
    crn.bound = noise / res.fp32_mean;
    crn.pass = res.rne_gap > noise / res.fp32_mean;  // RNE stagnates visibly beyond the noise
    crn.note = fmt("RNE gap %+.2f%%, vanished updates %.1f%% (second half), paper ~6%%", 100 * res.rne_gap,
                   100 * res.rne_vanish_frac);
    res.cases.push_back(crn);
  }
  if (!i8.empty()) {
    ClaimCaseResult ci8;
    ci8.claim = "stagnation";
    ci8.case_name = "int8_state final loss within fp32_master run-to-run noise";
    ci8.metric = std::fabs(mean(i8) - res.fp32_mean);
    ci8.bound = noise;
    ci8.pass = ci8.metric <= noise;
    ci8.note = fmt("int8 gap %+.3f%%", 100 * res.int8_gap);
    res.cases.push_back(ci8);
  }
  return res;
}

}  // namespace fh

// ---- gradient fidelity ----

namespace fh {

const char* grad_fidelity_defect_name(GradFidelityDefect d) {
  switch (d) {
    case GradFidelityDefect::none: return "none";
    case GradFidelityDefect::fp32_path_rounds_to_bf16: return "fp32_path_rounds_to_bf16";
    case GradFidelityDefect::bf16_path_truncates: return "bf16_path_truncates";
    case GradFidelityDefect::bf16_path_keeps_fp32: return "bf16_path_keeps_fp32";
  }
  return "?";
}

namespace {

std::vector<float> bf16_rne_widened(const std::vector<float>& g) {
  std::vector<float> r(g.size());
  for (size_t i = 0; i < g.size(); ++i) r[i] = bf16_to_float(float_to_bf16_rne(g[i]));
  return r;
}
std::vector<float> bf16_truncated_widened(const std::vector<float>& g) {
  std::vector<float> r(g.size());
  for (size_t i = 0; i < g.size(); ++i) r[i] = u2f(f2u(g[i]) & 0xffff0000u);
  return r;
}

}  // namespace

GradFidelityResult run_gradient_fidelity(const GradFidelityConfig& cfg) {
  if (cfg.steps < 1 || cfg.out < 1 || cfg.in < 1 || cfg.T < 1)
    throw std::invalid_argument("run_gradient_fidelity: steps, out, in, T must be >= 1");
  GradFidelityResult res;
  const std::string tag = std::string(rule_name(cfg.rule.id)) + " " + std::to_string(cfg.out) + "x" +
                          std::to_string(cfg.in) + " T=" + std::to_string(cfg.T) + " " + std::to_string(cfg.steps) +
                          " steps" +
                          (cfg.defect == GradFidelityDefect::none ? "" : std::string(" defect=") + grad_fidelity_defect_name(cfg.defect));
  auto inputs = [&](int64_t s) {
    return make_wgrad_case(cfg.seed + uint64_t(s) * 0x9E3779B97F4A7C15ull, cfg.T, cfg.in, cfg.out, CaseDistribution::normal);
  };
  TwinSchedule sched;
  sched.tile_rows = cfg.tile_rows;
  sched.tile_cols = cfg.tile_cols;
  const WgradCase c0 = inputs(0);
  HostParam twin = HostParam::make(cfg.rule, StateFormat::fp32, WeightStore::fp32_master, cfg.out, cfg.in, c0.w0);
  HostParam f32g = twin;  // the fp32-G two-phase path
  HostParam free_b = twin;  // the free-running bf16-G path
  std::vector<BitwiseReport> eq_reps;
  ClaimCaseResult half;
  half.claim = "gradient_fidelity";
  half.case_name = tag + " bf16 G within half an ulp of G";
  half.bound = 1.0;
  double pooled_sum = 0, pooled_sum2 = 0;
  int64_t pooled_n = 0;
  const size_t n = size_t(cfg.out * cfg.in);
  for (int s = 1; s <= cfg.steps; ++s) {
    const WgradCase c = inputs(s);
    const std::vector<float> G = backend_or_twin(cfg.backend).wgrad(c.X.data(), c.dY.data(), cfg.T, cfg.in, cfg.out, sched);
    const std::vector<float> Gf = cfg.defect == GradFidelityDefect::fp32_path_rounds_to_bf16 ? bf16_rne_widened(G) : G;
    const std::vector<float> Gb = cfg.defect == GradFidelityDefect::bf16_path_truncates ? bf16_truncated_widened(G)
                                  : cfg.defect == GradFidelityDefect::bf16_path_keeps_fp32 ? G
                                                                                           : bf16_rne_widened(G);
    const HostParam start = f32g;
    backend_or_twin(cfg.backend).step(twin, c.X.data(), c.dY.data(), cfg.T, s, sched);
    apply_two_phase_update(f32g, Gf, s);
    eq_reps.push_back(compare_bitwise(f32g.master, twin.master, cfg.out, cfg.in, {"W", {cfg.tile_rows, cfg.tile_cols}, s}));
    for (int k = 0; k < kMaxStates; ++k)
      if (twin.decls.slot[k].kept)
        eq_reps.push_back(compare_bitwise(f32g.st_f32[k], twin.st_f32[k], cfg.out, cfg.in,
                                          {twin.decls.slot[k].name, {cfg.tile_rows, cfg.tile_cols}, s}));

    // The rounding of G itself, judged exactly.
    const GradRoundingJudgement gj = judge_bf16_gradient_rounding(G, Gb);
    res.g_max_rel_err.push_back(gj.max_rel_err);
    res.g_max_half_ulp_ratio.push_back(gj.max_half_ulp_ratio);
    half.differing += gj.violations;
    half.metric = std::max(half.metric, gj.max_half_ulp_ratio);
    if (half.first_diff.empty() && !gj.pass()) half.first_diff = "step " + std::to_string(s) + " " + gj.first_violation;

    // One bf16-G step from the fp32-G path's start.
    HostParam resync = start;
    apply_two_phase_update(resync, Gb, s);
    const UpdateDeviation u = measure_update_deviation(start.master, f32g.master, resync.master);
    res.update_rms.push_back(u.scale_rms);
    res.bias_rel.push_back(u.bias_rel);
    res.directional_bias.push_back(u.directional_bias);
    res.rms_rel.push_back(u.rms_rel);
    res.max_rel.push_back(u.max_rel);
    res.max_rel_elem.push_back(u.max_rel_elem);
    res.update_differing.push_back(u.differing);
    pooled_sum += u.sum_d_over_s;
    pooled_sum2 += u.sum_d2_over_s2;
    pooled_n += u.elements;

    apply_two_phase_update(free_b, Gb, s);
    double mx = 0, ss = 0;
    for (size_t i = 0; i < n; ++i) {
      const double d = std::fabs(double(free_b.master[i]) - double(f32g.master[i]));
      mx = std::max(mx, d);
      ss += d * d;
    }
    res.traj_max_abs_dev.push_back(mx);
    res.traj_rms_dev.push_back(std::sqrt(ss / double(n)));
  }
  res.pooled_bias_rel = pooled_sum / double(pooled_n);
  const double var = pooled_sum2 / double(pooled_n) - res.pooled_bias_rel * res.pooled_bias_rel;
  res.pooled_bias_stderr = std::sqrt(std::max(0.0, var) / double(pooled_n));
  res.min_rms_rel = INFINITY;
  for (int s = 0; s < cfg.steps; ++s) {
    res.mean_rms_rel += res.rms_rel[size_t(s)] / cfg.steps;
    res.max_max_rel = std::max(res.max_max_rel, res.max_rel[size_t(s)]);
    res.min_rms_rel = std::min(res.min_rms_rel, res.rms_rel[size_t(s)]);
  }

  res.cases.push_back(bitwise_case("gradient_fidelity", tag + " fp32-G step == fused " + backend_or_twin(cfg.backend).name, eq_reps));
  half.pass = half.differing == 0;
  half.note = fmt("max |bf16(G) - G| / (ulp/2) %.6g; max relative G error %.6g (RNE: <= 2^-8, u of 8 significant bits)", half.metric,
                  *std::max_element(res.g_max_rel_err.begin(), res.g_max_rel_err.end()));
  res.cases.push_back(half);
  ClaimCaseResult meas;
  meas.claim = "gradient_fidelity";
  meas.case_name = tag + " bf16-G update error is measurable";
  meas.metric = res.min_rms_rel;
  meas.bound = 0;  // a lower bound: pass when metric > bound
  meas.pass = res.min_rms_rel > 0;
  // Steps whose bf16-G weights equal the fp32-G weights bitwise (so metric != differing: not a
  // bitwise case in the report).
  meas.differing = std::count(res.update_differing.begin(), res.update_differing.end(), int64_t(0));
  if (!meas.pass) meas.first_diff = "some step's bf16-G update equals the fp32-G update bitwise";
  meas.note = fmt("pass when min over steps of rms(d)/rms(u) > 0 (a lower bound); mean rms_rel %.4g, max |d|/rms(u) %.4g",
                  res.mean_rms_rel, res.max_max_rel) +
              fmt("; pooled bias %.3g +- %.2g (stderr) of rms(u)", res.pooled_bias_rel, res.pooled_bias_stderr);
  res.cases.push_back(meas);
  return res;
}

}  // namespace fh
