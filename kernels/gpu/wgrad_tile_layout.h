// Index math of the wgrad tile kernels (fused and order-matched), in one host-and-device header
// so that a CPU test can emulate the whole mainloop with exactly the functions the device uses
// (suites/cpu/test_gpu_tile_layout.cpp). No CUDA intrinsics here.
//
// Problem: G[o][i] = sum_t dY[t][o] * X[t][i], X [T, in], dY [T, out] bf16 row-major.
// One block computes a TR x TC tile of G at (o0, i0), 8 warps in a 2 x 4 grid, each warp a
// (TR/2) x (TC/4) sub-tile of m16n8 instruction tiles. Tokens arrive in chunks of TK = 64,
// staged in shared memory token-major: sA[k][m] = dY[t0+k][o0+m], sB[k][n] = X[t0+k][i0+n],
// zero where out of range. The MMA operands are A[m][k] = sA[k][m] (M = out) and
// B[k][n] = sB[k][n] (N = in), K = tokens: both are read with ldmatrix .trans.
//
// Order (DESIGN contract 3): every accumulator starts at +0 and chains one m16n8k16 instruction
// per 16 tokens, in token order, over all T tokens: k-step s covers tokens 16s .. 16s+15, the
// last one zero padded; k-steps wholly past T are not issued.
#pragma once
#include "kernels/common/ieee_shim.h"

