// The non-separable rules' exact schedules on the GPU (nonseparable_gpu.h). The twin's step
// functions (kernels/twin/nonseparable_rules.cpp) are the host side of the same schedule; each
// pass here mirrors one call of the twin's G source, with the same element code and chain order.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/gpu/fused_wgrad_update.cuh"
#include "kernels/gpu/nonseparable_gpu.h"
#include "kernels/rules/nonseparable_elements.h"

namespace fh::gpu {

namespace {

using NsCfg = WgradTileCfg<128, 128>;  // the mainloop's tile: the statistics grid
constexpr int kT = 128;
constexpr int kLd = kT + 1;  // row stride of a shared tile: row chains (a thread a row) and column
                             // chains (a thread a column) are both conflict free
constexpr size_t kTileFloats = size_t(kT) * kLd;
constexpr size_t kValueBytes = (2 * kTileFloats + kT) * sizeof(float);  // two value tiles + row sums
constexpr size_t kNsSmemBytes =
    (NsCfg::kOperandBytes > kValueBytes ? NsCfg::kOperandBytes : kValueBytes) + NsCfg::kAlignSlack;
static_assert(kT == NsCfg::TR && kT == NsCfg::TC && kNsGpuTile == kT, "the statistics grid is the mainloop's tile");

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// One tile of a pass, as its block sees it: two value tiles and a row-sum scratch in shared
// memory (v0 holds G on entry), its place in the tensor and on the grid.
struct NsTile {
  float *v0, *v1, *row_sums;
  int64_t r0, c0, rows, cols;
  int nr, nc;
  int64_t tile_row, tile_col, n_tile_cols;
  __device__ int64_t id() const { return tile_row * n_tile_cols + tile_col; }
  __device__ float& at(float* v, int r, int c) const { return v[r * kLd + c]; }
};

// fn(r, c, i): every element of the tile, local (r, c) and the tensor index i; a warp takes 32
// consecutive columns of a row (coalesced state, conflict-free shared tiles).
template <class Fn>
__device__ void ns_for_each(const NsTile& t, Fn&& fn) {
  for (int e = threadIdx.x; e < kT * kT; e += blockDim.x) {
    const int r = e / kT, c = e % kT;
    if (r < t.nr && c < t.nc) fn(r, c, (t.r0 + r) * t.cols + t.c0 + c);
  }
}
// dst[i] = the chain (a sum from +0, or a max from 0) over v[i * across + j * along], j < length,
// for i < count; a thread a chain (rows: across kLd, along 1; columns: across 1, along kLd).
template <bool kMax>
__device__ void ns_chains(int count, int length, int across, int along, const float* v, float* dst) {
  for (int i = threadIdx.x; i < count; i += blockDim.x) {
    float s = 0.0f;
    for (int j = 0; j < length; ++j) s = kMax ? ns_fmax(s, v[i * across + j * along]) : fadd(s, v[i * across + j * along]);
    dst[i] = s;
  }
}
template <bool kMax>
__device__ void ns_row_chains(const NsTile& t, const float* v, float* dst) { ns_chains<kMax>(t.nr, t.nc, kLd, 1, v, dst); }
template <bool kMax>
__device__ void ns_col_chains(const NsTile& t, const float* v, float* dst) { ns_chains<kMax>(t.nc, t.nr, 1, kLd, v, dst); }
// *part = the tile's sum of v in ns_tile_chain's order (row chains in parallel, then the rows).
__device__ void ns_tile_sum(const NsTile& t, const float* v, float* part) {
  ns_row_chains<false>(t, v, t.row_sums);
  __syncthreads();
  if (threadIdx.x == 0) *part = ns_chain(t.nr, [&](int64_t r) { return t.row_sums[r]; });
  __syncthreads();
}

// One pass over the tiles: the block's G tile into v0 (from the mainloop, or from a materialized
// G), then the pass's code on it.
template <bool kFused, class Pass>
__global__ void __launch_bounds__(NsCfg::kThreads, 1)
    ns_tile_kernel(WgradTileArgs a, const float* g, int64_t rows, int64_t cols, Pass pass) {
  extern __shared__ __align__(16) unsigned char ns_smem[];
  unsigned char* base = align_to_atom(ns_smem);
  NsTile t;
  t.v0 = reinterpret_cast<float*>(base);
  t.v1 = t.v0 + kTileFloats;
  t.row_sums = t.v1 + kTileFloats;
  t.tile_row = blockIdx.y;
  t.tile_col = blockIdx.x;
  t.n_tile_cols = gridDim.x;
  t.r0 = t.tile_row * kT;
  t.c0 = t.tile_col * kT;
  t.rows = rows;
  t.cols = cols;
  t.nr = int(min(int64_t(kT), rows - t.r0));
  t.nc = int(min(int64_t(kT), cols - t.c0));
  if constexpr (kFused) {
    float acc[NsCfg::kMT][NsCfg::kNT][4];
    wgrad_mainloop<NsCfg>(a, t.r0, t.c0, reinterpret_cast<uint16_t*>(base), acc);  // ends on a barrier
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll
    for (int mt = 0; mt < NsCfg::kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NsCfg::kNT; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const FragCoord fc = acc_tile_coord<NsCfg>(warp, lane, mt, nt, i);
          t.v0[fc.row * kLd + fc.col] = acc[mt][nt][i];
        }
  } else {
    ns_for_each(t, [&](int r, int c, int64_t i) { t.v0[r * kLd + c] = g[i]; });
  }
  __syncthreads();
  pass(t);
}

// fn(r, c, i) over every element of a rows x cols tensor, grid-stride.
template <class Fn>
__global__ void ns_elements_kernel(int64_t rows, int64_t cols, Fn fn) {
  const int64_t n = rows * cols;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    fn(i / cols, i % cols, i);
}

// out[i] = parts[k * width + i] over k, summed from +0 in ascending k (descending: the planted
// defect) or maximised from 0; a thread a statistic.
template <bool kMax>
__global__ void ns_reduce_kernel(const float* parts, int64_t n, int64_t width, float* out, bool reversed) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= width) return;
  float s = 0.0f;
  for (int64_t q = 0; q < n; ++q) {
    const float x = parts[(reversed ? n - 1 - q : q) * width + i];
    s = kMax ? ns_fmax(s, x) : fadd(s, x);
  }
  out[i] = s;
}

