// The warp-specialized fused kernel for the 128 x 128 tile ("pingpong"; kernels/gpu/NOTES.md, v23).
// One persistent block per SM (or clusters of 2 or 4 blocks sharing operands: kCm x kCn), three
// warpgroups:
//   - the producer (warpgroup 0, one thread) loads each 64-token chunk of dY and X with TMA into a
//     ring of kStages slots (full / empty mbarriers), for the block's tiles in turn;
//   - two consumers (warpgroups 1, 2) take the block's tiles alternately. A consumer multiplies its
//     tile (both m64 halves, wgmma m64n128k16 from the ring, chunk c's instructions issued before
//     chunk c - 1's are waited for), then runs the epilogue of that tile while the other consumer
//     multiplies the next one, so the epilogue's DRAM traffic overlaps the tensor cores' work.
// Per output element the chain is the block-per-tile kernel's: +0, one k16 instruction per 16
// tokens in token order, k-steps wholly past T not issued (TMA zero fills the rest of the last
// chunk), so the bits are the same; the GPU fused suite compares both kernels bit for bit.
// The epilogue is the block-per-tile kernel's (fused_epilogue_quads / fused_epilogue_int8), run by
// one warpgroup on a 64-row half tile at a time, parked in the consumer's own G buffer.
// Included by fused_wgrad_update.cuh after the epilogue it uses.
#pragma once
#include "kernels/gpu/wgrad_tma.h"

namespace fh::gpu {

// The epilogue's geometry for one half tile: 64 rows x 128 columns, one consumer warpgroup (the
// names epilogue_quad / epilogue_int8_block and the epilogue functions read).
template <int kPrefetch = 4>
struct PingpongHalfTile {
  static constexpr int TR = 64, TC = 128, kThreads = 128, kWarps = 4;
  // Quads per thread and batch (fused_epilogue_quads): two, as the block-per-tile kernel; four
  // spilled ~1-2 KB even at the consumers' raised register count (the other half's accumulators
  // are live meanwhile).
  static constexpr int kEpilogueQuads = 2;
  // L2 prefetch distance in passes, and the passes of a whole half prefetched ahead of it.
  static constexpr int kPrefetchPasses = kPrefetch, kEarlyPrefetchPasses = kPrefetch;
  static constexpr int kLdG = TC + 8;  // = 8 (mod 32): the pair stores are conflict free (WgradTileCfg)
  static constexpr int kSegmentsPerRow = TC / 64, kSegments = TR * kSegmentsPerRow;
  static constexpr int kQuadPasses = TR * TC / (4 * kThreads);
  static constexpr int kQuadRowsPerPass = kThreads / (TC / 4);
  static constexpr int kBlockPasses = kSegments / kWarps;
};

struct PingpongCfg {
  static constexpr int TR = 128, TC = 128, TK = kTmaBoxTokens, kKSteps = TK / 16;
  static constexpr int kConsumers = 2, kThreads = 128 * (1 + kConsumers);
  // Ring depth: 4 slots of 32 KB plus the consumers' two 34 KB G buffers fill the 227 KB an SM
  // gives one block (5 slots would not fit).
  static constexpr int kStages = 4;
  static constexpr int kABytes = TR * TK * 2, kSlotBytes = (TR + TC) * TK * 2;
  // setmaxnreg: the producer gives registers up so that each consumer thread holds its tile's 128
  // accumulators and the epilogue's values (40 x 128 + 232 x 256 <= 64 K).
  static constexpr int kProducerRegs = 40, kConsumerRegs = 232;
  static constexpr size_t kGBufFloats = size_t(PingpongHalfTile<>::TR) * PingpongHalfTile<>::kLdG;
  static constexpr size_t kRingBytes = size_t(kStages) * kSlotBytes;
  static constexpr size_t kBarrierOffset = kRingBytes + kConsumers * kGBufFloats * 4;
  static constexpr size_t kSmemBytes = kBarrierOffset + (2 * kStages + kConsumers) * sizeof(uint64_t) + kWgmmaAtomBytes;
  static_assert(TR == 2 * kTmaBoxCols && TC == 2 * kTmaBoxCols, "two TMA boxes per operand and chunk");
  static_assert(kSmemBytes <= 232448, "one block's shared memory on sm_90");
};

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// One arrival that also announces `bytes` of TMA data for the current phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ bool mbar_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
               "selp.u32 %0, 1, 0, p;\n}\n"
               : "=r"(done)
               : "r"(bar), "r"(parity)
               : "memory");
  return done != 0;
}
// A phase that never completes (a TMA that never lands) traps after 20 s instead of hanging the
// suite (the sanitizer passes are slow; a normal wait is microseconds). Also the producer's wait
// for slots that peers' consumers release (CTA-scope acquire, as CUTLASS's cluster barrier).
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  const uint32_t addr = smem_u32(bar);
  if (mbar_try_wait(addr, parity)) return;
  const uint64_t t0 = global_timer_ns();
  while (!mbar_try_wait(addr, parity))
    if (global_timer_ns() - t0 > 20000000000ull) __trap();
}
// Clusters (kClusterM x kClusterN blocks on a square of tiles, sharing dY rows and X columns).
__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// Every thread of both blocks; release / acquire, so that barrier inits and arrivals are seen
// cluster-wide.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// One arrival on the barrier at bar's offset in block `cta` of the cluster (this one or a peer).
// Release at CTA scope, as CUTLASS's cluster barrier arrives: what it orders is this warp's wgmma
// reads of the slot, already complete; a cluster-scope release costs a fence per arrival (v24's
// first run: a pair 2x and a square 3.4x slower than one block).
__device__ __forceinline__ void mbar_arrive_cluster(uint64_t* bar, uint32_t cta) {
  asm volatile("{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
               "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(smem_u32(bar)),
               "r"(cta)
               : "memory");
}
// The same box into the blocks of the cluster whose rank bits are set in `ctas`, at dst's and bar's
// offsets in each.
__device__ __forceinline__ void tma_load_box_multicast(void* dst, const CUtensorMap& map, int c, int t, uint64_t* bar,
                                                       uint16_t ctas) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
      "[%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(&map)), "r"(c), "r"(t), "r"(smem_u32(bar)), "h"(ctas)
      : "memory");
}

