// CPU emulation of the GPU wgrad mainloop's index math (kernels/gpu/wgrad_tile_layout.h), using
// the very functions the device code calls: the PTX fragment layouts cover their matrices
// exactly once, ldmatrix .trans with the kernel's row addresses yields the fragments the MMA
// expects, and a full emulation of the mainloop (staging, ldmatrix, one instruction-model call
// per mma.sync, the epilogue's coordinates) reproduces the order-matched G bit for bit on ragged
// shapes. What this cannot check is the hardware's own semantics of ldmatrix / mma.sync: the GPU
// suites do (suites/gpu/test_gpu_mma_model.cu, test_gpu_fused.cu).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <deque>
#include <vector>

#include "kernels/common/bf16.h"
#include "kernels/common/splitmix64.h"
#include "kernels/gpu/coop_ilv_pacing.h"
#include "kernels/gpu/gpu_api.h"
#include "kernels/gpu/wgrad_tile_layout.h"
#include "kernels/twin/mma_model.h"
#include "reference/order_matched_host.h"

namespace fh::gpu {
namespace {

// bf16 with random sign, exponent in [-8, 8], random mantissa; 1 in 16 exact zeros.
bf16 random_bf16(uint64_t& s) {
  const uint64_t r = splitmix64_next(s);
  if ((r & 15) == 0) return bf16::from_bits(0);
  const uint32_t sign = (r >> 4) & 1, exp = 127 - 8 + uint32_t((r >> 5) % 17), mant = (r >> 16) & 0x7f;
  return bf16::from_bits(uint16_t((sign << 15) | (exp << 7) | mant));
}

TEST(GpuTileLayout, FragmentLayoutsCoverEachElementOnce) {
  int a[16][16] = {}, b[16][8] = {}, c[16][8] = {};
  for (int lane = 0; lane < 32; ++lane) {
    for (int reg = 0; reg < 4; ++reg)
      for (int h = 0; h < 2; ++h) {
        const FragCoord x = mma_a_coord(lane, reg, h);
        ASSERT_TRUE(x.row >= 0 && x.row < 16 && x.col >= 0 && x.col < 16);
        ++a[x.row][x.col];
      }
    for (int reg = 0; reg < 2; ++reg)
      for (int h = 0; h < 2; ++h) {
        const FragCoord x = mma_b_coord(lane, reg, h);
        ASSERT_TRUE(x.row >= 0 && x.row < 16 && x.col >= 0 && x.col < 8);
        ++b[x.row][x.col];
      }
    for (int i = 0; i < 4; ++i) {
      const FragCoord x = mma_c_coord(lane, i);
      ASSERT_TRUE(x.row >= 0 && x.row < 16 && x.col >= 0 && x.col < 8);
      ++c[x.row][x.col];
    }
  }
  for (int r = 0; r < 16; ++r)
    for (int k = 0; k < 16; ++k) EXPECT_EQ(a[r][k], 1) << "A(" << r << "," << k << ")";
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 8; ++n) {
      EXPECT_EQ(b[r][n], 1) << "B(" << r << "," << n << ")";
      EXPECT_EQ(c[r][n], 1) << "C(" << r << "," << n << ")";
    }
  // Spot values straight from the PTX ISA's figures: lane 5 is groupID 1, threadID_in_group 1.
  EXPECT_EQ(mma_a_coord(5, 0, 1).row, 1); EXPECT_EQ(mma_a_coord(5, 0, 1).col, 3);
  EXPECT_EQ(mma_a_coord(5, 1, 0).row, 9); EXPECT_EQ(mma_a_coord(5, 1, 0).col, 2);
  EXPECT_EQ(mma_a_coord(5, 2, 0).row, 1); EXPECT_EQ(mma_a_coord(5, 2, 0).col, 10);
  EXPECT_EQ(mma_a_coord(5, 3, 1).row, 9); EXPECT_EQ(mma_a_coord(5, 3, 1).col, 11);
  EXPECT_EQ(mma_b_coord(5, 1, 1).row, 11); EXPECT_EQ(mma_b_coord(5, 1, 1).col, 1);
  EXPECT_EQ(mma_c_coord(5, 3).row, 9); EXPECT_EQ(mma_c_coord(5, 3).col, 3);
}

// ldmatrix.sync.aligned.m8n8.x4.trans.b16 as the PTX ISA describes it: row addresses from lanes
// 8j..8j+7 for matrix j; lane l's register j holds matrix j's stored (2*(l%4)+h, l/4).
void emulate_ldmatrix_x4_trans(const std::vector<uint16_t>& smem, const int64_t (&row_addr)[32],
                               uint32_t (&regs)[32][4]) {
  for (int lane = 0; lane < 32; ++lane)
    for (int j = 0; j < 4; ++j) {
      uint32_t v = 0;
      for (int h = 0; h < 2; ++h) {
        const FragCoord e = ldmatrix_trans_element(lane, h);
        v |= uint32_t(smem[size_t(row_addr[8 * j + e.row] + e.col)]) << (16 * h);
      }
      regs[lane][j] = v;
    }
}

uint16_t half_of(uint32_t r, int h) { return uint16_t(h ? r >> 16 : r & 0xffff); }

TEST(GpuTileLayout, LdmatrixRowAddressesGiveTheMmaFragments) {
  // Stored matrices with unique element tags: sA[k][m] = tag(k, m), row stride ld.
  const int ld = 136, rows = 64;
  std::vector<uint16_t> s(size_t(rows * ld));
  for (int k = 0; k < rows; ++k)
    for (int m = 0; m < ld; ++m) s[size_t(k * ld + m)] = uint16_t(k * 256 + m);
  for (int m0 : {0, 16, 48, 112})
    for (int k0 : {0, 16, 48}) {
      int64_t addr[32];
      for (int l = 0; l < 32; ++l) {
        const FragCoord ra = ldsm_a_row_address(l, m0, k0);
        addr[l] = int64_t(ra.row) * ld + ra.col;
        ASSERT_EQ(ra.col % 8, 0) << "ldmatrix rows must be 16-byte aligned";
      }
      uint32_t regs[32][4];
      emulate_ldmatrix_x4_trans(s, addr, regs);
      for (int l = 0; l < 32; ++l)
        for (int r = 0; r < 4; ++r)
          for (int h = 0; h < 2; ++h) {
            const FragCoord a = mma_a_coord(l, r, h);  // A[m][k] = sA[k][m]
            EXPECT_EQ(half_of(regs[l][r], h), uint16_t((k0 + a.col) * 256 + (m0 + a.row)))
                << "A lane " << l << " reg " << r << " half " << h;
          }
      // B: sB[k][n] = tag(k, n), two n8 tiles at n0 and n0 + 8.
      const int n0 = m0;
      for (int l = 0; l < 32; ++l) {
        const FragCoord rb = ldsm_b_row_address(l, k0, n0);
        addr[l] = int64_t(rb.row) * ld + rb.col;
      }
      emulate_ldmatrix_x4_trans(s, addr, regs);
      for (int l = 0; l < 32; ++l)
        for (int j = 0; j < 4; ++j)
          for (int h = 0; h < 2; ++h) {
            const FragCoord b = mma_b_coord(l, j & 1, h);  // n-tile j >> 1
            EXPECT_EQ(half_of(regs[l][j], h), uint16_t((k0 + b.row) * 256 + (n0 + 8 * (j >> 1) + b.col)))
                << "B lane " << l << " reg " << j << " half " << h;
          }
    }
}

// One warp's ldmatrix / mma.sync on the CPU, for mma_chunk_schedule (the very schedule the device
// runs): fragments hold all 32 lanes' registers; each mma gathers them into the instruction's
// matrices and calls the instruction model.
template <class Cfg>
struct EmulatedWarpOps {
  struct AFrag {
    uint32_t r[32][4];
  };
  struct BPair {
    uint32_t r[32][4];
  };
  const std::vector<uint16_t>& ring;
  int64_t a_base, b_base;  // element offsets of the slot's sA and sB in the ring
  FragCoord wo;
  float* acc;  // [32 lanes][kMT][kNT][4]
  int64_t* instructions;