// ---- the passes (one per call of the twin's G source) ----

// A tensor sum of squares of the source (||g||^2 of G, ||w||^2 of w, Muon's ||X||^2).
struct SumSqPass {
  float* part;
  __device__ void operator()(const NsTile& t) const {
    ns_for_each(t, [&](int r, int c, int64_t) { t.at(t.v0, r, c) = ns_square(t.at(t.v0, r, c)); });
    __syncthreads();
    ns_tile_sum(t, t.v0, &part[t.id()]);
  }
};
struct LambPass1 {
  LambScalars s;
  const float* w;
  float *m, *v, *w_part, *u_part;
  __device__ void operator()(const NsTile& t) const {
    ns_for_each(t, [&](int r, int c, int64_t i) {
      float mi = m[i], vi = v[i];
      const float wi = w[i];
      lamb_moments(s, t.at(t.v0, r, c), mi, vi);
      m[i] = mi;
      v[i] = vi;
      t.at(t.v0, r, c) = ns_square(lamb_direction(s, mi, vi, wi));
      t.at(t.v1, r, c) = ns_square(wi);
    });
    __syncthreads();
    ns_tile_sum(t, t.v1, &w_part[t.id()]);
    ns_tile_sum(t, t.v0, &u_part[t.id()]);
  }
};
// Row (and column) chains of g^2 + add into the per-tile-column (per-tile-row) partials.
template <bool kCols>
struct SquarePlusChainsPass {
  float add;
  float *row_part, *col_part;  // [n_tile_cols][rows], [n_tile_rows][cols]
  float* m = nullptr;          // Adam-mini: its first moment, updated on the way
  AdamMiniScalars s{};
  __device__ void operator()(const NsTile& t) const {
    ns_for_each(t, [&](int r, int c, int64_t i) {
      const float g = t.at(t.v0, r, c);
      if (m) m[i] = ns_moving(s.b1, s.omb1, m[i], g);
      t.at(t.v0, r, c) = ns_square_plus(g, add);
    });
    __syncthreads();
    ns_row_chains<false>(t, t.v0, row_part + t.tile_col * t.rows + t.r0);
    if (kCols) ns_col_chains<false>(t, t.v0, col_part + t.tile_row * t.cols + t.c0);
  }
};
struct AdafactorUSqPass {
  const float *row, *col, *row_total;
  float* part;
  __device__ void operator()(const NsTile& t) const {
    const float total = *row_total;
    ns_for_each(t, [&](int r, int c, int64_t) {
      t.at(t.v0, r, c) = ns_square(adafactor_update(t.at(t.v0, r, c), row[t.r0 + r], col[t.c0 + c], total));
    });
    __syncthreads();
    ns_tile_sum(t, t.v0, &part[t.id()]);
  }
};
struct AdafactorWeightPass {
  const float *row, *col, *row_total;
  float* w;
  float step_size;
  __device__ void operator()(const NsTile& t) const {
    const float total = *row_total;
    ns_for_each(t, [&](int r, int c, int64_t i) {
      w[i] = fsub(w[i], fmul(step_size, adafactor_update(t.at(t.v0, r, c), row[t.r0 + r], col[t.c0 + c], total)));
    });
  }
};
// SM3: row and column maxima of the values fn leaves in v0 (SM3-I: g^2; SM3-II: nu, after the
// weight), into the per-tile partials.
struct Sm3Pass {
  bool second;  // SM3-II: update the weights with the previous maxima here
  float lr;
  const float *row, *col;
  float* w;
  float *row_part, *col_part;
  __device__ void operator()(const NsTile& t) const {
    ns_for_each(t, [&](int r, int c, int64_t i) {
      const float g = t.at(t.v0, r, c);
      if (second) {
        const float nu = fadd(ns_fmin(row[t.r0 + r], col[t.c0 + c]), ns_square(g));
        w[i] = sm3_weight(w[i], lr, g, nu);
        t.at(t.v0, r, c) = nu;
      } else {
        t.at(t.v0, r, c) = ns_square(g);
      }
    });
    __syncthreads();
    ns_row_chains<true>(t, t.v0, row_part + t.tile_col * t.rows + t.r0);
    ns_col_chains<true>(t, t.v0, col_part + t.tile_row * t.cols + t.c0);
  }
};
struct Sm3WeightPass {
  float lr;
  const float *row, *col;
  float* w;
  __device__ void operator()(const NsTile& t) const {
    ns_for_each(t, [&](int r, int c, int64_t i) {
      w[i] = sm3_weight(w[i], lr, t.at(t.v0, r, c), ns_fmin(row[t.r0 + r], col[t.c0 + c]));
    });
  }
};
struct LarsPass2 {
  LarsScalars s;
  float *m, *w;
  __device__ void operator()(const NsTile& t) const {
    ns_for_each(t, [&](int r, int c, int64_t i) {
      float mi = m[i], wi = w[i];
      lars_element(s, t.at(t.v0, r, c), mi, wi);
      m[i] = mi;
      w[i] = wi;
    });
  }
};
struct MuonPass1 {
  MuonScalars s;
  float* m;
  __device__ void operator()(const NsTile& t) const {
    ns_for_each(t, [&](int r, int c, int64_t i) { m[i] = muon_momentum(s, m[i], t.at(t.v0, r, c)); });
  }
};