// A 64 x 64 box at (column c, token t) into this block's shared memory; its bytes complete on bar.
__device__ __forceinline__ void tma_load_box(void* dst, const CUtensorMap& map, int c, int t, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(&map)), "r"(c), "r"(t), "r"(smem_u32(bar))
      : "memory");
}
// Register reallocation between warpgroups: ptxas compiles the consumers' code to the raised
// count (without it the consumer spilled 1-3 KB at the 168 registers of a 384-thread block).
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// The 128 threads of one consumer warpgroup (named barrier 1 + consumer).
__device__ __forceinline__ void consumer_barrier(int consumer) {
  asm volatile("bar.sync %0, 128;\n" ::"r"(1 + consumer) : "memory");
}

// wgmma descriptor of a TMA-loaded operand in a slot: boxes of 64 tokens x 64 columns (128-byte
// rows, swizzled), box b at b * kTmaBoxBytes; k-step ks starts two 8-token atoms (2 KB) further.
// LBO: between boxes adjacent in M or N; SBO: between 8-token groups.
__device__ __forceinline__ uint64_t tma_operand_desc(const unsigned char* operand, int ks, int box) {
  return wgmma_desc_sw128(operand + 2 * ks * kWgmmaAtomBytes + box * kTmaBoxBytes, kTmaBoxBytes, kWgmmaAtomBytes);
}

// The tiles of the launch in units of kCm x kCn tiles (one tile alone, or a cluster's square:
// kCm along out, kCn along in), the units row-major over the grid of units; group g (block, or
// cluster) takes units g, g + groups, g + 2 groups, ... and its k-th unit goes to consumer k % 2;
// block rank = m + kCm n of a cluster takes the unit's tile (m, n).
template <int kCm, int kCn>
struct PingpongTiles {
  int64_t units_x, units, nchunks;
  __device__ __forceinline__ void origin(int64_t u, uint32_t rank, int64_t& o0, int64_t& i0) const {
    o0 = ((u / units_x) * kCm + rank % kCm) * PingpongCfg::TR;
    i0 = ((u % units_x) * kCn + rank / kCm) * PingpongCfg::TC;
  }
};

