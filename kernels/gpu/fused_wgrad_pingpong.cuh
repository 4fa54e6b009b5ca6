// The warp-specialized fused kernel for the 128 x 128 tile ("pingpong"; kernels/gpu/NOTES.md records the
// measurements), a variant beside the production block-per-tile kernel (gpu_api.h FusedVariant).
// One persistent block per SM, three warpgroups:
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
// one warpgroup on a 64-row half tile (a 32-row quarter in the deep ring) at a time, parked in the
// consumer's own G buffer. No clusters: blocks sharing dY and X by TMA multicast halve the L2 -> SM
// bytes but run no faster (the mainloop is bound by latency, not by L2 bandwidth).
#pragma once
#include "kernels/gpu/fused_wgrad_update.cuh"
#include "kernels/gpu/wgrad_tma.h"

namespace fh::gpu {

// The epilogue's geometry for one parked piece of a tile: kRows rows (a 64-row half, or a 32-row
// quarter in the deep ring) x 128 columns, one consumer warpgroup (the names epilogue_quad /
// epilogue_int8_block and the epilogue functions read).
template <int kRows = 64>
struct PingpongHalfTile {
  static constexpr int TR = kRows, TC = 128, kThreads = 128, kWarps = 4;
  // Quads per thread and batch (fused_epilogue_quads): two, as the block-per-tile kernel; four
  // spilled ~1-2 KB even at the consumers' raised register count (the other half's accumulators
  // are live meanwhile).
  static constexpr int kEpilogueQuads = 2;
  // L2 prefetch distance in passes (8 ran no faster), and the passes of a whole piece prefetched
  // ahead of it.
  static constexpr int kPrefetchPasses = 4, kEarlyPrefetchPasses = 4;
  static constexpr int kLdG = TC + 8;  // = 8 (mod 32): the pair stores are conflict free (WgradTileCfg)
  static constexpr int kSegmentsPerRow = TC / 64, kSegments = TR * kSegmentsPerRow;
  static constexpr int kQuadPasses = TR * TC / (4 * kThreads);
  static constexpr int kQuadRowsPerPass = kThreads / (TC / 4);
  static constexpr int kBlockPasses = kSegments / kWarps;
};

// kStages_ slots of 32 KB in the ring and each consumer's G buffer of kParkRows_ rows share the
// 227 KB an SM gives one block: 4 slots with 64-row buffers (2 x 34 KB), or the deep ring's 5
// slots with 32-row buffers (2 x 17 KB: a tile parked and updated a quarter at a time), so that
// one more chunk is in flight while a consumer waits (the mainloop is bound by latency, not L2 bandwidth).
// kInFlight_: the chunks whose wgmma groups a consumer leaves outstanding before it waits (1: chunk
// c - 1 is waited for once chunk c is issued; 2: chunk c - 2, the deep ring only).
template <int kStages_ = 4, int kParkRows_ = 64, int kInFlight_ = 1>
struct PingpongRing {
  static constexpr int TR = 128, TC = 128, TK = kTmaBoxTokens, kKSteps = TK / 16;
  static constexpr int kConsumers = 2, kThreads = 128 * (1 + kConsumers);
  static constexpr int kStages = kStages_, kParkRows = kParkRows_, kInFlight = kInFlight_;
  static_assert(kParkRows == 64 || kParkRows == 32, "a half or a quarter of the tile parked at a time");
  static_assert(kInFlight >= 1 && kInFlight < kStages, "a consumer must free a slot the producer can refill");
  static constexpr int kABytes = TR * TK * 2, kSlotBytes = (TR + TC) * TK * 2;
  // setmaxnreg: the producer gives registers up so that each consumer thread holds its tile's 128
  // accumulators and the epilogue's values (40 x 128 + 232 x 256 <= 64 K).
  static constexpr int kProducerRegs = 40, kConsumerRegs = 232;
  static constexpr size_t kGBufFloats = size_t(kParkRows) * PingpongHalfTile<>::kLdG;
  static constexpr size_t kRingBytes = size_t(kStages) * kSlotBytes;
  static constexpr size_t kBarrierOffset = kRingBytes + kConsumers * kGBufFloats * 4;
  static constexpr size_t kSmemBytes = kBarrierOffset + (2 * kStages + kConsumers) * sizeof(uint64_t) + kWgmmaAtomBytes;
  static_assert(TR == 2 * kTmaBoxCols && TC == 2 * kTmaBoxCols, "two TMA boxes per operand and chunk");
  static_assert(kSmemBytes <= 232448, "one block's shared memory on sm_90");
};
using PingpongCfg = PingpongRing<>;

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
// suite (the sanitizer passes are slow; a normal wait is microseconds).
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  const uint32_t addr = smem_u32(bar);
  if (mbar_try_wait(addr, parity)) return;
  const uint64_t t0 = global_timer_ns();
  while (!mbar_try_wait(addr, parity))
    if (global_timer_ns() - t0 > 20000000000ull) __trap();
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

// The tiles of the launch, row-major; block b takes tiles b, b + blocks, b + 2 blocks, ... and its
// k-th tile goes to consumer k % 2.
struct PingpongTiles {
  int64_t tiles_x, tiles, nchunks;
  __device__ __forceinline__ void origin(int64_t u, int64_t& o0, int64_t& i0) const {
    o0 = (u / tiles_x) * PingpongCfg::TR;
    i0 = (u % tiles_x) * PingpongCfg::TC;
  }
};

// One consumer's mainloop over one tile: acc[h] (rows 64 h .. 64 h + 63 of the tile, this warp's
// 16 of them) accumulates the tile's G. seq: the block-wide index of the tile's first chunk (slot
// seq % kStages, phase seq / kStages). Each chunk's 2 x 4 wgmma are committed as one group and
// chunk c - kInFlight's group is waited for after chunk c's is issued; then its slot is released
// (every lane calls release(slot); the lambda picks the lanes that arrive). The groups complete in
// order and each accumulator's chain is the same whatever the wait depth: the same bits.
template <class Cfg, class Hook, class Release>
__device__ __forceinline__ void pingpong_tile_mainloop(unsigned char* ring, uint64_t* full, int64_t seq,
                                                       int64_t nchunks, int64_t T, float (&acc)[2][16][4],
                                                       const Hook& hook, const Release& release) {
  constexpr int S = Cfg::kStages, F = Cfg::kInFlight;
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
    const unsigned char* sA = ring + size_t(slot) * Cfg::kSlotBytes;
    const unsigned char* sB = sA + Cfg::kABytes;
    const int ksteps = chunk_ksteps(T, c * Cfg::TK, Cfg::kKSteps);
    wgmma_fence_operands<16>(acc[0]);
    wgmma_fence_operands<16>(acc[1]);
    wgmma_fence();
    if (ksteps == Cfg::kKSteps) {
#pragma unroll
      for (int ks = 0; ks < Cfg::kKSteps; ++ks) {
        const uint64_t db = tma_operand_desc(sB, ks, 0);
        wgmma_m64n128k16_ss(acc[0], tma_operand_desc(sA, ks, 0), db);
        wgmma_m64n128k16_ss(acc[1], tma_operand_desc(sA, ks, 1), db);
      }
    } else {  // the ragged last chunk: k-steps wholly past T are not issued
#pragma unroll
      for (int ks = 0; ks < Cfg::kKSteps; ++ks) {
        if (ks < ksteps) {
          const uint64_t db = tma_operand_desc(sB, ks, 0);
          wgmma_m64n128k16_ss(acc[0], tma_operand_desc(sA, ks, 0), db);
          wgmma_m64n128k16_ss(acc[1], tma_operand_desc(sA, ks, 1), db);
        }
      }
    }
    wgmma_commit();
    wgmma_wait<F>();  // chunk c - F's instructions are done: its slot may be refilled
    wgmma_fence_operands<16>(acc[0]);
    wgmma_fence_operands<16>(acc[1]);
    if (c >= F) release(int((n - F) % S));
  }
  wgmma_wait<0>();
  wgmma_fence_operands<16>(acc[0]);
  wgmma_fence_operands<16>(acc[1]);
  for (int64_t c = nchunks > F ? nchunks - F : 0; c < nchunks; ++c) release(int((seq + c) % S));
}

