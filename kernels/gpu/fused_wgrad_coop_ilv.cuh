// The cooperative kernel with its epilogue interleaved into the next tile's mainloop: what
// fused_wgrad_update runs where the cooperative kernel is chosen, for fp32 and bf16 state, from
// T = FusedSchedule::coop_ilv_min_tokens (coop_ilv_chosen, fused_wgrad_update.cuh; 0: never).
// One persistent block per SM, the cooperative kernel's three warpgroups, ring and mainloop:
//   - the producer (warpgroup 0, one thread, 40 registers) loads the chunks with TMA, from one tile
//     straight into the next (nothing waits for G);
//   - both consumers (232 registers) multiply tile k; at each of its chunks, right after the chunk's
//     wgmma are issued (the previous chunk's may still run on the tensor cores), every consumer
//     thread updates its share of tile k - 1's elements, paced element by element so that the 128
//     of the tile (32 passes of one quad a thread) end with tile k's last chunk (v47; v46 ran a whole
//     pass before the issue and measured slower); then the consumers park tile k in the block's 128 KB
//     slice of a global scratch (g_scratch, in L2); the block's last tile they update after its
//     mainloop, unhidden.
// Each pass's weights, state and G are loaded into registers a pass ahead (and their lines into L2
// two passes ahead), so a pass waits on no memory while the tensor cores run.
// Why: the cooperative kernel's epilogue does not overlap its mainloop (about 34 us a tile at
// 4096², fp32), and every block runs it in the same microseconds, so the whole state stream
// (26 bytes a parameter) lands on DRAM at once between rounds; the G-through-L2 form's three
// epilogue warps hide it only where a tile's mainloop outlasts their pace (T >= 16384). Here 256
// threads spread it over the whole mainloop, one element a thread a chunk at T = 8192.
// Per output element the chain is the cooperative kernel's and each element's update the same
// function of the same values (update_element's pieces); the GPU fused suite compares the bits.
#pragma once
#include "kernels/gpu/coop_ilv_pacing.h"
#include "kernels/gpu/fused_wgrad_coop_l2g.cuh"  // the scratch, L2gLastTile, coop_update_piece

namespace fh::gpu {

// The interleaved epilogue's geometry: both consumers' 256 threads over a parked 128 x 256 G tile
// in global memory (rows of 256 floats), pass j of thread t the quad epilogue_quad<L2gLastTile>(t, j):
// four rows of 64 quads a pass, 32 passes a tile, paced by ilv_passes_by (coop_ilv_pacing.h).
static_assert(kIlvPasses == L2gLastTile::kQuadPasses, "one quad a consumer thread a pass");

// One pass's inputs, loaded a pass ahead: the quad's weights and state and its four G values.
struct IlvQuad {
  ElementValues e[4];
  float g[4];
};

// The interleaved epilogue of one parked tile: which tile, and the pass whose inputs `next` holds.
template <class Rule, StateFormat SF, WeightStore WS>
struct IlvEpilogue {
  const typename Rule::Scalars& s;
  const ParamView& pv;
  const float* gG;
  bool vec;
  int tid;
  int64_t o0 = 0, i0 = 0;
  bool whole = false;
  int done = kIlvElements;  // elements updated (kIlvElements: no tile pending)
  IlvQuad cur, next;  // the quad being updated; the next pass's inputs

