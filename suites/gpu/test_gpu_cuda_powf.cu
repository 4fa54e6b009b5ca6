// fh::cuda_powf (kernels/common/cuda_powf.h) proved on the GPU: the real powf, as nvcc compiles
// it here (libdevice __nv_powf, --fmad=false, no fast math), against the port on the device and
// the port on the host, on 10^7 inputs: the AdamW betas 0.9 .. 0.9999 for t = 1 .. 10^6, random
// x in (0, 1) with random y, and special values.
//   device port == powf: zero mismatches (same instructions, including rcp.approx);
//   host port replaying the device's rcp.approx outputs == powf: zero mismatches (the port is the
//     algorithm; the reciprocal is the only thing the host has to model);
//   host port with its round-to-nearest reciprocal model == powf on every input where the
//     reciprocal's last bit cannot matter (cuda_powf_rcp_sensitive); the rest are counted.
// Also sweeps rcp.approx.ftz.f32 over every input the port can give it and checks that it
// returns one of the two neighbours of 1/x (what the sensitivity check assumes), printing how
// often it differs from round-to-nearest. Env: FH_RCP_TABLE_OUT=path writes those differences
// (the table scripts/torch_crosscheck.py and forge-torch-compat --rcp-exceptions read);
// FH_POWF_GOLDEN_OUT=path writes a golden sample (inputs, hardware powf and rcp outputs) for
// suites/cpu/test_cuda_powf.cpp to re-check in CI once it is committed as
// suites/golden/cuda_powf_h200.bin.
#include <cinttypes>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <random>

#include "kernels/common/cuda_powf.h"
#include "kernels/gpu/gpu_api.h"
#include "suites/gpu/gpu_suite_util.h"

namespace fh::gpu {
namespace {

constexpr float kBetas[] = {0.9f, 0.95f, 0.98f, 0.99f, 0.999f, 0.9999f};
constexpr int kStepsPerBeta = 1000000;
constexpr int64_t kRandom = 4000000;

// The device's rcp.approx output, recorded for the host replay.
struct RcpRecorded {
  float* slot;
  __host__ __device__ float operator()(float x) const {
    const float r = RcpApproxFtz{}(x);
    *slot = r;
    return r;
  }
};
// A given reciprocal (the recorded hardware value) on the host.
struct RcpGiven {
  float r;
  __host__ __device__ float operator()(float) const { return r; }
};

__global__ void powf_probe_kernel(const float* x, const float* y, float* real, float* port,
                                  float* port_rec, float* rcp, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    real[i] = powf(x[i], y[i]);
    port[i] = cuda_powf(x[i], y[i]);
    float r = 0.0f;
    port_rec[i] = cuda_powf_with<PowfBuild::no_fmad>(x[i], y[i], RcpRecorded{&r});
    rcp[i] = r;
  }
}

__global__ void rcp_sweep_kernel(uint32_t first, int64_t n, uint32_t* out) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = f2u(RcpApproxFtz{}(u2f(first + uint32_t(i))));
}

struct Inputs {
  std::vector<float> x, y;
  int64_t betas_end = 0;   // [0, betas_end): betas x t
  int64_t random_end = 0;  // [betas_end, random_end): random; then special values
};

