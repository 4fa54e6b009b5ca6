#include "kernels/formats/host_param.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace fh {

void require_block_aligned(StateFormat sf, int64_t edge, int64_t global_cols, const char* what) {
  if (sf != StateFormat::int8) return;
  if (edge < 0 || edge > global_cols)
    throw std::invalid_argument(std::string(what) + " edge at column " + std::to_string(edge) +
                                " lies outside the tensor's " + std::to_string(global_cols) +
                                " columns");
  if (edge % kInt8Block != 0 && edge != global_cols)
    throw std::invalid_argument(std::string(what) + " edge at column " + std::to_string(edge) +
                                " would split an INT8 block of " + std::to_string(kInt8Block) +
                                " (edges must be multiples of 64 or the tensor's end)");
}

HostParam HostParam::make(const RuleConfig& rule, StateFormat sf, WeightStore ws, int64_t rows,
                          int64_t cols, const std::vector<float>& w0, uint64_t seed,
                          uint32_t tensor_id) {
  if (rows <= 0 || cols <= 0) throw std::invalid_argument("HostParam: shape must be positive");
  const size_t n = size_t(rows * cols);
  if (w0.size() != n) throw std::invalid_argument("HostParam: w0 has the wrong size");
  HostParam hp;
  hp.rule = rule;
  hp.state_format = sf;
  hp.weight_store = ws;
  hp.rows = rows;
  hp.cols = cols;
  hp.sr = sr_key{seed, 0, tensor_id};
  visit_rule(rule.id, [&](auto r) {
    using Rule = decltype(r);
    Rule::validate(hyper_of<Rule>(rule));
    hp.decls = Rule::states(hyper_of<Rule>(rule));
  });
  hp.bf16.resize(n);
  if (ws == WeightStore::fp32_master) hp.master = w0;
  for (size_t i = 0; i < n; ++i) hp.bf16[i] = float_to_bf16_rne(w0[i]);
  const size_t nblk = size_t(rows * hp.blocks_per_row());
  for (int k = 0; k < kMaxStates; ++k) {
    const StateDecl& d = hp.decls.slot[k];
    if (!d.kept) continue;
    const float init = float(d.initial);
    switch (sf) {
      case StateFormat::fp32: hp.st_f32[k].assign(n, init); break;
      case StateFormat::bf16: hp.st_bf16[k].assign(n, float_to_bf16_rne(init)); break;
      case StateFormat::int8: {
        hp.st_i8[k].assign(n, 0);
        hp.st_absmax[k].assign(nblk, 0.0f);
        std::vector<float> blk(kInt8Block, init);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; c += kInt8Block) {
            const int len = int(std::min<int64_t>(kInt8Block, cols - c));
            int8_encode_block(blk.data(), len, d.nonnegative, hp.st_i8[k].data() + r * cols + c,
                              hp.st_absmax[k].data() + r * hp.blocks_per_row() + c / kInt8Block);
          }
        break;
      }
    }
  }
  return hp;
}

HostParamView HostParam::view() {
  HostParamView pv;
  pv.rows = rows;
  pv.cols = cols;
  pv.row0 = origin_row;
  pv.col0 = origin_col;
  pv.global_cols = origin_global_cols ? origin_global_cols : cols;
  pv.master = master.empty() ? nullptr : master.data();
  pv.bf16 = bf16.data();
  pv.sr = sr;
  for (int k = 0; k < kMaxStates; ++k) {
    if (!decls.slot[k].kept) continue;
    StateView& sv = pv.state[k];
    sv.nonnegative = decls.slot[k].nonnegative;
    switch (state_format) {
      case StateFormat::fp32: sv.f32 = st_f32[k].data(); break;
      case StateFormat::bf16: sv.bf16 = st_bf16[k].data(); break;
      case StateFormat::int8: sv.i8 = st_i8[k].data(); sv.absmax = st_absmax[k].data(); break;
    }
  }
  return pv;
}

HostParam HostParam::slice(int64_t r0, int64_t r1, int64_t c0, int64_t c1) const {
  if (r0 < 0 || r1 > rows || c0 < 0 || c1 > cols || r0 >= r1 || c0 >= c1)
    throw std::invalid_argument("HostParam::slice: [" + std::to_string(r0) + ", " + std::to_string(r1) + ") x [" +
                                std::to_string(c0) + ", " + std::to_string(c1) + ") is not inside " +
                                std::to_string(rows) + " x " + std::to_string(cols));
  const int64_t gcols = origin_global_cols ? origin_global_cols : cols;
  require_block_aligned(state_format, origin_col + c0, gcols, "shard");
  require_block_aligned(state_format, origin_col + c1, gcols, "shard");
  HostParam s;
  s.rule = rule;
  s.state_format = state_format;
  s.weight_store = weight_store;
  s.rows = r1 - r0;
  s.cols = c1 - c0;
  s.decls = decls;
  s.sr = sr;
  s.origin_row = origin_row + r0;
  s.origin_col = origin_col + c0;
  s.origin_global_cols = gcols;
  auto cut = [&](const auto& full, auto& part, int64_t full_cols, int64_t a, int64_t b) {
    if (full.empty()) return;
    part.clear();
    for (int64_t r = r0; r < r1; ++r) part.insert(part.end(), full.begin() + r * full_cols + a, full.begin() + r * full_cols + b);
  };
  cut(master, s.master, cols, c0, c1);
  cut(bf16, s.bf16, cols, c0, c1);
  const int64_t b0 = c0 / kInt8Block, b1 = (c1 + kInt8Block - 1) / kInt8Block;
  for (int k = 0; k < kMaxStates; ++k) {
    cut(st_f32[k], s.st_f32[k], cols, c0, c1);
    cut(st_bf16[k], s.st_bf16[k], cols, c0, c1);
    cut(st_i8[k], s.st_i8[k], cols, c0, c1);
    cut(st_absmax[k], s.st_absmax[k], blocks_per_row(), b0, b1);
  }
  return s;
}