  float* accp(int l, int mt, int nt) const { return acc + ((size_t(l) * Cfg::kMT + mt) * Cfg::kNT + nt) * 4; }
  void load_a(int mt, int ks, AFrag& f) const {
    int64_t addr[32];
    for (int l = 0; l < 32; ++l) {
      const FragCoord ra = ldsm_a_row_address(l, wo.row + 16 * mt, 16 * ks);
      addr[l] = a_base + int64_t(ra.row) * Cfg::kLdA + ra.col;
    }
    emulate_ldmatrix_x4_trans(ring, addr, f.r);
  }
  void load_b(int np, int ks, BPair& f) const {
    int64_t addr[32];
    for (int l = 0; l < 32; ++l) {
      const FragCoord rb = ldsm_b_row_address(l, 16 * ks, wo.col + 16 * np);
      addr[l] = b_base + int64_t(rb.row) * Cfg::kLdB + rb.col;
    }
    emulate_ldmatrix_x4_trans(ring, addr, f.r);
  }
  void mma(int mt, int nt, const AFrag& a, const BPair& b) const {
    bf16 A[256], Bnk[128];
    float C[128], D[128];
    for (int l = 0; l < 32; ++l) {
      for (int r = 0; r < 4; ++r)
        for (int h = 0; h < 2; ++h) {
          const FragCoord x = mma_a_coord(l, r, h);
          A[x.row * 16 + x.col] = bf16::from_bits(half_of(a.r[l][r], h));
        }
      for (int r = 0; r < 2; ++r)
        for (int h = 0; h < 2; ++h) {
          const FragCoord x = mma_b_coord(l, r, h);
          Bnk[x.col * 16 + x.row] = bf16::from_bits(half_of(b.r[l][2 * (nt & 1) + r], h));
        }
      for (int i = 0; i < 4; ++i) {
        const FragCoord x = mma_c_coord(l, i);
        C[x.row * 8 + x.col] = accp(l, mt, nt)[i];
      }
    }
    mma_m16n8k16_model(A, Bnk, C, D);
    ++*instructions;
    for (int l = 0; l < 32; ++l)
      for (int i = 0; i < 4; ++i) {
        const FragCoord x = mma_c_coord(l, i);
        accp(l, mt, nt)[i] = D[x.row * 8 + x.col];
      }
  }
};

// The hardware's reading of a 128-byte-swizzled MN-major operand (PTX ISA / CUTLASS canonical
// SW128 form), written independently of the staging's wgmma_sw128_offset_bytes: element (k, x)
// of the instruction's operand starting at byte `start` is at start + (x / 64) LBO + (k / 8) SBO
// + (k % 8) 128 + (x % 64) 2, then address bits 4-6 XOR bits 7-9 (ring offsets stand for
// addresses: the device aligns the ring to 1024 bytes).
uint16_t emulated_sw128_read(const std::vector<uint16_t>& ring, int64_t start_byte, int lbo, int sbo, int k, int x) {
  int64_t addr = start_byte + int64_t(x / 64) * lbo + int64_t(k / 8) * sbo + (k % 8) * 128 + (x % 64) * 2;
  addr ^= ((addr >> 7) & 7) << 4;
  return ring.at(size_t(addr / 2));
}

// One warp's wgmma on the CPU, for wgmma_chunk_schedule: the warpgroup's m64nNk16 gives this
// warp's 16 rows, read through the descriptors the device builds (start, LBO, SBO), one
// instruction-model call per n8 block (the per-output sum is the same; the GPU suites prove it).
template <class Cfg>
struct EmulatedWgmmaOps {
  const std::vector<uint16_t>& ring;
  int64_t a_byte, b_byte;  // the slot's sA and sB
  FragCoord wo;            // this warp's origin (its warpgroup's columns)
  float* acc;              // [32 lanes][kMT][kNT][4]
  int64_t* instructions;
  int64_t* unfenced;  // wgmma issued with no fence since the last commit
  bool* fenced;

  float* accp(int l, int nt) const { return acc + (size_t(l) * Cfg::kNT + nt) * 4; }
  void fence() const { *fenced = true; }
  void wgmma(int ks) const {
    if (!*fenced) ++*unfenced;
    constexpr int sbo_a = wgmma_sbo_bytes<Cfg::TR>(), sbo_b = wgmma_sbo_bytes<Cfg::TC>();
    const int wg_row = wo.row - wo.row % 64;
    const int64_t a0 = a_byte + 2 * ks * sbo_a + (wg_row / 64) * kWgmmaAtomBytes;
    const int64_t b0 = b_byte + 2 * ks * sbo_b + (wo.col / 64) * kWgmmaAtomBytes;
    for (int nt = 0; nt < Cfg::kNT; ++nt) {
      bf16 A[256], Bnk[128];
      float C[128], D[128];
      for (int m = 0; m < 16; ++m)
        for (int k = 0; k < 16; ++k)
          A[m * 16 + k] = bf16::from_bits(emulated_sw128_read(ring, a0, kWgmmaAtomBytes, sbo_a, k, wo.row % 64 + m));
      for (int n = 0; n < 8; ++n)
        for (int k = 0; k < 16; ++k)
          Bnk[n * 16 + k] = bf16::from_bits(emulated_sw128_read(ring, b0, kWgmmaAtomBytes, sbo_b, k, 8 * nt + n));
      for (int l = 0; l < 32; ++l)
        for (int i = 0; i < 4; ++i) {
          const FragCoord x = mma_c_coord(l, i);
          C[x.row * 8 + x.col] = accp(l, nt)[i];
        }
      mma_m16n8k16_model(A, Bnk, C, D);
      ++*instructions;
      for (int l = 0; l < 32; ++l)
        for (int i = 0; i < 4; ++i) {
          const FragCoord x = mma_c_coord(l, i);
          accp(l, nt)[i] = D[x.row * 8 + x.col];
        }
    }
  }
  void commit_and_wait() const { *fenced = false; }
};

// The block's side of mainloop_schedule on the CPU. Copies land as late as the schedule allows
// (only when a wait retires their group), so a read before its wait sees the slot's previous
// contents; a copy issued into a slot that some warp may still be reading (the slot read since
// the last barrier), or into a slot with a copy still in flight, is counted as a hazard; compute
// checks that its slot holds the chunk it was asked for.
template <class Cfg>
struct EmulatedBlockOps {
  struct Group {
    bool empty = true;
    int64_t chunk = -1;
    int slot = -1;
    std::vector<uint16_t> contents;  // the slot's kStageElems elements once landed
  };
  const std::vector<bf16>& X;
  const std::vector<bf16>& dY;
  int64_t T, out, in, o0, i0;
  std::vector<uint16_t> ring = std::vector<uint16_t>(size_t(Cfg::kStages) * Cfg::kStageElems, uint16_t(0xffff));
  std::vector<int64_t> slot_chunk = std::vector<int64_t>(size_t(Cfg::kStages), -1);
  std::deque<Group> in_flight;
  Group open;         // the group being filled (committed by commit())
  int busy_slot = -1;  // the slot warps may be reading: set by compute, kept until the next barrier
  bool barrier_since_compute = true;
  std::vector<float> acc = std::vector<float>(size_t(Cfg::kWarps) * 32 * Cfg::kMT * Cfg::kNT * 4, 0.0f);
  int64_t* instructions;
  int64_t* outside_reads;
  int64_t hazards = 0, stale_reads = 0, full_chunks = 0, tail_chunks = 0, unfenced = 0;

