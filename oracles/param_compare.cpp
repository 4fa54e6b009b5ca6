#include "oracles/param_compare.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "oracles/ulp.h"

namespace fh {

void ParamEvidence::add(const BitwiseReport& r, const std::string& where) {
  ++compared;
  values += r.rows * r.cols;
  if (r.equal()) return;
  differing += r.n_differ;
  const double u = r.max_ulp == kUlpNaN ? std::numeric_limits<double>::infinity() : double(r.max_ulp);
  max_ulp = std::max(max_ulp, u);
  if (first_diff.empty()) first_diff = (where.empty() ? "" : where + ": ") + r.to_string();
}

void ParamEvidence::add(const ParamEvidence& e) {
  compared += e.compared;
  values += e.values;
  differing += e.differing;
  max_ulp = std::max(max_ulp, e.max_ulp);
  if (first_diff.empty()) first_diff = e.first_diff;
}

// Every stored array of two parameters: weights (master and bf16), every kept state slot in its
// stored form (int8: codes and absmax), bit for bit.
void compare_params(ParamEvidence& ev, const HostParam& a, const HostParam& b, int64_t step,
                    TileShape tile, const std::string& where) {
  const int64_t R = a.rows, C = a.cols;
  auto ctx = [&](const std::string& what, TileShape t) {
    BitwiseContext c;
    c.name = what;
    c.tile = t;
    c.step = step;
    return c;
  };
  if (a.weight_store == WeightStore::fp32_master)
    ev.add(compare_bitwise(a.master, b.master, R, C, ctx("weight (fp32 master)", tile)), where);
  ev.add(compare_bitwise(a.bf16, b.bf16, R, C,
                         ctx(a.weight_store == WeightStore::fp32_master ? "weight (bf16 copy)" : "weight (bf16)", tile)),
         where);
  for (int k = 0; k < kMaxStates; ++k) {
    const StateDecl& d = a.decls.slot[k];
    if (!d.kept) continue;
    const std::string nm = std::string("state ") + d.name;
    switch (a.state_format) {
      case StateFormat::fp32: ev.add(compare_bitwise(a.st_f32[k], b.st_f32[k], R, C, ctx(nm, tile)), where); break;
      case StateFormat::bf16: ev.add(compare_bitwise(a.st_bf16[k], b.st_bf16[k], R, C, ctx(nm, tile)), where); break;
      case StateFormat::int8: {
        BitwiseContext cc = ctx(nm + " (int8 codes)", tile);
        cc.signed_codes = !d.nonnegative;
        ev.add(compare_bitwise(a.st_i8[k], b.st_i8[k], R, C, cc), where);
        // absmax has one column per block; no tile given means no tile evidence there either.
        const TileShape blk_tile = tile.rows == 0 ? TileShape{} : TileShape{tile.rows, std::max<int64_t>(1, tile.cols / kInt8Block)};
        ev.add(compare_bitwise(a.st_absmax[k], b.st_absmax[k], R, a.blocks_per_row(),
                               ctx(nm + " (int8 absmax per block)", blk_tile)),
               where);
        break;
      }
    }
  }
}


Check bitwise_check(const std::string& name, const ParamEvidence& ev, const std::string& fail_reason) {
  const std::string first = ev.first_diff.empty() ? "unknown" : ev.first_diff;
  Check c = judge(name, "differing", double(ev.differing), 0, PassIf::at_most,
                  fail_reason.empty() ? first : fail_reason + ": " + first);
  // Nothing differs: no ulp distance, no coordinate.
  return ev.differing == 0 ? c.bitwise(0, 0, "") : c.bitwise(ev.differing, ev.max_ulp, first);
}

void fill_bitwise(ClaimCaseResult& c, const ParamEvidence& ev) {
  c.metric = double(ev.differing);
  c.bound = 0.0;
  c.differing = ev.differing;
  c.max_ulp = ev.max_ulp;
  c.first_diff = ev.first_diff;
}

void judge_bitwise(ClaimCaseResult& c, const ParamEvidence& ev) {
  fill_bitwise(c, ev);
  judge_case(c, double(ev.differing), 0.0, PassIf::at_most);
}

ClaimCaseResult bitwise_case(std::string claim, std::string case_name, const ParamEvidence& ev) {
  ClaimCaseResult c;
  c.claim = std::move(claim);
  c.case_name = std::move(case_name);
  judge_bitwise(c, ev);
  return c;
}

ParamEvidence evidence_of(const BitwiseReport& r, const std::string& where) {
  ParamEvidence ev;
  ev.add(r, where);
  return ev;
}

}  // namespace fh