  __device__ __forceinline__ FragCoord quad(int pass) const { return epilogue_quad<L2gLastTile>(tid, pass); }
  __device__ __forceinline__ int64_t index(FragCoord t) const { return (o0 + t.row) * pv.cols + (i0 + t.col); }
  // Whole tiles: the lines of pass `pass` into L2 (no register waits for them).
  __device__ __forceinline__ void prefetch(int pass) const {
    if (whole && pass < kIlvPasses) prefetch_quad_lines<Rule, SF, WS>(pv, index(quad(pass)));
  }
  // Pass `pass`'s inputs into `next` (whole tiles; a ragged tile loads at its update).
  __device__ __forceinline__ void load(int pass) {
    if (!whole || pass >= kIlvPasses) return;
    const FragCoord t = quad(pass);
    const int64_t idx = index(t);
    load_quad<Rule, SF, WS>(pv, idx, idx, next.e);
    const float4 g4 = __ldcg(reinterpret_cast<const float4*>(gG + t.row * L2gLastTile::kLdG + t.col));
    next.g[0] = g4.x, next.g[1] = g4.y, next.g[2] = g4.z, next.g[3] = g4.w;
  }
  // A new tile's epilogue, from pass 0 (its G parked and visible to every consumer).
  __device__ __forceinline__ void start(int64_t tile_o0, int64_t tile_i0) {
    o0 = tile_o0, i0 = tile_i0;
    whole = coop_tile_whole(pv, vec, o0, i0);
    done = 0;
    prefetch(1);
    load(0);  // into next: element 0 moves it to cur
  }
  // Element `B` of the current quad, alone (the fast division and square root; its IEEE redo
  // from the quad's inputs, not yet overwritten: the element's update writes a copy).
  template <int B>
  __device__ __forceinline__ void update_one() {
    ElementValues one[1] = {cur.e[B]};
    const float g[1] = {cur.g[B]};
    update_speculative<Rule, 1>(s, one, g, [&](ElementValues(&e)[1]) { e[0] = cur.e[B]; });
    cur.e[B] = one[0];
  }
  // Elements done .. upto - 1 (element 4 j + b: element b of pass j's quad). A quad's first element
  // takes its inputs from `next` and issues the next pass's loads (and the one after's prefetch);
  // its last stores the quad. v47: one element at a time, so that the work after a chunk's wgmma
  // issue is about one element's (v46's whole pass delayed the next issue).
  __device__ __forceinline__ void run_to(int upto) {
#pragma unroll 1
    for (; done < upto; ++done) {
      const int pass = done >> 2, b = done & 3;
      const FragCoord t = quad(pass);
      const int64_t r = o0 + t.row, c = i0 + t.col, idx = index(t);
      if (whole) {
        if (b == 0) {
          cur = next;
          prefetch(pass + 2);
          load(pass + 1);
        }
        switch (b) {  // constant indices: cur stays in registers
          case 0: update_one<0>(); break;
          case 1: update_one<1>(); break;
          case 2: update_one<2>(); break;
          default:
            update_one<3>();
            store_quad<Rule, SF, WS>(pv, idx, idx, global_element_index(pv, r, c), cur.e);
        }
      } else if (b == 0 && r < pv.rows) {  // a ragged tile, a quad at its first element, element by element inside W
        const int64_t gidx = global_element_index(pv, r, c);
        const float4 g4 = __ldcg(reinterpret_cast<const float4*>(gG + t.row * L2gLastTile::kLdG + t.col));
        const float g[4] = {g4.x, g4.y, g4.z, g4.w};
#pragma unroll
        for (int e4 = 0; e4 < 4; ++e4) {
          if (c + e4 >= pv.cols) continue;
          ElementValues e = load_element<SF, WS, Rule::kStateSlots>(pv, idx + e4, idx + e4);
          Rule::update(s, e.p, g[e4], e.st);
          store_element<SF, WS, Rule::kStateSlots>(pv, idx + e4, idx + e4, gidx + e4, e);
        }
      }
    }
  }
};

template <class Rule, StateFormat SF, WeightStore WS>
__global__ void __launch_bounds__(CoopCfg::kThreads, 1)
    fused_wgrad_coop_ilv_kernel(WgradTileArgs a, typename Rule::Scalars s, ParamView pv, bool vec, int group_rows,
                                float* g_scratch, const __grid_constant__ WgradTmaMaps maps) {
  static_assert(SF != StateFormat::int8, "INT8 state's epilogue is per 64-element block");
  using Cfg = CoopCfg;
  extern __shared__ __align__(16) unsigned char coop_ilv_smem[];
  unsigned char* ring = align_to_atom(coop_ilv_smem);
  uint64_t* full = reinterpret_cast<uint64_t*>(ring + CoopL2gCfg::kBarrierOffset);
  uint64_t* empty = full + Cfg::kStages;
  float* gG = g_scratch + size_t(blockIdx.x) * kL2gScratchFloats;
  // The warpgroup index from lane 0, so that ptxas sees the role branch as warp-uniform.
  const int wg = __shfl_sync(0xffffffffu, int(threadIdx.x / 128), 0), lane = threadIdx.x & 31;
  const int64_t tiles_x = (a.in + Cfg::TC - 1) / Cfg::TC, tiles_y = (a.out + Cfg::TR - 1) / Cfg::TR;
  const int64_t tiles = tiles_x * tiles_y;
  const int64_t my_tiles = (tiles - blockIdx.x + gridDim.x - 1) / gridDim.x;  // blocks <= tiles
  auto tile_origin = [&](int64_t k, int64_t& o0, int64_t& i0) {  // the block's k-th tile
    coop_tile_origin(int64_t(blockIdx.x) + k * gridDim.x, tiles_y, tiles_x, group_rows, o0, i0);
  };
  const int64_t nchunks = (a.T + Cfg::TK - 1) / Cfg::TK;
  if (threadIdx.x == 0) {
    coop_init_ring(full, empty);
    fence_mbarrier_init();
  }
  __syncthreads();

  if (wg == 0) {  // producer: one thread
    setmaxnreg_dec<Cfg::kProducerRegs>();
    if (threadIdx.x == 0) {
      int64_t n = 0;  // the block's chunk index
      for (int64_t k = 0; k < my_tiles; ++k) {
        int64_t o0, i0;
        tile_origin(k, o0, i0);
        coop_load_tile(a, maps, ring, full, empty, o0, i0, nchunks, n);
      }
    }
    return;
  }
  setmaxnreg_inc<Cfg::kConsumerRegs>();
  const int consumer = wg - 1, ctid = threadIdx.x - 128, cwarp = (ctid >> 5) & 3;
  IlvEpilogue<Rule, SF, WS> epi{s, pv, gG, vec, ctid};
  float acc[32][4];
  int64_t seq = 0;  // the block-wide index of the tile's first chunk
  for (int64_t k = 0; k < my_tiles; ++k, seq += nchunks) {
    // Tile k - 1's elements, paced over tile k's chunks, each chunk's after its wgmma are issued
    // (none pending for k = 0).
    coop_multiply_tile(acc, ring, full, empty, seq, nchunks, a.T, consumer, lane, [](int64_t) {},
                       [&](int64_t c) { epi.run_to(ilv_elements_by(c, nchunks)); });
    // Every consumer has read tile k - 1's G (all its passes ran by the last chunk) before any
    // overwrites it; bar.sync orders the consumers' global accesses.
    coop_consumers_barrier();
    coop_park_rows<L2gLastTile>(gG, acc, consumer, cwarp, lane);
    coop_consumers_barrier();  // the whole tile is stored
    if (k + 1 < my_tiles) {
      int64_t o0, i0;
      tile_origin(k, o0, i0);
      epi.start(o0, i0);
    }
  }
  // The block's last tile, unhidden, after the loop (the G-through-L2 form's epilogue of it: inside
  // the loop ptxas keeps the accumulators beside it and spills, NOTES.md v40).
  if (my_tiles > 0) {
    int64_t o0, i0;
    tile_origin(my_tiles - 1, o0, i0);
    coop_update_piece<L2gLastTile, Rule, SF, WS>(s, pv, vec, gG, o0, i0, L2gPiece{0, 0, L2gLastTile::TR}, ctid);
  }
}

template <class Rule, StateFormat SF, WeightStore WS>
void launch_fused_coop_ilv(const WgradTileArgs& a, const typename Rule::Scalars& s, const ParamView& pv,
                           cudaStream_t stream) {
  auto kernel = fused_wgrad_coop_ilv_kernel<Rule, SF, WS>;
  static const bool attributes_set =
      set_smem_limit(kernel, CoopL2gCfg::kSmemBytes, "fused_wgrad_coop_ilv: cudaFuncSetAttribute");
  (void)attributes_set;
  const int64_t blocks = coop_blocks(a);
  float* scratch = coop_l2g_scratch(stream, size_t(blocks) * kL2gScratchFloats);
  const WgradTmaMaps maps = make_wgrad_tma_maps(a);
  const bool vec = fused_params_vec4<SF>(pv);
  kernel<<<unsigned(blocks), CoopCfg::kThreads, CoopL2gCfg::kSmemBytes, stream>>>(
      a, s, pv, vec, fused_schedule().coop_group_rows, scratch, maps);
  cuda_check(cudaGetLastError(), "fused_wgrad_coop_ilv: launch");
}

}  // namespace fh::gpu
