// Error checks, DeviceParam and the cuBLAS handle of the GPU API (kernels/gpu/gpu_api.h).
#include "kernels/gpu/gpu_api.h"

#include <mutex>

namespace fh::gpu {

void cuda_check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

void cublas_check(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(int(s)) + " (" +
                           cublasGetStatusName(s) + ": " + cublasGetStatusString(s) + ")");
}

void validate_problem(const WgradProblem& p, const char* who) {
  if (!p.x || !p.dy) throw std::invalid_argument(std::string(who) + ": X and dY must be device pointers");
  if (p.tokens < 1 || p.out < 1 || p.in < 1)
    throw std::invalid_argument(std::string(who) + ": tokens, out and in must be >= 1 (got T=" +
                                std::to_string(p.tokens) + ", out=" + std::to_string(p.out) +
                                ", in=" + std::to_string(p.in) + ")");
  if (p.tokens > (int64_t(1) << 31) || p.out > (int64_t(1) << 31) || p.in > (int64_t(1) << 31))
    throw std::invalid_argument(std::string(who) + ": dimensions above 2^31 are not supported");
}

namespace {
std::mutex g_schedule_mutex;
FusedSchedule g_schedule{};  // the defaults in gpu_api.h
}
void set_fused_schedule(const FusedSchedule& s) {
  if (s.stagger_us < -1 || s.stagger_us > 1000000 || s.stagger_stride < 0)
    throw std::invalid_argument("set_fused_schedule: stagger_us must be -1 (auto) .. 10^6 and stride >= 0 (got " +
                                std::to_string(s.stagger_us) + ", " + std::to_string(s.stagger_stride) + ")");
  if (s.coop_min_tokens < 0 || s.coop_min_tokens_int8 < 0)
    throw std::invalid_argument("set_fused_schedule: coop_min_tokens and coop_min_tokens_int8 must be >= 0 (0: never; got " +
                                std::to_string(s.coop_min_tokens) + ", " + std::to_string(s.coop_min_tokens_int8) + ")");
  if (s.coop_stagger_us < 0 || s.coop_stagger_groups < 1 || s.coop_stagger_groups > 1024 ||
      int64_t(s.coop_stagger_us) * (s.coop_stagger_groups - 1) > 1000000)
    throw std::invalid_argument("set_fused_schedule: coop_stagger_us must be >= 0, coop_stagger_groups 1 .. 1024 and the last "
                                "group's delay, coop_stagger_us * (coop_stagger_groups - 1), at most 10^6 us (got " +
                                std::to_string(s.coop_stagger_us) + ", " + std::to_string(s.coop_stagger_groups) + ")");
  if (s.coop_group_rows < 1 || s.coop_group_rows > 1024)
    throw std::invalid_argument("set_fused_schedule: coop_group_rows must be 1 .. 1024 (1: row-major; got " +
                                std::to_string(s.coop_group_rows) + ")");
  for (auto [name, from] : {std::pair{"coop_l2g_min_tokens", s.coop_l2g_min_tokens},
                            std::pair{"coop_l2g_min_tokens_light", s.coop_l2g_min_tokens_light},
                            std::pair{"coop_l2g_min_tokens_int8", s.coop_l2g_min_tokens_int8}})
    if (from < 0)
      throw std::invalid_argument(std::string("set_fused_schedule: ") + name + " must be >= 0 (0: never; got " +
                                  std::to_string(from) + ")");
  if (s.coop_l2g_light_min_tiles < 1)
    throw std::invalid_argument("set_fused_schedule: coop_l2g_light_min_tiles must be >= 1 (got " +
                                std::to_string(s.coop_l2g_light_min_tiles) + ")");
  for (auto [name, rows] : {std::pair{"coop_l2g_epilogue_rows", s.coop_l2g_epilogue_rows},
                            std::pair{"coop_l2g_epilogue_rows_16k", s.coop_l2g_epilogue_rows_16k},
                            std::pair{"coop_l2g_epilogue_rows_fp", s.coop_l2g_epilogue_rows_fp}})
    if (rows < 8 || rows > 128 || rows % 8 != 0)
      throw std::invalid_argument(std::string("set_fused_schedule: ") + name +
                                  " must be a multiple of 8 in 8 .. 128 (got " + std::to_string(rows) + ")");
  if (s.coop_l2g_g_slices < 1 || s.coop_l2g_g_slices > 2)
    throw std::invalid_argument("set_fused_schedule: coop_l2g_g_slices must be 1 or 2 (got " +
                                std::to_string(s.coop_l2g_g_slices) + ")");
  if (s.coop_l2g_staged < 0 || s.coop_l2g_staged > 1)
    throw std::invalid_argument("set_fused_schedule: coop_l2g_staged must be 0 or 1 (got " +
                                std::to_string(s.coop_l2g_staged) + ")");
  if (s.coop_l2g_epilogue_warps < 2 || s.coop_l2g_epilogue_warps > 3)
    throw std::invalid_argument("set_fused_schedule: coop_l2g_epilogue_warps must be 2 or 3 (got " +
                                std::to_string(s.coop_l2g_epilogue_warps) + ")");
  if (s.coop_split_max < 1 || s.coop_split_max > kCoopSplitMax)
    throw std::invalid_argument("set_fused_schedule: coop_split_max must be 1 .. " + std::to_string(kCoopSplitMax) +
                                " (1: never; got " + std::to_string(s.coop_split_max) + ")");
  if (s.coop_split_min_tokens < 0)
    throw std::invalid_argument("set_fused_schedule: coop_split_min_tokens must be >= 0 (got " +
                                std::to_string(s.coop_split_min_tokens) + ")");
  if (s.coop_split_overhead_chunks < 0 || s.coop_split_overhead_chunks > 1024)
    throw std::invalid_argument("set_fused_schedule: coop_split_overhead_chunks must be 0 .. 1024 (got " +
                                std::to_string(s.coop_split_overhead_chunks) + ")");
  if (s.coop_split_gain_pct < 0 || s.coop_split_gain_pct > 99)
    throw std::invalid_argument("set_fused_schedule: coop_split_gain_pct must be 0 .. 99 (got " +
                                std::to_string(s.coop_split_gain_pct) + ")");
  if (s.coop_split_unit_chunks < -1 || s.coop_split_unit_chunks > 1024)
    throw std::invalid_argument("set_fused_schedule: coop_split_unit_chunks must be -1 .. 1024 (-1: one wave only; got " +
                                std::to_string(s.coop_split_unit_chunks) + ")");
  if (s.coop_split_min_slice_tokens < 0)
    throw std::invalid_argument("set_fused_schedule: coop_split_min_slice_tokens must be >= 0 (got " +
                                std::to_string(s.coop_split_min_slice_tokens) + ")");
  if (s.coop_ilv_min_tokens < 0)
    throw std::invalid_argument("set_fused_schedule: coop_ilv_min_tokens must be >= 0 (0: never; got " +
                                std::to_string(s.coop_ilv_min_tokens) + ")");
  std::lock_guard<std::mutex> lock(g_schedule_mutex);
  g_schedule = s;
}
int auto_stagger_us(StateFormat sf) { return sf == StateFormat::fp32 ? 10 : 0; }
FusedSchedule fused_schedule() {
  std::lock_guard<std::mutex> lock(g_schedule_mutex);
  return g_schedule;
}

