// Host-callable launchers of the model step's small kernels (kernels/gpu/model_kernels.cuh), on
// host vectors, for comparing each kernel with its host reference (reference/model_kernels_host.h,
// suites/gpu/test_gpu_model_kernels.cu). Each uploads its inputs, launches the kernel as the model
// step does (the block-reduction kernels one block of kThreads per row, because their reduction
// tree is that block's; the column kernels one thread per column; the element-wise kernels a
// grid-stride loop, whose result does not depend on the grid), waits, and downloads. Arguments are
// checked (std::invalid_argument); CUDA errors throw std::runtime_error.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/common/bf16.h"

namespace fh::gpu::model_api {

std::vector<float> embedding(const std::vector<bf16>& e, const std::vector<int32_t>& tok, int64_t T, int64_t H);
void rmsnorm_fwd(const std::vector<float>& x, const std::vector<bf16>& g, int64_t T, int64_t H,
                 std::vector<bf16>& h, std::vector<float>& rstd);
// dx is read and updated, as the kernel accumulates into it.
void rmsnorm_bwd_dx(const std::vector<float>& x, const std::vector<bf16>& g, const std::vector<float>& rstd,
                    const std::vector<float>& dh, std::vector<float>& dx, int64_t T, int64_t H);
std::vector<float> rmsnorm_bwd_dg(const std::vector<float>& x, const std::vector<float>& rstd,
                                  const std::vector<float>& dh, int64_t T, int64_t H);
std::vector<bf16> causal_softmax(const std::vector<float>& s, int64_t rows, int64_t T);
std::vector<bf16> softmax_bwd(const std::vector<bf16>& p, const std::vector<float>& dp, int64_t rows,
                                  int64_t T, float scale);
std::vector<bf16> expand_kv(const std::vector<bf16>& kv, int64_t T, int64_t heads, int64_t kvh, int64_t d);
std::vector<bf16> reduce_kv(const std::vector<float>& dx, int64_t T, int64_t heads, int64_t kvh, int64_t d);
std::vector<bf16> gate_fwd(const std::vector<float>& gate, const std::vector<float>& up);
void gate_bwd(const std::vector<float>& gate, const std::vector<float>& up, const std::vector<float>& dm,
              std::vector<bf16>& dgate, std::vector<bf16>& dup);
void cross_entropy(const std::vector<float>& logits, const std::vector<int32_t>& labels, int64_t T, int64_t V,
                   std::vector<float>& loss, std::vector<bf16>& dlogits);
// de is read and updated, as the kernel accumulates into it.
void embedding_bwd(const std::vector<float>& dx, const std::vector<int32_t>& tok, std::vector<float>& de, int64_t T,
                   int64_t H);
std::vector<bf16> to_bf16(const std::vector<float>& x);

// The device's expf, logf and rsqrtf, compiled as in the kernels (--fmad=false, no fast math), on
// each argument: the values the host references take to reproduce the kernels bit for bit.
enum class DeviceFn : uint8_t { exp = 0, log = 1, rsqrt = 2 };
std::vector<float> elementary(DeviceFn fn, const std::vector<float>& args);

}  // namespace fh::gpu::model_api