  void stage_operand_emu(std::vector<uint16_t>& dst, int64_t base, int lds, int width,
                         const std::vector<bf16>& src, int64_t ld, int64_t t0, int64_t c0) {
    const int groups = Cfg::TK * width / 8;
    for (int tid = 0; tid < Cfg::kThreads; ++tid)
      for (int it = 0; it < groups / Cfg::kThreads; ++it) {
        const FragCoord gc = staging_group(tid + it * Cfg::kThreads, width);
        const int64_t r = t0 + gc.row, c = c0 + gc.col;
        const int n_ok = staging_valid_count(r, c, T, ld);
        // The device's destination: padded row-major (ldmatrix) or the swizzled wgmma layout.
        const int64_t off = Cfg::kWgmma ? wgmma_sw128_offset_bytes(gc.row, gc.col, width) / 2 : gc.row * lds + gc.col;
        for (int e = 0; e < 8; ++e) {
          if (e < n_ok && (r >= T || c + e >= ld)) ++*outside_reads;  // would read another row or past the end
          dst[size_t(base + off + e)] = e < n_ok ? src.at(size_t(r * ld + c + e)).bits : uint16_t(0);
        }
      }
  }
  void stage(int64_t chunk, int slot) {
    if (slot == busy_slot) ++hazards;  // a lagging warp may still read this slot
    for (const Group& g : in_flight)
      if (!g.empty && g.slot == slot) ++hazards;  // two copies in flight into one slot
    open.empty = false;
    open.chunk = chunk;
    open.slot = slot;
    open.contents.assign(size_t(Cfg::kStageElems), uint16_t(0xffff));  // garbage where nothing is staged
    stage_operand_emu(open.contents, 0, Cfg::kLdA, Cfg::TR, dY, out, chunk * Cfg::TK, o0);
    stage_operand_emu(open.contents, Cfg::TK * Cfg::kLdA, Cfg::kLdB, Cfg::TC, X, in, chunk * Cfg::TK, i0);
  }
  void commit() {
    in_flight.push_back(open);
    open = Group{};
  }
  template <int N>
  void wait() {
    while (in_flight.size() > size_t(N)) {
      const Group& g = in_flight.front();
      if (!g.empty) {
        std::copy(g.contents.begin(), g.contents.end(), ring.begin() + int64_t(g.slot) * Cfg::kStageElems);
        slot_chunk[size_t(g.slot)] = g.chunk;
      }
      in_flight.pop_front();
    }
  }
  void barrier() {
    busy_slot = -1;
    barrier_since_compute = true;
  }
  void compute(int64_t chunk, int slot) {
    if (!barrier_since_compute) ++hazards;  // copies of other threads not known to be visible
    barrier_since_compute = false;
    busy_slot = slot;
    if (slot_chunk[size_t(slot)] != chunk) ++stale_reads;
    for (const Group& g : in_flight)
      if (!g.empty && g.slot == slot) ++stale_reads;  // reading a slot whose copy has not landed
    const int ksteps = chunk_ksteps(T, chunk * Cfg::TK, Cfg::kKSteps);
    ++(ksteps == Cfg::kKSteps ? full_chunks : tail_chunks);
    for (int w = 0; w < Cfg::kWarps; ++w) {
      float* wacc = acc.data() + size_t(w) * 32 * Cfg::kMT * Cfg::kNT * 4;
      const int64_t a_elem = int64_t(slot) * Cfg::kStageElems, b_elem = a_elem + Cfg::TK * Cfg::kLdA;
      if constexpr (Cfg::kWgmma) {
        bool fenced = false;
        EmulatedWgmmaOps<Cfg> ops{ring, 2 * a_elem, 2 * b_elem, warp_origin<Cfg>(w), wacc, instructions, &unfenced, &fenced};
        if (ksteps == Cfg::kKSteps)
          wgmma_chunk_schedule<Cfg, true>(ops, ksteps);
        else
          wgmma_chunk_schedule<Cfg, false>(ops, ksteps);
      } else {
        EmulatedWarpOps<Cfg> ops{ring, a_elem, b_elem, warp_origin<Cfg>(w), wacc, instructions};
        if (ksteps == Cfg::kKSteps)
          mma_chunk_schedule<Cfg, true>(ops, ksteps);
        else
          mma_chunk_schedule<Cfg, false>(ops, ksteps);
      }
    }
  }
};

struct EmulationStats {
  int64_t instructions = 0, outside_reads = 0, hazards = 0, stale_reads = 0, full_chunks = 0, tail_chunks = 0,
          unfenced = 0;
};

// The whole block mainloop on the CPU: mainloop_schedule and mma_chunk_schedule, the functions the
// device runs, over emulated staging, ring, ldmatrix and mma.sync.
template <class Cfg>
std::vector<float> emulate_wgrad(const std::vector<bf16>& X, const std::vector<bf16>& dY,
                                 int64_t T, int64_t out, int64_t in, EmulationStats& st) {
  std::vector<float> G(size_t(out * in), -1.0f);
  for (int64_t o0 = 0; o0 < out; o0 += Cfg::TR)
    for (int64_t i0 = 0; i0 < in; i0 += Cfg::TC) {
      EmulatedBlockOps<Cfg> blk{X, dY, T, out, in, o0, i0};
      blk.instructions = &st.instructions;
      blk.outside_reads = &st.outside_reads;
      mainloop_schedule<Cfg::kStages>((T + Cfg::TK - 1) / Cfg::TK, blk);
      st.hazards += blk.hazards;
      st.stale_reads += blk.stale_reads;
      st.full_chunks += blk.full_chunks;
      st.tail_chunks += blk.tail_chunks;
      st.unfenced += blk.unfenced;
      if (!blk.in_flight.empty()) ++st.hazards;  // the caller would reuse smem with copies in flight
      // Epilogue: the accumulators' tile coordinates, clipped to G (as the materializer stores).
      for (int w = 0; w < Cfg::kWarps; ++w)
        for (int l = 0; l < 32; ++l)
          for (int mt = 0; mt < Cfg::kMT; ++mt)
            for (int nt = 0; nt < Cfg::kNT; ++nt)
              for (int i = 0; i < 4; ++i) {
                const FragCoord c = acc_tile_coord<Cfg>(w, l, mt, nt, i);
                const int64_t r = o0 + c.row, col = i0 + c.col;
                const float v = blk.acc[(((size_t(w) * 32 + l) * Cfg::kMT + mt) * Cfg::kNT + nt) * 4 + i];
                if (r < out && col < in) G[size_t(r * in + col)] = v;
              }
    }
  return G;
}

template <class Cfg>
void check_emulation(int64_t out, int64_t in, int64_t T, uint64_t seed) {
  uint64_t s = seed;
  std::vector<bf16> X(size_t(T * in)), dY(size_t(T * out));
  for (auto& v : X) v = random_bf16(s);
  for (auto& v : dY) v = random_bf16(s);
  EmulationStats st;
  std::vector<float> G;
  ASSERT_NO_THROW(G = emulate_wgrad<Cfg>(X, dY, T, out, in, st));
  EXPECT_EQ(st.outside_reads, 0) << "staging read elements outside the operand's rows";
  EXPECT_EQ(st.hazards, 0) << "a copy into a slot still being read, or a read without a barrier";
  EXPECT_EQ(st.stale_reads, 0) << "a chunk multiplied from a slot that does not hold it yet";
  const int64_t tiles = ((out + Cfg::TR - 1) / Cfg::TR) * ((in + Cfg::TC - 1) / Cfg::TC);
  EXPECT_EQ(st.full_chunks + st.tail_chunks, tiles * ((T + Cfg::TK - 1) / Cfg::TK));
  EXPECT_EQ(st.instructions, tiles * Cfg::kWarps * Cfg::kMT * Cfg::kNT * ((T + 15) / 16))
      << "one instruction (mma.sync, or a wgmma's n8 block per warp) per accumulator tile and k-step, none past T";
  EXPECT_EQ(st.unfenced, 0) << "a wgmma issued without wgmma.fence after the accumulators were last touched";
  const std::vector<float> ref = order_matched_wgrad(X.data(), dY.data(), T, in, out, fused_kernel_order());
  int64_t diff = 0, first = -1;
  for (size_t i = 0; i < G.size(); ++i)
    if (std::memcmp(&G[i], &ref[i], 4) != 0) { if (first < 0) first = int64_t(i); ++diff; }
  std::printf("[tile %dx%d, %d stages, %s] out=%lld in=%lld T=%lld: %zu outputs, %lld emulated m16n8k16 "
              "(%lld full chunks, %lld ragged), %lld mismatches\n",
              Cfg::TR, Cfg::TC, Cfg::kStages, Cfg::kWgmma ? "wgmma" : "mma.sync", (long long)out, (long long)in, (long long)T, G.size(),
              (long long)st.instructions, (long long)st.full_chunks, (long long)st.tail_chunks, (long long)diff);
  EXPECT_EQ(diff, 0) << "first at row " << first / in << " col " << first % in;
}

TEST(GpuTileLayout, EmulatedMainloopEqualsOrderMatchedChain128) {
  check_emulation<WgradTileCfg<128, 128>>(200, 136, 37, 1);
  check_emulation<WgradTileCfg<128, 128>>(130, 129, 100, 2);
  check_emulation<WgradTileCfg<128, 128>>(1, 1, 1, 3);
  check_emulation<WgradTileCfg<128, 128>>(37, 77, 20, 8);
  check_emulation<WgradTileCfg<128, 128>>(128, 128, 64, 4);
  check_emulation<WgradTileCfg<128, 128>>(130, 128, 320, 9);  // five full chunks: the ring wraps
  check_emulation<WgradTileCfg<128, 128>>(128, 130, 200, 10);  // three full chunks, a ragged fourth
}

TEST(GpuTileLayout, EmulatedMainloopEqualsOrderMatchedChain64) {
  check_emulation<WgradTileCfg<64, 64>>(200, 136, 37, 5);
  check_emulation<WgradTileCfg<64, 64>>(65, 70, 129, 6);
  check_emulation<WgradTileCfg<64, 64>>(3, 5, 16, 7);
  check_emulation<WgradTileCfg<64, 64>>(70, 64, 448, 11);  // seven full chunks
  check_emulation<WgradTileCfg<64, 64>>(64, 66, 136, 12);  // two full chunks, 8 tokens in a third
}

TEST(GpuTileLayout, EpilogueSegmentsAndAccumulatorsCoverTheTileOnce) {
  auto check = [](auto cfg) {
    using Cfg = decltype(cfg);
    std::vector<int> acc_hits(size_t(Cfg::TR * Cfg::TC), 0), seg_hits(size_t(Cfg::TR * Cfg::TC), 0);
    for (int w = 0; w < Cfg::kWarps; ++w)
      for (int l = 0; l < 32; ++l)
        for (int mt = 0; mt < Cfg::kMT; ++mt)
          for (int nt = 0; nt < Cfg::kNT; ++nt)
            for (int i = 0; i < 4; ++i) {
              const FragCoord c = acc_tile_coord<Cfg>(w, l, mt, nt, i);
              ASSERT_TRUE(c.row < Cfg::TR && c.col < Cfg::TC);
              ++acc_hits[size_t(c.row * Cfg::TC + c.col)];
            }
    for (int seg = 0; seg < Cfg::kSegments; ++seg) {
      const FragCoord so = segment_origin<Cfg>(seg);
      ASSERT_EQ(so.col % 64, 0);
      for (int e = 0; e < 64; ++e) ++seg_hits[size_t(so.row * Cfg::TC + so.col + e)];
    }
    for (size_t i = 0; i < acc_hits.size(); ++i) {
      ASSERT_EQ(acc_hits[i], 1) << "accumulator coverage at " << i;
      ASSERT_EQ(seg_hits[i], 1) << "segment coverage at " << i;
    }
    EXPECT_LE(Cfg::kSmemBytes, size_t(227 * 1024));
    // kMinBlocksPerSm blocks (each with the 1 KB the driver reserves) in an SM's 228 KB.
    EXPECT_LE(size_t(Cfg::kMinBlocksPerSm) * (Cfg::kSmemBytes + 1024), size_t(228 * 1024))
        << "the staging ring leaves room for fewer blocks per SM than the register cap is set for";
    EXPECT_GE(Cfg::kSmemBytes, Cfg::kGTileBytes);
  };
  check(WgradTileCfg<128, 128>{});
  check(WgradTileCfg<64, 64>{});
}

// One shared-memory read wavefront (32-bit words): a second word on a bank already used by a
// different word is a bank conflict; the same word again is a broadcast.
struct SharedReadWavefront {
  int word_on_bank[32];
  SharedReadWavefront() { std::fill(word_on_bank, word_on_bank + 32, -1); }
  int conflicts(int word) {
    int& w = word_on_bank[word % 32];
    const int c = (w >= 0 && w != word) ? 1 : 0;
    w = word;
    return c;
  }
};

// The fused epilogue: the accumulators are parked in the shared G tile (row stride kLdG) by
// 8-byte pair stores, then read back per four-column quad (fp32 / bf16 state) or per 64-column block and
// lane (int8 state). Tags stand for the accumulator values: every tile element must be read back
// exactly once, from the accumulator acc_tile_coord puts there; stores must be 8-byte aligned and
// bank-conflict free per half warp, the reads conflict free per warp.
template <class Cfg>
void check_fused_epilogue_layout() {
  constexpr int kLd = Cfg::kLdG;
  auto tag = [](int w, int l, int mt, int nt, int i) { return (((w * 32 + l) * Cfg::kMT + mt) * Cfg::kNT + nt) * 4 + i; };
  std::vector<int> sG(size_t(Cfg::TR * kLd), -1), expect(size_t(Cfg::TR * Cfg::TC), -1);
  int store_conflicts = 0, misaligned = 0;
  for (int w = 0; w < Cfg::kWarps; ++w)
    for (int mt = 0; mt < Cfg::kMT; ++mt)
      for (int nt = 0; nt < Cfg::kNT; ++nt)
        for (int pair = 0; pair < 2; ++pair)
          for (int half = 0; half < 2; ++half) {  // an 8-byte warp store is two half-warp phases
            int bank_use[32] = {};
            for (int l = 16 * half; l < 16 * half + 16; ++l) {
              const FragCoord c = acc_pair_tile_coord<Cfg>(w, l, mt, nt, pair);
              const FragCoord c1 = acc_tile_coord<Cfg>(w, l, mt, nt, 2 * pair + 1);
              ASSERT_TRUE(c1.row == c.row && c1.col == c.col + 1) << "a pair must be two adjacent columns";
              const int addr = c.row * kLd + c.col;
              if (addr % 2 != 0) ++misaligned;
              for (int e = 0; e < 2; ++e) {
                ASSERT_EQ(sG[size_t(addr + e)], -1) << "two accumulators parked at one address";
                sG[size_t(addr + e)] = tag(w, l, mt, nt, 2 * pair + e);
                expect[size_t(c.row * Cfg::TC + c.col + e)] = tag(w, l, mt, nt, 2 * pair + e);
                if (++bank_use[(addr + e) % 32] > 1) ++store_conflicts;
              }
            }
          }
  EXPECT_EQ(misaligned, 0) << "pair stores must be 8-byte aligned";
  EXPECT_EQ(store_conflicts, 0) << "bank conflicts in the accumulator pair stores";

  // fp32 / bf16 state: thread tid's pass j reads the quad epilogue_quad(tid, j), a 16-byte
  // G-tile read of four consecutive columns.
  std::vector<int> hits(size_t(Cfg::TR * Cfg::TC), 0);
  int read_conflicts = 0, wrong = 0, uncoalesced = 0, misaligned_quads = 0, unstepped = 0;
  for (int j = 0; j < Cfg::kQuadPasses; ++j)
    for (int w = 0; w < Cfg::kWarps; ++w) {
      for (int l = 0; l < 32; ++l) {
        const FragCoord t = epilogue_quad<Cfg>(32 * w + l, j);
        ASSERT_TRUE(t.row >= 0 && t.row < Cfg::TR && t.col >= 0 && t.col + 3 < Cfg::TC);
        if ((t.row * kLd + t.col) % 4 != 0) ++misaligned_quads;  // the float4 read needs 16 bytes
        // The whole-tile epilogue steps pass 0's place by kQuadRowsPerPass rows per pass.
        const FragCoord t0 = epilogue_quad<Cfg>(32 * w + l, 0);
        if (t.row != t0.row + j * Cfg::kQuadRowsPerPass || t.col != t0.col) ++unstepped;
        // Lanes walk a row in steps of one quad: the warp's vector accesses are contiguous.
        if (l > 0) {
          const FragCoord p = epilogue_quad<Cfg>(32 * w + l - 1, j);
          const bool next_in_row = t.row == p.row && t.col == p.col + 4;
          const bool next_row = t.row == p.row + 1 && t.col == 0 && p.col + 4 == Cfg::TC;
          if (!next_in_row && !next_row) ++uncoalesced;
        }
        for (int e = 0; e < 4; ++e) {
          const int addr = t.row * kLd + t.col + e;
          if (sG[size_t(addr)] != expect[size_t(t.row * Cfg::TC + t.col + e)]) ++wrong;
          ++hits[size_t(t.row * Cfg::TC + t.col + e)];
        }
      }
      // A 16-byte shared load is served a quarter warp (8 lanes, 128 bytes) at a time: those
      // lanes' 32 words must fall on 32 distinct banks.
      for (int quarter = 0; quarter < 4; ++quarter) {
        SharedReadWavefront banks;
        for (int l = 8 * quarter; l < 8 * quarter + 8; ++l) {
          const FragCoord t = epilogue_quad<Cfg>(32 * w + l, j);
          for (int e = 0; e < 4; ++e) read_conflicts += banks.conflicts(t.row * kLd + t.col + e);
        }
      }
    }
  for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i], 1) << "quad epilogue coverage at " << i;
  EXPECT_EQ(wrong, 0) << "quad epilogue read a value other than its accumulator";
  EXPECT_EQ(uncoalesced, 0) << "a warp's quads are not consecutive along the rows";
  EXPECT_EQ(misaligned_quads, 0) << "a quad's G-tile read is not 16-byte aligned";
  EXPECT_EQ(unstepped, 0) << "a pass's quad is not pass 0's moved down by kQuadRowsPerPass rows";
  EXPECT_EQ(read_conflicts, 0) << "bank conflicts in the quad epilogue's reads";

  // int8 state: warp w's pass j is the block epilogue_int8_block(w, j), lane l columns l, l + 32.
  std::fill(hits.begin(), hits.end(), 0);
  read_conflicts = wrong = 0;
  for (int j = 0; j < Cfg::kBlockPasses; ++j)
    for (int w = 0; w < Cfg::kWarps; ++w) {
      const FragCoord b = epilogue_int8_block<Cfg>(w, j);
      ASSERT_EQ(b.col % 64, 0) << "an int8 pass must start on a block";
      for (int h = 0; h < 2; ++h) {
        SharedReadWavefront banks;
        for (int l = 0; l < 32; ++l) {
          const int col = b.col + l + 32 * h, addr = b.row * kLd + col;
          ASSERT_TRUE(b.row < Cfg::TR && col < Cfg::TC);
          if (sG[size_t(addr)] != expect[size_t(b.row * Cfg::TC + col)]) ++wrong;
          ++hits[size_t(b.row * Cfg::TC + col)];
          read_conflicts += banks.conflicts(addr);
        }
      }
    }
  for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i], 1) << "int8 epilogue coverage at " << i;
  EXPECT_EQ(wrong, 0) << "int8 epilogue read a value other than its accumulator";
  EXPECT_EQ(read_conflicts, 0) << "bank conflicts in the int8 epilogue's reads";
  EXPECT_LE(size_t(Cfg::TR) * kLd * 4, Cfg::kSmemBytes) << "the G tile must fit the kernel's shared memory";
}

