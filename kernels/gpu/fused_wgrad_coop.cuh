// The cooperative fused kernel for a 128 x 256 tile: what fused_wgrad_update runs for the 128 x 128
// tile setting from T = FusedSchedule::coop_min_tokens on (coop_min_tokens_int8 with INT8 state,
// whose epilogue is the block kernel's; coop_chosen, fused_wgrad_update.cuh), and the variant
// FusedVariant::coop_128x256 at any T. One persistent block per SM, three warpgroups:
//   - the producer (warpgroup 0, one thread) loads each 64-token chunk of the tile's dY rows (two
//     64-column boxes) and X columns (four boxes) with TMA into a ring of four 48 KB slots;
//   - both consumers (warpgroups 1, 2) multiply the same tile, consumer c its rows 64 c .. 64 c + 63
//     with one wgmma m64n256k16 per k16 step, then park the whole G tile over the ring and run its
//     epilogue together; the producer refills the ring once G has been read.
// Why: a 128 x 256 chunk is 4.2 MFLOP for 48 KB of shared memory written and 20 KB read per k-step,
// against the 128 x 128 kernels' 2.1 MFLOP for 32 KB and 12 KB; cuBLAS's wgrad GEMM uses this tile
// (kernels/gpu/NOTES.md v25, v26). The epilogue does not overlap the block's own mainloop.
// Per output element the chain is the other kernels': +0, one k16 instruction per 16 tokens in
// token order, k-steps wholly past T not issued; the GPU fused suite compares the bits.
#pragma once
#include "kernels/gpu/fused_wgrad_pingpong.cuh"  // its barriers and TMA loads

