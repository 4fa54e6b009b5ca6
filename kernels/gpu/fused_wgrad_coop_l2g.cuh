// The cooperative kernel with its G tiles parked in global memory (L2): what fused_wgrad_update
// runs where the cooperative kernel is chosen and this form serves (a rule that keeps state:
// coop_l2g_class, gpu_api.h), from T = FusedSchedule::coop_l2g_min_tokens (heavy epilogues),
// coop_l2g_min_tokens_light or coop_l2g_min_tokens_int8 (coop_l2g_chosen, fused_wgrad_update.cuh).
// One persistent block per SM, three warpgroups, the cooperative kernel's ring of four 48 KB slots
// and mainloop:
//   - warp 0 (one thread) loads the chunks with TMA, from one tile straight into the next;
//   - both consumers (warpgroups 1, 2) multiply the tile, wait until the epilogue warps have read
//     the G last parked in the slice the tile goes to, store theirs to that slice of the block's
//     (g_scratch: FusedSchedule::coop_l2g_g_slices slices of 128 KB, INT8 state one; with two, v50,
//     the consumers wait for tile k - 2's epilogue rather than k - 1's, and the block's last tile's
//     epilogue overlaps the epilogue warps' last), with INT8 state update its rows from
//     coop_l2g_epilogue_rows(_16k) down themselves (128: none), with fp32 or bf16 state from
//     coop_l2g_epilogue_rows_fp down (kShare: the kernel built for a value below 128, v48), and go
//     on to the next tile; the block's last tile they update whole;
//   - warps 1, 2 and 3 (FusedSchedule::coop_l2g_epilogue_warps = 3) or 1 and 2 are the epilogue:
//     they update each parked tile but the last (with INT8 state its first FusedSchedule::
//     coop_l2g_epilogue_rows, or coop_l2g_epilogue_rows_16k from T = kCoopL2gRows16kFromTokens)
//     while the consumers multiply the next one, each its own run of the rows' two 128-column
//     halves (l2g_piece); with FusedSchedule::coop_l2g_staged (v51) a whole fp32 / bf16 tile's
//     passes come through shared-memory stages filled by bulk copies (l2g_staged_piece).
// A fourth warpgroup for the epilogue does not compile: a 512-thread block has 128 registers a
// thread, and ptxas refuses the m64n256k16 accumulators below 154 even after setmaxnreg.
// Why: the cooperative kernel's epilogue does not overlap its mainloop (about 34 us a tile at
// 4096², fp32: 852 KB of weights and state while the tensor cores idle), and v37's parked tile in
// shared memory cut the ring to 96 KB and starved the mainloop (kernels/gpu/NOTES.md v37). Here
// the ring keeps its 192 KB; the price is 128 KB of G stored to and loaded from L2 a tile, and the
// epilogue warps' pace (a tile's mainloop must outlast their epilogue: large T only; v40 had two
// epilogue warps, v41 three).
// Per output element the chain is the cooperative kernel's, and each element's update the same
// function of the same values; the GPU fused suite compares the bits.
#pragma once
#include "kernels/gpu/fused_wgrad_coop.cuh"  // the wgmma, the park, the ring's geometry

