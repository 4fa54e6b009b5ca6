// The small kernels of the model-shaped step (kernels/gpu/model_step.h): initialisation, embedding,
// RMSNorm, causal softmax, the SiLU gate, cross-entropy, the grouped-KV expansion, the norm and
// embedding gradients, and the digest. Each output element is written by one thread in a fixed
// order (no atomics on values), so every kernel is deterministic; the only atomic is the digest's
// integer sum, which is commutative.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/bf16.h"
#include "kernels/common/splitmix64.h"

namespace fh::gpu::model {

constexpr int kThreads = 256;

__device__ inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// N(0, std^2) by Box-Muller on two hashed uniforms of (seed, i).
__device__ inline float normal_at(uint64_t seed, int64_t i, float std) {
  const uint64_t a = mix64(seed ^ (uint64_t(i) * 0x9e3779b97f4a7c15ull));
  const uint64_t b = mix64(a + 0x632be59bd9b4e019ull);
  const float u1 = (float((a >> 40) + 1)) / 16777217.0f;  // (0, 1]
  const float u2 = float(b >> 40) / 16777216.0f;
  return std * sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
}

// Weights: master (may be null) and the bf16 copy; normal (std > 0) or constant `value` (std == 0).
__global__ void init_weights_kernel(float* master, bf16* bf16, int64_t n, uint64_t seed, float std, float value) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float w = std > 0.0f ? normal_at(seed, i, std) : value;
    if (master) master[i] = w;
    bf16[i] = float_to_bf16_rne(w);
  }
}

__global__ void random_tokens_kernel(int32_t* tok, int64_t n, uint64_t seed, int64_t vocab) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) tok[i] = int32_t(mix64(seed + uint64_t(i) * 0x9e3779b97f4a7c15ull) % uint64_t(vocab));
}

// x [T, H] fp32 = E[tok[t], :] widened.
__global__ void embedding_kernel(const bf16* e, const int32_t* tok, float* x, int64_t T, int64_t H) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < T * H; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = i / H, c = i % H;
    x[i] = bf16_to_float(e[int64_t(tok[t]) * H + c]);
  }
}

// Block sum of one float per thread (kThreads threads), the same tree every time.
__device__ inline float block_sum(float v, float* red) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (int(threadIdx.x) < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  const float r = red[0];
  __syncthreads();
  return r;
}
__device__ inline float block_max(float v, float* red) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (int(threadIdx.x) < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  const float r = red[0];
  __syncthreads();
  return r;
}

constexpr float kNormEps = 1e-5f;

// One block per token: rstd = 1/sqrt(mean(x^2) + eps), h = bf16(x * rstd * g).
__global__ void rmsnorm_fwd_kernel(const float* x, const bf16* g, bf16* h, float* rstd, int64_t H) {
  __shared__ float red[kThreads];
  const float* xr = x + blockIdx.x * H;
  float s = 0.0f;
  for (int64_t c = threadIdx.x; c < H; c += kThreads) s += xr[c] * xr[c];
  const float r = rsqrtf(block_sum(s, red) / float(H) + kNormEps);
  if (threadIdx.x == 0) rstd[blockIdx.x] = r;
  for (int64_t c = threadIdx.x; c < H; c += kThreads)
    h[blockIdx.x * H + c] = float_to_bf16_rne(xr[c] * r * bf16_to_float(g[c]));
}

// One block per token: y = x rstd, dy = dh g, dx += rstd (dy - y mean(dy y)).
__global__ void rmsnorm_bwd_dx_kernel(const float* x, const bf16* g, const float* rstd, const float* dh, float* dx,
                                      int64_t H) {
  __shared__ float red[kThreads];
  const int64_t t = blockIdx.x;
  const float r = rstd[t];
  float s = 0.0f;
  for (int64_t c = threadIdx.x; c < H; c += kThreads) s += dh[t * H + c] * bf16_to_float(g[c]) * x[t * H + c] * r;
  const float mean = block_sum(s, red) / float(H);
  for (int64_t c = threadIdx.x; c < H; c += kThreads) {
    const float y = x[t * H + c] * r;
    dx[t * H + c] += r * (dh[t * H + c] * bf16_to_float(g[c]) - y * mean);
  }
}

// One thread per column, tokens in order: dg[c] = sum_t dh[t, c] x[t, c] rstd[t].
__global__ void rmsnorm_bwd_dg_kernel(const float* x, const float* rstd, const float* dh, float* dg, int64_t T, int64_t H) {
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (c >= H) return;
  float s = 0.0f;
  for (int64_t t = 0; t < T; ++t) s += dh[t * H + c] * x[t * H + c] * rstd[t];
  dg[c] = s;
}