namespace fh::gpu {

// An epilogue's geometry over a kRows x kCols piece of a parked 128 x 256 G tile: kEpilogueThreads
// threads (a row's quads a whole number of passes' worth), kQuads quads a thread in each of the two
// batches in flight, G rows kLd floats apart; kGGlobal: G in global memory (L2), loaded with its
// batch's weights and state (fused_epilogue_quads).
template <int kEpilogueThreads, int kQuads, int kLd, int kRows = 128, int kCols = 256, bool kGGlobal = false>
struct CoopEpilogueTile {
  static constexpr bool kGWithBatch = kGGlobal;
  static constexpr int TR = kRows, TC = kCols, kThreads = kEpilogueThreads, kWarps = kEpilogueThreads / 32;
  static_assert(kThreads % (TC / 4) == 0, "each pass takes whole rows");
  static constexpr int kEpilogueQuads = kQuads;
  static constexpr int kPrefetchPasses = 4, kEarlyPrefetchPasses = 4;
  static constexpr int kLdG = kLd;
  static constexpr int kSegmentsPerRow = TC / 64, kSegments = TR * kSegmentsPerRow;
  static constexpr int kQuadPasses = TR * TC / (4 * kThreads);
  static constexpr int kQuadRowsPerPass = kThreads / (TC / 4);
  static constexpr int kBlockPasses = kSegments / kWarps;
};
// The cooperative kernel's: both consumer warpgroups, two quads a thread (four spilled and ran
// slower; kernels/gpu/NOTES.md v26), G in shared memory with rows 264 floats apart (= 8 mod 32:
// the pair stores are conflict free).
using CoopTile = CoopEpilogueTile<256, 2, 256 + 8>;

struct CoopCfg {
  static constexpr int TR = 128, TC = 256, TK = kTmaBoxTokens, kKSteps = TK / 16;
  static constexpr int kThreads = 384, kStages = 4;
  static constexpr int kABoxes = TR / kTmaBoxCols, kBBoxes = TC / kTmaBoxCols;
  static constexpr int kABytes = kABoxes * kTmaBoxBytes, kSlotBytes = (kABoxes + kBBoxes) * kTmaBoxBytes;
  static constexpr int kProducerRegs = 40, kConsumerRegs = 232;
  // The G tile is parked over the ring (its first three slots) once the tile's last chunk is
  // multiplied, so that no accumulator stays live through the epilogue: ptxas compiles the whole
  // kernel for 65536 / 384 = 168 registers, and a piece-wise park through a separate buffer kept
  // all 128 accumulators live and spilled (912 to 1412 bytes, measured with -Xptxas -v).
  static constexpr size_t kGBufBytes = size_t(TR) * (TC + 8) * 4;
  static constexpr size_t kRingBytes = size_t(kStages) * kSlotBytes;
  static_assert(kGBufBytes <= kRingBytes, "the G tile fits over the ring");
  static constexpr size_t kBarrierOffset = kRingBytes;
  static constexpr size_t kSmemBytes = kBarrierOffset + (2 * kStages + 1) * sizeof(uint64_t) + kWgmmaAtomBytes;
  static_assert(kSmemBytes <= 232448, "one block's shared memory on sm_90");
};

// d[j][i] (n8 block j, the mma.sync C-fragment position i; this warp's 16 of the warpgroup's 64
// rows) += A * B over one k16 step: wgmma.mma_async m64n256k16, fp32 accumulate, A (64 x 16) and
// B (16 x 256) from shared memory, both MN-major. Per output element the same fused sum of 16
// products and C as m64n128k16 (the instruction model does not depend on N).
__device__ __forceinline__ void wgmma_m64n256k16_ss(float (&d)[32][4], uint64_t adesc, uint64_t bdesc) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
      "%128, %129, p, 1, 1, 1, 1;\n}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]),
        "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]),
        "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]),
        "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]),
        "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),
        "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]),
        "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]),
        "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]),
        "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]),
        "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]),
        "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]),
        "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]),
        "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]),
        "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]),
        "+f"(d[16][0]), "+f"(d[16][1]), "+f"(d[16][2]), "+f"(d[16][3]),
        "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3]),
        "+f"(d[18][0]), "+f"(d[18][1]), "+f"(d[18][2]), "+f"(d[18][3]),
        "+f"(d[19][0]), "+f"(d[19][1]), "+f"(d[19][2]), "+f"(d[19][3]),
        "+f"(d[20][0]), "+f"(d[20][1]), "+f"(d[20][2]), "+f"(d[20][3]),
        "+f"(d[21][0]), "+f"(d[21][1]), "+f"(d[21][2]), "+f"(d[21][3]),
        "+f"(d[22][0]), "+f"(d[22][1]), "+f"(d[22][2]), "+f"(d[22][3]),
        "+f"(d[23][0]), "+f"(d[23][1]), "+f"(d[23][2]), "+f"(d[23][3]),
        "+f"(d[24][0]), "+f"(d[24][1]), "+f"(d[24][2]), "+f"(d[24][3]),
        "+f"(d[25][0]), "+f"(d[25][1]), "+f"(d[25][2]), "+f"(d[25][3]),
        "+f"(d[26][0]), "+f"(d[26][1]), "+f"(d[26][2]), "+f"(d[26][3]),
        "+f"(d[27][0]), "+f"(d[27][1]), "+f"(d[27][2]), "+f"(d[27][3]),
        "+f"(d[28][0]), "+f"(d[28][1]), "+f"(d[28][2]), "+f"(d[28][3]),
        "+f"(d[29][0]), "+f"(d[29][1]), "+f"(d[29][2]), "+f"(d[29][3]),
        "+f"(d[30][0]), "+f"(d[30][1]), "+f"(d[30][2]), "+f"(d[30][3]),
        "+f"(d[31][0]), "+f"(d[31][1]), "+f"(d[31][2]), "+f"(d[31][3])
      : "l"(adesc), "l"(bdesc), "r"(1)
      : "memory");
#else
  (void)d, (void)adesc, (void)bdesc;
  __trap();  // wgmma needs sm_90a (the project builds only that target)
#endif
}

// The 256 threads of both consumer warpgroups (named barrier 1).
__device__ __forceinline__ void coop_consumers_barrier() { asm volatile("bar.sync 1, 256;\n" ::: "memory"); }

// A consumer's 64 rows (64 c .. 64 c + 63) of the tile into G, one 8-byte store per pair: warp w
// of the consumer holds rows 16 w .. 16 w + 15.
template <class Tile>
__device__ __forceinline__ void coop_park_rows(float* sG, const float (&acc)[32][4], int consumer, int warp, int lane) {
#pragma unroll
  for (int nt = 0; nt < 32; ++nt)
#pragma unroll
    for (int pair = 0; pair < 2; ++pair) {
      const FragCoord c = mma_c_coord(lane, 2 * pair);
      *reinterpret_cast<float2*>(sG + (64 * consumer + 16 * warp + c.row) * Tile::kLdG + 8 * nt + c.col) =
          make_float2(acc[nt][2 * pair], acc[nt][2 * pair + 1]);
    }
}