// ---- element-wise steps over stored state (no G) ----

struct LambWeight {
  LambScalars s;
  float step_size;
  const float *m, *v;
  float* w;
  __device__ void operator()(int64_t, int64_t, int64_t i) const {
    w[i] = fsub(w[i], fmul(step_size, lamb_direction(s, m[i], v[i], w[i])));
  }
};
struct AdamMiniWeight {
  AdamMiniScalars s;
  int64_t rows_per_block, n_blocks, shift;
  const float *m, *vb;
  float* w;
  __device__ void operator()(int64_t r, int64_t, int64_t i) const {
    w[i] = adam_mini_weight(s, w[i], m[i], vb[ns_adam_mini_block(r, rows_per_block, n_blocks, shift)]);
  }
};
// Adam-mini's block second moments: block b's rows (in ascending row), their row sums chained, the
// mean, the moving average. A thread a block.
__global__ void adam_mini_blocks_kernel(const float* row_sums, int64_t rows, int64_t cols, int64_t rows_per_block,
                                        int64_t n_blocks, int64_t shift, AdamMiniScalars s, float* vb) {
  const int64_t b = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= n_blocks) return;
  float sum = 0.0f, count = 0.0f;
  for (int64_t r = 0; r < rows; ++r) {
    if (ns_adam_mini_block(r, rows_per_block, n_blocks, shift) != b) continue;
    sum = fadd(sum, row_sums[r]);
    count = fadd(count, float(cols));
  }
  vb[b] = ns_moving(s.b2, s.omb2, vb[b], fdiv(sum, count));
}
// Adafactor's R and C moving averages (a thread a row or column), then 1^T R (one thread).
struct MovingStat {
  float beta, omb;
  const float* x;
  float* stat;
  __device__ void operator()(int64_t, int64_t, int64_t i) const { stat[i] = ns_moving(beta, omb, stat[i], x[i]); }
};
__global__ void chain_kernel(const float* x, int64_t n, float* out) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *out = ns_chain(n, [&](int64_t i) { return x[i]; });
}
struct AddStat {  // SM3-I: mu <- mu + this step's maximum
  const float* x;
  float* stat;
  __device__ void operator()(int64_t, int64_t, int64_t i) const { stat[i] = fadd(stat[i], x[i]); }
};