namespace fh::gpu {

struct FragCoord {
  int row, col;
};

// wgmma's 128-byte swizzle atom: 8 rows of 128 bytes (wgmma_sw128_offset_bytes).
inline constexpr int kWgmmaAtomBytes = 1024;

// PTX ISA, mma.m16n8k16 with .bf16 operands (groupID = lane >> 2, tig = lane % 4).
// A (16 x 16, .row): element a_i, i = 2 * reg + half (half 0 = low 16 bits):
//   row = groupID + 8 * ((i >> 1) & 1), col = 2 * tig + (i & 1) + 8 * (i >> 2).
FH_HD FragCoord mma_a_coord(int lane, int reg, int half) {
  const int g = lane >> 2, q = lane & 3, i = 2 * reg + half;
  return {g + 8 * ((i >> 1) & 1), 2 * q + (i & 1) + 8 * (i >> 2)};
}
// B (16 x 8, .col): b_i, i = 2 * reg + half: row (k) = 2 * tig + (i & 1) + 8 * (i >> 1),
// col (n) = groupID.
FH_HD FragCoord mma_b_coord(int lane, int reg, int half) {
  const int g = lane >> 2, q = lane & 3, i = 2 * reg + half;
  return {2 * q + (i & 1) + 8 * (i >> 1), g};
}
// C and D (16 x 8 fp32): c_i: row = groupID + 8 * (i >> 1), col = 2 * tig + (i & 1).
FH_HD FragCoord mma_c_coord(int lane, int i) {
  const int g = lane >> 2, q = lane & 3;
  return {g + 8 * (i >> 1), 2 * q + (i & 1)};
}

// ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16: lanes 8j .. 8j+7 give the addresses of rows
// 0..7 of stored 8x8 matrix j (16 contiguous bytes each); lane l's register j then holds, in
// half h, the stored element (row 2 * (l % 4) + h, col l / 4) of matrix j.
FH_HD FragCoord ldmatrix_trans_element(int lane, int half) {
  return {2 * (lane & 3) + half, lane >> 2};
}

// The stored (k, m) row address lane `lane` gives when loading the A fragment of the 16x16
// block at (m0, k0) of A (stored as sA[k][m]). Register j must be a-register j: rows m0 + 8 * (j & 1),
// columns k0 + 8 * (j >> 1) (see mma_a_coord), so matrix j starts at stored row k0 + 8 * (j >> 1),
// column m0 + 8 * (j & 1).
FH_HD FragCoord ldsm_a_row_address(int lane, int m0, int k0) {
  const int j = lane >> 3, r = lane & 7;
  return {k0 + 8 * (j >> 1) + r, m0 + 8 * (j & 1)};
}
// The stored (k, n) row address for the B fragments of two adjacent n8 tiles at (k0, n0) and
// (k0, n0 + 8) (stored as sB[k][n]): register j is b-register (j & 1) of n-tile (j >> 1).
FH_HD FragCoord ldsm_b_row_address(int lane, int k0, int n0) {
  const int j = lane >> 3, r = lane & 7;
  return {k0 + 8 * (j & 1) + r, n0 + 8 * (j >> 1)};
}

// Shapes and shared-memory layout of one tile configuration.
// kWgmma (the 128 x 128 tile): the block's two warpgroups each issue wgmma.mma_async
// m64n128k16 with both operands from shared memory (128-byte swizzled, MN-major); warp w owns
// tile rows 16 w .. 16 w + 15 and all 128 columns (its warpgroup's m64 instruction gives it those
// rows). Per output element it is the same chain as mma.sync: one k16 instruction per 16 tokens
// in token order from +0 (the instruction model covers both; the GPU suites prove it).
// Otherwise (64 x 64) mma.sync m16n8k16 with the 2 x 4 warp grid.
template <int TR_, int TC_>
struct WgradTileCfg {
  static constexpr int TR = TR_, TC = TC_;
  static constexpr int kThreads = 256, kWarps = 8, TK = 64;
  static constexpr bool kWgmma = TR == 128 && TC == 128;
  // Blocks per SM the register budget is capped for (__launch_bounds__): two, so that one
  // block's epilogue (memory bound) overlaps another's mainloop.
  static constexpr int kMinBlocksPerSm = 2;
  static constexpr int kWarpsM = kWgmma ? 8 : 2, kWarpsN = kWgmma ? 1 : 4;
  static constexpr int kWarpM = TR / kWarpsM, kWarpN = TC / kWarpsN;
  static constexpr int kMT = kWarpM / 16, kNT = kWarpN / 8;  // instruction tiles per warp
  static constexpr int kKSteps = TK / 16;
  // Row strides (bf16 elements) of the staged operands: +8 elements (16 bytes) keeps every
  // ldmatrix row 16-byte aligned and puts the 8 rows of a matrix on distinct banks. wgmma's
  // operands are not row-major but in the 128-byte swizzled layout (wgmma_sw128_offset_bytes),
  // TK * TR and TK * TC elements.
  static constexpr int kLdA = kWgmma ? TR : TR + 8, kLdB = kWgmma ? TC : TC + 8;
  static constexpr int kStageElems = TK * kLdA + TK * kLdB;
  // Depth of the cp.async ring: chunk c + kStages - 1 is in flight while chunk c is multiplied, so a
  // chunk's copies get two chunks of compute to land (with 2 stages they got one, about the HBM
  // latency under load). 128x128 (wgmma): 3 x 32768 B + 1 KB of alignment = 97 KB per block, two blocks
  // (plus 1 KB each reserved) in the 228 KB of an SM; 4 stages (129 KB) would leave room for one.
  static constexpr int kStages = 3;
  // Row stride (floats) of the fp32 G tile in the fused epilogue: = 8 (mod 32), so the
  // accumulators' 8-byte pair stores (acc_pair_tile_coord) are conflict free in each half warp
  // (rows g = 0..3 land on banks 8g .. 8g + 7), and 8-byte aligned; the epilogue's reads are
  // 32 consecutive floats of one row per warp, conflict free for any stride.
  static constexpr int kLdG = TC + 8;
  static constexpr int kSegmentsPerRow = TC / 64;  // 64-column segments (one INT8 block each)
  static constexpr int kSegments = TR * kSegmentsPerRow;
  // Epilogue passes: fp32 / bf16 state, four tile elements per thread per pass; int8 state, one
  // 64-column block per warp per pass.
  static constexpr int kEpilogueQuads = 2;  // quads per thread and batch (fused_epilogue_quads)
  // L2 prefetch distance of the epilogue's lines in passes, and the passes prefetched during the
  // mainloop (the runner's sweep found 4 and 4 fastest for this kernel; kernels/gpu/NOTES.md records it).
  static constexpr int kPrefetchPasses = 2 * kEpilogueQuads, kEarlyPrefetchPasses = 4;
  static constexpr int kQuadPasses = TR * TC / (4 * kThreads);  // four columns per thread and pass
  static constexpr int kQuadRowsPerPass = kThreads / (TC / 4);   // pass j's quad is pass 0's, j * this rows down
  static constexpr int kBlockPasses = kSegments / kWarps;
  static_assert(4 * kQuadPasses * kThreads == TR * TC && kBlockPasses * kWarps == kSegments,
                "the epilogue passes must cover the tile exactly");
  static constexpr size_t kOperandBytes = size_t(kStages) * kStageElems * 2;
  // wgmma's swizzle atoms need a 1024-byte aligned ring; the kernels align the dynamic shared
  // memory pointer up and ask for this much more.
  static constexpr size_t kAlignSlack = kWgmma ? 1024 : 0;
  static constexpr size_t kGTileBytes = size_t(TR) * kLdG * 4;
  static constexpr size_t kSmemBytes = (kOperandBytes > kGTileBytes ? kOperandBytes : kGTileBytes) + kAlignSlack;
  static_assert(TR % 32 == 0 && TC % 64 == 0, "tile rows must be a multiple of 32, columns of 64");
  static_assert(kNT % 2 == 0, "B fragments are loaded two n8 tiles at a time");
  static_assert(kMT >= 1, "at least one m16 tile per warp");
  static_assert(kStages >= 2, "the ring needs a slot being filled and a slot being read");
  static_assert(!kWgmma || (kWarpM == 16 && kWarpN == 128), "wgmma tile: 8 warps of 16 rows, two m64 x n128 warpgroups");
  static_assert(!kWgmma || ((TK * kLdA * 2) % kWgmmaAtomBytes == 0 && (kStageElems * 2) % kWgmmaAtomBytes == 0),
                "every operand of every slot must start on a swizzle atom (1024 bytes)");
  static_assert(!kWgmma || (TR % 64 == 0 && TC % 64 == 0), "whole swizzle atoms across M and N");
};

// wgmma's operands in shared memory: the PTX ISA's MN-major canonical layout with the 128-byte
// swizzle (the unswizzled layout is correct too, but the tensor cores read it slowly). A staged
// chunk of TK tokens x width elements (width = TR for dY, TC for X) is a grid of 1024-byte swizzle
// atoms, [k / 8][x / 64]; atom row k % 8 holds elements x = 64 a .. 64 a + 63 of token k as eight
// 16-byte chunks, chunk c stored at position c ^ (k % 8) (the hardware XORs address bits 4-6 with
// bits 7-9, so every atom must start 1024-byte aligned). Descriptor: LBO = 1024 (between atoms
// adjacent in M or N), SBO = (width / 64) * 1024 (between 8-token groups), layout type 1 (128-byte
// swizzle); CUTLASS's canonical MN-major SW128 form.
template <int kWidth>
constexpr int wgmma_sbo_bytes() { return (kWidth / 64) * kWgmmaAtomBytes; }
// Byte offset of element (k, x) in a staged chunk of the given width.
FH_HD int wgmma_sw128_offset_bytes(int k, int x, int width) {
  const int atom = (k >> 3) * (width / 64) + (x >> 6);
  return atom * kWgmmaAtomBytes + (k & 7) * 128 + ((((x & 63) >> 3) ^ (k & 7)) << 4) + (x & 7) * 2;
}

// Warp w's sub-tile origin inside the tile (wgmma: rows 16 w, all columns).
template <class Cfg>
FH_HD FragCoord warp_origin(int warp) {
  return {(warp / Cfg::kWarpsN) * Cfg::kWarpM, (warp % Cfg::kWarpsN) * Cfg::kWarpN};
}

// Accumulator acc[mt][nt][i] of lane `lane` in warp `warp` is G-tile element:
template <class Cfg>
FH_HD FragCoord acc_tile_coord(int warp, int lane, int mt, int nt, int i) {
  const FragCoord w = warp_origin<Cfg>(warp);
  const FragCoord c = mma_c_coord(lane, i);
  return {w.row + 16 * mt + c.row, w.col + 8 * nt + c.col};
}

// The staging of one token chunk: 16-byte groups of 8 bf16, `width` elements per staged row
// (TR for dY, TC for X). Group `idx` covers staged row idx / (width / 8), elements
// 8 * (idx % (width / 8)) .. +7. Thread tid handles groups tid, tid + 256, ...
FH_HD FragCoord staging_group(int idx, int width) {
  const int per_row = width / 8;
  return {idx / per_row, 8 * (idx % per_row)};
}

// Staging of a whole in-range chunk into the wgmma tile's swizzled layout (the fast path):
// thread tid's k-th group, tid + k * kThreads, is its first group's staged row plus k * kRowsPerStep,
// same column, and lands kDstStepBytes further in shared memory (kRowsPerStep is a multiple of 8,
// so the swizzle phase row % 8 is the same for every k). So the thread computes one source
// address and one destination and then steps by constants, instead of the general path's
// per-group index, bounds and swizzle arithmetic.
template <int kWidth, int kThreads>
struct Sw128StagingSteps {
  static constexpr int kRowsPerStep = kThreads / (kWidth / 8);
  static constexpr int kDstStepBytes = kRowsPerStep / 8 * (kWidth / 64) * kWgmmaAtomBytes;
  static_assert(kThreads % (kWidth / 8) == 0 && kRowsPerStep % 8 == 0, "steps must keep the swizzle phase");
};

// How many of the 8 elements of a staging group at (row r, column c) of a row-major operand with
// nrows rows of ld elements are inside it (the rest are staged as +0).
FH_HD int staging_valid_count(int64_t r, int64_t c, int64_t nrows, int64_t ld) {
  if (r >= nrows) return 0;
  const int64_t left = ld - c;
  return left <= 0 ? 0 : (left >= 8 ? 8 : int(left));
}

// Number of k16 instructions the chunk starting at token t0 issues.
FH_HD int chunk_ksteps(int64_t T, int64_t t0, int kmax) {
  const int64_t left = T - t0;
  const int64_t s = (left + 15) / 16;
  return s < kmax ? int(s) : kmax;
}

// The staging ring (wgrad_mainloop): chunk c is staged into slot c % kStages. The prologue stages
// chunks 0 .. kStages - 2; iteration c waits for chunk c, passes one barrier (after which every
// warp is done reading slot (c - 1) % kStages), stages chunk c + kStages - 1 into that slot, then
// multiplies slot c % kStages. Both slots advance by this step.
FH_HD int next_pipeline_slot(int slot, int stages) { return slot + 1 == stages ? 0 : slot + 1; }

// Unroll hint for loops that must unroll on the device (register arrays indexed by the loop
// variable); nothing on the host.
#if defined(__CUDACC__)
#define FH_TILE_UNROLL _Pragma("unroll")
#else
#define FH_TILE_UNROLL
#endif

// The mainloop's schedule over chunks, the one sequence the device runs (wgrad_mainloop) and the
// CPU emulation replays (test_gpu_tile_layout). Ops: stage(chunk, slot) issues the copies of a
// chunk into a ring slot; commit() closes a cp.async group (group g is always chunk g: empty past
// the last chunk); wait<N>() returns once all but the N newest groups have landed; barrier();
// compute(chunk, slot) multiplies a landed chunk. Ends on wait<0> and a barrier, so the caller may
// reuse the buffers.
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <int kStages, class Ops>
FH_HD void mainloop_schedule(int64_t nchunks, Ops& ops) {
  int write_slot = 0;
  FH_TILE_UNROLL
  for (int c = 0; c < kStages - 1; ++c) {  // prologue: chunks 0 .. kStages - 2
    if (c < nchunks) ops.stage(int64_t(c), write_slot);
    ops.commit();
    write_slot = next_pipeline_slot(write_slot, kStages);
  }
  int read_slot = 0;
  for (int64_t chunk = 0; chunk < nchunks; ++chunk) {
    ops.template wait<kStages - 2>();  // group `chunk` has landed
    ops.barrier();  // everyone's copies visible; everyone done reading write_slot (chunk - 1)
    if (chunk + kStages - 1 < nchunks) ops.stage(chunk + kStages - 1, write_slot);
    ops.commit();
    write_slot = next_pipeline_slot(write_slot, kStages);
    ops.compute(chunk, read_slot);
    read_slot = next_pipeline_slot(read_slot, kStages);
  }
  ops.template wait<0>();
  ops.barrier();
}

// One warp's instructions for one staged chunk (wgrad_mainloop on the device, the CPU emulation
// in test_gpu_tile_layout through the same function). Order: k-steps ks = 0 .. ksteps - 1 in
// turn; in each, acc[mt][nt] += A(mt, ks) * B(nt, ks) for mt, then nt; so every accumulator
// still gets one m16n8k16 per k-step, in token order (contract 3). The fragment loads are
// software pipelined: k-step ks + 1's B pairs go into the second of two B buffers before
// k-step ks's first mma, and A fragment mt of k-step ks + 1 replaces A fragment mt of k-step ks
// right after that fragment's last mma in k-step ks, so ldmatrix latency hides behind mma issue.
// kFull (ksteps == kKSteps, every chunk but a ragged last one): no run-time branch inside the
// chunk, so the whole chunk is one straight-line block for the scheduler.
// Ops: types AFrag, BPair; load_a(mt, ks, AFrag&) (ldmatrix of A tile mt at k-step ks),
// load_b(np, ks, BPair&) (B of n-tiles 2 np and 2 np + 1), mma(mt, nt, const AFrag&, const BPair&)
// (n-tile nt is half nt & 1 of its pair).
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <class Cfg, bool kFull, class Ops>
FH_HD void mma_chunk_schedule(Ops& ops, int ksteps) {
  typename Ops::AFrag af[Cfg::kMT];
  typename Ops::BPair bp[2][Cfg::kNT / 2];
  FH_TILE_UNROLL
  for (int mt = 0; mt < Cfg::kMT; ++mt) ops.load_a(mt, 0, af[mt]);
  FH_TILE_UNROLL
  for (int np = 0; np < Cfg::kNT / 2; ++np) ops.load_b(np, 0, bp[0][np]);
  FH_TILE_UNROLL
  for (int ks = 0; ks < Cfg::kKSteps; ++ks) {
    if (!kFull && ks >= ksteps) break;  // block-uniform: k-steps wholly past T are not issued
    const bool more = kFull ? ks + 1 < Cfg::kKSteps : ks + 1 < ksteps;
    const int cur = ks & 1;
    if (more) {
      FH_TILE_UNROLL
      for (int np = 0; np < Cfg::kNT / 2; ++np) ops.load_b(np, ks + 1, bp[cur ^ 1][np]);
    }
    FH_TILE_UNROLL
    for (int mt = 0; mt < Cfg::kMT; ++mt) {
      FH_TILE_UNROLL
      for (int nt = 0; nt < Cfg::kNT; ++nt) ops.mma(mt, nt, af[mt], bp[cur][nt >> 1]);
      if (more) ops.load_a(mt, ks + 1, af[mt]);
    }
  }
}

// One warp's part of a staged chunk on the wgmma path (wgrad_mainloop; the CPU emulation in
// test_gpu_tile_layout through the same function). Every warp of a warpgroup runs it in step: a
// fence, one wgmma per k-step in token order (acc += A(ks) * B(ks) over the warpgroup's 64 rows
// and kWarpN columns, both operands read from the slot), committed as one group and waited for
// before returning, so the ring slot is free once every warp passes the next barrier.
// Ops: fence(); wgmma(ks); commit_and_wait().
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <class Cfg, bool kFull, class Ops>
FH_HD void wgmma_chunk_schedule(Ops& ops, int ksteps) {
  ops.fence();
  FH_TILE_UNROLL
  for (int ks = 0; ks < Cfg::kKSteps; ++ks)
    if (kFull || ks < ksteps) ops.wgmma(ks);  // block-uniform: k-steps wholly past T are not issued
  ops.commit_and_wait();
}

// Fused epilogue: segment `seg` of the tile is tile row seg % TR, columns 64 * (seg / TR) ..
// (a one-segment-per-thread map; the epilogues use the coalesced maps below, and the tests check
// that both cover the tile once).
template <class Cfg>
FH_HD FragCoord segment_origin(int seg) {
  return {seg % Cfg::TR, 64 * (seg / Cfg::TR)};
}

// Accumulators acc[mt][nt][2 * pair] and acc[mt][nt][2 * pair + 1] are the adjacent tile
// elements (row, col) and (row, col + 1), col even: the epilogue parks them in shared memory
// with one 8-byte store.
template <class Cfg>
FH_HD FragCoord acc_pair_tile_coord(int warp, int lane, int mt, int nt, int pair) {
  return acc_tile_coord<Cfg>(warp, lane, mt, nt, 2 * pair);
}

// Fused epilogue, fp32 / bf16 state: pass j of thread tid updates the four tile elements
// (row, col .. col + 3) of quad q = tid + kThreads * j, row = q / (TC / 4), col = 4 * (q % (TC / 4)):
// a warp's lanes take consecutive quads of a row (128 x 128: one whole row), so each array moves
// in 16-byte (fp32) or 8-byte (bf16) pieces that are contiguous across the warp, and each quarter
// warp's 16-byte G-tile reads cover 128 contiguous bytes (conflict free).
template <class Cfg>
FH_HD FragCoord epilogue_quad(int tid, int pass) {
  const int q = tid + Cfg::kThreads * pass;
  return {q / (Cfg::TC / 4), 4 * (q % (Cfg::TC / 4))};
}

// Fused epilogue, int8 state: pass j of warp w updates the tile's 64-column block
// b = w + kWarps * j at (b / kSegmentsPerRow, 64 * (b % kSegmentsPerRow)); lane l takes its
// columns l and l + 32.
template <class Cfg>
FH_HD FragCoord epilogue_int8_block(int warp, int pass) {
  const int b = warp + Cfg::kWarps * pass;
  return {b / Cfg::kSegmentsPerRow, 64 * (b % Cfg::kSegmentsPerRow)};
}

// The stagger (FusedSchedule, gpu_api.h): does the block of linear index lin (blockIdx.y * gridDim.x +
// blockIdx.x, the order blocks are dispatched in) start late? Blocks of the first resident wave
// (lin < wave) whose lin / stride is odd: half of that wave. With stride = the SM count and
// round-robin dispatch, that is the second block on each SM.
FH_HD bool staggered_block(int64_t lin, int64_t stride, int64_t wave) {
  return lin < wave && (lin / stride) % 2 == 1;
}

// The cooperative kernel's stagger (FusedSchedule::coop_stagger_groups): the group of persistent
// block b of `blocks`, consecutive indices together, so that the last group holds the blocks that
// run one tile fewer (tiles go round-robin: block b runs tiles b, b + blocks, ...).
FH_HD int coop_stagger_group(int64_t b, int64_t blocks, int groups) {
  return int(b * groups / blocks);
}

// The cooperative kernel's tile order (FusedSchedule::coop_group_rows): the persistent blocks take
// tiles u = block, block + blocks, ... of the launch's tiles_y x tiles_x tiles; tile u lies at
// (row, col) below. Groups of group_rows tile rows are walked column by column, so that the tiles
// in flight together (consecutive u) read few distinct operand columns and L2 serves the rest: on
// 4096 x 14336 (32 x 56 tiles) a wave of 132 spans 8 rows x 17 columns instead of 3 rows x 56
// (about 5,400 instead of 14,700 dY and X columns per token). group_rows <= 1: row-major. The last
// group holds the rows that are left.
FH_HD FragCoord coop_tile_at(int64_t u, int64_t tiles_y, int64_t tiles_x, int group_rows) {
  if (group_rows <= 1) return {int(u / tiles_x), int(u % tiles_x)};
  const int64_t per_group = int64_t(group_rows) * tiles_x, g = u / per_group, r0 = g * group_rows;
  const int64_t rows = tiles_y - r0 < group_rows ? tiles_y - r0 : group_rows, k = u - g * per_group;
  return {int(r0 + k % rows), int(k / rows)};
}

}  // namespace fh::gpu