TEST(GpuTileLayout, FusedEpilogueParksAndReadsEachAccumulatorOnceWithoutBankConflicts) {
  check_fused_epilogue_layout<WgradTileCfg<128, 128>>();
  check_fused_epilogue_layout<WgradTileCfg<64, 64>>();
}

}  // namespace
}  // namespace fh::gpu

namespace fh::gpu {
namespace {

// The fast staging path steps each thread's source and destination by constants
// (Sw128StagingSteps): the groups and swizzled destinations it reaches must be exactly the
// general path's (staging_group + wgmma_sw128_offset_bytes) for every thread and step.
template <int kRows, int kWidth, int kThreads>
int whole_chunk_staging_differences() {
  using Steps = Sw128StagingSteps<kWidth, kThreads>;
  constexpr int kGroups = kRows * kWidth / 8;
  int bad = 0;
  for (int tid = 0; tid < kThreads; ++tid) {
    const FragCoord g0 = staging_group(tid, kWidth);
    const int d0 = wgmma_sw128_offset_bytes(g0.row, g0.col, kWidth);
    for (int k = 0; k < kGroups / kThreads; ++k) {
      const FragCoord g = staging_group(tid + k * kThreads, kWidth);
      const bool same_group = g.row == g0.row + k * Steps::kRowsPerStep && g.col == g0.col;
      const bool same_dst = wgmma_sw128_offset_bytes(g.row, g.col, kWidth) == d0 + k * Steps::kDstStepBytes;
      bad += !(same_group && same_dst);
    }
  }
  return bad;
}

TEST(GpuTileLayout, WholeChunkStagingStepsMatchTheGeneralPath) {
  using Cfg = WgradTileCfg<128, 128>;
  EXPECT_EQ((whole_chunk_staging_differences<Cfg::TK, Cfg::TR, Cfg::kThreads>()), 0);
  EXPECT_EQ((whole_chunk_staging_differences<Cfg::TK, Cfg::TC, Cfg::kThreads>()), 0);
  EXPECT_EQ((whole_chunk_staging_differences<64, 256, 256>()), 0);  // a wider operand: 2 rows per step
}

// The stagger delays half of the first resident wave and nothing after it; with stride = the
// SM count (round-robin dispatch: block i on SM i mod SMs), one of the two blocks of every SM.
TEST(GpuTileLayout, StaggerDelaysHalfTheFirstWaveOnly) {
  const int64_t sms = 132, wave = 2 * sms, grid = 1024;
  for (int64_t stride : {sms, int64_t(1)}) {
    std::vector<int> per_sm(size_t(sms), 0);
    int64_t late = 0, late_after_wave = 0;
    for (int64_t lin = 0; lin < grid; ++lin) {
      if (!staggered_block(lin, stride, wave)) continue;
      ++late;
      late_after_wave += lin >= wave;
      if (lin < wave) ++per_sm[size_t(lin % sms)];
    }
    EXPECT_EQ(late, wave / 2) << "stride " << stride;
    EXPECT_EQ(late_after_wave, 0) << "stride " << stride;
    if (stride == sms) {
      EXPECT_TRUE(std::all_of(per_sm.begin(), per_sm.end(), [](int n) { return n == 1; }))
          << "the second block of each SM should start late";
    }
  }
}

// The cooperative stagger's groups: consecutive blocks, equal sizes up to one block, every group
// used, and the blocks that run one tile fewer (the highest indices) in the last group.
TEST(GpuTileLayout, CoopStaggerGroupsAreContiguousAndEven) {
  for (int64_t blocks : {int64_t(132), int64_t(114), int64_t(7)})
    for (int groups : {1, 2, 3, 4, 8}) {
      if (groups > blocks) continue;
      std::vector<int64_t> size(size_t(groups), 0);
      int prev = 0;
      for (int64_t b = 0; b < blocks; ++b) {
        const int g = coop_stagger_group(b, blocks, groups);
        ASSERT_GE(g, prev) << "groups must be consecutive block ranges";
        ASSERT_LT(g, groups);
        prev = g;
        ++size[size_t(g)];
      }
      EXPECT_EQ(coop_stagger_group(0, blocks, groups), 0) << "the first block starts on time";
      EXPECT_EQ(coop_stagger_group(blocks - 1, blocks, groups), groups - 1) << "the last block is in the last group";
      const auto [lo, hi] = std::minmax_element(size.begin(), size.end());
      EXPECT_LE(*hi - *lo, 1) << blocks << " blocks in " << groups << " groups";
    }
}

// The cooperative kernel's tile order: every tile once, row-major for one-row groups, and the
// tiles of one wave (132 consecutive u, an H100's persistent blocks) close together: on 4096 x 14336
// (32 x 56 tiles of 128 x 256) eight-row groups keep a wave within 8 tile rows and 17 columns,
// where row-major spans all 56 columns (the locality check can fail).
TEST(GpuTileLayout, CoopTileOrderCoversEachTileOnceAndKeepsWavesLocal) {
  for (auto [ty, tx] : {std::pair{32, 56}, std::pair{112, 16}, std::pair{32, 16}, std::pair{8, 16}, std::pair{3, 5},
                        std::pair{1, 1}, std::pair{13, 7}})
    for (int g : {1, 2, 3, 8, 1024}) {
      std::vector<int> hits(size_t(ty * tx), 0);
      for (int64_t u = 0; u < int64_t(ty) * tx; ++u) {
        const FragCoord t = coop_tile_at(u, ty, tx, g);
        ASSERT_TRUE(t.row >= 0 && t.row < ty && t.col >= 0 && t.col < tx) << ty << "x" << tx << " g " << g << " u " << u;
        ++hits[size_t(t.row * tx + t.col)];
        if (g == 1) EXPECT_TRUE(t.row == u / tx && t.col == u % tx) << "one-row groups are row-major";
      }
      for (int h : hits) ASSERT_EQ(h, 1) << ty << "x" << tx << " tiles, groups of " << g << " rows";
    }
  auto wave_span = [](int g) {
    int rmin = 1 << 30, rmax = -1, cmin = 1 << 30, cmax = -1;
    for (int64_t u = 0; u < 132; ++u) {
      const FragCoord t = coop_tile_at(u, 32, 56, g);
      rmin = std::min(rmin, t.row), rmax = std::max(rmax, t.row), cmin = std::min(cmin, t.col), cmax = std::max(cmax, t.col);
    }
    return std::pair{rmax - rmin + 1, cmax - cmin + 1};
  };
  EXPECT_EQ(wave_span(kCoopGroupRows), (std::pair{8, 17}));
  EXPECT_EQ(wave_span(1), (std::pair{3, 56}));
}

// The split over tokens' cost model (coop_split_count): where a layer's 128 x 256 tiles leave SMs
// idle at large T it splits, on layers that fill the GPU or have more tiles than SMs it does not,
// the units always fit the SMs at once, and no slice is empty.
TEST(GpuTileLayout, SplitCountFillsTheGpuOnlyWhereItPays) {
  const int kSms = 132, M = kCoopSplitDefaultMax, O = kCoopSplitOverheadChunks, P = kCoopSplitGainPct;
  auto tiles = [](int64_t out, int64_t in) { return ((out + 127) / 128) * ((in + 255) / 256); };
  auto chunks = [](int64_t T) { return (T + 63) / 64; };
  // 1024 x 1024 (32 tiles): four slices fill 128 of 132 SMs at T = 16384 and 8192; 2048 x 1024 two
  // from T = 8192, none at T = 2048 (measured slower: NOTES.md v43); 1024 x 5120 (160 tiles) none.
  EXPECT_EQ(coop_split_count(tiles(1024, 1024), chunks(16384), kSms, M, O, P), 4);
  EXPECT_EQ(coop_split_count(tiles(1024, 1024), chunks(8192), kSms, M, O, P), 4);
  EXPECT_EQ(coop_split_count(tiles(2048, 1024), chunks(16384), kSms, M, O, P), 2);
  EXPECT_EQ(coop_split_count(tiles(2048, 1024), chunks(8192), kSms, M, O, P), 2);
  EXPECT_EQ(coop_split_count(tiles(2048, 1024), chunks(2048), kSms, M, O, P), 1);
  EXPECT_EQ(coop_split_count(tiles(1024, 5120), chunks(16384), kSms, M, O, P), 1);
  EXPECT_EQ(coop_split_count(tiles(1024, 1024), chunks(512), kSms, M, O, P), 1);
  // The layers that fill the GPU stay whole: 4096², 14336 x 4096, 5120 x 5120 (1.3% predicted: below
  // the gain asked for).
  EXPECT_EQ(coop_split_count(tiles(4096, 4096), chunks(16384), kSms, M, O, P), 1);
  EXPECT_EQ(coop_split_count(tiles(14336, 4096), chunks(16384), kSms, M, O, P), 1);
  EXPECT_EQ(coop_split_count(tiles(5120, 5120), chunks(16384), kSms, M, O, P), 1);
  // max 1 never splits; without overhead or gain the largest S with no empty slice whose units fit.
  EXPECT_EQ(coop_split_count(tiles(1024, 1024), chunks(16384), kSms, 1, O, P), 1);
  EXPECT_EQ(coop_split_count(9, 33, kSms, M, 0, 0), 11);
  EXPECT_EQ(coop_split_count(4, 18, kSms, M, 0, 0), 9);
  EXPECT_EQ(coop_split_count(9, 33, kSms, 2, 0, 0), 2);
  for (int64_t t : {1, 3, 9, 32, 64, 160, 320, 800})
    for (int64_t c : {1, 2, 3, 17, 33, 128, 256, 1000}) {
      const int S = coop_split_count(t, c, kSms, M, 0, 0);
      const int64_t slice = (c + S - 1) / S;
      EXPECT_TRUE(S >= 1 && S <= M && slice * (S - 1) < c && (S == 1 || t * S <= kSms))
          << t << " tiles, " << c << " chunks: " << S;
    }
}

// The split in waves (coop_split_count with unit_chunks >= 0): layers with more tiles than one wave's
// units split where whole waves of (tile, slice) units beat the unsplit waves by the gain asked for,
// with slices of at least min_slice_chunks; the grid is a multiple of S.
TEST(GpuTileLayout, SplitInWavesOnlyWhereWholeWavesPay) {
  const int kSms = 132, M = kCoopSplitDefaultMax, O = kCoopSplitOverheadChunks, P = kCoopSplitGainPct;
  const int U = kCoopSplitUnitChunks;
  const int64_t L = kCoopSplitMinSliceTokens / 64;
  auto tiles = [](int64_t out, int64_t in) { return ((out + 127) / 128) * ((in + 255) / 256); };
  auto chunks = [](int64_t T) { return (T + 63) / 64; };
  // T = 16384 (256 chunks): 1024 x 2560 (80 tiles, one wave of 256 chunks) in 3 slices: 240 units in two
  // waves of 86 chunks; 1024 x 5120 (160 tiles, two waves) in 4: five waves of 64; 2560 x 4096 (320
  // tiles, three waves) in 2: five waves of 128.
  EXPECT_EQ(coop_split_count(tiles(1024, 2560), chunks(16384), kSms, M, O, P, U, L), 3);
  EXPECT_EQ(coop_split_count(tiles(1024, 5120), chunks(16384), kSms, M, O, P, U, L), 4);
  EXPECT_EQ(coop_split_count(tiles(2560, 4096), chunks(16384), kSms, M, O, P, U, L), 2);
  EXPECT_EQ(coop_split_count(tiles(1024, 5120), chunks(8192), kSms, M, O, P, U, L), 2);
  // The one-wave choices are unchanged, and without waves (unit_chunks -1) the wide layers stay whole.
  EXPECT_EQ(coop_split_count(tiles(1024, 1024), chunks(16384), kSms, M, O, P, U, L), 4);
  EXPECT_EQ(coop_split_count(tiles(2048, 1024), chunks(8192), kSms, M, O, P, U, L), 2);
  EXPECT_EQ(coop_split_count(tiles(1024, 5120), chunks(16384), kSms, M, O, P, -1, L), 1);
  // Layers of whole waves stay whole (4096²: 512 tiles), and so does a slice below the minimum.
  EXPECT_EQ(coop_split_count(tiles(4096, 4096), chunks(16384), kSms, M, O, P, U, L), 1);
  EXPECT_EQ(coop_split_count(tiles(14336, 4096), chunks(16384), kSms, M, O, P, U, L), 1);
  EXPECT_EQ(coop_split_count(tiles(1024, 5120), chunks(2048), kSms, M, O, P, U, L), 1);
  // The grid: a multiple of S (whole tiles a wave), or the units where they are fewer.
  EXPECT_EQ(coop_split_waves_grid(81, 11, kSms), 132);
  EXPECT_EQ(coop_split_waves_grid(160, 5, kSms), 130);
  EXPECT_EQ(coop_split_waves_grid(32, 4, kSms), 128);
  for (int64_t t : {1, 3, 9, 32, 64, 80, 160, 320, 800})
    for (int64_t c : {1, 2, 3, 17, 33, 128, 256, 1000}) {
      const int S = coop_split_count(t, c, kSms, M, 0, 0, 0, 0);
      const int64_t slice = (c + S - 1) / S;
      EXPECT_TRUE(S >= 1 && S <= M && slice * (S - 1) < c && coop_split_waves_grid(t, S, kSms) % S == 0)
          << t << " tiles, " << c << " chunks: " << S;
    }
}

// The schedule's settings are range-checked and kept process-wide.
TEST(GpuTileLayout, FusedScheduleIsValidatedAndKept) {
  const FusedSchedule before = fused_schedule();
  // The defaults with one change (or one pair) are refused.
  using S = FusedSchedule;
  auto refused = [&](auto change, const std::string& what) {
    FusedSchedule bad = before;
    change(bad);
    EXPECT_THROW(set_fused_schedule(bad), std::invalid_argument) << what;
  };
  refused([](S& s) { s.stagger_us = -2; }, "stagger_us -2");
  refused([](S& s) { s.stagger_stride = -1; }, "stagger_stride -1");
  refused([](S& s) { s.coop_min_tokens = -1; }, "coop_min_tokens -1");
  refused([](S& s) { s.coop_min_tokens_int8 = -1; }, "coop_min_tokens_int8 -1");
  refused([](S& s) { s.coop_l2g_min_tokens = -1; }, "coop_l2g_min_tokens -1");
  refused([](S& s) { s.coop_l2g_min_tokens_light = -1; }, "coop_l2g_min_tokens_light -1");
  refused([](S& s) { s.coop_l2g_light_min_tiles = 0; }, "coop_l2g_light_min_tiles 0");
  refused([](S& s) { s.coop_l2g_min_tokens_int8 = -1; }, "coop_l2g_min_tokens_int8 -1");
  refused([](S& s) { s.coop_ilv_min_tokens = -1; }, "coop_ilv_min_tokens -1");
  for (int rows : {0, 4, 12, 136}) {
    refused([&](S& s) { s.coop_l2g_epilogue_rows = rows; }, std::to_string(rows) + " epilogue rows");
    refused([&](S& s) { s.coop_l2g_epilogue_rows_16k = rows; },
            std::to_string(rows) + " epilogue rows from T = 16384");
    refused([&](S& s) { s.coop_l2g_epilogue_rows_fp = rows; }, std::to_string(rows) + " epilogue rows, fp32 / bf16");
  }
  for (int warps : {1, 4})
    refused([&](S& s) { s.coop_l2g_epilogue_warps = warps; }, std::to_string(warps) + " epilogue warps");
  for (int slices : {0, 3})
    refused([&](S& s) { s.coop_l2g_g_slices = slices; }, std::to_string(slices) + " G slices");
  for (int staged : {-1, 2})
    refused([&](S& s) { s.coop_l2g_staged = staged; }, "coop_l2g_staged " + std::to_string(staged));
  for (int m : {0, -1, kCoopSplitMax + 1})
    refused([&](S& s) { s.coop_split_max = m; }, std::to_string(m) + " split max");
  refused([](S& s) { s.coop_split_min_tokens = -1; }, "coop_split_min_tokens -1");
  refused([](S& s) { s.coop_split_overhead_chunks = -1; }, "coop_split_overhead_chunks -1");
  refused([](S& s) { s.coop_split_overhead_chunks = 1025; }, "coop_split_overhead_chunks 1025");
  refused([](S& s) { s.coop_split_gain_pct = 100; }, "coop_split_gain_pct 100");
  refused([](S& s) { s.coop_split_gain_pct = -1; }, "coop_split_gain_pct -1");
  refused([](S& s) { s.coop_split_unit_chunks = -2; }, "coop_split_unit_chunks -2");
  refused([](S& s) { s.coop_split_unit_chunks = 1025; }, "coop_split_unit_chunks 1025");
  refused([](S& s) { s.coop_split_min_slice_tokens = -1; }, "coop_split_min_slice_tokens -1");
  EXPECT_EQ(before.coop_split_max, kCoopSplitDefaultMax);
  EXPECT_EQ(before.coop_split_min_tokens, kCoopSplitMinTokens);
  EXPECT_EQ(before.coop_split_overhead_chunks, kCoopSplitOverheadChunks);
  EXPECT_EQ(before.coop_split_gain_pct, kCoopSplitGainPct);
  EXPECT_EQ(before.coop_split_unit_chunks, kCoopSplitDefaultUnitChunks);
  EXPECT_EQ(before.coop_split_min_slice_tokens, kCoopSplitMinSliceTokens);
  for (int rows : {0, -1, 1025})
    refused([&](S& s) { s.coop_group_rows = rows; }, std::to_string(rows) + " group rows");
  for (std::pair<int, int> p : {std::pair{-1, 2}, std::pair{10, 0}, std::pair{10, 1025}, std::pair{500001, 3}})
    refused([&](S& s) { s.coop_stagger_us = p.first, s.coop_stagger_groups = p.second; },
            std::to_string(p.first) + " us, " + std::to_string(p.second) + " groups");
  EXPECT_EQ(before.coop_stagger_us, kCoopStaggerUs);
  EXPECT_EQ(before.coop_stagger_groups, kCoopStaggerGroups);
  EXPECT_EQ(before.coop_min_tokens, kCoopMinTokens) << "the cooperative kernel runs from the measured crossover by default";
  EXPECT_EQ(before.coop_min_tokens_int8, kCoopMinTokensInt8);
  EXPECT_EQ(before.coop_group_rows, kCoopGroupRows);
  EXPECT_EQ(before.coop_l2g_min_tokens, kCoopL2gMinTokens);
  EXPECT_EQ(before.coop_l2g_min_tokens_light, kCoopL2gMinTokensLight);
  EXPECT_EQ(before.coop_l2g_epilogue_warps, kCoopL2gEpilogueWarps);
  EXPECT_EQ(before.coop_l2g_light_min_tiles, kCoopL2gLightMinTiles);
  EXPECT_EQ(before.coop_l2g_epilogue_rows, kCoopL2gEpilogueRows);
  EXPECT_EQ(before.coop_l2g_epilogue_rows_16k, kCoopL2gEpilogueRows16k);
  EXPECT_EQ(before.coop_l2g_epilogue_rows_fp, 128) << "fp32 / bf16 tiles whole on the epilogue warps until v48 is measured";
  EXPECT_FALSE(coop_l2g_shares(StateFormat::fp32));
  EXPECT_EQ(before.coop_l2g_g_slices, 1) << "one G slice a block until v50 is measured";
  EXPECT_EQ(before.coop_l2g_staged, 0) << "the epilogue warps load into registers until v51 is measured";
  EXPECT_EQ(before.coop_l2g_min_tokens_int8, kCoopL2gMinTokensInt8);
  EXPECT_EQ(before.coop_ilv_min_tokens, 0) << "the interleaved form is opt-in until the runner measures it";
  // The G-through-L2 form: built for rules that declare state; heavy epilogues (fp32 state, two or
  // more slots kept) anywhere, lighter ones where the rule keeps every slot it declares, on layers of
  // enough tiles, INT8 state by its own threshold (measured, kernels/gpu/NOTES.md v41, v42).
  EXPECT_TRUE(coop_l2g_builds(1));
  EXPECT_TRUE(coop_l2g_builds(3));
  EXPECT_FALSE(coop_l2g_builds(0));
  const int64_t many = kCoopL2gLightMinTiles, few = kCoopL2gLightMinTiles - 1;
  EXPECT_EQ(coop_l2g_class(StateFormat::fp32, 2, 2, few, many), CoopL2gClass::heavy);
  EXPECT_EQ(coop_l2g_class(StateFormat::fp32, 3, 2, few, many), CoopL2gClass::heavy);
  EXPECT_EQ(coop_l2g_class(StateFormat::fp32, 1, 1, many, many), CoopL2gClass::light);
  EXPECT_EQ(coop_l2g_class(StateFormat::fp32, 1, 1, few, many), CoopL2gClass::none);
  EXPECT_EQ(coop_l2g_class(StateFormat::fp32, 3, 1, many, many), CoopL2gClass::none);  // RMSprop's default
  EXPECT_EQ(coop_l2g_class(StateFormat::bf16, 2, 2, many, many), CoopL2gClass::light);
  EXPECT_EQ(coop_l2g_class(StateFormat::bf16, 2, 2, few, many), CoopL2gClass::none);
  EXPECT_EQ(coop_l2g_class(StateFormat::int8, 2, 2, few, many), CoopL2gClass::int8);
  EXPECT_EQ(coop_l2g_class(StateFormat::int8, 3, 1, few, many), CoopL2gClass::int8);
  EXPECT_EQ(coop_l2g_class(StateFormat::int8, 1, 0, many, many), CoopL2gClass::none);
  EXPECT_EQ(coop_l2g_class(StateFormat::fp32, 1, 0, many, many), CoopL2gClass::none);
  // Counted as the rule keeps them: RMSprop keeps one slot unless momentum or centered asks more.
  EXPECT_EQ(rule_kept_slots(default_rule_config(RuleId::adamw)), 2);
  EXPECT_EQ(rule_kept_slots(default_rule_config(RuleId::rmsprop)), 1);
  RuleConfig rms = default_rule_config(RuleId::rmsprop);
  std::get<RMSprop::Hyper>(rms.hyper).centered = true;
  std::get<RMSprop::Hyper>(rms.hyper).momentum = 0.9;
  EXPECT_EQ(rule_kept_slots(rms), 3);
  FusedSchedule mine = before;
  mine.stagger_us = 7;
  mine.stagger_stride = 3;
  mine.coop_min_tokens = 0;
  mine.coop_group_rows = 1024;
  mine.coop_l2g_min_tokens = 4096;
  mine.coop_l2g_min_tokens_light = 4096;
  mine.coop_l2g_epilogue_warps = 2;
  mine.coop_l2g_light_min_tiles = 7;
  mine.coop_l2g_epilogue_rows = 40;
  mine.coop_l2g_epilogue_rows_16k = 128;
  mine.coop_l2g_epilogue_rows_fp = 88;
  mine.coop_l2g_g_slices = 2;
  mine.coop_l2g_staged = 1;
  mine.coop_l2g_min_tokens_int8 = 12288;
  mine.coop_split_max = 1;
  mine.coop_split_min_tokens = 8192;
  mine.coop_split_overhead_chunks = 0;
  mine.coop_split_gain_pct = 0;
  mine.coop_split_unit_chunks = 7;
  mine.coop_split_min_slice_tokens = 0;
  mine.coop_ilv_min_tokens = 4096;
  mine.coop_stagger_us = 500000;  // the last of three groups 10^6 us late: the limit itself
  mine.coop_stagger_groups = 3;
  set_fused_schedule(mine);
  EXPECT_EQ(fused_schedule().coop_stagger_us, 500000);
  EXPECT_EQ(fused_schedule().coop_stagger_groups, 3);
  EXPECT_EQ(fused_schedule().stagger_us, 7);
  EXPECT_EQ(fused_schedule().stagger_stride, 3);
  EXPECT_EQ(fused_schedule().coop_min_tokens, 0);
  EXPECT_EQ(fused_schedule().coop_group_rows, 1024);
  EXPECT_EQ(fused_schedule().coop_l2g_min_tokens, 4096);
  EXPECT_EQ(fused_schedule().coop_l2g_min_tokens_light, 4096);
  EXPECT_EQ(fused_schedule().coop_l2g_epilogue_warps, 2);
  EXPECT_EQ(fused_schedule().coop_l2g_light_min_tiles, 7);
  EXPECT_EQ(fused_schedule().coop_l2g_epilogue_rows, 40);
  EXPECT_EQ(fused_schedule().coop_l2g_epilogue_rows_16k, 128);
  EXPECT_EQ(fused_schedule().coop_l2g_epilogue_rows_fp, 88);
  EXPECT_EQ(fused_schedule().coop_l2g_g_slices, 2);
  EXPECT_EQ(fused_schedule().coop_l2g_staged, 1);
  EXPECT_TRUE(coop_l2g_shares(StateFormat::bf16));
  EXPECT_FALSE(coop_l2g_shares(StateFormat::int8));  // INT8 shares in its own kernel
  EXPECT_EQ(fused_schedule().coop_l2g_min_tokens_int8, 12288);
  EXPECT_EQ(fused_schedule().coop_split_max, 1);
  EXPECT_EQ(fused_schedule().coop_split_min_tokens, 8192);
  EXPECT_EQ(fused_schedule().coop_split_overhead_chunks, 0);
  EXPECT_EQ(fused_schedule().coop_split_gain_pct, 0);
  EXPECT_EQ(fused_schedule().coop_split_unit_chunks, 7);
  EXPECT_EQ(fused_schedule().coop_split_min_slice_tokens, 0);
  EXPECT_EQ(fused_schedule().coop_ilv_min_tokens, 4096);
  set_fused_schedule(before);
  EXPECT_EQ(auto_stagger_us(StateFormat::fp32), 10);
  EXPECT_EQ(auto_stagger_us(StateFormat::bf16), 0);
}

}  // namespace
// The interleaved epilogue's geometry: both consumers' 256 threads over a 128 x 256 tile.
struct IlvWholeTile {
  static constexpr int TC = 256, kThreads = 256;
};

// The interleaved epilogue (fused_wgrad_coop_ilv.cuh): at every tile length from 1 to 5000 chunks the
// passes done never go back, every chunk does at most ceil(32 / chunks) + 1 of them, and all 32 are
// done by the last chunk (and the same for the 128 elements of v47's pacing); the 256 consumer threads' 32 passes cover the 128 x 256 tile's quads once.
// The same for the elements (v47's pacing: 128 a thread a tile).
TEST(CoopIlv, PacingFinishesEveryPassByTheLastChunk) {
  for (const int total : {kIlvPasses, kIlvElements})
    for (int64_t n = 1; n <= 5000; ++n) {
      int done = 0;
      for (int64_t c = 0; c < n; ++c) {
        const int upto = total == kIlvPasses ? ilv_passes_by(c, n) : ilv_elements_by(c, n);
        ASSERT_GE(upto, done) << "chunk " << c << " of " << n << " goes back";
        ASSERT_LE(upto - done, (total + n - 1) / n + 1) << "chunk " << c << " of " << n;
        done = upto;
      }
      ASSERT_EQ(done, total) << n << " chunks leave " << (total == kIlvPasses ? "passes" : "elements") << " undone";
    }
  std::vector<int> seen(128 * 256, 0);
  for (int t = 0; t < 256; ++t)
    for (int j = 0; j < kIlvPasses; ++j) {
      const FragCoord q = epilogue_quad<IlvWholeTile>(t, j);
      ASSERT_TRUE(q.row >= 0 && q.row < 128 && q.col >= 0 && q.col + 3 < 256 && q.col % 4 == 0);
      for (int b = 0; b < 4; ++b) ++seen[size_t(q.row * 256 + q.col + b)];
    }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 128 * 256);
}

}  // namespace fh::gpu