// One consumer's mainloop over one tile: acc[h] (rows 64 h .. 64 h + 63 of the tile, this warp's
// 16 of them) accumulates the tile's G. seq: the block-wide index of the tile's first chunk (slot
// seq % kStages, phase seq / kStages). Each chunk's 2 x 4 wgmma are committed as one group and
// chunk c - 1's group is waited for after chunk c's is issued; then its slot is released (every
// lane calls release(slot); the lambda picks the lanes that arrive).
template <class Hook, class Release>
__device__ __forceinline__ void pingpong_tile_mainloop(unsigned char* ring, uint64_t* full, int64_t seq,
                                                       int64_t nchunks, int64_t T, float (&acc)[2][16][4],
                                                       const Hook& hook, const Release& release) {
  constexpr int S = PingpongCfg::kStages;
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int j = 0; j < 16; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[h][j][i] = 0.0f;  // +0: the chain's start
  for (int64_t c = 0; c < nchunks; ++c) {
    const int64_t n = seq + c;
    const int slot = int(n % S);
    mbar_wait(full + slot, uint32_t(n / S) & 1u);
    hook(c, nchunks);
    const unsigned char* sA = ring + size_t(slot) * PingpongCfg::kSlotBytes;
    const unsigned char* sB = sA + PingpongCfg::kABytes;
    const int ksteps = chunk_ksteps(T, c * PingpongCfg::TK, PingpongCfg::kKSteps);
    wgmma_fence_operands<16>(acc[0]);
    wgmma_fence_operands<16>(acc[1]);
    wgmma_fence();
    if (ksteps == PingpongCfg::kKSteps) {
#pragma unroll
      for (int ks = 0; ks < PingpongCfg::kKSteps; ++ks) {
        const uint64_t db = tma_operand_desc(sB, ks, 0);
        wgmma_m64n128k16_ss(acc[0], tma_operand_desc(sA, ks, 0), db);
        wgmma_m64n128k16_ss(acc[1], tma_operand_desc(sA, ks, 1), db);
      }
    } else {  // the ragged last chunk: k-steps wholly past T are not issued
#pragma unroll
      for (int ks = 0; ks < PingpongCfg::kKSteps; ++ks) {
        if (ks < ksteps) {
          const uint64_t db = tma_operand_desc(sB, ks, 0);
          wgmma_m64n128k16_ss(acc[0], tma_operand_desc(sA, ks, 0), db);
          wgmma_m64n128k16_ss(acc[1], tma_operand_desc(sA, ks, 1), db);
        }
      }
    }
    wgmma_commit();
    wgmma_wait<1>();  // chunk c - 1's instructions are done: its slot may be refilled
    wgmma_fence_operands<16>(acc[0]);
    wgmma_fence_operands<16>(acc[1]);
    if (c > 0) release(int((n - 1) % S));
  }
  wgmma_wait<0>();
  wgmma_fence_operands<16>(acc[0]);
  wgmma_fence_operands<16>(acc[1]);
  if (nchunks > 0) release(int((seq + nchunks - 1) % S));
}

// Half h of the tile's accumulators into the consumer's G buffer, one 8-byte store per pair (the
// block-per-tile kernel's park with this warp's index inside its warpgroup).
__device__ __forceinline__ void park_half_tile(float* sG, const float (&acc)[16][4], int warp, int lane) {
  using Cfg = WgradTileCfg<128, 128>;  // warps 0..3 of its layout hold rows 0..63
#pragma unroll
  for (int nt = 0; nt < 16; ++nt)
#pragma unroll
    for (int pair = 0; pair < 2; ++pair) {
      const FragCoord c = acc_pair_tile_coord<Cfg>(warp, lane, 0, nt, pair);
      *reinterpret_cast<float2*>(sG + c.row * PingpongHalfTile<>::kLdG + c.col) =
          make_float2(acc[nt][2 * pair], acc[nt][2 * pair + 1]);
    }
}