namespace fh::gpu {

// The epilogues over a G tile in global memory (rows of 256 floats, no padding: no banks to avoid).
// Each epilogue warp alone over a 128-column half (one 32-quad row a pass), on its own pieces: a
// single geometry and call site (two of them spilled 548 bytes and more at 168 registers), one quad
// a batch (two spilled 36 bytes). G is loaded with the batch (kGGlobal): at the update each pass
// waited on an L2 round trip (v49).
using L2gEpilogueTile = CoopEpilogueTile<32, 1, 256, 128, 128, true>;
struct L2gPiece {
  int r0, c0, rows;
};
// Piece k (0, 1) of epilogue warp w (warp 1 + w) when `warps` update the first `rows` rows of a
// tile: the 2 x rows half-rows in order (the left 128 columns' rows, then the right's) cut into
// `warps` runs of whole multiples of 4 (whole batch pairs), a run that crosses into the right half
// being two pieces. 128 rows, three warps: 84 + 84 + 88 half-rows; two warps: a half each.
__device__ __forceinline__ L2gPiece l2g_piece(int warps, int w, int rows, int k) {
  const int quarter_runs = 2 * rows / 4;
  const int b = 4 * (quarter_runs * w / warps), e = 4 * (quarter_runs * (w + 1) / warps);
  const int e0 = e < rows ? e : rows;  // the run's end in the left half
  if (k == 0) return {b, 0, e0 > b ? e0 - b : 0};
  const int b1 = b > rows ? b : rows;  // its start in the right half
  return {b1 - rows, 128, e > b1 ? e - b1 : 0};
}
// Both consumers, on the block's last tile: one quad a batch (two spilled 8 bytes at 168 registers).
using L2gLastTile = CoopEpilogueTile<256, 1, 256, 128, 256, true>;
constexpr size_t kL2gScratchFloats = size_t(CoopCfg::TR) * CoopCfg::TC;  // one G slice of a block
constexpr int kL2gMaxGSlices = 2;  // FusedSchedule::coop_l2g_g_slices: 1 or 2
// v51's staging (FusedSchedule::coop_l2g_staged): the shared memory the ring leaves, a third to each
// of at most three epilogue warps, each cut into as many stages of a pass as fit (at most 8).
constexpr int kL2gMaxEpilogueWarps = 3;
constexpr int kL2gMaxStages = 8;
constexpr uint32_t kL2gStagingBytesPerWarp = 10240;
// The G slices a block of the form parks its tiles in, for the kernel and its scratch alike: the
// schedule's, but one with INT8 state (with the choice at run time its kernel spilled 20 bytes, v50).
template <StateFormat SF>
__host__ __device__ constexpr int l2g_g_slices(int scheduled) {
  return SF == StateFormat::int8 ? 1 : scheduled;
}

// v51 (opt-in: FusedSchedule::coop_l2g_staged): an epilogue warp's piece of a whole tile with its G,
// weights and state brought into shared memory by bulk copies (cp.async.bulk, issued by lane 0)
// several passes ahead of their update, instead of into registers one batch ahead: more bytes in
// flight per warp at no register cost. A pass is one row of the piece, 128 columns, a quad a lane.
// Stage layout: G (512 bytes), the rule's kept state slots, then the weight the rule reads.
template <class Rule, StateFormat SF, WeightStore WS>
struct L2gStage {
  static constexpr uint32_t kStateBytes = 128 * (SF == StateFormat::fp32 ? 4 : 2);
  static constexpr uint32_t kWeightBytes = 128 * (WS == WeightStore::fp32_master ? 4 : 2);
  static constexpr uint32_t kGBytes = 128 * 4;
  static constexpr uint32_t kBytes = kGBytes + Rule::kStateSlots * kStateBytes + kWeightBytes;
  static constexpr int kStages = int(kL2gStagingBytesPerWarp / kBytes) < kL2gMaxStages
                                     ? int(kL2gStagingBytesPerWarp / kBytes) : kL2gMaxStages;
  static_assert(kStages >= 2 && kBytes % 16 == 0, "bulk copies of whole 16-byte units, two stages at least");
  __host__ __device__ static constexpr uint32_t state_at(int k) { return kGBytes + uint32_t(k) * kStateBytes; }
  __host__ __device__ static constexpr uint32_t weight_at() { return kGBytes + Rule::kStateSlots * kStateBytes; }
};
// One epilogue warp's stages (its share of the block's staging bytes), their barriers, and the
// passes it has staged so far (the stage and parity of the next).
struct L2gStaging {
  unsigned char* buf;
  uint64_t* full;
  uint32_t passes;
};
__device__ __forceinline__ void bulk_load(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   smem_u32(dst)),
               "l"(src), "r"(bytes), "r"(smem_u32(bar))
               : "memory");
}
// The consumers' G stores (generic proxy) before the epilogue warps' bulk copies read them (async proxy).
__device__ __forceinline__ void fence_proxy_async_global() {
  asm volatile("fence.proxy.async.global;\n" ::: "memory");
}
// Four values of a stage as load4 gives them from global memory (a plain shared load: no cache hint).
__device__ __forceinline__ void stage_read4(const unsigned char* p, float (&v)[4], bool bf16x4 = false) {
  if (bf16x4)
    unpack4(*reinterpret_cast<const uint2*>(p), v);
  else
    unpack4(*reinterpret_cast<const float4*>(p), v);
}
// Piece `piece` of whole tile (o0, i0) (G at gG), by one epilogue warp: the same elements, values
// and update (update_speculative, store_quad) as fused_epilogue_quads over L2gEpilogueTile, pass
// by pass in the same order; only where the loaded values wait differs.
#ifdef FH_PLANT_WGMMA_SERIALIZED  // scripts/check_kernel_spills.py --plant-serialized: a call ptxas must keep
#define FH_L2G_STAGED_INLINE __noinline__  // in the epilogue warps' branch serializes the kernel's wgmma (C7520)
#else
#define FH_L2G_STAGED_INLINE __forceinline__
#endif
template <class Rule, StateFormat SF, WeightStore WS>
__device__ FH_L2G_STAGED_INLINE void l2g_staged_piece(const typename Rule::Scalars& s, const ParamView& pv,
                                                 const float* gG, int64_t o0, int64_t i0, L2gPiece piece,
                                                 int lane, L2gStaging& st) {
  using Stage = L2gStage<Rule, SF, WS>;
  constexpr int S = Stage::kStages;
  const int64_t idx0 = (o0 + piece.r0) * pv.cols + (i0 + piece.c0);
  auto stage = [&](int p) { return st.buf + ((st.passes + uint32_t(p)) % S) * Stage::kBytes; };
  auto bar = [&](int p) { return st.full + (st.passes + uint32_t(p)) % S; };
  auto issue = [&](int p) {  // lane 0: pass p's bytes into its stage
    unsigned char* d = stage(p);
    uint64_t* b = bar(p);
    const int64_t idx = idx0 + p * pv.cols;
    uint32_t bytes = Stage::kGBytes + Stage::kWeightBytes;
#pragma unroll
    for (int k = 0; k < Rule::kStateSlots; ++k)
      if (pv.state[k].present()) bytes += Stage::kStateBytes;
    mbar_arrive_expect_tx(b, bytes);
    bulk_load(d, gG + (piece.r0 + p) * CoopCfg::TC + piece.c0, Stage::kGBytes, b);
#pragma unroll
    for (int k = 0; k < Rule::kStateSlots; ++k)
      if (pv.state[k].present())
        bulk_load(d + Stage::state_at(k),
                  SF == StateFormat::fp32 ? static_cast<const void*>(pv.state[k].f32 + idx) : pv.state[k].bf16 + idx,
                  Stage::kStateBytes, b);
    bulk_load(d + Stage::weight_at(),
              WS == WeightStore::fp32_master ? static_cast<const void*>(pv.master + idx) : pv.bf16 + idx,
              Stage::kWeightBytes, b);
  };
  if (lane == 0)
    for (int p = 0; p < S && p < piece.rows; ++p) issue(p);
#pragma unroll 1
  for (int p = 0; p < piece.rows; ++p) {
    mbar_wait(bar(p), ((st.passes + uint32_t(p)) / S) & 1u);
    const unsigned char* d = stage(p);
    auto read = [&](ElementValues(&e)[4]) {  // the quad's weights and state, as load_quad gives them
      float v[4];
#pragma unroll
      for (int k = 0; k < kMaxStates; ++k) {
        if (k < Rule::kStateSlots && pv.state[k].present())
          stage_read4(d + Stage::state_at(k) + lane * 4 * (Stage::kStateBytes / 128), v, SF != StateFormat::fp32);
        else
          v[0] = v[1] = v[2] = v[3] = 0.0f;
#pragma unroll
        for (int b = 0; b < 4; ++b) e[b].st[k] = v[b];
      }
      stage_read4(d + Stage::weight_at() + lane * 4 * (Stage::kWeightBytes / 128), v, WS != WeightStore::fp32_master);
#pragma unroll
      for (int b = 0; b < 4; ++b) e[b].p = v[b];
    };
    float g[4];
    stage_read4(d + lane * 16, g);
    ElementValues e[4];
    read(e);
    update_speculative<Rule, 4>(s, e, g, read);
    const int64_t r = o0 + piece.r0 + p, c = i0 + piece.c0 + 4 * lane;
    const int64_t idx = idx0 + p * pv.cols + 4 * lane;
    store_quad<Rule, SF, WS>(pv, idx, idx, global_element_index(pv, r, c), e);
    // Every lane's reads of the stage before lane 0's bulk copy overwrites it (generic, then async proxy).
    fence_proxy_async_shared();
    __syncwarp();
    if (lane == 0 && p + S < piece.rows) issue(p + S);
  }
  st.passes += uint32_t(piece.rows);
}

