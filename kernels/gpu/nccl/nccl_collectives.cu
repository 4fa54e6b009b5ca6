// kernels/gpu/nccl/nccl_collectives.h
#include "kernels/gpu/nccl/nccl_collectives.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/common/ieee_shim.h"

namespace fh {

namespace {

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("NCCL ranks: ") + what + ": " + cudaGetErrorString(e));
}
void nccl_ok(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(std::string("NCCL ranks: ") + what + ": " + ncclGetErrorString(r));
}

}  // namespace

struct NcclCollectives::State {
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
};

int nccl_visible_gpus() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error of a machine without a driver
    return 0;
  }
  return n;
}

NcclCollectives::NcclCollectives(int p) : p_(p), s_(new State) {
  const int visible = nccl_visible_gpus();
  if (p < 2 || visible < p)
    throw std::runtime_error("NCCL ranks: " + std::to_string(p) + " ranks need as many GPUs; " +
                             std::to_string(visible) + " visible");
  s_->comms.resize(static_cast<size_t>(p));
  s_->streams.resize(static_cast<size_t>(p));
  std::vector<int> devs(static_cast<size_t>(p));
  for (int r = 0; r < p; ++r) devs[size_t(r)] = r;
  nccl_ok(ncclCommInitAll(s_->comms.data(), p, devs.data()), "ncclCommInitAll");
  for (int r = 0; r < p; ++r) {
    cuda_ok(cudaSetDevice(r), "cudaSetDevice");
    cuda_ok(cudaStreamCreate(&s_->streams[size_t(r)]), "cudaStreamCreate");
  }
}

NcclCollectives::~NcclCollectives() {
  for (int r = 0; r < p_ && r < int(s_->comms.size()); ++r) {
    cudaSetDevice(r);
    if (s_->streams[size_t(r)]) cudaStreamDestroy(s_->streams[size_t(r)]);
    if (s_->comms[size_t(r)]) ncclCommDestroy(s_->comms[size_t(r)]);
  }
}

std::string NcclCollectives::describe() const {
  int v = 0;
  ncclGetVersion(&v);
  auto env = [](const char* k) {
    const char* x = std::getenv(k);
    return std::string(k) + "=" + (x ? x : "(unset)");
  };
  return "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100) +
         ", " + std::to_string(p_) + " ranks (one process, GPUs 0.." + std::to_string(p_ - 1) + "), " +
         env("NCCL_ALGO") + ", " + env("NCCL_PROTO") + ", " + env("NCCL_NVLS_ENABLE") +
         "; ordered reductions: all-gather, then the sum in rank order";
}

std::vector<uint8_t> NcclCollectives::all_gather_bytes(const std::vector<const void*>& parts, size_t bytes) const {
  if (int(parts.size()) != p_) throw std::invalid_argument("NCCL ranks: one part per rank expected");
  std::vector<void*> send(static_cast<size_t>(p_)), recv(static_cast<size_t>(p_));
  for (int r = 0; r < p_; ++r) {
    cuda_ok(cudaSetDevice(r), "cudaSetDevice");
    cuda_ok(cudaMalloc(&send[size_t(r)], bytes), "cudaMalloc");
    cuda_ok(cudaMalloc(&recv[size_t(r)], bytes * size_t(p_)), "cudaMalloc");
    cuda_ok(cudaMemcpy(send[size_t(r)], parts[size_t(r)], bytes, cudaMemcpyHostToDevice), "upload");
  }
  nccl_ok(ncclGroupStart(), "ncclGroupStart");
  for (int r = 0; r < p_; ++r)
    nccl_ok(ncclAllGather(send[size_t(r)], recv[size_t(r)], bytes, ncclUint8, s_->comms[size_t(r)], s_->streams[size_t(r)]),
            "ncclAllGather");
  nccl_ok(ncclGroupEnd(), "ncclGroupEnd");
  std::vector<uint8_t> out(bytes * size_t(p_));
  for (int r = 0; r < p_; ++r) {
    cuda_ok(cudaSetDevice(r), "cudaSetDevice");
    cuda_ok(cudaStreamSynchronize(s_->streams[size_t(r)]), "all-gather");
  }
  cuda_ok(cudaSetDevice(0), "cudaSetDevice");
  cuda_ok(cudaMemcpy(out.data(), recv[0], out.size(), cudaMemcpyDeviceToHost), "download");
  for (int r = 0; r < p_; ++r) {
    cudaSetDevice(r);
    cudaFree(send[size_t(r)]);
    cudaFree(recv[size_t(r)]);
  }
  return out;
}

std::vector<bf16> NcclCollectives::all_gather_rows(const std::vector<std::vector<bf16>>& parts, int64_t cols) const {
  std::vector<const void*> ptrs;
  for (const auto& q : parts) {
    if (q.size() != parts.at(0).size() || int64_t(q.size()) % cols != 0)
      throw std::invalid_argument("NCCL ranks: all_gather_rows needs equal whole-row parts");
    ptrs.push_back(q.data());
  }
  const std::vector<uint8_t> bytes = all_gather_bytes(ptrs, parts.at(0).size() * sizeof(bf16));
  std::vector<bf16> out(bytes.size() / sizeof(bf16));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

std::vector<float> NcclCollectives::all_gather_cols(const std::vector<std::vector<float>>& parts, int64_t rows) const {
  std::vector<const void*> ptrs;
  for (const auto& q : parts) {
    if (q.size() != parts.at(0).size() || int64_t(q.size()) % rows != 0)
      throw std::invalid_argument("NCCL ranks: all_gather_cols needs equal parts of whole columns");
    ptrs.push_back(q.data());
  }
  const size_t n = parts.at(0).size();
  const int64_t w = int64_t(n) / rows, total = w * p_;
  const std::vector<uint8_t> bytes = all_gather_bytes(ptrs, n * sizeof(float));
  std::vector<float> blocks(bytes.size() / sizeof(float));
  std::memcpy(blocks.data(), bytes.data(), bytes.size());
  std::vector<float> out(blocks.size());
  for (int r = 0; r < p_; ++r)  // rank r's [rows, w] block into columns [r w, (r + 1) w)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < w; ++j) out[size_t(i * total + r * w + j)] = blocks[size_t(r) * n + size_t(i * w + j)];
  return out;
}

std::vector<float> NcclCollectives::all_reduce_ordered(const std::vector<std::vector<float>>& parts) const {
  std::vector<const void*> ptrs;
  for (const auto& q : parts) {
    if (q.size() != parts.at(0).size()) throw std::invalid_argument("NCCL ranks: all_reduce_ordered parts differ in size");
    ptrs.push_back(q.data());
  }
  const size_t n = parts.at(0).size();
  const std::vector<uint8_t> bytes = all_gather_bytes(ptrs, n * sizeof(float));
  std::vector<float> all(bytes.size() / sizeof(float));
  std::memcpy(all.data(), bytes.data(), bytes.size());
  std::vector<float> sum(all.begin(), all.begin() + long(n));
  for (int r = 1; r < p_; ++r)
    for (size_t i = 0; i < n; ++i) sum[i] = fadd(sum[i], all[size_t(r) * n + i]);
  return sum;
}

}  // namespace fh