// One block per (head, query row i): P[i, j] = softmax over j <= i of S[i, j], 0 for j > i.
__global__ void causal_softmax_kernel(const float* s, bf16* p, int64_t T) {
  __shared__ float red[kThreads];
  const int64_t row = blockIdx.x, i = row % T;
  const float* sr = s + row * T;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j <= i; j += kThreads) m = fmaxf(m, sr[j]);
  m = block_max(m, red);
  float z = 0.0f;
  for (int64_t j = threadIdx.x; j <= i; j += kThreads) z += expf(sr[j] - m);
  z = block_sum(z, red);
  for (int64_t j = threadIdx.x; j < T; j += kThreads)
    p[row * T + j] = float_to_bf16_rne(j <= i ? expf(sr[j] - m) / z : 0.0f);
}

// One block per (head, row): dS = P (dP - sum_j dP P) * scale, bf16.
__global__ void softmax_bwd_kernel(const bf16* p, const float* dp, bf16* ds, int64_t T, float scale) {
  __shared__ float red[kThreads];
  const int64_t row = blockIdx.x;
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < T; j += kThreads) s += dp[row * T + j] * bf16_to_float(p[row * T + j]);
  s = block_sum(s, red);
  for (int64_t j = threadIdx.x; j < T; j += kThreads) {
    const float pj = bf16_to_float(p[row * T + j]);
    ds[row * T + j] = float_to_bf16_rne(pj * (dp[row * T + j] - s) * scale);
  }
}

// kv [T, kvh*d] -> x [T, heads*d]: head h reads KV head h / (heads / kvh).
__global__ void expand_kv_kernel(const bf16* kv, bf16* x, int64_t T, int64_t heads, int64_t kvh, int64_t d) {
  const int64_t n = T * heads * d, group = heads / kvh;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = i / (heads * d), h = (i / d) % heads, c = i % d;
    x[i] = kv[t * kvh * d + (h / group) * d + c];
  }
}
// dx [T, heads*d] fp32 -> dkv [T, kvh*d] bf16: the group's heads summed in head order.
__global__ void reduce_kv_kernel(const float* dx, bf16* dkv, int64_t T, int64_t heads, int64_t kvh, int64_t d) {
  const int64_t n = T * kvh * d, group = heads / kvh;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = i / (kvh * d), g = (i / d) % kvh, c = i % d;
    float s = 0.0f;
    for (int64_t k = 0; k < group; ++k) s += dx[t * heads * d + (g * group + k) * d + c];
    dkv[i] = float_to_bf16_rne(s);
  }
}

__device__ inline float silu(float z) { return z / (1.0f + expf(-z)); }

// m = bf16(silu(gate) * up).
__global__ void gate_fwd_kernel(const float* gate, const float* up, bf16* m, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    m[i] = float_to_bf16_rne(silu(gate[i]) * up[i]);
}
// dgate = dm up silu'(gate), dup = dm silu(gate), both bf16 (the GEMMs' dY).
__global__ void gate_bwd_kernel(const float* gate, const float* up, const float* dm, bf16* dgate, bf16* dup,
                                int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float z = gate[i], sg = 1.0f / (1.0f + expf(-z));
    dgate[i] = float_to_bf16_rne(dm[i] * up[i] * (sg * (1.0f + z * (1.0f - sg))));
    dup[i] = float_to_bf16_rne(dm[i] * z * sg);
  }
}

// One block per token: loss[t] = logsumexp(logits[t]) - logits[t, label]; dlogits = (softmax - onehot) / T, bf16.
__global__ void cross_entropy_kernel(const float* logits, const int32_t* labels, float* loss, bf16* dlogits,
                                     int64_t V, int64_t T) {
  __shared__ float red[kThreads];
  const int64_t t = blockIdx.x;
  const float* lr = logits + t * V;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < V; j += kThreads) m = fmaxf(m, lr[j]);
  m = block_max(m, red);
  float z = 0.0f;
  for (int64_t j = threadIdx.x; j < V; j += kThreads) z += expf(lr[j] - m);
  z = block_sum(z, red);
  const int64_t y = labels[t];
  if (threadIdx.x == 0) loss[t] = logf(z) + m - lr[y];
  for (int64_t j = threadIdx.x; j < V; j += kThreads)
    dlogits[t * V + j] = float_to_bf16_rne((expf(lr[j] - m) / z - (j == y ? 1.0f : 0.0f)) / float(T));
}

// One thread per column, tokens in order: dE[tok[t], c] += dx[t, c] (beta 0: dE zeroed first by the caller).
__global__ void embedding_bwd_kernel(const float* dx, const int32_t* tok, float* de, int64_t T, int64_t H) {
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (c >= H) return;
  for (int64_t t = 0; t < T; ++t) de[int64_t(tok[t]) * H + c] += dx[t * H + c];
}

__global__ void to_bf16_kernel(const float* x, bf16* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = float_to_bf16_rne(x[i]);
}

__global__ void digest_kernel(const uint16_t* w, int64_t n, unsigned long long* out) {
  uint64_t s = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    s += mix64((uint64_t(i) << 16) ^ w[i] ^ 0x5eedull);
  atomicAdd(out, (unsigned long long)s);
}

}  // namespace fh::gpu::model