// ---- Muon's Newton-Schulz ----

// X [n, k] = B [rows, cols] turned to the wide side.
struct ToWide {
  const float* b;
  int64_t cols;
  bool tall;
  float* x;
  __device__ void operator()(int64_t i, int64_t j, int64_t e) const { x[e] = tall ? b[j * cols + i] : b[i * cols + j]; }
};
struct ScaleByNorm {
  const float* sq;
  float* x;
  __device__ void operator()(int64_t, int64_t, int64_t e) const { x[e] = fdiv(x[e], fadd(fsqrt(*sq), kNsNormEps)); }
};
struct MuonWeight {
  MuonScalars s;
  const float* x;  // O on the wide side, [n, k]
  int64_t k;
  bool tall;
  float* w;
  __device__ void operator()(int64_t r, int64_t c, int64_t i) const {
    w[i] = muon_weight(s, w[i], tall ? x[c * k + r] : x[r * k + c]);
  }
};
// C [ni, nj] = epilogue(E, acc), acc[i][j] an fp32 chain from +0 over l ascending of P[i][l] Q(l, j),
// Q(l, j) = Q[j][l] (kQT) or Q[l][j]. Mode 0: acc; 1: ce E + ca acc; 2: ce E + acc. 64 x 64 outputs
// a block of 16 x 16 threads, each 4 x 4 (rows ty + 16 a, columns tx + 16 b).
template <bool kQT, int kMode>
__global__ void __launch_bounds__(256) ns_chain_gemm_kernel(int64_t ni, int64_t nj, int64_t K, const float* P, int64_t ldp,
                                                            const float* Q, int64_t ldq, const float* E, int64_t lde,
                                                            float ce, float ca, float* C, int64_t ldc) {
  constexpr int BM = 64, BN = 64, BK = 16;
  __shared__ float sP[BM][BK + 1];
  __shared__ float sQ[BK][BN];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16, tid = threadIdx.x;
  const int64_t i0 = int64_t(blockIdx.y) * BM, j0 = int64_t(blockIdx.x) * BN;
  float acc[4][4] = {};
  for (int64_t l0 = 0; l0 < K; l0 += BK) {
    for (int e = tid; e < BM * BK; e += 256) {
      const int m = e / BK, kk = e % BK;
      sP[m][kk] = (i0 + m < ni && l0 + kk < K) ? P[(i0 + m) * ldp + l0 + kk] : 0.0f;
    }
    for (int e = tid; e < BK * BN; e += 256) {
      const int kk = kQT ? e % BK : e / BN, j = kQT ? e / BK : e % BN;
      sQ[kk][j] = (j0 + j < nj && l0 + kk < K) ? (kQT ? Q[(j0 + j) * ldq + l0 + kk] : Q[(l0 + kk) * ldq + j0 + j]) : 0.0f;
    }
    __syncthreads();
    const int kmax = int(min(int64_t(BK), K - l0));
    for (int kk = 0; kk < kmax; ++kk)
#pragma unroll
      for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int b = 0; b < 4; ++b) acc[a][b] = fadd(acc[a][b], fmul(sP[ty + 16 * a][kk], sQ[kk][tx + 16 * b]));
    __syncthreads();
  }
#pragma unroll
  for (int a = 0; a < 4; ++a)
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const int64_t i = i0 + ty + 16 * a, j = j0 + tx + 16 * b;
      if (i >= ni || j >= nj) continue;
      float out = acc[a][b];
      if (kMode == 1) out = fadd(fmul(ce, E[i * lde + j]), fmul(ca, acc[a][b]));
      if (kMode == 2) out = fadd(fmul(ce, E[i * lde + j]), acc[a][b]);
      C[i * ldc + j] = out;
    }
}