// Tile (o0, i0) takes the whole-tile epilogue: vector access, inside W.
__device__ __forceinline__ bool coop_tile_whole(const ParamView& pv, bool vec, int64_t o0, int64_t i0) {
  return vec && o0 + CoopCfg::TR <= pv.rows && i0 + CoopCfg::TC <= pv.cols;
}

// FusedSchedule's coop_stagger_us (in ns) and coop_stagger_groups, as the kernel sees them.
struct CoopStagger {
  uint32_t step_ns;
  int groups;
};

// Tile u's origin in G (coop_tile_at: groups of group_rows tile rows, column by column).
__device__ __forceinline__ void coop_tile_origin(int64_t u, int64_t tiles_y, int64_t tiles_x, int group_rows,
                                                 int64_t& o0, int64_t& i0) {
  const FragCoord t = coop_tile_at(u, tiles_y, tiles_x, group_rows);
  o0 = int64_t(t.row) * CoopCfg::TR;
  i0 = int64_t(t.col) * CoopCfg::TC;
}
// The ring's barriers: full (the producer's arrival and the bytes), empty (the four warps of each
// consumer).
__device__ __forceinline__ void coop_init_ring(uint64_t* full, uint64_t* empty) {
  for (int i = 0; i < CoopCfg::kStages; ++i) {
    mbar_init(full + i, 1);
    mbar_init(empty + i, 8);
  }
}

// The producer's TMA loads of one tile's chunks chunk0 .. chunk0 + nchunks - 1 into the ring (chunk
// n of the block on entry, advanced past them). Boxes wholly past W's edge are not loaded: they
// only feed G rows or columns outside W, which no epilogue stores.
__device__ __forceinline__ void coop_load_tile(const WgradTileArgs& a, const WgradTmaMaps& maps, unsigned char* ring,
                                               uint64_t* full, uint64_t* empty, int64_t o0, int64_t i0,
                                               int64_t nchunks, int64_t& n, int64_t chunk0 = 0) {
  using Cfg = CoopCfg;
  constexpr int S = Cfg::kStages;
  int a_boxes = 0, b_boxes = 0;
  for (int j = 0; j < Cfg::kABoxes; ++j) a_boxes += o0 + j * kTmaBoxCols < a.out;
  for (int j = 0; j < Cfg::kBBoxes; ++j) b_boxes += i0 + j * kTmaBoxCols < a.in;
  const uint32_t tx_bytes = uint32_t(kTmaBoxBytes) * uint32_t(a_boxes + b_boxes);
#ifdef FH_PLANT_PRODUCER_SPILL  // scripts/check_kernel_spills.py's plant: two more live values spill the producer
  const int64_t planted_from = nchunks > 8 ? nchunks - 8 : 0, planted_span = nchunks - planted_from;
#endif
  for (int64_t c = 0; c < nchunks; ++c, ++n) {
    const int slot = int(n % S);
    if (n >= S) mbar_wait(empty + slot, uint32_t(n / S - 1) & 1u);
    unsigned char* sA = ring + size_t(slot) * Cfg::kSlotBytes;
    unsigned char* sB = sA + Cfg::kABytes;
    const int t0 = int((chunk0 + c) * Cfg::TK);
    mbar_arrive_expect_tx(full + slot, tx_bytes);
    for (int j = 0; j < a_boxes; ++j) tma_load_box(sA + j * kTmaBoxBytes, maps.dy, int(o0) + j * kTmaBoxCols, t0, full + slot);
    for (int j = 0; j < b_boxes; ++j) tma_load_box(sB + j * kTmaBoxBytes, maps.x, int(i0) + j * kTmaBoxCols, t0, full + slot);
#ifdef FH_PLANT_PRODUCER_SPILL
    if (c >= planted_from && (c - planted_from) * 128 / planted_span == 7777) __trap();
#endif
  }
}