// The update of tile (o0, i0)'s piece (rows piece.r0 .. piece.r0 + piece.rows - 1, columns piece.c0 ..
// piece.c0 + Tile::TC - 1) from the G tile at gG (rows Tile::kLdG floats apart), by the Tile::kThreads
// threads of index tid.
template <class Tile, class Rule, StateFormat SF, WeightStore WS>
__device__ __forceinline__ void coop_update_piece(const typename Rule::Scalars& s,
                                                  const ParamView& pv, bool vec, const float* gG, int64_t o0,
                                                  int64_t i0, L2gPiece piece, int tid) {
  const bool whole = coop_tile_whole(pv, vec, o0, i0);
  const float* g = gG + piece.r0 * Tile::kLdG + piece.c0;
  const int64_t r = o0 + piece.r0, c = i0 + piece.c0;
  const FragCoord first = epilogue_quad<Tile>(tid, 0);
  if constexpr (SF == StateFormat::int8)
    fused_epilogue_int8<Tile, Rule, WS>(s, pv, g, r, c, tid >> 5, piece.rows);
  else if (whole)
    fused_epilogue_quads<Tile, Rule, SF, WS, true>(s, pv, g, r, c, vec, first, tid, piece.rows);
  else
    fused_epilogue_quads<Tile, Rule, SF, WS, false>(s, pv, g, r, c, vec, first, tid, piece.rows);
}