Inputs make_inputs() {
  Inputs in;
  for (float b : kBetas)
    for (int t = 1; t <= kStepsPerBeta; ++t) { in.x.push_back(b); in.y.push_back(float(t)); }
  in.betas_end = int64_t(in.x.size());
  std::mt19937_64 gen(stream_seed(case_seed(0x90f5eedull), "test_gpu_cuda_powf/random_pairs"));
  std::uniform_real_distribution<float> unit(0.0f, 1.0f), sym(-1.0f, 1.0f);
  for (int64_t i = 0; i < kRandom; ++i) {
    float x = unit(gen);
    while (!(x > 0.0f && x < 1.0f)) x = unit(gen);
    float y;
    switch (i % 4) {
      case 0: case 1: y = 64.0f * sym(gen); break;                           // moderate
      case 2: y = float(int64_t(gen() % 401) - 200); break;                  // integers
      default: y = std::ldexp(sym(gen), int(gen() % 40) - 20); break;       // wide spread
    }
    in.x.push_back(x);
    in.y.push_back(y);
  }
  in.random_end = int64_t(in.x.size());
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float xs[] = {0.0f, -0.0f, inf, -inf, nan, 1.0f, -1.0f, 2.0f, -2.0f, 0.5f, -0.5f, -3.0f,
                      u2f(1u), u2f(0x80000001u), u2f(0x007FFFFFu), 1e-40f, u2f(0x7F7FFFFFu),
                      -u2f(0x7F7FFFFFu), 0.9999999f, 1.0000001f, 10.0f, -10.0f, 3.14159f};
  const float ys[] = {0.0f, -0.0f, inf, -inf, nan, 1.0f, -1.0f, 2.0f, -2.0f, 3.0f, -3.0f, 0.5f,
                      -0.5f, 1e10f, -1e10f, 16777217.0f, 16777216.0f, 127.0f, 128.0f, -149.0f,
                      -150.0f, 1e-20f, 7.5f, -7.0f, u2f(1u)};
  for (float x : xs)
    for (float y : ys) { in.x.push_back(x); in.y.push_back(y); }
  // Negative bases with integer and non-integer exponents, subnormal bases.
  for (int i = 0; i < 20000; ++i) {
    in.x.push_back(-std::ldexp(unit(gen) + 0.5f, int(gen() % 20) - 10));
    in.y.push_back(i % 2 ? float(int(gen() % 81) - 40) : 40.0f * sym(gen));
    in.x.push_back(u2f(1u + uint32_t(gen() % 0x007FFFFFu)));
    in.y.push_back(sym(gen) * 0.25f);
  }
  return in;
}

bool nan_bits(uint32_t u) { return (u & 0x7FFFFFFFu) > 0x7F800000u; }

struct Counts {
  int64_t n = 0, device_port = 0, host_replay = 0, host_model = 0, host_model_insensitive = 0,
          sensitive = 0, nan_payload = 0;
  int64_t first_bad = -1;
  void add(const Counts& o) {
    n += o.n; device_port += o.device_port; host_replay += o.host_replay; host_model += o.host_model;
    host_model_insensitive += o.host_model_insensitive; sensitive += o.sensitive; nan_payload += o.nan_payload;
    if (first_bad < 0 || (o.first_bad >= 0 && o.first_bad < first_bad)) first_bad = o.first_bad;
  }
};

// A mismatch that is only a different NaN payload is counted apart.
bool differ(uint32_t a, uint32_t b, int64_t& payload) {
  if (a == b) return false;
  if (nan_bits(a) && nan_bits(b)) { ++payload; return false; }
  return true;
}

