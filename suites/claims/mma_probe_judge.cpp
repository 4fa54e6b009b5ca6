#include "suites/claims/mma_probe_judge.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/common/bf16.h"
#include "kernels/common/host_parallel.h"
#include "kernels/gpu/gpu_api.h"
#include "kernels/twin/mma_model.h"
#include "oracles/ulp.h"

namespace fh::gpu {

namespace {
// r's chain length and its n cases of `cat`, case i from seed_of(i); returns the seeds.
std::vector<uint64_t> make_judged_cases(ProbeJudgement& r, ProbeCategory cat, int64_t n,
                                        const std::function<uint64_t(int64_t)>& seed_of) {
  r.chain = probe_chain_length(cat);
  r.cases.resize(size_t(n));
  std::vector<uint64_t> seeds(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) seeds[size_t(i)] = seed_of(i);
  parallel_for(n, [&](int64_t i) { r.cases[size_t(i)] = make_probe_case(cat, seeds[size_t(i)]); });
  return seeds;
}

// Per-instance counts, filled in parallel, then added into the judgement; the first mismatch is
// the first instance's that has one.
struct InstanceCounts {
  std::vector<int64_t> mis, fmam;
  std::vector<uint64_t> worst;
  std::vector<std::string> first;
  explicit InstanceCounts(int64_t n) : mis(size_t(n), 0), fmam(size_t(n), 0), worst(size_t(n), 0), first(size_t(n)) {}
  // One output of instance i: the model's and the fmaf loop's value against the hardware's;
  // where (text) names the output in the instance's first mismatch.
  template <class Where>
  void judge(int64_t i, float model, float hw, float fma_loop, Where where) {
    if (f32_bits(model) != f32_bits(hw)) {
      if (mis[size_t(i)]++ == 0) {
        char buf[64];
        std::snprintf(buf, sizeof buf, ": model 0x%08x, GPU 0x%08x", f32_bits(model), f32_bits(hw));
        first[size_t(i)] = where() + buf;
      }
      worst[size_t(i)] = std::max(worst[size_t(i)], ulp_distance_f32(model, hw));
    }
    if (f32_bits(fma_loop) != f32_bits(hw)) ++fmam[size_t(i)];
  }
  void add_to(ProbeJudgement& r) const {
    for (size_t i = 0; i < mis.size(); ++i) {
      r.mismatches += mis[i];
      r.fma_misses += fmam[i];
      r.max_ulp = std::max(r.max_ulp, worst[i]);
      if (r.first.empty()) r.first = first[i];
    }
  }
};
}  // namespace

float probe_fma_loop(const ProbeCase& pa, const ProbeCase& pb, int row, int col) {
  float acc = pb.c[size_t(row * 8 + col)];
  for (int s = 0; s < pb.chain; ++s)
    for (int k = 0; k < 16; ++k)
      acc = std::fmaf(bf16_to_float(pa.a[size_t(s * 256 + row * 16 + k)]),
                      bf16_to_float(pb.b[size_t(s * 128 + col * 16 + k)]), acc);
  return acc;
}

ProbeJudgement probe_and_judge(ProbeCategory cat, int64_t n, const std::function<uint64_t(int64_t)>& seed_of) {
  ProbeJudgement r;
  const std::vector<uint64_t> seeds = make_judged_cases(r, cat, n, seed_of);
  const int chain = r.chain;
  std::vector<bf16> a(size_t(n) * chain * 256), b(size_t(n) * chain * 128);
  std::vector<float> c(size_t(n) * 128);
  for (int64_t i = 0; i < n; ++i) {
    const ProbeCase& pc = r.cases[size_t(i)];
    std::copy(pc.a.begin(), pc.a.end(), a.begin() + i * chain * 256);
    std::copy(pc.b.begin(), pc.b.end(), b.begin() + i * chain * 128);
    std::copy(pc.c.begin(), pc.c.end(), c.begin() + i * 128);
  }
  DeviceBuffer<bf16> da(a), db(b);
  DeviceBuffer<float> dc(c), dd(c.size());
  mma_probe(da.data(), db.data(), dc.data(), dd.data(), n, chain);
  cuda_check(cudaDeviceSynchronize(), "mma_probe");
  r.hw = dd.download();

  InstanceCounts k(n);
  parallel_for(n, [&](int64_t i) {
    const ProbeCase& pc = r.cases[size_t(i)];
    float d[128];
    std::copy(pc.c.begin(), pc.c.end(), d);
    for (int s = 0; s < chain; ++s) mma_m16n8k16_model(&pc.a[size_t(s) * 256], &pc.b[size_t(s) * 128], d, d);
    for (int e = 0; e < 128; ++e) {
      k.judge(i, d[e], r.hw[size_t(i * 128 + e)], probe_fma_loop(pc, pc, e / 8, e % 8), [&] {
        char buf[120];
        std::snprintf(buf, sizeof buf, "instance %lld (seed %llu) D[%d][%d]", (long long)i,
                      (unsigned long long)seeds[size_t(i)], e / 8, e % 8);
        return std::string(buf);
      });
    }
  });
  r.outputs = n * 128;
  k.add_to(r);
  return r;
}

ProbeJudgement probe_and_judge_wgmma(ProbeCategory cat, int64_t n, const std::function<uint64_t(int64_t)>& seed_of,
                                     const MmaModelParams& params) {
  if (n < 16 || n % 16 != 0) throw std::invalid_argument("probe_and_judge_wgmma: n must be a positive multiple of 16");
  ProbeJudgement r;
  make_judged_cases(r, cat, n, seed_of);
  const int chain = r.chain;
  const int64_t inst = n / 16;
  // Instance layout (gpu_api.h, wgmma_probe): A [chain][64][16], B [chain][16][128], C [64][128].
  std::vector<bf16> a(size_t(inst) * chain * 1024), b(size_t(inst) * chain * 2048);
  std::vector<float> c(size_t(inst) * 8192);
  parallel_for(inst, [&](int64_t q) {
    for (int s = 0; s < chain; ++s)
      for (int w = 0; w < 4; ++w)
        for (int m = 0; m < 16; ++m)
          for (int k = 0; k < 16; ++k)
            a[size_t(((q * chain + s) * 64 + 16 * w + m) * 16 + k)] = r.cases[size_t(16 * q + w)].a[size_t(s * 256 + m * 16 + k)];
    for (int s = 0; s < chain; ++s)
      for (int j = 0; j < 16; ++j)
        for (int nn = 0; nn < 8; ++nn)
          for (int k = 0; k < 16; ++k)
            b[size_t(((q * chain + s) * 16 + k) * 128 + 8 * j + nn)] = r.cases[size_t(16 * q + j)].b[size_t(s * 128 + nn * 16 + k)];
    for (int w = 0; w < 4; ++w)
      for (int j = 0; j < 16; ++j)
        for (int m = 0; m < 16; ++m)
          for (int nn = 0; nn < 8; ++nn)
            c[size_t(q * 8192 + (16 * w + m) * 128 + 8 * j + nn)] = r.cases[size_t(16 * q + j)].c[size_t(m * 8 + nn)];
  });
  DeviceBuffer<bf16> da(a), db(b);
  DeviceBuffer<float> dc(c), dd(c.size());
  wgmma_probe(da.data(), db.data(), dc.data(), dd.data(), inst, chain);
  cuda_check(cudaDeviceSynchronize(), "wgmma_probe");
  r.hw = dd.download();

  InstanceCounts k(inst);
  parallel_for(inst, [&](int64_t q) {
    for (int w = 0; w < 4; ++w)
      for (int j = 0; j < 16; ++j) {
        const ProbeCase& pa = r.cases[size_t(16 * q + w)];
        const ProbeCase& pb = r.cases[size_t(16 * q + j)];
        float dm[128];
        std::copy(pb.c.begin(), pb.c.end(), dm);
        for (int s = 0; s < chain; ++s) mma_m16n8k16_model(&pa.a[size_t(s) * 256], &pb.b[size_t(s) * 128], dm, dm, params);
        for (int e = 0; e < 128; ++e) {
          const float h = r.hw[size_t(q * 8192 + (16 * w + e / 8) * 128 + 8 * j + e % 8)];
          k.judge(q, dm[e], h, probe_fma_loop(pa, pb, e / 8, e % 8), [&] {
            char buf[120];
            std::snprintf(buf, sizeof buf, "instance %lld block (%d, %d) D[%d][%d]", (long long)q, w, j,
                          16 * w + e / 8, 8 * j + e % 8);
            return std::string(buf);
          });
        }
      }
  });
  r.outputs = inst * 8192;
  k.add_to(r);
  return r;
}

}  // namespace fh::gpu