// The decomposition's "G round trip" variant (kGRoundTrip, bench and claim only): each consumer
// stores its tile's G to g_trip ([out, in] fp32, L1 bypassed) and loads it back before the
// epilogue: the same launch and the same bits, plus the traffic a materialized tile costs.
__device__ __forceinline__ void store_cg(float* p, float v) { asm volatile("st.global.cg.f32 [%0], %1;" ::"l"(p), "f"(v) : "memory"); }
__device__ __forceinline__ float load_cg(const float* p) {
  float v;
  asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void g_round_trip(float* g, int64_t out, int64_t in, int64_t o0, int64_t i0,
                                             float (&acc)[2][16][4], int warp, int lane) {
  // Thread layout of the accumulators (acc_tile_coord): rows 16 warp + lane / 4 (+ 8), columns
  // 8 nt + 2 (lane % 4) (+ 1); in is a multiple of 8 here (TMA), so a pair is in or out whole.
  const int64_t c0 = i0 + 2 * (lane & 3);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t r0 = o0 + 64 * h + 16 * warp + (lane >> 2);
    float* p0 = g + r0 * in + c0;
    float* p1 = p0 + 8 * in;
#pragma unroll
    for (int nt = 0; nt < 16; ++nt) {
      if (c0 + 8 * nt >= in) break;
      if (r0 < out) store_cg(p0 + 8 * nt, acc[h][nt][0]), store_cg(p0 + 8 * nt + 1, acc[h][nt][1]);
      if (r0 + 8 < out) store_cg(p1 + 8 * nt, acc[h][nt][2]), store_cg(p1 + 8 * nt + 1, acc[h][nt][3]);
    }
#pragma unroll
    for (int nt = 0; nt < 16; ++nt) {
      if (c0 + 8 * nt >= in) break;
      if (r0 < out) acc[h][nt][0] = load_cg(p0 + 8 * nt), acc[h][nt][1] = load_cg(p0 + 8 * nt + 1);
      if (r0 + 8 < out) acc[h][nt][2] = load_cg(p1 + 8 * nt), acc[h][nt][3] = load_cg(p1 + 8 * nt + 1);
    }
  }
}

// kPrefetch: the epilogue's L2 prefetch distance in passes (4; a bench variant tries 8).
// kCm x kCn > 1 (bench variants): clusters whose blocks hold a kCm x kCn square of tiles. In a
// cluster the blocks of one tile row share dY and those of one tile column share X, so each block
// loads one box of each shared operand and multicasts it: kCm = 2 halves X's bytes from L2, kCn = 2
// halves dY's. (Measured, NOTES v24: no faster than one block, so L2 bandwidth is not what bounds
// the 128 x 128 mainloop.) A slot is refilled once every consumer of the cluster released it.
// Needs whole squares (launch_fused_pingpong checks).
template <class Rule, StateFormat SF, WeightStore WS, bool kGRoundTrip = false, int kPrefetch = 4, int kCm = 1,
          int kCn = 1>