// ---- the host side ----

// The scratch's regions (floats from the start).
struct Workspace {
  int64_t row_part, col_part, t_part0, t_part1, rows_red, cols_red, scalars, x, xn, a, bm, total;
  Workspace(NsRule rule, int64_t rows, int64_t cols) {
    const int64_t ntr = ceil_div(rows, kT), ntc = ceil_div(cols, kT), tiles = ntr * ntc;
    int64_t o = 0;
    auto take = [&](int64_t n) { const int64_t at = o; o += (n + 31) / 32 * 32; return at; };
    row_part = take(ntc * rows);
    col_part = take(ntr * cols);
    t_part0 = take(tiles);
    t_part1 = take(tiles);
    rows_red = take(rows);
    cols_red = take(cols);
    scalars = take(8);
    const int64_t n = std::min(rows, cols), k = std::max(rows, cols);
    const bool muon = rule == NsRule::muon;
    x = take(muon ? n * k : 0);
    xn = take(muon ? n * k : 0);
    a = take(muon ? n * n : 0);
    bm = take(muon ? n * n : 0);
    total = o;
  }
};

struct Launcher {
  const NsGpuSource& src;
  int64_t rows, cols;
  cudaStream_t stream;

  template <bool kFused, class Pass>
  void tiles_impl(const WgradTileArgs& a, const float* g, int64_t r, int64_t c, const Pass& pass) const {
    auto kernel = ns_tile_kernel<kFused, Pass>;
    static const bool smem_ok = set_smem_limit(kernel, kNsSmemBytes, "ns_tile_kernel: cudaFuncSetAttribute");
    (void)smem_ok;
    const dim3 grid(unsigned(ceil_div(c, kT)), unsigned(ceil_div(r, kT)));
    kernel<<<grid, NsCfg::kThreads, kNsSmemBytes, stream>>>(a, g, r, c, pass);
    cuda_check(cudaGetLastError(), "ns_tile_kernel: launch");
  }
  // A pass over G from the step's source.
  template <class Pass>
  void over_g(const Pass& pass) const {
    if (src.g) return tiles_impl<false>(WgradTileArgs{}, src.g, rows, cols, pass);
    tiles_impl<true>(make_tile_args(src.prob), nullptr, rows, cols, pass);
  }
  // A pass over a stored r x c tensor (w, Muon's X) on the same grid.
  template <class Pass>
  void over(const float* x, int64_t r, int64_t c, const Pass& pass) const {
    tiles_impl<false>(WgradTileArgs{}, x, r, c, pass);
  }
  template <class Fn>
  void elements(int64_t r, int64_t c, const Fn& fn) const {
    const int64_t n = r * c;
    const unsigned blocks = unsigned(std::min<int64_t>(ceil_div(n, 256), 132 * 16));
    ns_elements_kernel<<<blocks, 256, 0, stream>>>(r, c, fn);
    cuda_check(cudaGetLastError(), "ns_elements_kernel: launch");
  }
  template <bool kMax>
  void reduce(const float* parts, int64_t n, int64_t width, float* out, bool reversed) const {
    ns_reduce_kernel<kMax><<<unsigned(ceil_div(width, 128)), 128, 0, stream>>>(parts, n, width, out, reversed);
    cuda_check(cudaGetLastError(), "ns_reduce_kernel: launch");
  }
  void chain(const float* x, int64_t n, float* out) const {
    chain_kernel<<<1, 32, 0, stream>>>(x, n, out);
    cuda_check(cudaGetLastError(), "chain_kernel: launch");
  }
  template <bool kQT, int kMode>
  void gemm(int64_t ni, int64_t nj, int64_t K, const float* P, int64_t ldp, const float* Q, int64_t ldq, const float* E,
            int64_t lde, float ce, float ca, float* C, int64_t ldc) const {
    const dim3 grid(unsigned(ceil_div(nj, 64)), unsigned(ceil_div(ni, 64)));
    ns_chain_gemm_kernel<kQT, kMode><<<grid, 256, 0, stream>>>(ni, nj, K, P, ldp, Q, ldq, E, lde, ce, ca, C, ldc);
    cuda_check(cudaGetLastError(), "ns_chain_gemm_kernel: launch");
  }
  std::vector<float> read(const float* d, int64_t n) const {
    std::vector<float> h(static_cast<size_t>(n));
    cuda_check(cudaMemcpyAsync(h.data(), d, size_t(n) * sizeof(float), cudaMemcpyDeviceToHost, stream), "ns: statistic read");
    cuda_check(cudaStreamSynchronize(stream), "ns: statistic read");
    return h;
  }
};

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("ns_gpu_step: " + what);
}

}  // namespace

