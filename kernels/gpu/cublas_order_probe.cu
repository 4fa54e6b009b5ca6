// The order guard's probe and predictor (see cublas_order_probe.h for how the probe reads the
// order). Host code except for the cuBLAS / cuBLASLt calls; no kernel of its own. Producers only:
// the comparison with the predictions is in suites/claims/order_probe_judge.cpp.
#include "kernels/gpu/cublas_order_probe.h"

#include <cublasLt.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <stdexcept>
#include <utility>

#include "kernels/common/ieee_shim.h"
#include "kernels/common/splitmix64.h"
#include "kernels/gpu/gpu_api.h"
#include "kernels/twin/mma_model.h"

namespace fh::gpu {

namespace {

void require_pair(const OrderProbePair& p, int64_t T, const char* who) {
  if (p.i < 0 || p.j <= p.i || p.j >= T)
    throw std::invalid_argument(std::string(who) + ": probe pair (" + std::to_string(p.i) + ", " +
                                std::to_string(p.j) + ") must satisfy 0 <= i < j < T = " + std::to_string(T));
}

int slice_of(const ReductionOrder& order, int64_t T, int64_t t) {
  for (int s = 0; s < order.split_k; ++s) {
    int64_t b, e;
    order.slice_bounds(T, s, b, e);
    if (t >= b && t < e) return s;
  }
  throw std::logic_error("cublas_order_probe: token outside every slice");
}

void lt_check(cublasStatus_t s, const char* what, std::string& note) {
  if (s != CUBLAS_STATUS_SUCCESS && note.empty())
    note = std::string(what) + ": " + cublasGetStatusName(s) + " (" + cublasGetStatusString(s) + ")";
}

}  // namespace

std::vector<OrderProbePair> order_probe_pairs(int64_t T, const ReductionOrder& predicted,
                                              int64_t max_pairs, uint64_t seed) {
  if (T < 2) throw std::invalid_argument("order_probe_pairs: the probe needs T >= 2 tokens, got " + std::to_string(T));
  if (max_pairs < 1) throw std::invalid_argument("order_probe_pairs: max_pairs must be >= 1");
  predicted.validate();
  const int64_t kg = predicted.k_group;
  std::vector<OrderProbePair> out;
  std::set<std::pair<int64_t, int64_t>> seen;
  auto add = [&](int64_t i, int64_t j, const char* kind) {
    if (i > j) std::swap(i, j);
    if (i < 0 || j >= T || i == j || int64_t(out.size()) >= max_pairs) return;
    if (!seen.insert({i, j}).second) return;
    out.push_back({i, j, kind});
  };
  // Boundaries first: the predicted slices, then splits nobody described (a change shows there).
  for (int s = 1; s < predicted.split_k; ++s) {
    int64_t b, e;
    predicted.slice_bounds(T, s, b, e);
    if (b <= 0 || b >= T) continue;
    add(b - 1, b, "split_boundary");
    add(b - kg, b + kg - 1, "split_boundary_wide");
    add(b, std::min(T - 1, b + 1), "split_first_of_slice");
  }
  for (int splits : {2, 3, 4, 8}) {
    if (splits == predicted.split_k) continue;
    const ReductionOrder other = cublas_wgrad_order(splits, predicted.split_round);
    for (int s = 1; s < splits; ++s) {
      int64_t b, e;
      other.slice_bounds(T, s, b, e);
      if (b > 0 && b < T) add(b - 1, b, "undescribed_split_boundary");
    }
  }
  // Instruction groups: mid-group pairs (a k8 or k32 instruction would end elsewhere), pairs
  // straddling a group edge, the ragged tail, and far apart.
  for (int64_t g : {int64_t(0), int64_t(1), T / kg / 2, T / kg - 1}) {
    add(g * kg + 2, g * kg + kg / 2 + 1, "same_group");
    add(g * kg + kg - 1, g * kg + kg, "adjacent_groups");
  }
  add(T - 2, T - 1, "ragged_tail");
  add(0, T - 1, "far_apart");
  add(1, T / 2, "far_apart");
  add(T / 3, 2 * T / 3 + 5, "far_apart");
  // Seeded random pairs fill the rest (every column of a wide layer probes one).
  uint64_t s = seed;
  for (int64_t guard = 0; int64_t(out.size()) < max_pairs && guard < 64 * max_pairs; ++guard) {
    const int64_t i = int64_t(splitmix64_next(s) % uint64_t(T)), j = int64_t(splitmix64_next(s) % uint64_t(T));
    add(i, j, "random");
  }
  return out;
}

std::vector<bf16> order_probe_x(int64_t T, int64_t in) {
  if (T < 1 || in < 1) throw std::invalid_argument("order_probe_x: T and in must be >= 1");
  return std::vector<bf16>(size_t(T * in), kOrderProbeOneBf16);
}

std::vector<bf16> order_probe_dy(int64_t T, int64_t out, const std::vector<OrderProbePair>& pairs) {
  if (T < 2 || out < 1) throw std::invalid_argument("order_probe_dy: need T >= 2 and out >= 1");
  if (pairs.empty()) throw std::invalid_argument("order_probe_dy: no probe pairs");
  for (const auto& p : pairs) require_pair(p, T, "order_probe_dy");
  std::vector<bf16> dy(size_t(T * out), kOrderProbeOneBf16);
  for (int64_t o = 0; o < out; ++o) {
    const OrderProbePair& p = pairs[size_t(o) % pairs.size()];
    dy[size_t(p.i * out + o)] = kOrderProbeBigBf16;
    dy[size_t(p.j * out + o)] = bf16::from_bits(uint16_t(kOrderProbeBigBf16.bits | 0x8000u));
  }
  return dy;
}

float predict_order_probe(int64_t T, const OrderProbePair& pair, const ReductionOrder& order) {
  require_pair(pair, T, "predict_order_probe");
  order.validate();
  std::vector<bf16> a(size_t(T), kOrderProbeOneBf16), b(size_t(T), kOrderProbeOneBf16);
  a[size_t(pair.i)] = kOrderProbeBigBf16;
  a[size_t(pair.j)] = bf16::from_bits(uint16_t(kOrderProbeBigBf16.bits | 0x8000u));
  const MmaModelParams p = order.model_params();
  float acc = 0.0f;
  for (int s = 0; s < order.split_k; ++s) {
    int64_t tb, te;
    order.slice_bounds(T, s, tb, te);
    const float part = mma_chain_dot(a.data() + tb, b.data() + tb, te - tb, 0.0f, p);
    acc = s == 0 ? part : fadd(acc, part);  // partials summed ascending from slice 0's value
  }
  return acc;
}

int64_t predict_order_probe_closed_form(int64_t T, const OrderProbePair& pair, const ReductionOrder& order) {
  require_pair(pair, T, "predict_order_probe_closed_form");
  order.validate();
  const int si = slice_of(order, T, pair.i), sj = slice_of(order, T, pair.j);
  int64_t total = 0;
  for (int s = 0; s < order.split_k; ++s) {
    int64_t b, e;
    order.slice_bounds(T, s, b, e);
    if (si == sj) {
      if (s != si) total += e - b;  // a slice of ones
      else {
        // Ones after the end of j's instruction group survive; everything before is absorbed.
        const int64_t group_end = std::min(e, b + ((pair.j - b) / order.k_group + 1) * order.k_group);
        total += e - group_end;
      }
    } else if (s > sj) {
      total += e - b;  // only the slices after the one that cancels +2^40 survive
    }
  }
  return total;
}

std::vector<float> cublas_order_probe_g(int64_t out, int64_t in, int64_t T, const std::vector<OrderProbePair>& pairs) {
  DeviceBuffer<bf16> x(order_probe_x(T, in)), dy(order_probe_dy(T, out, pairs));
  DeviceBuffer<float> g(size_t(out * in));
  CublasHandle h;
  cublas_wgrad(h.get(), WgradProblem{x.data(), dy.data(), T, out, in}, g.data());
  cuda_check(cudaDeviceSynchronize(), "run_cublas_order_probe: cublas_wgrad");
  return g.download();
}

CublasLtWgradAlgo cublaslt_wgrad_algo(int64_t out, int64_t in, int64_t T, size_t workspace_bytes) {
  if (out < 1 || in < 1 || T < 1 || out > (int64_t(1) << 31) || in > (int64_t(1) << 31) || T > (int64_t(1) << 31))
    throw std::invalid_argument("cublaslt_wgrad_algo: dimensions must be in [1, 2^31]");
  CublasLtWgradAlgo r;
  r.workspace_bytes = workspace_bytes;
  cublasLtHandle_t lt = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  std::string& note = r.note;
  lt_check(cublasLtCreate(&lt), "cublasLtCreate", note);
  if (note.empty()) lt_check(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate", note);
  // The wgrad call of cublas_wgrad: m = in, n = out, k = T; A = X [in x T] col-major (op N,
  // lda = in), B = dY read as [out x T] col-major with op T (ldb = out), C = D [in x out] (ldc = in).
  const cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_T;
  if (note.empty()) lt_check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "TRANSA", note);
  if (note.empty()) lt_check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "TRANSB", note);
  if (note.empty()) lt_check(cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, uint64_t(in), uint64_t(T), in), "layout A", note);
  if (note.empty()) lt_check(cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, uint64_t(out), uint64_t(T), out), "layout B", note);
  if (note.empty()) lt_check(cublasLtMatrixLayoutCreate(&c, CUDA_R_32F, uint64_t(in), uint64_t(out), in), "layout C", note);
  if (note.empty()) lt_check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate", note);
  if (note.empty())
    lt_check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                                  sizeof workspace_bytes), "PREF_MAX_WORKSPACE_BYTES", note);
  cublasLtMatmulHeuristicResult_t res[8];
  std::memset(res, 0, sizeof res);
  int returned = 0;
  if (note.empty())
    lt_check(cublasLtMatmulAlgoGetHeuristic(lt, op, a, b, c, c, pref, 8, res, &returned), "cublasLtMatmulAlgoGetHeuristic", note);
  if (note.empty() && returned < 1) note = "cublasLtMatmulAlgoGetHeuristic returned no algorithm";
  if (note.empty()) {
    r.candidates = returned;
    uint32_t splits = 0, scheme = 0;
    int32_t id = -1;
    size_t written = 0;
    lt_check(cublasLtMatmulAlgoConfigGetAttribute(&res[0].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits, sizeof splits, &written),
             "CUBLASLT_ALGO_CONFIG_SPLITK_NUM", note);
    lt_check(cublasLtMatmulAlgoConfigGetAttribute(&res[0].algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme, sizeof scheme, &written),
             "CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME", note);
    lt_check(cublasLtMatmulAlgoConfigGetAttribute(&res[0].algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &written),
             "CUBLASLT_ALGO_CONFIG_ID", note);
    if (note.empty()) {
      r.ok = true;
      r.split_k = splits > 1 ? int(splits) : 1;  // 0 and 1 both mean "no split"
      r.reduction_scheme = int(scheme);
      r.algo_id = int(id);
    }
  }
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  if (c) cublasLtMatrixLayoutDestroy(c);
  if (b) cublasLtMatrixLayoutDestroy(b);
  if (a) cublasLtMatrixLayoutDestroy(a);
  if (op) cublasLtMatmulDescDestroy(op);
  if (lt) cublasLtDestroy(lt);
  return r;
}

ReductionOrder described_cublas_order(const CublasLtWgradAlgo& algo) {
  return cublas_wgrad_order(algo.ok ? algo.split_k : 1);
}

}  // namespace fh::gpu