__global__ void __launch_bounds__(PingpongCfg::kThreads, 1)
    fused_wgrad_pingpong_kernel(WgradTileArgs a, typename Rule::Scalars s, ParamView pv, bool vec,
                                const __grid_constant__ WgradTmaMaps maps, float* g_trip) {
  static_assert((kCm == 1 || kCm == 2) && (kCn == 1 || kCn == 2), "a block alone, a pair or a square of four");
  constexpr int kCtas = kCm * kCn;
  using Half = PingpongHalfTile<kPrefetch>;
  constexpr int S = PingpongCfg::kStages;
  extern __shared__ __align__(16) unsigned char pingpong_smem[];
  unsigned char* ring = align_to_atom(pingpong_smem);
  float* gbuf = reinterpret_cast<float*>(ring + PingpongCfg::kRingBytes);
  uint64_t* full = reinterpret_cast<uint64_t*>(ring + PingpongCfg::kBarrierOffset);
  uint64_t* empty = full + S;
  // handoff[c]: consumer c may start waiting on its next tile's chunks (completed by the four warps
  // of the other consumer when their mainloop of the previous tile is done). Without it a consumer
  // waited on a slot two phases ahead and the parity wait passed on the older phase (the runner's
  // first call: a launch failure at 4096^2, where blocks hold several tiles).
  uint64_t* handoff = empty + S;
  // The warpgroup index from lane 0, so that ptxas sees the role branch as warp-uniform (else it
  // serializes the wgmma behind it, C7520).
  const int wg = __shfl_sync(0xffffffffu, int(threadIdx.x / 128), 0), lane = threadIdx.x & 31;
  const uint32_t rank = kCtas > 1 ? cluster_ctarank() : 0;
  const int64_t group = blockIdx.x / kCtas, groups = gridDim.x / kCtas;
  const int64_t tiles_x = (a.in + PingpongCfg::TC - 1) / PingpongCfg::TC;
  const PingpongTiles<kCm, kCn> tiles{tiles_x / kCn,
                                      tiles_x / kCn * ((a.out + PingpongCfg::TR - 1) / PingpongCfg::TR / kCm),
                                      (a.T + PingpongCfg::TK - 1) / PingpongCfg::TK};
  if (threadIdx.x == 0) {
    for (int i = 0; i < S; ++i) {
      mbar_init(full + i, 1);
      mbar_init(empty + i, 4 * kCtas);  // the four warps of the consumer reading the slot, in every block
    }
    for (int c = 0; c < PingpongCfg::kConsumers; ++c) mbar_init(handoff + c, 4);
    fence_mbarrier_init();
  }
  if constexpr (kCtas > 1)
    cluster_sync();  // every block's barriers exist before any block multicasts into it
  else
    __syncthreads();

  if (wg == 0) {  // producer: one thread; the others wait at the end (a cluster's final barrier)
    setmaxnreg_dec<PingpongCfg::kProducerRegs>();
    if (threadIdx.x == 0) {
      int64_t n = 0;  // the block's chunk index
      for (int64_t u = group; u < tiles.units; u += groups) {
        int64_t o0, i0;
        tiles.origin(u, rank, o0, i0);
        // Boxes wholly past W's edge are not loaded: they only feed G rows or columns outside W,
        // which no epilogue stores.
        const bool a_box1 = o0 + kTmaBoxCols < a.out, b_box1 = i0 + kTmaBoxCols < a.in;
        const uint32_t tx_bytes = uint32_t(kTmaBoxBytes) * (2 + int(a_box1) + int(b_box1));
        // In a cluster, block (m, n) sends dY box n of its tile row to the blocks of that row, and
        // X box m of its tile column to the blocks of that column.
        const uint32_t m = rank % kCm, cn = rank / kCm;
        uint16_t row_ctas = 0, col_ctas = 0;
        for (uint32_t j = 0; j < uint32_t(kCn); ++j) row_ctas |= uint16_t(1u << (m + kCm * j));
        for (uint32_t j = 0; j < uint32_t(kCm); ++j) col_ctas |= uint16_t(1u << (j + kCm * cn));
        for (int64_t c = 0; c < tiles.nchunks; ++c, ++n) {
          const int slot = int(n % S);
          if (n >= S) mbar_wait(empty + slot, uint32_t(n / S - 1) & 1u);
          unsigned char* sA = ring + size_t(slot) * PingpongCfg::kSlotBytes;
          unsigned char* sB = sA + PingpongCfg::kABytes;
          const int t0 = int(c * PingpongCfg::TK);
          mbar_arrive_expect_tx(full + slot, tx_bytes);
          if constexpr (kCn == 2) {  // whole squares: both boxes exist
            tma_load_box_multicast(sA + cn * kTmaBoxBytes, maps.dy, int(o0) + int(cn) * kTmaBoxCols, t0, full + slot,
                                   row_ctas);
          } else {
            tma_load_box(sA, maps.dy, int(o0), t0, full + slot);
            if (a_box1) tma_load_box(sA + kTmaBoxBytes, maps.dy, int(o0) + kTmaBoxCols, t0, full + slot);
          }
          if constexpr (kCm == 2) {
            tma_load_box_multicast(sB + m * kTmaBoxBytes, maps.x, int(i0) + int(m) * kTmaBoxCols, t0, full + slot,
                                   col_ctas);
          } else {
            tma_load_box(sB, maps.x, int(i0), t0, full + slot);
            if (b_box1) tma_load_box(sB + kTmaBoxBytes, maps.x, int(i0) + kTmaBoxCols, t0, full + slot);
          }
        }
      }
    }
    if constexpr (kCtas == 1) return;
  } else {
    setmaxnreg_inc<PingpongCfg::kConsumerRegs>();
    const int consumer = wg - 1, ctid = threadIdx.x - 128 * wg, cwarp = ctid >> 5;
    float* sG = gbuf + consumer * PingpongCfg::kGBufFloats;
    const bool short_edge = a.planted_defect == int(FusedPlantedDefect::edge_mask_short);
    const FragCoord first = epilogue_quad<Half>(ctid, 0);
    // A whole half tile's first Half::kEarlyPrefetchPasses epilogue passes, prefetched into L2 ahead
    // of its loads (the block-per-tile kernel's early prefetch, v17).
    auto prefetch_first_passes = [&](int64_t ho0, int64_t i0) {
      const int64_t idx_first = (ho0 + first.row) * pv.cols + (i0 + first.col);
#pragma unroll
      for (int j = 0; j < Half::kEarlyPrefetchPasses; ++j)
        prefetch_quad_lines<Rule, SF, WS>(pv, idx_first + j * int64_t(Half::kQuadRowsPerPass) * pv.cols);
    };
    // A slot is free once every consumer warp reading it, in every block of the group, is done:
    // lane j of each warp arrives on block j's barrier (the arrivals in parallel, as CUTLASS
    // spreads them).
    auto release = [&](int slot) {
      if constexpr (kCtas > 1) {
        if (lane < kCtas) mbar_arrive_cluster(empty + slot, uint32_t(lane));
      } else {
        if (lane == 0) mbar_arrive(empty + slot);
      }
    };
    float acc[2][16][4];
    for (int64_t k = consumer, u = group + consumer * groups; u < tiles.units; k += 2, u += 2 * groups) {
      int64_t o0, i0;
      tiles.origin(u, rank, o0, i0);
      // Planted defect (suite only): tile (0, 0) reads and writes the state one row down.
      const bool shift_state = a.planted_defect == int(FusedPlantedDefect::state_row_offset) && o0 == 0 && i0 == 0;
      bool whole[2];
#pragma unroll
      for (int h = 0; h < 2; ++h)
        whole[h] = SF != StateFormat::int8 && vec && !short_edge && !shift_state && o0 + 64 * (h + 1) <= pv.rows &&
                   i0 + Half::TC <= pv.cols;
      auto early_prefetch = [&](int64_t c, int64_t nchunks) {
        if (whole[0] && c == (nchunks > kFusedEarlyPrefetchChunks ? nchunks - kFusedEarlyPrefetchChunks : 0))
          prefetch_first_passes(o0, i0);
      };
      // Tile k's chunks are waited on only after tile k - 1's mainloop is done (phase (k - 1) / 2).
      if (k > 0) mbar_wait(handoff + consumer, uint32_t((k - 1) / 2) & 1u);
      pingpong_tile_mainloop(ring, full, k * tiles.nchunks, tiles.nchunks, a.T, acc, early_prefetch, release);
      if (lane == 0) mbar_arrive(handoff + (1 - consumer));
      if constexpr (kGRoundTrip) g_round_trip(g_trip, a.out, a.in, o0, i0, acc, cwarp, lane);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t ho0 = o0 + 64 * h;
        if (h == 0 && whole[1]) prefetch_first_passes(o0 + 64, i0);
        park_half_tile(sG, acc[h], cwarp, lane);
        consumer_barrier(consumer);
        if constexpr (SF == StateFormat::int8) {
          fused_epilogue_int8<Half, Rule, WS>(s, pv, sG, ho0, i0, short_edge, shift_state, cwarp);
        } else {
          if (whole[h])
            fused_epilogue_quads<Half, Rule, SF, WS, true>(s, pv, sG, ho0, i0, vec, short_edge, shift_state,
                                                           a.planted_defect, first, ctid);
          else
            fused_epilogue_quads<Half, Rule, SF, WS, false>(s, pv, sG, ho0, i0, vec, short_edge, shift_state,
                                                            a.planted_defect, first, ctid);
        }
        consumer_barrier(consumer);  // every read of the buffer done before the next park
      }
    }
  }
  // A cluster's block may not leave while a peer can still multicast into it or arrive on its
  // barriers.
  if constexpr (kCtas > 1) cluster_sync();
}

