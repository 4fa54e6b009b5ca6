#include "kernels/gpu/model_kernels_api.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/common/bf16.h"
#include "kernels/common/splitmix64.h"
#include "kernels/gpu/gpu_api.h"

// model_step.cu compiles these kernels into fh_cuda as well, and nvcc gives every __global__
// function an external host stub, so a second copy under the same names would collide when both
// objects are linked into one binary. This copy is compiled under another namespace: same source,
// same flags, so the same device code as the model step's. (The headers the kernel file includes
// come first, so that the renaming reaches only the kernel file itself.)
#define model model_kernels_api_copy
#include "kernels/gpu/model_kernels.cuh"
#undef model

namespace fh::gpu::model_api {
namespace {

namespace mk = fh::gpu::model_kernels_api_copy;

void require(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(std::string("model_api: ") + what);
}
void require_size(size_t got, int64_t want, const char* what) { require(want >= 0 && got == size_t(want), what); }

// A deliberately small grid for the grid-stride kernels, so that the larger test shapes also run
// their stride loop; their results do not depend on the grid.
int stride_grid(int64_t n) { return int(std::clamp<int64_t>((n + mk::kThreads - 1) / mk::kThreads, 1, 8)); }
// One thread per column.
int column_grid(int64_t n) { return int(std::max<int64_t>((n + mk::kThreads - 1) / mk::kThreads, 1)); }

void finish(const char* what) {
  cuda_check(cudaGetLastError(), what);
  cuda_check(cudaDeviceSynchronize(), what);
}

}  // namespace

std::vector<float> embedding(const std::vector<bf16>& e, const std::vector<int32_t>& tok, int64_t T, int64_t H) {
  require_size(tok.size(), T, "embedding: tok");
  require(H > 0 && e.size() % size_t(H) == 0, "embedding: E is not [V, H]");
  for (int32_t k : tok) require(k >= 0 && size_t(k) < e.size() / size_t(H), "embedding: token out of range");
  DeviceBuffer<bf16> de(e);
  DeviceBuffer<int32_t> dt(tok);
  DeviceBuffer<float> dx(size_t(T * H));
  if (T > 0) mk::embedding_kernel<<<stride_grid(T * H), mk::kThreads>>>(de.data(), dt.data(), dx.data(), T, H);
  finish("model_api::embedding");
  return dx.download();
}

void rmsnorm_fwd(const std::vector<float>& x, const std::vector<bf16>& g, int64_t T, int64_t H,
                 std::vector<bf16>& h, std::vector<float>& rstd) {
  require_size(x.size(), T * H, "rmsnorm_fwd: x");
  require_size(g.size(), H, "rmsnorm_fwd: g");
  DeviceBuffer<float> dx(x), dr{size_t(T)};
  DeviceBuffer<bf16> dg(g), dh(size_t(T * H));
  if (T > 0) mk::rmsnorm_fwd_kernel<<<int(T), mk::kThreads>>>(dx.data(), dg.data(), dh.data(), dr.data(), H);
  finish("model_api::rmsnorm_fwd");
  dh.download(h);
  dr.download(rstd);
}

void rmsnorm_bwd_dx(const std::vector<float>& x, const std::vector<bf16>& g, const std::vector<float>& rstd,
                    const std::vector<float>& dh, std::vector<float>& dx, int64_t T, int64_t H) {
  require_size(x.size(), T * H, "rmsnorm_bwd_dx: x");
  require_size(g.size(), H, "rmsnorm_bwd_dx: g");
  require_size(rstd.size(), T, "rmsnorm_bwd_dx: rstd");
  require_size(dh.size(), T * H, "rmsnorm_bwd_dx: dh");
  require_size(dx.size(), T * H, "rmsnorm_bwd_dx: dx");
  DeviceBuffer<float> d_x(x), d_r(rstd), d_dh(dh), d_dx(dx);
  DeviceBuffer<bf16> d_g(g);
  if (T > 0)
    mk::rmsnorm_bwd_dx_kernel<<<int(T), mk::kThreads>>>(d_x.data(), d_g.data(), d_r.data(), d_dh.data(), d_dx.data(),
                                                        H);
  finish("model_api::rmsnorm_bwd_dx");
  d_dx.download(dx);
}

std::vector<float> rmsnorm_bwd_dg(const std::vector<float>& x, const std::vector<float>& rstd,
                                  const std::vector<float>& dh, int64_t T, int64_t H) {
  require_size(x.size(), T * H, "rmsnorm_bwd_dg: x");
  require_size(rstd.size(), T, "rmsnorm_bwd_dg: rstd");
  require_size(dh.size(), T * H, "rmsnorm_bwd_dg: dh");
  DeviceBuffer<float> d_x(x), d_r(rstd), d_dh(dh), d_dg{size_t(H)};
  if (H > 0)
    mk::rmsnorm_bwd_dg_kernel<<<column_grid(H), mk::kThreads>>>(d_x.data(), d_r.data(), d_dh.data(), d_dg.data(), T, H);
  finish("model_api::rmsnorm_bwd_dg");
  return d_dg.download();
}

std::vector<bf16> causal_softmax(const std::vector<float>& s, int64_t rows, int64_t T) {
  require(T > 0, "causal_softmax: T");
  require_size(s.size(), rows * T, "causal_softmax: s");
  DeviceBuffer<float> d_s(s);
  DeviceBuffer<bf16> d_p(size_t(rows * T));
  if (rows > 0) mk::causal_softmax_kernel<<<int(rows), mk::kThreads>>>(d_s.data(), d_p.data(), T);
  finish("model_api::causal_softmax");
  return d_p.download();
}

std::vector<bf16> softmax_bwd(const std::vector<bf16>& p, const std::vector<float>& dp, int64_t rows,
                                  int64_t T, float scale) {
  require_size(p.size(), rows * T, "softmax_bwd: p");
  require_size(dp.size(), rows * T, "softmax_bwd: dp");
  DeviceBuffer<bf16> d_p(p), d_ds(size_t(rows * T));
  DeviceBuffer<float> d_dp(dp);
  if (rows > 0) mk::softmax_bwd_kernel<<<int(rows), mk::kThreads>>>(d_p.data(), d_dp.data(), d_ds.data(), T, scale);
  finish("model_api::softmax_bwd");
  return d_ds.download();
}

std::vector<bf16> expand_kv(const std::vector<bf16>& kv, int64_t T, int64_t heads, int64_t kvh, int64_t d) {
  require(kvh > 0 && heads % kvh == 0, "expand_kv: heads is not a multiple of kv heads");
  require_size(kv.size(), T * kvh * d, "expand_kv: kv");
  DeviceBuffer<bf16> d_kv(kv), d_x(size_t(T * heads * d));
  if (T * heads * d > 0)
    mk::expand_kv_kernel<<<stride_grid(T * heads * d), mk::kThreads>>>(d_kv.data(), d_x.data(), T, heads, kvh, d);
  finish("model_api::expand_kv");
  return d_x.download();
}

std::vector<bf16> reduce_kv(const std::vector<float>& dx, int64_t T, int64_t heads, int64_t kvh, int64_t d) {
  require(kvh > 0 && heads % kvh == 0, "reduce_kv: heads is not a multiple of kv heads");
  require_size(dx.size(), T * heads * d, "reduce_kv: dx");
  DeviceBuffer<float> d_dx(dx);
  DeviceBuffer<bf16> d_kv(size_t(T * kvh * d));
  if (T * kvh * d > 0)
    mk::reduce_kv_kernel<<<stride_grid(T * kvh * d), mk::kThreads>>>(d_dx.data(), d_kv.data(), T, heads, kvh, d);
  finish("model_api::reduce_kv");
  return d_kv.download();
}

std::vector<bf16> gate_fwd(const std::vector<float>& gate, const std::vector<float>& up) {
  require(gate.size() == up.size(), "gate_fwd: gate and up differ in size");
  const int64_t n = int64_t(gate.size());
  DeviceBuffer<float> d_g(gate), d_u(up);
  DeviceBuffer<bf16> d_m(gate.size());
  if (n > 0) mk::gate_fwd_kernel<<<stride_grid(n), mk::kThreads>>>(d_g.data(), d_u.data(), d_m.data(), n);
  finish("model_api::gate_fwd");
  return d_m.download();
}

void gate_bwd(const std::vector<float>& gate, const std::vector<float>& up, const std::vector<float>& dm,
              std::vector<bf16>& dgate, std::vector<bf16>& dup) {
  require(gate.size() == up.size() && gate.size() == dm.size(), "gate_bwd: gate, up and dm differ in size");
  const int64_t n = int64_t(gate.size());
  DeviceBuffer<float> d_g(gate), d_u(up), d_dm(dm);
  DeviceBuffer<bf16> d_dg(gate.size()), d_du(gate.size());
  if (n > 0)
    mk::gate_bwd_kernel<<<stride_grid(n), mk::kThreads>>>(d_g.data(), d_u.data(), d_dm.data(), d_dg.data(), d_du.data(),
                                                          n);
  finish("model_api::gate_bwd");
  d_dg.download(dgate);
  d_du.download(dup);
}

void cross_entropy(const std::vector<float>& logits, const std::vector<int32_t>& labels, int64_t T, int64_t V,
                   std::vector<float>& loss, std::vector<bf16>& dlogits) {
  require_size(logits.size(), T * V, "cross_entropy: logits");
  require_size(labels.size(), T, "cross_entropy: labels");
  for (int32_t y : labels) require(y >= 0 && y < V, "cross_entropy: label out of range");
  DeviceBuffer<float> d_l(logits), d_loss{size_t(T)};
  DeviceBuffer<int32_t> d_y(labels);
  DeviceBuffer<bf16> d_d(size_t(T * V));
  if (T > 0)
    mk::cross_entropy_kernel<<<int(T), mk::kThreads>>>(d_l.data(), d_y.data(), d_loss.data(), d_d.data(), V, T);
  finish("model_api::cross_entropy");
  d_loss.download(loss);
  d_d.download(dlogits);
}

void embedding_bwd(const std::vector<float>& dx, const std::vector<int32_t>& tok, std::vector<float>& de, int64_t T,
                   int64_t H) {
  require_size(dx.size(), T * H, "embedding_bwd: dx");
  require_size(tok.size(), T, "embedding_bwd: tok");
  require(H > 0 && de.size() % size_t(H) == 0, "embedding_bwd: dE is not [V, H]");
  for (int32_t k : tok) require(k >= 0 && size_t(k) < de.size() / size_t(H), "embedding_bwd: token out of range");
  DeviceBuffer<float> d_dx(dx), d_de(de);
  DeviceBuffer<int32_t> d_t(tok);
  mk::embedding_bwd_kernel<<<column_grid(H), mk::kThreads>>>(d_dx.data(), d_t.data(), d_de.data(), T, H);
  finish("model_api::embedding_bwd");
  d_de.download(de);
}

std::vector<bf16> to_bf16(const std::vector<float>& x) {
  const int64_t n = int64_t(x.size());
  DeviceBuffer<float> d_x(x);
  DeviceBuffer<bf16> d_y(x.size());
  if (n > 0) mk::to_bf16_kernel<<<stride_grid(n), mk::kThreads>>>(d_x.data(), d_y.data(), n);
  finish("model_api::to_bf16");
  return d_y.download();
}

namespace {
__global__ void elementary_kernel(DeviceFn fn, const float* x, float* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = fn == DeviceFn::exp ? expf(x[i]) : fn == DeviceFn::log ? logf(x[i]) : rsqrtf(x[i]);
}
}  // namespace

std::vector<float> elementary(DeviceFn fn, const std::vector<float>& args) {
  require(fn == DeviceFn::exp || fn == DeviceFn::log || fn == DeviceFn::rsqrt, "elementary: unknown function");
  const int64_t n = int64_t(args.size());
  DeviceBuffer<float> d_x(args), d_y(args.size());
  if (n > 0) elementary_kernel<<<stride_grid(n), mk::kThreads>>>(fn, d_x.data(), d_y.data(), n);
  finish("model_api::elementary");
  return d_y.download();
}

}  // namespace fh::gpu::model_api
