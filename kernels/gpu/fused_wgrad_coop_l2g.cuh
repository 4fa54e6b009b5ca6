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
//     halves (l2g_piece).
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
// The G slices a block of the form parks its tiles in, for the kernel and its scratch alike: the
// schedule's, but one with INT8 state (with the choice at run time its kernel spilled 20 bytes, v50).
template <StateFormat SF>
__host__ __device__ constexpr int l2g_g_slices(int scheduled) {
  return SF == StateFormat::int8 ? 1 : scheduled;
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
  static constexpr size_t kSmemBytes =
      kBarrierOffset + (2 * CoopCfg::kStages + 2 * kL2gMaxGSlices) * sizeof(uint64_t) + kWgmmaAtomBytes;
  static_assert(kSmemBytes <= 232448, "one block's shared memory on sm_90");
};

// kShare (fp32 and bf16 state only; INT8 always shares): the consumers update each tile's rows from
// epilogue_rows down inside the tile loop (v48). A kernel of its own, so that the default one (the
// epilogue warps take whole tiles) keeps its registers: the share inside the loop spilled 116-128
// bytes where v42 tried it.
template <class Rule, StateFormat SF, WeightStore WS, bool kShare = false>
__global__ void __launch_bounds__(CoopCfg::kThreads, 1)
    fused_wgrad_coop_l2g_kernel(WgradTileArgs a, typename Rule::Scalars s, ParamView pv, bool vec, int group_rows,
                                int epilogue_warps, int epilogue_rows, int g_slices, float* g_scratch,
                                const __grid_constant__ WgradTmaMaps maps) {
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
#pragma unroll 1
      for (int p = 0; p < 2; ++p) {
        const L2gPiece piece = l2g_piece(epilogue_warps, w, erows, p);
        if (piece.rows > 0) epilogue(L2gEpilogueTile{}, slice_g(k), o0, i0, piece, lane);
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
  kernel<<<unsigned(blocks), CoopCfg::kThreads, CoopL2gCfg::kSmemBytes, stream>>>(
      a, s, pv, vec, fs.coop_group_rows, fs.coop_l2g_epilogue_warps, epilogue_rows, slices, scratch, maps);
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