void HostParam::place(const HostParam& s) {
  const int64_t r0 = s.origin_row - origin_row, c0 = s.origin_col - origin_col;
  if (r0 < 0 || c0 < 0 || r0 + s.rows > rows || c0 + s.cols > cols || s.state_format != state_format ||
      s.weight_store != weight_store)
    throw std::invalid_argument("HostParam::place: the shard is not a slice of this tensor");
  auto put = [&](const auto& part, auto& full, int64_t full_cols, int64_t part_cols, int64_t a) {
    if (part.empty()) return;
    for (int64_t r = 0; r < s.rows; ++r)
      std::copy(part.begin() + r * part_cols, part.begin() + (r + 1) * part_cols, full.begin() + (r0 + r) * full_cols + a);
  };
  put(s.master, master, cols, s.cols, c0);
  put(s.bf16, bf16, cols, s.cols, c0);
  for (int k = 0; k < kMaxStates; ++k) {
    put(s.st_f32[k], st_f32[k], cols, s.cols, c0);
    put(s.st_bf16[k], st_bf16[k], cols, s.cols, c0);
    put(s.st_i8[k], st_i8[k], cols, s.cols, c0);
    put(s.st_absmax[k], st_absmax[k], blocks_per_row(), s.blocks_per_row(), c0 / kInt8Block);
  }
}

float HostParam::weight(int64_t i) const {
  return weight_store == WeightStore::fp32_master ? master[size_t(i)] : bf16_to_float(bf16[size_t(i)]);
}

float HostParam::state(int k, int64_t i) const {
  if (!decls.slot[k].kept) return 0.0f;
  switch (state_format) {
    case StateFormat::fp32: return st_f32[k][size_t(i)];
    case StateFormat::bf16: return bf16_to_float(st_bf16[k][size_t(i)]);
    case StateFormat::int8: {
      const int64_t r = i / cols, c = i % cols;
      return int8_decode(st_i8[k][size_t(i)], decls.slot[k].nonnegative,
                         st_absmax[k][size_t(r * blocks_per_row() + c / kInt8Block)]);
    }
  }
  return 0.0f;
}

namespace {

template <class Rule, StateFormat SF, WeightStore WS>
void apply_region_typed(const typename Rule::Scalars& s, const ParamView& pv, const float* g,
                        int64_t ldg, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  // Segments never cross a 64-column block, so the int8 path sees whole blocks.
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t c = c0; c < c1;) {
      const int64_t next = std::min<int64_t>(c1, (c / kInt8Block + 1) * kInt8Block);
      update_segment<Rule, SF, WS>(s, pv, r, c, int(next - c), g + (r - r0) * ldg + (c - c0));
      c = next;
    }
}

template <class Rule, StateFormat SF>
void apply_region_ws(WeightStore ws, const typename Rule::Scalars& s, const ParamView& pv,
                     const float* g, int64_t ldg, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  switch (ws) {
    case WeightStore::fp32_master: return apply_region_typed<Rule, SF, WeightStore::fp32_master>(s, pv, g, ldg, r0, r1, c0, c1);
    case WeightStore::bf16_rne: return apply_region_typed<Rule, SF, WeightStore::bf16_rne>(s, pv, g, ldg, r0, r1, c0, c1);
    case WeightStore::bf16_sr: return apply_region_typed<Rule, SF, WeightStore::bf16_sr>(s, pv, g, ldg, r0, r1, c0, c1);
  }
}

}  // namespace

void apply_rule_region(const RuleConfig& rule, StateFormat sf, WeightStore ws, const HostParamView& pv_in,
                       int64_t step, const float* g, int64_t ldg, int64_t r0, int64_t r1,
                       int64_t c0, int64_t c1) {
  if (step < 1) throw std::invalid_argument("apply_rule_region: step counts from 1");
  if (r0 < 0 || r1 > pv_in.rows || c0 < 0 || c1 > pv_in.cols || r0 > r1 || c0 > c1)
    throw std::invalid_argument("apply_rule_region: region outside the tensor");
  // The shard's own edges too: blocks are counted from the view's column 0, so a shard starting
  // mid-block would put every local block across a global one.
  require_block_aligned(sf, pv_in.col0, pv_in.global_cols, "shard");
  require_block_aligned(sf, pv_in.col0 + pv_in.cols, pv_in.global_cols, "shard");
  require_block_aligned(sf, pv_in.col0 + c0, pv_in.global_cols, "update region");
  require_block_aligned(sf, pv_in.col0 + c1, pv_in.global_cols, "update region");
  ParamView pv = pv_in;
  pv.sr.step = uint32_t(step);
  visit_rule(rule.id, [&](auto r) {
    using Rule = decltype(r);
    const auto s = Rule::scalars(hyper_of<Rule>(rule), step);
    switch (sf) {
      case StateFormat::fp32: return apply_region_ws<Rule, StateFormat::fp32>(ws, s, pv, g, ldg, r0, r1, c0, c1);
      case StateFormat::bf16: return apply_region_ws<Rule, StateFormat::bf16>(ws, s, pv, g, ldg, r0, r1, c0, c1);
      case StateFormat::int8: return apply_region_ws<Rule, StateFormat::int8>(ws, s, pv, g, ldg, r0, r1, c0, c1);
    }
  });
}

}  // namespace fh