// Can the pingpong kernel run this problem? TMA needs 16-byte aligned operand rows; the planted
// late-block defect belongs to the block-per-tile kernel's stagger.
inline bool pingpong_usable(const WgradTileArgs& a) {
  return wgrad_tma_usable(a) && a.planted_defect != int(FusedPlantedDefect::late_blocks_skip_update);
}

template <class Rule, StateFormat SF, WeightStore WS, bool kGRoundTrip = false, int kPrefetch = 4, int kCm = 1,
          int kCn = 1>
void launch_fused_pingpong(const WgradTileArgs& a, const typename Rule::Scalars& s, const ParamView& pv,
                           cudaStream_t stream, float* g_trip = nullptr) {
  constexpr int kCtas = kCm * kCn;
  auto kernel = fused_wgrad_pingpong_kernel<Rule, SF, WS, kGRoundTrip, kPrefetch, kCm, kCn>;
  static const bool attributes_set = set_smem_limit(kernel, PingpongCfg::kSmemBytes, "fused_wgrad_pingpong: cudaFuncSetAttribute");
  (void)attributes_set;
  if (kCtas > 1 && (a.out % (kCm * PingpongCfg::TR) != 0 || a.in % (kCn * PingpongCfg::TC) != 0))
    throw std::invalid_argument("fused_wgrad_pingpong: a cluster of " + std::to_string(kCm) + " x " +
                                std::to_string(kCn) + " tiles needs out a multiple of " +
                                std::to_string(kCm * PingpongCfg::TR) + " and in of " +
                                std::to_string(kCn * PingpongCfg::TC));
  int device = 0, sms = 0;
  cuda_check(cudaGetDevice(&device), "fused_wgrad_pingpong: cudaGetDevice");
  cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "fused_wgrad_pingpong: SM count");
  const int64_t units = ((a.in + PingpongCfg::TC - 1) / PingpongCfg::TC / kCn) *
                        ((a.out + PingpongCfg::TR - 1) / PingpongCfg::TR / kCm);
  const WgradTmaMaps maps = make_wgrad_tma_maps(a);
  const bool vec = SF != StateFormat::int8 && fused_params_vec4<SF>(pv);
  cudaLaunchConfig_t cfg{};
  cfg.blockDim = dim3(PingpongCfg::kThreads);
  cfg.dynamicSmemBytes = PingpongCfg::kSmemBytes;
  cfg.stream = stream;
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = kCtas;
  cluster.val.clusterDim.y = cluster.val.clusterDim.z = 1;
  cfg.attrs = &cluster;
  cfg.numAttrs = 1;
  // Persistent groups: as many as can be resident at once. For clusters that is fewer than SMs /
  // size (a cluster's blocks share a GPC); a group past it would wait for a whole first wave (the
  // v23 pairs took 2x the time of single blocks with SMs / 2 clusters launched).
  int resident = sms;
  if constexpr (kCtas > 1) {
    cfg.gridDim = dim3(unsigned(sms / kCtas * kCtas));
    static const int max_clusters = [&] {
      int n = 0;
      cuda_check(cudaOccupancyMaxActiveClusters(&n, kernel, &cfg), "fused_wgrad_pingpong: cudaOccupancyMaxActiveClusters");
      return n;
    }();
    resident = max_clusters;
  }
  if (resident < 1) throw std::runtime_error("fused_wgrad_pingpong: no cluster fits on this GPU");
  const int64_t groups = units < resident ? units : resident;
  cfg.gridDim = dim3(unsigned(groups * kCtas));
  cuda_check(cudaLaunchKernelEx(&cfg, kernel, a, s, pv, vec, maps, g_trip), "fused_wgrad_pingpong: launch");
}

}  // namespace fh::gpu