struct CoopL2gCfg {
  static constexpr size_t kBarrierOffset = CoopCfg::kRingBytes;
  static constexpr int kBarriers = 2 * CoopCfg::kStages + 2 * kL2gMaxGSlices + kL2gMaxEpilogueWarps * kL2gMaxStages;
  static constexpr size_t kStagingOffset = (kBarrierOffset + kBarriers * sizeof(uint64_t) + 127) / 128 * 128;
  static constexpr size_t kSmemBytes =
      kStagingOffset + size_t(kL2gMaxEpilogueWarps) * kL2gStagingBytesPerWarp + kWgmmaAtomBytes;
  static_assert(kSmemBytes <= 232448, "one block's shared memory on sm_90");
};

// kShare (fp32 and bf16 state only; INT8 always shares): the consumers update each tile's rows from
// epilogue_rows down inside the tile loop (v48). A kernel of its own, so that the default one (the
// epilogue warps take whole tiles) keeps its registers: the share inside the loop spilled 116-128
// bytes where v42 tried it.
template <class Rule, StateFormat SF, WeightStore WS, bool kShare = false>
__global__ void __launch_bounds__(CoopCfg::kThreads, 1)
    fused_wgrad_coop_l2g_kernel(WgradTileArgs a, typename Rule::Scalars s, ParamView pv, bool vec, int group_rows,
                                int epilogue_warps, int epilogue_rows, int g_slices, bool staged,
                                float* g_scratch, const __grid_constant__ WgradTmaMaps maps) {
  static_assert(coop_l2g_builds(Rule::kStateSlots), "only where it serves (coop_l2g_builds)");
  static_assert(!(kShare && SF == StateFormat::int8), "INT8 state shares its tiles without kShare");
  constexpr bool kShared = SF == StateFormat::int8 || kShare;  // the consumers take a share of each tile
  using Cfg = CoopCfg;
  constexpr int S = Cfg::kStages;
  extern __shared__ __align__(16) unsigned char coop_l2g_smem[];
  unsigned char* ring = align_to_atom(coop_l2g_smem);
  uint64_t* full = reinterpret_cast<uint64_t*>(ring + CoopL2gCfg::kBarrierOffset);
  uint64_t* empty = full + S;
  // One pair of G barriers a slice: tile k lies in slice k mod g_slices (1 or 2; v50), its barriers'
  // phase k / g_slices (a parity wait cannot tell phase k from k - 2, hence a pair a slice).
  uint64_t* g_full = empty + S;                 // both consumers stored the slice's tile
  uint64_t* g_empty = g_full + kL2gMaxGSlices;  // the epilogue warps have read it
  uint64_t* stage_full = g_empty + kL2gMaxGSlices;  // v51: kL2gMaxStages a warp, each a stage's bytes landed
  const int slices = l2g_g_slices<SF>(g_slices);
  auto slot = [&](int64_t k) { return int(k) & (slices - 1); };
  float* const block_g = g_scratch + size_t(blockIdx.x) * slices * kL2gScratchFloats;
  auto slice_g = [&](int64_t k) { return block_g + size_t(slot(k)) * kL2gScratchFloats; };
  auto phase = [&](int64_t k) { return uint32_t(k >> (slices - 1)) & 1u; };
  // The warp index from lane 0, so that ptxas sees the role branches as warp-uniform.
  const int warp = __shfl_sync(0xffffffffu, int(threadIdx.x / 32), 0), lane = threadIdx.x & 31;
  const int64_t tiles_x = (a.in + Cfg::TC - 1) / Cfg::TC, tiles_y = (a.out + Cfg::TR - 1) / Cfg::TR;
  const int64_t tiles = tiles_x * tiles_y;
  const int64_t my_tiles = (tiles - blockIdx.x + gridDim.x - 1) / gridDim.x;  // blocks <= tiles
  auto tile_origin = [&](int64_t k, int64_t& o0, int64_t& i0) {  // the block's k-th tile
    coop_tile_origin(int64_t(blockIdx.x) + k * gridDim.x, tiles_y, tiles_x, group_rows, o0, i0);
  };
  const int64_t nchunks = (a.T + Cfg::TK - 1) / Cfg::TK;
  if (threadIdx.x == 0) {
    coop_init_ring(full, empty);
    // Every thread arrives on the G barriers: each orders its own global accesses.
    for (int j = 0; j < kL2gMaxGSlices; ++j) {
      mbar_init(g_full + j, 256);
      mbar_init(g_empty + j, 32 * epilogue_warps);
    }
    for (int j = 0; j < kL2gMaxEpilogueWarps * kL2gMaxStages; ++j) mbar_init(stage_full + j, 1);
    fence_mbarrier_init();
  }
  __syncthreads();
  // The epilogue warps' rows of each tile: the rest are the consumers' (INT8 state, kShare).
  const int erows = kShared ? epilogue_rows : Cfg::TR;
  auto epilogue = [&](auto tile, const float* gG, int64_t o0, int64_t i0, L2gPiece piece, int tid) {
    coop_update_piece<decltype(tile), Rule, SF, WS>(s, pv, vec, gG, o0, i0, piece, tid);
  };

  if (warp == 0) {  // producer: one thread
    if (lane == 0) {
      int64_t n = 0;  // the block's chunk index
      for (int64_t k = 0; k < my_tiles; ++k) {
        int64_t o0, i0;
        tile_origin(k, o0, i0);
        coop_load_tile(a, maps, ring, full, empty, o0, i0, nchunks, n);
      }
    }
    return;
  }
  if (warp < 4) {  // the epilogue warps: every tile of the block but its last
    const int w = warp - 1;
    if (w >= epilogue_warps) return;
    L2gStaging staging{ring + CoopL2gCfg::kStagingOffset + w * kL2gStagingBytesPerWarp,
                       stage_full + w * kL2gMaxStages, 0};
    for (int64_t k = 0; k + 1 < my_tiles; ++k) {
      int64_t o0, i0;
      tile_origin(k, o0, i0);
      // The first piece's first lines into L2 while the tile's mainloop runs.
      const L2gPiece first = l2g_piece(epilogue_warps, w, erows, 0);
      if constexpr (SF == StateFormat::int8) {
        for (int j = 0; j < kInt8PrefetchPasses; ++j)
          prefetch_int8_pass<L2gEpilogueTile, Rule, WS>(pv, o0 + first.r0, i0 + first.c0, 0, j, lane,
                                                        first.rows * L2gEpilogueTile::kSegmentsPerRow);
      } else if (coop_tile_whole(pv, vec, o0, i0)) {
        prefetch_first_passes<L2gEpilogueTile, Rule, SF, WS>(pv, epilogue_quad<L2gEpilogueTile>(lane, 0),
                                                             o0 + first.r0, i0 + first.c0);
      }
      const int j = slot(k);
      mbar_wait(g_full + j, phase(k));
      // v51: whole tiles through shared-memory stages (fp32 / bf16 state, whole tiles to the epilogue warps).
      const bool stage_it = staged && coop_tile_whole(pv, vec, o0, i0);  // the launch stages no INT8 / share tile
#pragma unroll 1
      for (int p = 0; p < 2; ++p) {
        const L2gPiece piece = l2g_piece(epilogue_warps, w, erows, p);
        if (piece.rows <= 0) continue;
        if constexpr (!kShared) {
          if (stage_it) {
            l2g_staged_piece<Rule, SF, WS>(s, pv, slice_g(k), o0, i0, piece, lane, staging);
            continue;
          }
        }
        epilogue(L2gEpilogueTile{}, slice_g(k), o0, i0, piece, lane);
      }
      mbar_arrive(g_empty + j);
    }
    return;
  }

  const int consumer = warp / 4 - 1, cwarp = warp & 3, ctid = threadIdx.x - 128;
  float acc[32][4];
  int64_t seq = 0;  // the block-wide index of the tile's first chunk
  for (int64_t k = 0; k < my_tiles; ++k, seq += nchunks) {
    int64_t o0, i0;
    tile_origin(k, o0, i0);
    const bool last = k + 1 == my_tiles;
    coop_multiply_tile(acc, ring, full, empty, seq, nchunks, a.T, consumer, lane, [](int64_t) {});
    // The epilogue warps have read the G that tile k - slices left in this slice.
    if (k >= slices) mbar_wait(g_empty + slot(k), phase(k - slices));
    // The consumers' own share of the previous tile was read by all of them.
    if (k > 0 && erows < Cfg::TR) coop_consumers_barrier();
    float* gG = slice_g(k);
    coop_park_rows<L2gLastTile>(gG, acc, consumer, cwarp, lane);
    if (staged) fence_proxy_async_global();  // v51: the epilogue warps' bulk copies read these stores
    if (!last) mbar_arrive(g_full + slot(k));
    if constexpr (kShared) {
      // The consumers' share: the rows below the epilogue warps' (the whole of the block's last tile).
      const int r0 = last ? 0 : erows;
      if (r0 < Cfg::TR) {
        coop_consumers_barrier();  // those rows are stored (bar.sync orders the consumers' stores)
        epilogue(L2gLastTile{}, gG, o0, i0, L2gPiece{r0, 0, Cfg::TR - r0}, ctid);
      }
    }
  }
  // fp32 / bf16 state without kShare: the block's last tile, by the consumers, after the loop (inside
  // it, with or without a share of the other tiles, ptxas kept the accumulators' registers beside the
  // epilogue's and spilled 116 bytes to 1 KB; an early L2 prefetch of its first passes inside the
  // mainloop spilled 32 bytes, so it has none).
  if constexpr (!kShared) {
    if (my_tiles > 0) {
      int64_t o0, i0;
      tile_origin(my_tiles - 1, o0, i0);
      coop_consumers_barrier();  // the whole tile is stored (bar.sync orders the consumers' stores)
      epilogue(L2gLastTile{}, slice_g(my_tiles - 1), o0, i0, L2gPiece{0, 0, L2gLastTile::TR}, ctid);
    }
  }
}

