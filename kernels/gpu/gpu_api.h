// Host-callable API of the GPU kernel set: device buffers, a HostParam mirrored on the
// device, the fused wgrad-plus-update kernel, the order-matched materializer, the standalone rule
// kernel and the cuBLAS references. Every entry point checks its arguments and throws
// std::invalid_argument on bad input, std::runtime_error (with CUDA's error string) on CUDA errors.
#pragma once
#include <cuda_runtime_api.h>
#include <cublas_v2.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/reduction_order.h"
#include "kernels/formats/host_param.h"

namespace fh::gpu {

// Throws std::runtime_error("<what>: <CUDA error name>: <string>") unless e == cudaSuccess.
void cuda_check(cudaError_t e, const char* what);
void cublas_check(cublasStatus_t s, const char* what);

// An owning device allocation of n elements of T (RAII; movable, not copyable).
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n) : n_(n) {
    if (n) cuda_check(cudaMalloc(reinterpret_cast<void**>(&p_), n * sizeof(T)), "cudaMalloc");
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() { if (p_) cudaFree(p_); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      if (p_) cudaFree(p_);
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() const { return p_; }
  size_t size() const { return n_; }
  void upload(const std::vector<T>& host) {
    if (host.size() != n_) throw std::invalid_argument("DeviceBuffer::upload: size mismatch");
    if (n_) cuda_check(cudaMemcpy(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
  void download(std::vector<T>& host) const {
    host.resize(n_);
    if (n_) cuda_check(cudaMemcpy(host.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost), "download");
  }
  std::vector<T> download() const { std::vector<T> h; download(h); return h; }
  void zero() { if (n_) cuda_check(cudaMemset(p_, 0, n_ * sizeof(T)), "cudaMemset"); }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

// A HostParam's storage mirrored on the device; view() is the device ParamView.
class DeviceParam {
 public:
  explicit DeviceParam(const HostParam& hp);
  DeviceParamView view() const;             // hp's origin (a shard's place), sr = hp.sr
  void upload(const HostParam& hp);         // same shape and format as at construction
  void download_into(HostParam& hp) const;  // overwrites hp's weights and state with the device's

 private:
  HostParam shape_;  // format, decls and sr of the mirrored param (vectors left empty)
  DeviceBuffer<float> master_;
  DeviceBuffer<bf16> bf16_;
  DeviceBuffer<float> st_f32_[kMaxStates];
  DeviceBuffer<bf16> st_bf16_[kMaxStates];
  DeviceBuffer<uint8_t> st_i8_[kMaxStates];
  DeviceBuffer<float> st_absmax_[kMaxStates];
};

// The wgrad GEMM's inputs, device pointers: X [tokens, in], dY [tokens, out], bf16 row-major.
struct WgradProblem {
  const bf16* x = nullptr;
  const bf16* dy = nullptr;
  int64_t tokens = 0, out = 0, in = 0;
};
void validate_problem(const WgradProblem& p, const char* who);

// Checks a device ParamView against a rule and format before a launch: step >= 1, view inside
// its global rows, INT8 block alignment of its edges, storage for every kept state slot.
void validate_param_view(const RuleConfig& rule, StateFormat sf, WeightStore ws, const DeviceParamView& pv,
                         int64_t step, const char* who);

// Tile of G per block. Supported: 128 x 128 (the paper's) and 64 x 64.
struct TileShape {
  int rows = 128, cols = 128;
};
bool tile_supported(TileShape t);

// The fused kernel: G = dY^T X tile by tile in registers and shared memory, then the rule on
// each tile; writes only weights and state. pv: device ParamView of W [out, in] (or a shard of it:
// then pv.row0 / pv.col0 / pv.global_cols place it); `step` counts from 1 and also keys the
// stochastic rounding (pv.sr.step is overwritten with it).
void fused_wgrad_update(const WgradProblem& p, const RuleConfig& rule, StateFormat sf,
                        WeightStore ws, const DeviceParamView& pv, int64_t step, TileShape tile = {},
                        cudaStream_t stream = 0);

// The fused kernel holds no planted defect: the defects that show its checks can fail are kernel
// mutants (suites/mutation/kernel_catalog.json), built and run by scripts/mutate_gpu.py.

// How the fused kernel schedules its blocks (kernels/gpu/NOTES.md records the measurements). Timing
// only: no setting changes a bit of the results (the GPU fused suite checks that), except the
// coop_split_* settings, which choose the token slices and so the order (fused_order_for), which the
// order-matched path and the twin follow.
//   stagger_us (block-per-tile kernel): the blocks of the first resident wave that staggered_block (wgrad_tile_layout.h)
//     picks start that many microseconds late, so that about half the blocks multiply while the
//     other half stream the epilogue's weights and state; without it every block of a wave
//     multiplies, then every block waits on DRAM. -1: auto_stagger_us(state format).
//   stagger_stride: 0 means the SM count (with round-robin dispatch, the second block of each SM).
//   coop_min_tokens: the 128 x 128 tile setting runs the cooperative 128 x 256 kernel from this
//     many tokens on, with fp32 or bf16 state and operands TMA can load (rows 16-byte aligned);
//     the block-per-tile kernel otherwise, the same bits. 0: never. The default, kCoopMinTokens,
//     is the measured crossover (kernels/gpu/NOTES.md v26, v28).
//   coop_min_tokens_int8: the same for INT8 state (its crossover is its own). The default,
//     kCoopMinTokensInt8 = 8192, is measured (NOTES.md v35): from there the cooperative kernel's
//     INT8 step takes 10-22% less time than the block kernel's, for every rule timed.
//   coop_stagger_us, coop_stagger_groups: the cooperative kernel's persistent blocks start in
//     coop_stagger_groups groups of consecutive block indices, group g coop_stagger_us * g
//     microseconds late, so that the blocks' epilogues (which stream the state from DRAM) do not all
//     fall in the same microseconds while the other SMs' mainloops leave DRAM idle; the last group
//     holds the blocks with one tile fewer. 0 us or 1 group: no stagger, the default (measured:
//     no setting tried was faster, NOTES.md v36).
//   coop_group_rows: the cooperative kernel walks its tiles in groups of this many tile rows,
//     column by column inside a group (coop_tile_at, wgrad_tile_layout.h), so that the tiles in
//     flight together share operand columns in L2; 1: row-major. The default, kCoopGroupRows = 8,
//     is measured (kernels/gpu/NOTES.md v38).
//   coop_l2g_min_tokens: where the cooperative kernel runs and its epilogue is heavy
//     (coop_l2g_class: fp32 state, two or more state slots kept), from this many tokens on it
//     parks each G tile in global memory (L2) and epilogue warps update it while the consumers
//     multiply the next tile (fused_wgrad_coop_l2g.cuh); 0: never. The default,
//     kCoopL2gMinTokens = 8192, is measured (kernels/gpu/NOTES.md v40, v41; v49: with G loaded a
//     batch ahead the form ties or beats the cooperative kernel at T = 8192).
//   coop_l2g_min_tokens_light, coop_l2g_light_min_tiles: the same for the lighter epilogues
//     (coop_l2g_class), on layers of at least that many 128 x 256 tiles. Defaults measured
//     (kernels/gpu/NOTES.md v41).
//   coop_l2g_epilogue_warps: how many warps (2 or 3) update the parked G tiles; the default,
//     3, is measured (kernels/gpu/NOTES.md v41).
//   coop_l2g_epilogue_rows, coop_l2g_epilogue_rows_16k: with INT8 state, the epilogue warps update
//     each parked tile's first this many rows (a multiple of 8, 8 .. 128; the second from T =
//     16384, where a tile's mainloop is twice as long) and the consumers the rest before they
//     multiply the next tile (fp32 and bf16 state: coop_l2g_epilogue_rows_fp).
//   coop_l2g_epilogue_rows_fp: the same with fp32 or bf16 state (a multiple of 8, 8 .. 128, any T);
//     128, the default, leaves the whole tile to the epilogue warps (v41's kernel); below 128 the
//     form runs a kernel of its own whose consumers take the other rows (v48: 10-28% slower at every
//     share on an H100, so off).
//   coop_l2g_g_slices: how many 128 KB G slices each block of that form parks its tiles in, in turn
//     (1 or 2): with two the consumers wait for the epilogue of the tile before the previous one
//     (v50; 1, the default, until measured). INT8 state keeps one (its kernel spilled with two).
//   coop_l2g_staged: 1: that form's epilogue warps bring each whole fp32 / bf16 tile's G, weights and
//     state into shared memory by bulk copies, several passes ahead of the update (v51), where the
//     view's rows allow it (fused_params_bulk16); 0, the default until measured: into registers, a
//     batch ahead (v49).
//   coop_l2g_min_tokens_int8: the form for INT8 state (0: never). The defaults (72, 104 rows,
//     from T = 8192) are measured (kernels/gpu/NOTES.md v42).
//   coop_split_max, coop_split_min_tokens, coop_split_overhead_chunks, coop_split_gain_pct: the 128 x 128
//     tile setting splits the tokens into S slices (the kernel fused_wgrad_coop_split.cuh, the order
//     fused_order_for) where the layer's tiles x S fit the SMs and coop_split_count's cost model, with
//     this overhead in 64-token chunks, predicts at least coop_split_gain_pct percent less time than
//     S = 1, for S up to coop_split_max (1: never; at most kCoopSplitMax), from coop_split_min_tokens
//     tokens on. Defaults measured (kernels/gpu/NOTES.md v43).
//   coop_split_unit_chunks, coop_split_min_slice_tokens: where tiles x S exceed the SMs, the units run
//     in waves on a persistent grid (fused_wgrad_coop_split_waves_kernel: epilogue warps reduce and
//     update one unit's band while the consumers multiply the next), each wave after the first
//     costing this many chunks more in the model, with slices of at least that many tokens (the
//     epilogue warps' pace); -1: one wave only, the default (the waves measured 0-24% slower than
//     not splitting, kernels/gpu/NOTES.md v44; kCoopSplitUnitChunks = 4 is the model's cost when on).
//   coop_ilv_min_tokens: where the cooperative kernel runs with fp32 or bf16 state, from this many
//     tokens on its consumers update each tile during the next tile's mainloop, a 32nd of it at a
//     time (fused_wgrad_coop_ilv.cuh), ahead of the G-through-L2 form; 0: never (the default).
// Process-wide. forge-bench reads FH_FUSED_STAGGER_US, FH_FUSED_STAGGER_STRIDE,
// FH_FUSED_COOP_MIN_TOKENS, FH_FUSED_COOP_MIN_TOKENS_INT8, FH_FUSED_COOP_STAGGER_US,
// FH_FUSED_COOP_STAGGER_GROUPS, FH_FUSED_COOP_GROUP_ROWS, FH_FUSED_COOP_L2G_MIN_TOKENS,
// FH_FUSED_COOP_L2G_MIN_TOKENS_LIGHT, FH_FUSED_COOP_L2G_LIGHT_MIN_TILES,
// FH_FUSED_COOP_L2G_EPILOGUE_WARPS, FH_FUSED_COOP_L2G_EPILOGUE_ROWS,
// FH_FUSED_COOP_L2G_EPILOGUE_ROWS_16K, FH_FUSED_COOP_L2G_EPILOGUE_ROWS_FP, FH_FUSED_COOP_L2G_G_SLICES,
// FH_FUSED_COOP_L2G_STAGED,
// FH_FUSED_COOP_L2G_MIN_TOKENS_INT8, FH_FUSED_COOP_SPLIT_MAX,
// FH_FUSED_COOP_SPLIT_MIN_TOKENS, FH_FUSED_COOP_SPLIT_OVERHEAD_CHUNKS, FH_FUSED_COOP_SPLIT_GAIN_PCT,
// FH_FUSED_COOP_SPLIT_UNIT_CHUNKS, FH_FUSED_COOP_SPLIT_MIN_SLICE_TOKENS and FH_FUSED_COOP_ILV_MIN_TOKENS.
constexpr int64_t kCoopMinTokens = 2048;
constexpr int64_t kCoopMinTokensInt8 = 8192;
constexpr int kCoopStaggerUs = 0;
constexpr int kCoopStaggerGroups = 1;
constexpr int kCoopGroupRows = 8;
constexpr int64_t kCoopL2gMinTokens = 8192;
constexpr int64_t kCoopL2gMinTokensLight = 16384;
constexpr int64_t kCoopL2gLightMinTiles = 1024;
constexpr int kCoopL2gEpilogueWarps = 3;
constexpr int kCoopL2gEpilogueRows = 72;
constexpr int kCoopL2gEpilogueRows16k = 104;
constexpr int64_t kCoopL2gRows16kFromTokens = 16384;  // where coop_l2g_epilogue_rows_16k takes over
constexpr int kCoopL2gEpilogueRowsFp = 128;  // the epilogue warps take whole fp32 / bf16 tiles (v48: every share measured slower)
constexpr int kCoopL2gGSlices = 1;  // v50's two slices: off until measured
constexpr int kCoopL2gStaged = 0;    // v51's staged epilogue: off until measured
constexpr int64_t kCoopL2gMinTokensInt8 = 8192;
constexpr int kCoopSplitMax = 16;  // the kernel cuts a tile's 16 groups of 8 rows into S bands: at most 16
constexpr int kCoopSplitDefaultMax = 16;
constexpr int64_t kCoopSplitMinTokens = 2048;
constexpr int kCoopSplitOverheadChunks = 20;  // measured: NOTES.md v43
constexpr int kCoopSplitGainPct = 10;
constexpr int kCoopSplitUnitChunks = 4;          // the waves' model when they are on
constexpr int kCoopSplitDefaultUnitChunks = -1;  // off: measured slower than not splitting (NOTES.md v44)
constexpr int64_t kCoopSplitMinSliceTokens = 4096;
constexpr int64_t kCoopIlvMinTokens = 0;  // off until measured (kernels/gpu/NOTES.md v46)
struct FusedSchedule {
  int stagger_us = -1;
  int stagger_stride = 0;
  int64_t coop_min_tokens = kCoopMinTokens;
  int64_t coop_min_tokens_int8 = kCoopMinTokensInt8;
  int coop_stagger_us = kCoopStaggerUs;
  int coop_stagger_groups = kCoopStaggerGroups;
  int coop_group_rows = kCoopGroupRows;
  int64_t coop_l2g_min_tokens = kCoopL2gMinTokens;
  int64_t coop_l2g_min_tokens_light = kCoopL2gMinTokensLight;
  int64_t coop_l2g_light_min_tiles = kCoopL2gLightMinTiles;
  int coop_l2g_epilogue_warps = kCoopL2gEpilogueWarps;
  int coop_l2g_epilogue_rows = kCoopL2gEpilogueRows;
  int coop_l2g_epilogue_rows_16k = kCoopL2gEpilogueRows16k;
  int coop_l2g_epilogue_rows_fp = kCoopL2gEpilogueRowsFp;
  int coop_l2g_g_slices = kCoopL2gGSlices;
  int coop_l2g_staged = kCoopL2gStaged;
  int64_t coop_l2g_min_tokens_int8 = kCoopL2gMinTokensInt8;
  int coop_split_max = kCoopSplitDefaultMax;
  int64_t coop_split_min_tokens = kCoopSplitMinTokens;
  int coop_split_overhead_chunks = kCoopSplitOverheadChunks;
  int coop_split_gain_pct = kCoopSplitGainPct;
  int coop_split_unit_chunks = kCoopSplitDefaultUnitChunks;
  int64_t coop_split_min_slice_tokens = kCoopSplitMinSliceTokens;
  int64_t coop_ilv_min_tokens = kCoopIlvMinTokens;
};
// Throws std::invalid_argument on a value out of range (stagger_us -1 .. 10^6, stride >= 0,
// coop_min_tokens and coop_min_tokens_int8 >= 0, coop_stagger_us >= 0, coop_stagger_groups
// 1 .. 1024, the last group's delay at most 10^6 us, coop_group_rows 1 .. 1024,
// coop_l2g_min_tokens and coop_l2g_min_tokens_light >= 0, coop_l2g_light_min_tiles >= 1,
// coop_l2g_epilogue_warps 2 or 3, coop_l2g_epilogue_rows, coop_l2g_epilogue_rows_16k and
// coop_l2g_epilogue_rows_fp multiples of 8 in 8 .. 128, coop_l2g_g_slices 1 or 2, coop_l2g_staged 0 or 1, coop_l2g_min_tokens_int8 >= 0, coop_split_max 1 .. kCoopSplitMax,
// coop_split_min_tokens >= 0, coop_split_overhead_chunks 0 .. 1024, coop_split_gain_pct 0 .. 99,
// coop_split_unit_chunks -1 .. 1024, coop_split_min_slice_tokens >= 0, coop_ilv_min_tokens >= 0).
void set_fused_schedule(const FusedSchedule& s);
FusedSchedule fused_schedule();
// Whether the G-through-L2 form, where it runs with this state format, splits each tile between its
// epilogue warps and the consumers by the kernel built for that (fp32 / bf16 state with
// coop_l2g_epilogue_rows_fp below 128; INT8 state shares in its own kernel and says false).
inline bool coop_l2g_shares(StateFormat sf) {
  return sf != StateFormat::int8 && fused_schedule().coop_l2g_epilogue_rows_fp < 128;
}
// The stagger an auto schedule uses: 10 us where the epilogue is DRAM bound (fp32 state: 24 or
// more bytes a parameter), none otherwise (bf16 and int8 state lost time with it on the runner).
int auto_stagger_us(StateFormat sf);
// The kernel fused_wgrad_update runs for this problem, tile setting and state format under the
// current schedule:
// "coop_split_128x256", "coop_split_waves_128x256", "coop_ilv_128x256", "coop_l2g_128x256",
// "coop_l2g_share_128x256" (coop_l2g_shares), "coop_128x256",
// "block_per_tile" (all for the 128 x 128
// setting) or "mma_sync_64x64".
// rule: its hyperparameters say which state slots it keeps (their storage is what the epilogue moves).
const char* fused_kernel_for(const WgradProblem& p, TileShape tile, StateFormat sf, const RuleConfig& rule);
// The split over tokens (fused_wgrad_coop_split.cuh): the number of slices S in 2 .. max_splits that
// minimizes the predicted time of tiles 128 x 256 tiles over `chunks` 64-token chunks, if that is at
// least gain_pct percent below S = 1's ceil(tiles / sms) * chunks; 1 otherwise. Every slice holds at
// least one chunk. Where tiles * S <= sms (one block a unit, all resident) the time is
// ceil(chunks / S) + overhead_chunks; otherwise (unit_chunks >= 0, slices of at least
// min_slice_chunks) the units run in W waves of a grid of floor(sms / S) * S blocks (a multiple of S:
// a wave holds whole tiles), W * ceil(chunks / S) + (W - 1) * unit_chunks + overhead_chunks.
constexpr int64_t coop_split_waves_grid(int64_t tiles, int splits, int64_t sms) {
  const int64_t units = tiles * splits, grid = (sms / splits) * splits;
  return units < grid ? units : grid;
}
constexpr int coop_split_count(int64_t tiles, int64_t chunks, int64_t sms, int max_splits, int overhead_chunks,
                               int gain_pct, int unit_chunks = -1, int64_t min_slice_chunks = 0) {
  if (tiles < 1 || chunks < 1 || sms < 1) return 1;
  const int64_t base = ((tiles + sms - 1) / sms) * chunks;
  int64_t best = base;
  int best_s = 1;
  for (int S = 2; S <= max_splits; ++S) {
    const int64_t slice = (chunks + S - 1) / S;
    if (slice * (S - 1) >= chunks) continue;  // an empty last slice
    int64_t cost = slice + overhead_chunks;
    if (tiles * S > sms) {
      const int64_t grid = coop_split_waves_grid(tiles, S, sms);
      if (unit_chunks < 0 || slice < min_slice_chunks || grid < 1) continue;
      const int64_t waves = (tiles * S + grid - 1) / grid;
      cost += (waves - 1) * (slice + unit_chunks);
    }
    if (cost < best) best = cost, best_s = S;
  }
  return best * 100 <= base * (100 - gain_pct) ? best_s : 1;
}
// The slices the fused kernel splits problem p's tokens into with this tile setting under the current
// schedule, on the current device (its SM count): 1 (no split) or coop_split_count's choice. The
// order-matched path (wgrad_materialize) and the order the fused kernel is described by
// (fused_order_for) take the same number.
int fused_token_splits(const WgradProblem& p, TileShape tile = {});
// The order the fused kernel and wgrad_materialize chain p's G in: fused_kernel_order(64) without a
// split, cublas_wgrad_order(S, 64) with S = fused_token_splits(p, tile) slices (64-token chunks).
ReductionOrder fused_order_for(const WgradProblem& p, TileShape tile = {});
// The cooperative kernel's G-through-L2 form is built for rules that declare state (with none the
// epilogue is too light to hide: kernels/gpu/NOTES.md v41).
constexpr bool coop_l2g_builds(int declared_slots) { return declared_slots >= 1; }
// Which of FusedSchedule's thresholds a problem takes: heavy epilogues (fp32 state with at least
// kCoopL2gMinStateSlots slots kept: 24 or more bytes a parameter) coop_l2g_min_tokens; lighter ones
// coop_l2g_min_tokens_light, where the rule keeps every slot it declares (RMSprop keeping one of three
// ran 6% slower than the cooperative kernel: its epilogue carries the others' branches) and the layer
// has coop_l2g_light_min_tiles tiles (4096² with 512 lost 1-3%: there each block's last tile, which
// the consumers update unhidden, is a quarter of its work). INT8 state has its own threshold,
// coop_l2g_min_tokens_int8.
enum class CoopL2gClass { none, heavy, light, int8 };
constexpr int kCoopL2gMinStateSlots = 2;
constexpr CoopL2gClass coop_l2g_class(StateFormat sf, int declared_slots, int kept_slots, int64_t tiles,
                                      int64_t light_min_tiles) {
  if (!coop_l2g_builds(declared_slots) || kept_slots < 1) return CoopL2gClass::none;
  if (sf == StateFormat::int8) return CoopL2gClass::int8;
  if (sf == StateFormat::fp32 && kept_slots >= kCoopL2gMinStateSlots) return CoopL2gClass::heavy;
  return kept_slots == declared_slots && tiles >= light_min_tiles ? CoopL2gClass::light : CoopL2gClass::none;
}
// How many state slots the rule keeps with these hyperparameters (Rule::states(h).count()), and how
// many it declares (Rule::kStateSlots).
int rule_kept_slots(const RuleConfig& rule);
int rule_declared_slots(const RuleConfig& rule);

// Variants of the fused kernel (bench, decomposition claim and suites only), AdamW with fp32
// master + fp32 state or bf16 weights + bf16 state, TMA-loadable operands; throws otherwise.
//   g_roundtrip: each G tile stored to g ([out, in] fp32, row-major) and loaded back before the
//     update in the same launch (the decomposition's middle step); the fused kernel's bits.
//   pingpong_128x128: the warp-specialized 128 x 128 kernel (kernels/gpu/fused_wgrad_pingpong.cuh:
//     a TMA producer warp and two consumer warpgroups, one tile's epilogue beside the other's
//     mainloop); the same bits.
//   coop_128x256: the cooperative 128 x 256 kernel (kernels/gpu/fused_wgrad_coop.cuh) at any T;
//     the same bits.
enum class FusedVariant : int { g_roundtrip = 0, pingpong_128x128 = 1, coop_128x256 = 2 };
void fused_wgrad_update_variant(const WgradProblem& p, const RuleConfig& rule, StateFormat sf, WeightStore ws,
                                const DeviceParamView& pv, int64_t step, FusedVariant v, float* g = nullptr,
                                cudaStream_t stream = 0);

// The order-matched reference, phase 1: the fused kernel's mainloop, storing fp32 G [out, in]
// row-major (ldg = in) to g.
void wgrad_materialize(const WgradProblem& p, float* g, TileShape tile = {}, cudaStream_t stream = 0);

// Phase 2 of both two-phase references: the rule over the whole tensor, one thread per
// (row, 64-column block) segment, G [rows, cols] with leading dimension ldg.
void rule_apply_device(const RuleConfig& rule, StateFormat sf, WeightStore ws, const DeviceParamView& pv,
                       int64_t step, const float* g, int64_t ldg, cudaStream_t stream = 0);

// A cuBLAS handle (RAII).
class CublasHandle {
 public:
  CublasHandle();
  ~CublasHandle();
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

// cuBLAS wgrad: G [out, in] fp32 row-major = dY^T X via cublasGemmEx (bf16 in, fp32 compute and
// out, default algorithm), m = in, n = out, k = tokens, X as A (no transpose), dY as B (transposed).
void cublas_wgrad(cublasHandle_t h, const WgradProblem& p, float* g, cudaStream_t stream = 0);

// cuBLAS dgrad: dX [tokens, in] fp32 row-major = dY [tokens, out] . W [out, in] (W in bf16,
// the copy the forward pass reads), plus beta * dX (beta 1: several layers' dX summed in place,
// as q, k and v share their input).
void cublas_dgrad(cublasHandle_t h, const bf16* dy, const bf16* w_bf16, int64_t tokens,
                  int64_t out, int64_t in, float* dx, cudaStream_t stream = 0, float beta = 0.0f);

// The mma probe (kernels/gpu/mma_probe.cu): n instances, each a chain of `chain` m16n8k16
// instructions D = mma(A_c, B_c, D_prev) from C. Device arrays:
//   a [n][chain][16][16] bf16 (row-major A), b [n][chain][8][16] bf16 (B as [n][k]),
//   c [n][16][8] fp32, d [n][16][8] fp32 (out).
void mma_probe(const bf16* a, const bf16* b, const float* c, float* d, int64_t n, int chain,
               cudaStream_t stream = 0);
// The wgmma probe (same file): n instances, each one warpgroup running a chain of `chain`
// wgmma.mma_async m64n128k16 (bf16 in, fp32 accumulate, both operands from shared memory in the
// fused kernel's swizzled MN-major layout). a: [n][chain][64][16] row-major (A[m][k]),
// b: [n][chain][16][128] (B[k][n]), c and d: [n][64][128] row-major.
void wgmma_probe(const bf16* a, const bf16* b, const float* c, float* d, int64_t n, int chain,
                 cudaStream_t stream = 0);

}  // namespace fh::gpu