// One consumer's mainloop over a tile: acc = +0, then one m64n256k16 per k16 step of the tile's
// chunks seq .. seq + nchunks - 1 of the ring, each slot released once its instructions are done;
// on_chunk(c) runs once chunk c has landed (the cooperative kernel's early epilogue prefetch);
// after_issue(c) once chunk c's wgmma are issued, before chunk c - 1's are waited for (the
// interleaved epilogue's work, v47: two chunks' instructions queued on the tensor cores beside it).
struct NoIssueHook {
  __device__ __forceinline__ void operator()(int64_t) const {}
};
template <class OnChunk, class AfterIssue = NoIssueHook>
__device__ __forceinline__ void coop_multiply_tile(float (&acc)[32][4], const unsigned char* ring, uint64_t* full,
                                                   uint64_t* empty, int64_t seq, int64_t nchunks, int64_t T,
                                                   int consumer, int lane, OnChunk&& on_chunk,
                                                   AfterIssue after_issue = {}) {
  using Cfg = CoopCfg;
  constexpr int S = Cfg::kStages;
#pragma unroll
  for (int j = 0; j < 32; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[j][i] = 0.0f;  // +0: the chain's start
  for (int64_t c = 0; c < nchunks; ++c) {
    const int64_t n = seq + c;
    const int slot = int(n % S);
    mbar_wait(full + slot, uint32_t(n / S) & 1u);
    on_chunk(c);
    const unsigned char* sA = ring + size_t(slot) * Cfg::kSlotBytes;
    const unsigned char* sB = sA + Cfg::kABytes;
    const int ksteps = chunk_ksteps(T, c * Cfg::TK, Cfg::kKSteps);
    wgmma_fence_operands<32>(acc);
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < Cfg::kKSteps; ++ks)
      if (ksteps == Cfg::kKSteps || ks < ksteps)  // the ragged last chunk: k-steps wholly past T are not issued
        wgmma_m64n256k16_ss(acc, tma_operand_desc(sA, ks, consumer), tma_operand_desc(sB, ks, 0));
    wgmma_commit();
    after_issue(c);
    wgmma_wait<1>();  // chunk c - 1's instructions are done: its slot may be refilled
    wgmma_fence_operands<32>(acc);
    if (c > 0 && lane == 0) mbar_arrive(empty + int((n - 1) % S));
  }
  wgmma_wait<0>();
  wgmma_fence_operands<32>(acc);
  if (nchunks > 0 && lane == 0) mbar_arrive(empty + int((seq + nchunks - 1) % S));
}

template <class Rule, StateFormat SF, WeightStore WS>
__global__ void __launch_bounds__(CoopCfg::kThreads, 1)
    fused_wgrad_coop_kernel(WgradTileArgs a, typename Rule::Scalars s, ParamView pv, bool vec,
                            CoopStagger stagger, int group_rows, const __grid_constant__ WgradTmaMaps maps) {
  using Cfg = CoopCfg;
  using Tile = CoopTile;
  constexpr int S = Cfg::kStages;
  extern __shared__ __align__(16) unsigned char coop_smem[];
  unsigned char* ring = align_to_atom(coop_smem);
  float* sG = reinterpret_cast<float*>(ring);  // over the ring, between a tile's last chunk and the next tile's first
  uint64_t* full = reinterpret_cast<uint64_t*>(ring + Cfg::kBarrierOffset);
  uint64_t* empty = full + S;
  uint64_t* g_free = empty + S;  // the epilogue has read G: the ring may be refilled
  // The warpgroup index from lane 0, so that ptxas sees the role branch as warp-uniform.
  const int wg = __shfl_sync(0xffffffffu, int(threadIdx.x / 128), 0), lane = threadIdx.x & 31;
  const int64_t tiles_x = (a.in + Cfg::TC - 1) / Cfg::TC, tiles_y = (a.out + Cfg::TR - 1) / Cfg::TR;
  const int64_t tiles = tiles_x * tiles_y;
  auto tile_origin = [&](int64_t u, int64_t& o0, int64_t& i0) { coop_tile_origin(u, tiles_y, tiles_x, group_rows, o0, i0); };
  const int64_t nchunks = (a.T + Cfg::TK - 1) / Cfg::TK;
  if (threadIdx.x == 0) {
    coop_init_ring(full, empty);
    mbar_init(g_free, 8);
    fence_mbarrier_init();
  }
  __syncthreads();

  // This block's start delay (FusedSchedule::coop_stagger_us): the producer waits it out and the
  // consumers wait on its first chunk. Timing only.
  const uint32_t stagger_ns = stagger.step_ns * uint32_t(coop_stagger_group(blockIdx.x, gridDim.x, stagger.groups));
  if (wg == 0) {  // producer: one thread
    setmaxnreg_dec<Cfg::kProducerRegs>();
    if (threadIdx.x == 0) {
      if (stagger_ns != 0) spin_for_ns(stagger_ns);
      int64_t n = 0;  // the block's chunk index
      uint32_t tile_k = 0;  // the block's tile index
      for (int64_t u = blockIdx.x; u < tiles; u += gridDim.x, ++tile_k) {
        int64_t o0, i0;
        tile_origin(u, o0, i0);
        if (tile_k > 0) mbar_wait(g_free, (tile_k - 1) & 1u);  // the previous tile's G is read
        coop_load_tile(a, maps, ring, full, empty, o0, i0, nchunks, n);
      }
    }
    return;
  }
  setmaxnreg_inc<Cfg::kConsumerRegs>();
  const int consumer = wg - 1, ctid = threadIdx.x - 128, cwarp = (ctid >> 5) & 3;
  const FragCoord first = epilogue_quad<Tile>(ctid, 0);
  float acc[32][4];
  int64_t seq = 0;  // the block-wide index of the tile's first chunk
  for (int64_t u = blockIdx.x; u < tiles; u += gridDim.x, seq += nchunks) {
    int64_t o0, i0;
    tile_origin(u, o0, i0);
    const bool whole = coop_tile_whole(pv, vec, o0, i0);
    coop_multiply_tile(acc, ring, full, empty, seq, nchunks, a.T, consumer, lane, [&](int64_t c) {
      if (!early_prefetch_chunk(c, nchunks)) return;
      if constexpr (SF == StateFormat::int8) {
        for (int j = 0; j < kInt8PrefetchPasses; ++j) prefetch_int8_pass<Tile, Rule, WS>(pv, o0, i0, ctid >> 5, j, lane);
      } else if (whole) {
        prefetch_first_passes<Tile, Rule, SF, WS>(pv, first, o0, i0);
      }
    });
    // Every consumer's wgmma has read its operands (waited above); the producer loads nothing
    // before g_free, so G may overwrite the ring once both consumers are here.
    coop_consumers_barrier();
    coop_park_rows<Tile>(sG, acc, consumer, cwarp, lane);
    coop_consumers_barrier();
    if constexpr (SF == StateFormat::int8)
      fused_epilogue_int8<Tile, Rule, WS>(s, pv, sG, o0, i0, ctid >> 5);
    else if (whole)
      fused_epilogue_quads<Tile, Rule, SF, WS, true>(s, pv, sG, o0, i0, vec, first, ctid);
    else
      fused_epilogue_quads<Tile, Rule, SF, WS, false>(s, pv, sG, o0, i0, vec, first, ctid);
    // G's generic-proxy reads are ordered before the producer's TMA writes into the same bytes.
    fence_proxy_async_shared();
    __syncwarp();
    if (lane == 0) mbar_arrive(g_free);
  }
}