bool tile_supported(TileShape t) {
  return (t.rows == 128 && t.cols == 128) || (t.rows == 64 && t.cols == 64);
}

DeviceParam::DeviceParam(const HostParam& hp) {
  shape_.rule = hp.rule;
  shape_.state_format = hp.state_format;
  shape_.weight_store = hp.weight_store;
  shape_.rows = hp.rows;
  shape_.cols = hp.cols;
  shape_.decls = hp.decls;
  shape_.sr = hp.sr;
  shape_.origin_row = hp.origin_row;
  shape_.origin_col = hp.origin_col;
  shape_.origin_global_cols = hp.origin_global_cols;
  master_ = DeviceBuffer<float>(hp.master);
  bf16_ = DeviceBuffer<bf16>(hp.bf16);
  for (int k = 0; k < kMaxStates; ++k) {
    st_f32_[k] = DeviceBuffer<float>(hp.st_f32[k]);
    st_bf16_[k] = DeviceBuffer<bf16>(hp.st_bf16[k]);
    st_i8_[k] = DeviceBuffer<uint8_t>(hp.st_i8[k]);
    st_absmax_[k] = DeviceBuffer<float>(hp.st_absmax[k]);
  }
}

void DeviceParam::upload(const HostParam& hp) {
  if (hp.rows != shape_.rows || hp.cols != shape_.cols || hp.state_format != shape_.state_format ||
      hp.weight_store != shape_.weight_store)
    throw std::invalid_argument("DeviceParam::upload: shape or format differs from construction");
  master_.upload(hp.master);
  bf16_.upload(hp.bf16);
  for (int k = 0; k < kMaxStates; ++k) {
    st_f32_[k].upload(hp.st_f32[k]);
    st_bf16_[k].upload(hp.st_bf16[k]);
    st_i8_[k].upload(hp.st_i8[k]);
    st_absmax_[k].upload(hp.st_absmax[k]);
  }
}

DeviceParamView DeviceParam::view() const {
  DeviceParamView pv;
  pv.rows = shape_.rows;
  pv.cols = shape_.cols;
  // A shard (HostParam::slice) keeps its place in the global tensor: SR bits and INT8 blocks.
  pv.row0 = shape_.origin_row;
  pv.col0 = shape_.origin_col;
  pv.global_cols = shape_.origin_global_cols ? shape_.origin_global_cols : shape_.cols;
  pv.master = master_.size() ? master_.data() : nullptr;
  pv.bf16 = bf16_.size() ? bf16_.data() : nullptr;
  pv.sr = shape_.sr;
  for (int k = 0; k < kMaxStates; ++k) {
    if (!shape_.decls.slot[k].kept) continue;
    StateView& sv = pv.state[k];
    sv.nonnegative = shape_.decls.slot[k].nonnegative;
    switch (shape_.state_format) {
      case StateFormat::fp32: sv.f32 = st_f32_[k].data(); break;
      case StateFormat::bf16: sv.bf16 = st_bf16_[k].data(); break;
      case StateFormat::int8: sv.i8 = st_i8_[k].data(); sv.absmax = st_absmax_[k].data(); break;
    }
  }
  return pv;
}

void DeviceParam::download_into(HostParam& hp) const {
  if (hp.rows != shape_.rows || hp.cols != shape_.cols || hp.state_format != shape_.state_format ||
      hp.weight_store != shape_.weight_store)
    throw std::invalid_argument("DeviceParam::download_into: shape or format differs");
  cuda_check(cudaDeviceSynchronize(), "DeviceParam::download_into (pending kernels)");
  master_.download(hp.master);
  bf16_.download(hp.bf16);
  for (int k = 0; k < kMaxStates; ++k) {
    st_f32_[k].download(hp.st_f32[k]);
    st_bf16_[k].download(hp.st_bf16[k]);
    st_i8_[k].download(hp.st_i8[k]);
    st_absmax_[k].download(hp.st_absmax[k]);
  }
}

CublasHandle::CublasHandle() { cublas_check(cublasCreate(&h_), "cublasCreate"); }
CublasHandle::~CublasHandle() { if (h_) cublasDestroy(h_); }

}  // namespace fh::gpu