TEST(GpuCudaPowf, PortEqualsDevicePowfOnTenMillionInputs) {
  FH_REQUIRE_GPU();
  const Inputs in = make_inputs();
  const int64_t n = int64_t(in.x.size());
  DeviceBuffer<float> dx(in.x), dy(in.y), dreal{size_t(n)}, dport{size_t(n)}, dport_rec{size_t(n)}, drcp{size_t(n)};
  powf_probe_kernel<<<1024, 256>>>(dx.data(), dy.data(), dreal.data(), dport.data(), dport_rec.data(), drcp.data(), n);
  cuda_check(cudaGetLastError(), "powf_probe_kernel launch");
  cuda_check(cudaDeviceSynchronize(), "powf_probe_kernel");
  const std::vector<float> real = dreal.download(), port = dport.download(), port_rec = dport_rec.download(),
                           rcp = drcp.download();

  const int64_t chunk = 1 << 16, nchunks = (n + chunk - 1) / chunk;
  std::vector<Counts> part(size_t(nchunks) * 3);  // betas, random, special
  test::parallel_for(nchunks, [&](int64_t c) {
    for (int64_t i = c * chunk; i < std::min(n, (c + 1) * chunk); ++i) {
      Counts& k = part[size_t(c) * 3 + (i < in.betas_end ? 0 : i < in.random_end ? 1 : 2)];
      const uint32_t hw = f2u(real[size_t(i)]);
      const float x = in.x[size_t(i)], y = in.y[size_t(i)];
      ++k.n;
      bool bad = differ(f2u(port[size_t(i)]), hw, k.nan_payload) | differ(f2u(port_rec[size_t(i)]), hw, k.nan_payload);
      k.device_port += bad;
      const bool replay_bad = differ(f2u(cuda_powf_with<PowfBuild::no_fmad>(x, y, RcpGiven{rcp[size_t(i)]})), hw, k.nan_payload);
      k.host_replay += replay_bad;
      const bool model_bad = differ(f2u(cuda_powf(x, y)), hw, k.nan_payload);
      const bool sensitive = cuda_powf_rcp_sensitive(PowfBuild::no_fmad, x, y);
      k.host_model += model_bad;
      k.sensitive += sensitive;
      k.host_model_insensitive += model_bad && !sensitive;
      if ((bad || replay_bad || (model_bad && !sensitive)) && k.first_bad < 0) k.first_bad = i;
    }
  });
  const char* names[3] = {"betas x t=1..1e6", "random x in (0,1)", "special values"};
  Counts total;
  for (int s = 0; s < 3; ++s) {
    Counts k;
    for (int64_t c = 0; c < nchunks; ++c) k.add(part[size_t(c) * 3 + s]);
    total.add(k);
    std::printf("[gpu_cuda_powf] %-18s n=%" PRId64 ": device port %" PRId64 ", host replay %" PRId64
                ", host model %" PRId64 " (on rcp-insensitive inputs %" PRId64 "; rcp-sensitive inputs %" PRId64
                "), NaN-payload-only %" PRId64 "\n",
                names[s], k.n, k.device_port, k.host_replay, k.host_model, k.host_model_insensitive,
                k.sensitive, k.nan_payload);
  }
  if (total.first_bad >= 0) {
    const size_t i = size_t(total.first_bad);
    std::printf("[gpu_cuda_powf] first mismatch: powf(%a, %a): hw 0x%08X, device port 0x%08X, host model 0x%08X, "
                "hw rcp 0x%08X\n", double(in.x[i]), double(in.y[i]), f2u(real[i]), f2u(port[i]),
                f2u(cuda_powf(in.x[i], in.y[i])), f2u(rcp[i]));
  }
  EXPECT_GE(total.n, 10000000);
  EXPECT_EQ(total.device_port, 0);
  EXPECT_EQ(total.host_replay, 0);
  EXPECT_EQ(total.host_model_insensitive, 0);
  EXPECT_EQ(total.nan_payload, 0) << "NaN results with a payload other than the port's canonical 0x7FFFFFFF";

  // The runner's known value, and the hardware reciprocal for each beta's m + 1.
  size_t i95 = 0;
  while (!(in.x[i95] == 0.95f && in.y[i95] == 6.0f)) ++i95;
  std::printf("[gpu_cuda_powf] powf(0.95f, 6.0f) = 0x%08X on the GPU (correctly rounded: 0x3F3C2EFB)\n", f2u(real[i95]));
  EXPECT_EQ(f2u(real[i95]), 0x3F3C2EFAu);
  for (int b = 0; b < 6; ++b) {
    const size_t i = size_t(b) * kStepsPerBeta;
    const float x = fadd(in.x[i], 1.0f);  // m = beta for beta in [0.7071, 1)
    std::printf("[gpu_cuda_powf] beta %.4f: rcp.approx(0x%08X) = 0x%08X, round-to-nearest 0x%08X\n",
                double(in.x[i]), f2u(x), f2u(rcp[i]), f2u(RcpApproxHostModel{}(x)));
  }

  if (const char* path = std::getenv("FH_POWF_GOLDEN_OUT")) {
    // Every 2^10-th input of the betas and the random part, and all special values.
    std::vector<size_t> pick;
    for (int64_t i = 0; i < in.random_end; i += 1024) pick.push_back(size_t(i));
    for (int64_t i = in.random_end; i < n; ++i) pick.push_back(size_t(i));
    std::ofstream f(path, std::ios::binary);
    const uint32_t count = uint32_t(pick.size()), reserved = 0;
    f.write("FHPOWGL1", 8);
    f.write(reinterpret_cast<const char*>(&count), 4);
    f.write(reinterpret_cast<const char*>(&reserved), 4);
    for (size_t i : pick) {
      const uint32_t rec[4] = {f2u(in.x[i]), f2u(in.y[i]), f2u(real[i]), f2u(rcp[i])};
      f.write(reinterpret_cast<const char*>(rec), sizeof rec);
    }
    ASSERT_TRUE(f.good()) << "cannot write " << path;
    std::printf("[gpu_cuda_powf] wrote %u golden records to %s\n", count, path);
  }
}

