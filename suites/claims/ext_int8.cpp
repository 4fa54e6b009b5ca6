// ext_int8: Proposition 4 on an external path's INT8 state, with the path's own quantizer
// (per row, one fp32 scale per qblock columns, codes -127..127, decoded as q * scale).
// Per adamw_int8 case and step, from the path's previous stored state (decoded) and G in its
// declared order, the true new moments are computed in double:
//   m = b1 m' + (1 - b1) g,  v = b2 v' + (1 - b2) g^2.
// Checks: (1) every stored code is within half a quantization step of the true moment,
//   |q * scale - x| <= scale / 2 + slack, slack = 1e-6 |x| + 1.1e-8 (fp32 rounding of the update,
//   and a floor of 1e-8 on the decoded v that the release applies); (2) every block's scale is
//   absmax / 127 of the true moments to 1e-5 relative (plus 2e-12 absolute, the release's guard).
// It also reports whether the codes are the nearest ones (round to nearest) or not (stochastic
// rounding would put a fraction of them on the far side); the paper relies on stochastic rounding.
#include <cmath>

#include "suites/claims/claim_entries.h"
#include "suites/claims/external_common.h"

namespace fh {
namespace {
// A NaN ratio (a NaN code or scale in the path's file) is the worst, never skipped by `r > worst`.
double nan_as_inf(double r) { return std::isnan(r) ? INFINITY : r; }
}  // namespace

void claim_ext_int8(const VerifyConfig& cfg, Report& report, const Progress& progress) {
  if (external_absent(cfg, report, "ext_int8")) return;
  const ExternalRun& run = external_run(cfg);
  for (const auto& f : run.results) {
    for (const ext::CaseSpec& c : run.cases->cases()) {
      if (c.kind != "adamw_int8" || !f->find(c.id)) continue;
      CaseRecord& cs = report.add_case("ext_int8", f->path_name() + "." + c.id);
      set_external_attrs(cs, *f);
      cs.set_attr("qblock", std::to_string(c.qblock));
      if (record_not_ok(cs, *f, c.id)) continue;
      progress_set_case(f->path_name() + " " + c.id);
      std::vector<std::vector<float>> G;
      if (f->has(c.id, "G")) {
        const ext::Tensor g = f->load(c.id, "G");
        for (int64_t s = 0; s < c.steps; ++s) G.push_back(g.slab(s).floats());
      } else if (!f->order().model.empty()) {
        G = host_g(*run.cases, c, f->order());
      } else {
        cs.add_check(Check::not_run("codes_within_half_step", "the path declared no order and wrote no G"));
        continue;
      }
      const ext::Tensor mq = f->load(c.id, "m_q"), vq = f->load(c.id, "v_q");
      const ext::Tensor ms = f->load(c.id, "m_scale"), vs = f->load(c.id, "v_scale");
      ext::Tensor pm = run.cases->load(c.id, "m0_q"), pv = run.cases->load(c.id, "v0_q");
      ext::Tensor pms = run.cases->load(c.id, "m0_scale"), pvs = run.cases->load(c.id, "v0_scale");
      const int64_t nb = c.in / c.qblock;
      const double b1 = double(float(c.beta1)), b2 = double(float(c.beta2));
      double worst_elem = 0, worst_scale = 0;
      int64_t not_nearest = 0, judged = 0;
      std::string first_elem, first_scale;
      std::vector<double> worst_per_step;
      for (int64_t s = 0; s < c.steps; ++s) {
        const ext::Tensor q_m = mq.slab(s), q_v = vq.slab(s), sc_m = ms.slab(s), sc_v = vs.slab(s);
        double step_worst = 0;
        for (int64_t o = 0; o < c.out; ++o) {
          for (int64_t b = 0; b < nb; ++b) {
            for (int which = 0; which < 2; ++which) {
              const ext::Tensor& q = which ? q_v : q_m;
              const ext::Tensor& sc = which ? sc_v : sc_m;
              const ext::Tensor& pq = which ? pv : pm;
              const ext::Tensor& psc = which ? pvs : pms;
              std::vector<double> x(size_t(c.qblock));
              double absmax = 0;
              for (int64_t k = 0; k < c.qblock; ++k) {
                const int64_t e = o * c.in + b * c.qblock + k;
                const double g = G[size_t(s)][size_t(e)];
                double prev = double(pq.value(e)) * double(psc.value(o * nb + b));
                if (which) prev = std::max(prev, 0.0);
                x[size_t(k)] = which ? b2 * prev + (1 - b2) * g * g : b1 * prev + (1 - b1) * g;
                absmax = std::max(absmax, std::fabs(x[size_t(k)]));
              }
              const double scale = sc.value(o * nb + b);
              if (absmax > 0) {
                const double r = nan_as_inf(std::fabs(scale - absmax / 127) / (absmax / 127 * 1e-5 + 2e-12));
                if (r > worst_scale) {
                  worst_scale = r;
                  if (r > 1 && first_scale.empty())
                    first_scale = "step " + std::to_string(s) + (which ? " v" : " m") + " row " + std::to_string(o) +
                                  " block " + std::to_string(b) + ": scale " + std::to_string(scale) + ", absmax/127 " +
                                  std::to_string(absmax / 127);
                }
              }
              for (int64_t k = 0; k < c.qblock; ++k) {
                const int64_t e = o * c.in + b * c.qblock + k;
                const double code = q.value(e), xv = x[size_t(k)];
                const double slack = 1e-6 * std::fabs(xv) + 1.1e-8;
                const double r = nan_as_inf(std::fabs(code * scale - xv) / (scale / 2 + slack));
                ++judged;
                if (scale > 0 && std::fabs(code - xv / scale) > 0.5 + 1e-3 && std::fabs(code) < 127) ++not_nearest;
                if (r > step_worst) step_worst = r;
                if (r > worst_elem) {
                  worst_elem = r;
                  if (r > 1 && first_elem.empty())
                    first_elem = "step " + std::to_string(s) + (which ? " v" : " m") + " (" + std::to_string(o) + "," +
                                 std::to_string(b * c.qblock + k) + "): code " + std::to_string(int(code)) + " x scale " +
                                 std::to_string(scale) + " vs " + std::to_string(xv);
                }
              }
            }
          }
        }
        worst_per_step.push_back(step_worst);
        pm = q_m;
        pv = q_v;
        pms = sc_m;
        pvs = sc_v;
      }
      cs.add_f64("err_over_half_step_per_step", worst_per_step,
                 "per step: max over m and v of |q scale - x| / (scale/2 + slack)");
      cs.add_i64("codes_not_nearest", {not_nearest, judged},
                 "codes farther than half a step (+1e-3) from x/scale (not round to nearest), and codes judged");
      cs.set_attr("rounding", not_nearest == 0 ? "round to nearest: no stochastic rounding"
                                               : std::to_string(not_nearest) + " codes not the nearest (stochastic or biased rounding)");
      cs.add_check(judge("codes_within_half_step", "max_err_over_half_step", worst_elem, 1, PassIf::at_most,
                         "a stored code is farther than half a step from the true moment: " + first_elem));
      cs.add_check(judge("scale_is_absmax_over_127", "max_scale_err_over_tol", worst_scale, 1, PassIf::at_most,
                         "a block's scale is not absmax/127 of its true moments: " + first_scale));
      progress.note(f->path_name() + " " + c.id + ": worst " + std::to_string(worst_elem) + " of half a step");
    }
  }
}

}  // namespace fh