int64_t ns_gpu_workspace_floats(NsRule rule, int64_t rows, int64_t cols) {
  return Workspace(rule, rows, cols).total;
}

int ns_gpu_step(const NsDeviceParam& p, const NsHyper& h, int64_t step, const NsGpuSource& src, float* scratch,
                const NsGpuPlants& plants, cudaStream_t stream) {
  h.validate();
  require(step >= 1, "step counts from 1");
  require(p.rows > 0 && p.cols > 0 && p.w && scratch, "shape, weights and scratch must be given");
  require(ceil_div(p.rows, kT) <= 65535, "too many tile rows for the grid");
  if (!src.g) {
    validate_problem(src.prob, "ns_gpu_step");
    require(src.prob.out == p.rows && src.prob.in == p.cols, "the problem's out x in must be the parameter's shape");
  }
  const bool has_m = p.rule == NsRule::lamb || p.rule == NsRule::adam_mini || p.rule == NsRule::lars ||
                     p.rule == NsRule::muon;
  require(!has_m || p.m, "this rule needs m");
  require(p.rule != NsRule::lamb || p.v, "lamb needs v");
  require(p.rule == NsRule::lamb || p.rule == NsRule::lars || p.rule == NsRule::muon || p.row_stat,
          "this rule needs its row statistic");
  require(!(p.rule == NsRule::adafactor || p.rule == NsRule::sm3_i || p.rule == NsRule::sm3_ii) || p.col_stat,
          "this rule needs its column statistic");
  require(p.rule != NsRule::adam_mini || p.rows % h.rows_per_block == 0, "adam_mini's rows_per_block must divide the rows");

  const int64_t rows = p.rows, cols = p.cols, P = rows * cols;
  const int64_t ntr = ceil_div(rows, kT), ntc = ceil_div(cols, kT), tiles = ntr * ntc;
  const Workspace ws(p.rule, rows, cols);
  float* const row_part = scratch + ws.row_part;
  float* const col_part = scratch + ws.col_part;
  float* const t0 = scratch + ws.t_part0;
  float* const t1 = scratch + ws.t_part1;
  float* const rows_red = scratch + ws.rows_red;
  float* const cols_red = scratch + ws.cols_red;
  float* const sc = scratch + ws.scalars;  // [0], [1]: reduced tensor sums; [2]: Adafactor's 1^T R
  const bool rev = plants.reversed_tile_sum;
  const Launcher L{src, rows, cols, stream};

  switch (p.rule) {
    case NsRule::lamb: {
      const LambScalars s = ns_lamb_scalars(h, step);
      L.over_g(LambPass1{s, p.w, p.m, p.v, t0, t1});
      L.reduce<false>(t0, tiles, 1, sc + 0, rev);
      L.reduce<false>(t1, tiles, 1, sc + 1, rev);
      const std::vector<float> st = L.read(sc, 2);
      L.elements(rows, cols, LambWeight{s, ns_lamb_step_size(h, st[0], st[1]), p.m, p.v, p.w});
      return 1;
    }
    case NsRule::adam_mini: {
      const AdamMiniScalars s = ns_adam_mini_scalars(h, step);
      SquarePlusChainsPass<false> pass{0.0f, row_part, col_part, p.m, s};
      L.over_g(pass);
      L.reduce<false>(row_part, ntc, rows, rows_red, rev);
      const int64_t n_blocks = rows / h.rows_per_block, shift = plants.block_shifted_one_row ? 1 : 0;
      adam_mini_blocks_kernel<<<unsigned(ceil_div(n_blocks, 128)), 128, 0, stream>>>(rows_red, rows, cols, h.rows_per_block,
                                                                                   n_blocks, shift, s, p.row_stat);
      cuda_check(cudaGetLastError(), "adam_mini_blocks_kernel: launch");
      L.elements(rows, cols, AdamMiniWeight{s, h.rows_per_block, n_blocks, shift, p.m, p.row_stat, p.w});
      return 1;
    }
    case NsRule::adafactor: {
      const AdafactorScalars s = ns_adafactor_scalars(h, step);
      L.over_g(SquarePlusChainsPass<true>{s.eps1, row_part, col_part});
      L.reduce<false>(row_part, ntc, rows, rows_red, rev);
      L.reduce<false>(col_part, ntr, cols, cols_red, rev);
      L.over(p.w, rows, cols, SumSqPass{t0});
      L.reduce<false>(t0, tiles, 1, sc + 0, rev);  // ||w||^2
      L.elements(1, rows, MovingStat{s.beta2t, s.omb2t, rows_red, p.row_stat});
      L.elements(1, cols, MovingStat{s.beta2t, s.omb2t, cols_red, p.col_stat});
      L.chain(p.row_stat, rows, sc + 2);
      L.over_g(AdafactorUSqPass{p.row_stat, p.col_stat, sc + 2, t1});
      L.reduce<false>(t1, tiles, 1, sc + 1, rev);  // ||U||^2
      const std::vector<float> st = L.read(sc, 2);
      L.over_g(AdafactorWeightPass{p.row_stat, p.col_stat, sc + 2, p.w, ns_adafactor_step_size(h, st[1], st[0], P)});
      return 3;
    }
    case NsRule::sm3_i: {
      L.over_g(Sm3Pass{false, 0.0f, nullptr, nullptr, nullptr, row_part, col_part});
      L.reduce<true>(row_part, ntc, rows, rows_red, false);
      L.reduce<true>(col_part, ntr, cols, cols_red, false);
      L.elements(1, rows, AddStat{rows_red, p.row_stat});
      L.elements(1, cols, AddStat{cols_red, p.col_stat});
      L.over_g(Sm3WeightPass{round_scalar(h.lr), p.row_stat, p.col_stat, p.w});
      return 2;
    }
    case NsRule::sm3_ii: {
      L.over_g(Sm3Pass{true, round_scalar(h.lr), p.row_stat, p.col_stat, p.w, row_part, col_part});
      L.reduce<true>(row_part, ntc, rows, p.row_stat, false);  // after the pass: the old maxima are read first
      L.reduce<true>(col_part, ntr, cols, p.col_stat, false);
      return 1;
    }
    case NsRule::lars: {
      L.over_g(SumSqPass{t1});
      L.over(p.w, rows, cols, SumSqPass{t0});
      L.reduce<false>(t0, tiles, 1, sc + 0, rev);  // ||w||^2
      L.reduce<false>(t1, tiles, 1, sc + 1, rev);  // ||g||^2
      const std::vector<float> st = L.read(sc, 2);
      L.over_g(LarsPass2{ns_lars_scalars(h, st[0], st[1]), p.m, p.w});
      return 2;
    }
    case NsRule::muon: {
      const MuonScalars s = ns_muon_scalars(h, rows, cols);
      L.over_g(MuonPass1{s, p.m});
      const bool tall = rows > cols;
      const int64_t n = tall ? cols : rows, k = tall ? rows : cols;
      float* X = scratch + ws.x;
      float* Xn = scratch + ws.xn;
      float* A = scratch + ws.a;
      float* Bm = scratch + ws.bm;
      L.elements(n, k, ToWide{p.m, cols, tall, X});
      L.over(X, n, k, SumSqPass{t0});
      L.reduce<false>(t0, ceil_div(n, kT) * ceil_div(k, kT), 1, sc + 0, rev);
      L.elements(n, k, ScaleByNorm{sc + 0, X});
      for (int it = 0; it < h.ns_steps; ++it) {
        L.gemm<true, 0>(n, n, k, X, k, X, k, nullptr, 0, 0.0f, 0.0f, A, n);       // A = X X^T
        L.gemm<false, 1>(n, n, n, A, n, A, n, A, n, kNsB, kNsC, Bm, n);           // B = b A + c A A
        L.gemm<false, 2>(n, k, n, Bm, n, X, k, X, k, kNsA, 0.0f, Xn, k);          // X = a X + B X
        std::swap(X, Xn);
      }
      L.elements(rows, cols, MuonWeight{s, X, k, tall, p.w});
      return 1;
    }
  }
  throw std::invalid_argument("ns_gpu_step: unknown rule");
}

}  // namespace fh::gpu