// A block's G slice for each stream that has launched the kernel, kept for the process (stream
// order keeps two launches on one stream apart; launches on other streams get other slices).
float* coop_l2g_scratch(cudaStream_t stream, size_t floats);

template <class Rule, StateFormat SF, WeightStore WS, bool kShare>
void launch_fused_coop_l2g_as(const WgradTileArgs& a, const typename Rule::Scalars& s, const ParamView& pv,
                              int epilogue_rows, cudaStream_t stream) {
  auto kernel = fused_wgrad_coop_l2g_kernel<Rule, SF, WS, kShare>;
  static const bool attributes_set =
      set_smem_limit(kernel, CoopL2gCfg::kSmemBytes, "fused_wgrad_coop_l2g: cudaFuncSetAttribute");
  (void)attributes_set;
  const int64_t blocks = coop_blocks(a);
  const FusedSchedule fs = fused_schedule();
  const int slices = l2g_g_slices<SF>(fs.coop_l2g_g_slices);
  float* scratch = coop_l2g_scratch(stream, size_t(blocks) * slices * kL2gScratchFloats);
  const WgradTmaMaps maps = make_wgrad_tma_maps(a);
  const bool vec = SF != StateFormat::int8 && fused_params_vec4<SF>(pv);
  const bool staged = !kShare && SF != StateFormat::int8 && fs.coop_l2g_staged != 0 && fused_params_bulk16(pv);
  kernel<<<unsigned(blocks), CoopCfg::kThreads, CoopL2gCfg::kSmemBytes, stream>>>(
      a, s, pv, vec, fs.coop_group_rows, fs.coop_l2g_epilogue_warps, epilogue_rows, slices, staged, scratch, maps);
  cuda_check(cudaGetLastError(), "fused_wgrad_coop_l2g: launch");
}

template <class Rule, StateFormat SF, WeightStore WS>
void launch_fused_coop_l2g(const WgradTileArgs& a, const typename Rule::Scalars& s, const ParamView& pv,
                           cudaStream_t stream) {
  const FusedSchedule fs = fused_schedule();
  if constexpr (SF == StateFormat::int8) {
    const int rows = a.T >= kCoopL2gRows16kFromTokens ? fs.coop_l2g_epilogue_rows_16k : fs.coop_l2g_epilogue_rows;
    launch_fused_coop_l2g_as<Rule, SF, WS, false>(a, s, pv, rows, stream);
  } else if (coop_l2g_shares(SF)) {
    launch_fused_coop_l2g_as<Rule, SF, WS, true>(a, s, pv, fs.coop_l2g_epilogue_rows_fp, stream);
  } else {
    launch_fused_coop_l2g_as<Rule, SF, WS, false>(a, s, pv, CoopCfg::TR, stream);
  }
}

}  // namespace fh::gpu