TEST(GpuCudaPowf, RcpApproxReturnsANeighbourOfTheReciprocal) {
  FH_REQUIRE_GPU();
  // Every float the port can pass to rcp.approx (m + 1 in [1.7071, 2.4143)), with margin.
  const uint32_t first = 0x3FD00000u, last = 0x40200000u;  // [1.625, 2.5)
  const int64_t n = int64_t(last - first);
  DeviceBuffer<uint32_t> dout{size_t(n)};
  rcp_sweep_kernel<<<1024, 256>>>(first, n, dout.data());
  cuda_check(cudaGetLastError(), "rcp_sweep_kernel launch");
  cuda_check(cudaDeviceSynchronize(), "rcp_sweep_kernel");
  const std::vector<uint32_t> hw = dout.download();
  int64_t equal_rn = 0, other_neighbour = 0, outside = 0;
  std::vector<uint32_t> ex_in, ex_out;
  for (int64_t i = 0; i < n; ++i) {
    const float x = u2f(first + uint32_t(i));
    float rd, ru;
    rcp_neighbours(x, rd, ru);
    const uint32_t rn = f2u(RcpApproxHostModel{}(x)), h = hw[size_t(i)];
    if (h == rn) { ++equal_rn; continue; }
    if (h == f2u(rd) || h == f2u(ru)) ++other_neighbour; else ++outside;
    ex_in.push_back(f2u(x));
    ex_out.push_back(h);
    if (outside == 1 && !(h == f2u(rd) || h == f2u(ru)))
      std::printf("[gpu_cuda_powf] rcp.approx(0x%08X) = 0x%08X is not next to 1/x (rd 0x%08X, ru 0x%08X)\n",
                  f2u(x), h, f2u(rd), f2u(ru));
  }
  std::printf("[gpu_cuda_powf] rcp.approx.ftz.f32 over %" PRId64 " inputs in [1.625, 2.5): %" PRId64
              " round-to-nearest, %" PRId64 " the other neighbour of 1/x, %" PRId64 " neither\n",
              n, equal_rn, other_neighbour, outside);
  EXPECT_EQ(outside, 0) << "cuda_powf_rcp_sensitive assumes the hardware returns a neighbour of 1/x";
  if (const char* path = std::getenv("FH_RCP_TABLE_OUT")) {
    std::ofstream f(path, std::ios::binary);
    const uint64_t count = ex_in.size();
    f.write("FHRCPEX1", 8);
    f.write(reinterpret_cast<const char*>(&count), 8);
    for (size_t k = 0; k < ex_in.size(); ++k) {
      f.write(reinterpret_cast<const char*>(&ex_in[k]), 4);
      f.write(reinterpret_cast<const char*>(&ex_out[k]), 4);
    }
    ASSERT_TRUE(f.good()) << "cannot write " << path;
    std::printf("[gpu_cuda_powf] wrote %" PRIu64 " rcp.approx exceptions to %s\n", count, path);
  }
}

}  // namespace
}  // namespace fh::gpu