// Rows row0 .. row0 + kRows - 1 of half h of the tile's accumulators into the consumer's G buffer,
// one 8-byte store per pair (the block-per-tile kernel's park with this warp's index inside its
// warpgroup). Warp w holds rows 16 w .. 16 w + 15 of the half: a quarter is two warps' rows.
template <int kRows>
__device__ __forceinline__ void park_rows(float* sG, const float (&acc)[16][4], int warp, int lane, int row0) {
  using Cfg = WgradTileCfg<128, 128>;  // warps 0..3 of its layout hold rows 0..63
  if (16 * warp < row0 || 16 * warp >= row0 + kRows) return;  // uniform across the warp
#pragma unroll
  for (int nt = 0; nt < 16; ++nt)
#pragma unroll
    for (int pair = 0; pair < 2; ++pair) {
      const FragCoord c = acc_pair_tile_coord<Cfg>(warp, lane, 0, nt, pair);
      *reinterpret_cast<float2*>(sG + (c.row - row0) * PingpongHalfTile<>::kLdG + c.col) =
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

// Ring: PingpongCfg (PingpongRing's other configurations, five slots and quarter-tile parks, were
// measured slower; kernels/gpu/NOTES.md v25).
template <class Rule, StateFormat SF, WeightStore WS, bool kGRoundTrip = false, class Ring = PingpongCfg>
__global__ void __launch_bounds__(Ring::kThreads, 1)
    fused_wgrad_pingpong_kernel(WgradTileArgs a, typename Rule::Scalars s, ParamView pv, bool vec,
                                const __grid_constant__ WgradTmaMaps maps, float* g_trip) {
  using Half = PingpongHalfTile<Ring::kParkRows>;
  constexpr int S = Ring::kStages;
  constexpr int kPieces = 128 / Ring::kParkRows;  // parked pieces per tile
  extern __shared__ __align__(16) unsigned char pingpong_smem[];
  unsigned char* ring = align_to_atom(pingpong_smem);
  float* gbuf = reinterpret_cast<float*>(ring + Ring::kRingBytes);
  uint64_t* full = reinterpret_cast<uint64_t*>(ring + Ring::kBarrierOffset);
  uint64_t* empty = full + S;
  // handoff[c]: consumer c may start waiting on its next tile's chunks (completed by the four warps
  // of the other consumer when their mainloop of the previous tile is done). Without it a consumer
  // waited on a slot two phases ahead and the parity wait passed on the older phase (the runner's
  // first call: a launch failure at 4096^2, where blocks hold several tiles).
  uint64_t* handoff = empty + S;
  // The warpgroup index from lane 0, so that ptxas sees the role branch as warp-uniform (else it
  // serializes the wgmma behind it, C7520).
  const int wg = __shfl_sync(0xffffffffu, int(threadIdx.x / 128), 0), lane = threadIdx.x & 31;
  const int64_t block = blockIdx.x, blocks = gridDim.x;
  const int64_t tiles_x = (a.in + Ring::TC - 1) / Ring::TC;
  const PingpongTiles tiles{tiles_x, tiles_x * ((a.out + Ring::TR - 1) / Ring::TR), (a.T + Ring::TK - 1) / Ring::TK};
  if (threadIdx.x == 0) {
    for (int i = 0; i < S; ++i) {
      mbar_init(full + i, 1);
      mbar_init(empty + i, 4);  // the four warps of the consumer reading the slot
    }
    for (int c = 0; c < Ring::kConsumers; ++c) mbar_init(handoff + c, 4);
    fence_mbarrier_init();
  }
  __syncthreads();

  if (wg == 0) {  // producer: one thread
    setmaxnreg_dec<Ring::kProducerRegs>();
    if (threadIdx.x == 0) {
      int64_t n = 0;  // the block's chunk index
      for (int64_t u = block; u < tiles.tiles; u += blocks) {
        int64_t o0, i0;
        tiles.origin(u, o0, i0);
        // Boxes wholly past W's edge are not loaded: they only feed G rows or columns outside W,
        // which no epilogue stores.
        const bool a_box1 = o0 + kTmaBoxCols < a.out, b_box1 = i0 + kTmaBoxCols < a.in;
        const uint32_t tx_bytes = uint32_t(kTmaBoxBytes) * (2 + int(a_box1) + int(b_box1));
        for (int64_t c = 0; c < tiles.nchunks; ++c, ++n) {
          const int slot = int(n % S);
          if (n >= S) mbar_wait(empty + slot, uint32_t(n / S - 1) & 1u);
          unsigned char* sA = ring + size_t(slot) * Ring::kSlotBytes;
          unsigned char* sB = sA + Ring::kABytes;
          const int t0 = int(c * Ring::TK);
          mbar_arrive_expect_tx(full + slot, tx_bytes);
          tma_load_box(sA, maps.dy, int(o0), t0, full + slot);
          if (a_box1) tma_load_box(sA + kTmaBoxBytes, maps.dy, int(o0) + kTmaBoxCols, t0, full + slot);
          tma_load_box(sB, maps.x, int(i0), t0, full + slot);
          if (b_box1) tma_load_box(sB + kTmaBoxBytes, maps.x, int(i0) + kTmaBoxCols, t0, full + slot);
        }
      }
    }
    return;
  } else {
    setmaxnreg_inc<Ring::kConsumerRegs>();
    const int consumer = wg - 1, ctid = threadIdx.x - 128 * wg, cwarp = ctid >> 5;
    float* sG = gbuf + consumer * Ring::kGBufFloats;
    const FragCoord first = epilogue_quad<Half>(ctid, 0);
    // A slot is free once the four consumer warps reading it are done.
    auto release = [&](int slot) {
      if (lane == 0) mbar_arrive(empty + slot);
    };
    float acc[2][16][4];
    for (int64_t k = consumer, u = block + consumer * blocks; u < tiles.tiles; k += 2, u += 2 * blocks) {
      int64_t o0, i0;
      tiles.origin(u, o0, i0);
      bool whole[kPieces];
#pragma unroll
      for (int p = 0; p < kPieces; ++p)
        whole[p] = SF != StateFormat::int8 && vec && o0 + Ring::kParkRows * (p + 1) <= pv.rows && i0 + Half::TC <= pv.cols;
      auto early_prefetch = [&](int64_t c, int64_t nchunks) {
        if (whole[0] && early_prefetch_chunk(c, nchunks))
          prefetch_first_passes<Half, Rule, SF, WS>(pv, first, o0, i0);
      };
      // Tile k's chunks are waited on only after tile k - 1's mainloop is done (phase (k - 1) / 2).
      if (k > 0) mbar_wait(handoff + consumer, uint32_t((k - 1) / 2) & 1u);
      pingpong_tile_mainloop<Ring>(ring, full, k * tiles.nchunks, tiles.nchunks, a.T, acc, early_prefetch, release);
      if (lane == 0) mbar_arrive(handoff + (1 - consumer));
      if constexpr (kGRoundTrip) g_round_trip(g_trip, a.out, a.in, o0, i0, acc, cwarp, lane);
#pragma unroll
      for (int p = 0; p < kPieces; ++p) {
        const int h = p * Ring::kParkRows / 64, row0 = p * Ring::kParkRows - 64 * h;  // piece p: half h, rows row0..
        const int64_t ho0 = o0 + p * Ring::kParkRows;
        if (p + 1 < kPieces && whole[p + 1])
          prefetch_first_passes<Half, Rule, SF, WS>(pv, first, ho0 + Ring::kParkRows, i0);
        park_rows<Ring::kParkRows>(sG, acc[h], cwarp, lane, row0);
        consumer_barrier(consumer);
        if constexpr (SF == StateFormat::int8) {
          fused_epilogue_int8<Half, Rule, WS>(s, pv, sG, ho0, i0, cwarp);
        } else {
          if (whole[p])
            fused_epilogue_quads<Half, Rule, SF, WS, true>(s, pv, sG, ho0, i0, vec, first, ctid);
          else
            fused_epilogue_quads<Half, Rule, SF, WS, false>(s, pv, sG, ho0, i0, vec, first, ctid);
        }
        consumer_barrier(consumer);  // every read of the buffer done before the next park
      }
    }
  }
}

// Can the pingpong kernel run this problem? TMA needs 16-byte aligned operand rows.
inline bool pingpong_usable(const WgradTileArgs& a) { return wgrad_tma_usable(a); }

template <class Rule, StateFormat SF, WeightStore WS, bool kGRoundTrip = false, class Ring = PingpongCfg>
void launch_fused_pingpong(const WgradTileArgs& a, const typename Rule::Scalars& s, const ParamView& pv,
                           cudaStream_t stream, float* g_trip = nullptr) {
  auto kernel = fused_wgrad_pingpong_kernel<Rule, SF, WS, kGRoundTrip, Ring>;
  static const bool attributes_set = set_smem_limit(kernel, Ring::kSmemBytes, "fused_wgrad_pingpong: cudaFuncSetAttribute");
  (void)attributes_set;
  int device = 0, sms = 0;
  cuda_check(cudaGetDevice(&device), "fused_wgrad_pingpong: cudaGetDevice");
  cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "fused_wgrad_pingpong: SM count");
  // Persistent: one block per SM (or per tile, when there are fewer tiles).
  const int64_t tiles = ((a.in + Ring::TC - 1) / Ring::TC) * ((a.out + Ring::TR - 1) / Ring::TR);
  const int64_t blocks = tiles < sms ? tiles : sms;
  const WgradTmaMaps maps = make_wgrad_tma_maps(a);
  const bool vec = SF != StateFormat::int8 && fused_params_vec4<SF>(pv);
  kernel<<<unsigned(blocks), Ring::kThreads, Ring::kSmemBytes, stream>>>(a, s, pv, vec, maps, g_trip);
  cuda_check(cudaGetLastError(), "fused_wgrad_pingpong: launch");
}

}  // namespace fh::gpu