// The problem's 128 x 256 tiles.
inline int64_t coop_tiles(const WgradTileArgs& a) {
  return ((a.in + CoopCfg::TC - 1) / CoopCfg::TC) * ((a.out + CoopCfg::TR - 1) / CoopCfg::TR);
}
// The current device's SMs (the cooperative kernels' grids and the split's choice).
inline int coop_sm_count() {
  int device = 0, sms = 0;
  cuda_check(cudaGetDevice(&device), "fused_wgrad_coop: cudaGetDevice");
  cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "fused_wgrad_coop: SM count");
  return sms;
}
// A persistent cooperative launch's grid: one block per SM, or per tile when there are fewer tiles.
inline int64_t coop_blocks(const WgradTileArgs& a) {
  const int64_t sms = coop_sm_count(), tiles = coop_tiles(a);
  return tiles < sms ? tiles : sms;
}

template <class Rule, StateFormat SF, WeightStore WS>
void launch_fused_coop(const WgradTileArgs& a, const typename Rule::Scalars& s, const ParamView& pv,
                       cudaStream_t stream) {
  auto kernel = fused_wgrad_coop_kernel<Rule, SF, WS>;
  static const bool attributes_set = set_smem_limit(kernel, CoopCfg::kSmemBytes, "fused_wgrad_coop: cudaFuncSetAttribute");
  (void)attributes_set;
  const int64_t blocks = coop_blocks(a);
  const WgradTmaMaps maps = make_wgrad_tma_maps(a);
  const bool vec = SF != StateFormat::int8 && fused_params_vec4<SF>(pv);
  const FusedSchedule fs = fused_schedule();
  const CoopStagger stagger{uint32_t(fs.coop_stagger_us) * 1000u, fs.coop_stagger_groups};
  kernel<<<unsigned(blocks), CoopCfg::kThreads, CoopCfg::kSmemBytes, stream>>>(a, s, pv, vec, stagger,
                                                                                fs.coop_group_rows, maps);
  cuda_check(cudaGetLastError(), "fused_wgrad_coop: launch");
}

}  // namespace fh::gpu
