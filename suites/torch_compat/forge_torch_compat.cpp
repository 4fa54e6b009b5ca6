// forge-torch-compat: the host side of the torch cross-check (scripts/torch_crosscheck.py).
// It runs the PyTorch-compatible AdamW (kernels/rules/adamw_torch_fused.h) through the project's
// element-wise driver (update_segment) on inputs dumped from PyTorch, and it evaluates the powf
// port (kernels/common/cuda_powf.h) on dumped inputs; the script compares the bits with PyTorch's.
// All files are raw little-endian.
//
//   forge-torch-compat adamw IN OUT [--lrwd fp32|double] [--powf no_fmad|fmad]
//                                   [--rcp-exceptions FILE] [--every-step] [--threads N]
//     IN:  "FHTCADW1", u64 n, u64 steps, f64 lr, beta1, beta2, eps, weight_decay,
//          u32 maximize (0/1), u32 dtype (0 = fp32, 1 = bf16),
//          params[n], then grads[steps][n]   (elements: f32, or bf16 as u16 bits)
//     OUT: "FHTCOUT1", u64 n, u64 records, u32 dtype, u32 0,
//          then per record: u64 step, params[n], exp_avg[n], exp_avg_sq[n]
//          (one record after the last step; one after every step with --every-step)
//     stdout: the per-step scalars in hex.
//   forge-torch-compat powf IN OUT [--powf no_fmad|fmad] [--rcp-exceptions FILE]
//     IN:  "FHTCPOW1", u64 n, x[n] f32, y[n] f32
//     OUT: "FHTCPWO1", u64 n, result[n] (f32 bits), rcp_sensitive[n] (u8: 1 where the result
//          depends on the last bit of rcp.approx, see cuda_powf_rcp_sensitive)
//   --rcp-exceptions FILE: "FHRCPEX1", u64 count, count x (u32 input bits, u32 output bits),
//     ascending inputs: rcp.approx.ftz.f32 outputs measured on the GPU where they differ from
//     round-to-nearest (suites/gpu/test_gpu_cuda_powf.cu and the script write it).
// Exit status: 0 done, 2 bad usage or bad input (with a message on stderr).
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kernels/common/cuda_powf.h"
#include "kernels/formats/formats.h"
#include "kernels/rules/adamw_torch_fused.h"

namespace fh {
namespace {

struct Options {
  std::string mode, in, out, rcp_file;
  bool lrwd_in_double = false, every_step = false;
  PowfBuild powf_build = PowfBuild::no_fmad;
  int threads = 0;
};

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument(what); }

const char* kUsage =
    "usage: forge-torch-compat adamw IN OUT [--lrwd fp32|double] [--powf no_fmad|fmad]\n"
    "                                     [--rcp-exceptions FILE] [--every-step] [--threads N]\n"
    "       forge-torch-compat powf IN OUT [--powf no_fmad|fmad] [--rcp-exceptions FILE]\n";

Options parse(int argc, char** argv) {
  if (argc < 4) bad("too few arguments");
  Options o;
  o.mode = argv[1];
  o.in = argv[2];
  o.out = argv[3];
  if (o.mode != "adamw" && o.mode != "powf") bad("unknown mode '" + o.mode + "'");
  for (int i = 4; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) bad(a + " needs a value");
      return argv[++i];
    };
    if (a == "--lrwd") {
      const std::string v = value();
      if (v == "fp32") o.lrwd_in_double = false;
      else if (v == "double") o.lrwd_in_double = true;
      else bad("--lrwd must be fp32 or double, not '" + v + "'");
    } else if (a == "--powf") {
      const std::string v = value();
      if (v == "no_fmad") o.powf_build = PowfBuild::no_fmad;
      else if (v == "fmad") o.powf_build = PowfBuild::fmad;
      else bad("--powf must be no_fmad or fmad, not '" + v + "'");
    } else if (a == "--rcp-exceptions") {
      o.rcp_file = value();
    } else if (a == "--every-step") {
      o.every_step = true;
    } else if (a == "--threads") {
      const std::string v = value();
      char* end = nullptr;
      const long t = std::strtol(v.c_str(), &end, 10);
      if (!end || *end || t < 1 || t > 1024) bad("--threads must be an integer in [1, 1024]");
      o.threads = int(t);
    } else {
      bad("unknown option '" + a + "'");
    }
  }
  return o;
}

class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path), f_(path, std::ios::binary) {
    if (!f_) bad("cannot open " + path);
    f_.seekg(0, std::ios::end);
    size_ = uint64_t(f_.tellg());
    f_.seekg(0);
  }
  void magic(const char* m) {
    char got[8];
    bytes(got, 8);
    if (std::memcmp(got, m, 8) != 0) bad(path_ + ": not a " + std::string(m, 8) + " file");
  }
  template <class T> T get() { T v; bytes(&v, sizeof v); return v; }
  void bytes(void* p, uint64_t n) {
    f_.read(static_cast<char*>(p), std::streamsize(n));
    if (!f_) bad(path_ + ": truncated (wanted " + std::to_string(n) + " more bytes)");
  }
  uint64_t size() const { return size_; }
  uint64_t pos() { return uint64_t(f_.tellg()); }
 private:
  std::string path_;
  std::ifstream f_;
  uint64_t size_ = 0;
};

class Writer {
 public:
  explicit Writer(const std::string& path) : path_(path), f_(path, std::ios::binary | std::ios::trunc) {
    if (!f_) bad("cannot create " + path);
  }
  void bytes(const void* p, uint64_t n) {
    f_.write(static_cast<const char*>(p), std::streamsize(n));
    if (!f_) bad("cannot write " + path_);
  }
  template <class T> void put(T v) { bytes(&v, sizeof v); }
  void close() { f_.close(); if (!f_) bad("cannot finish " + path_); }
 private:
  std::string path_;
  std::ofstream f_;
};

struct RcpTable {
  std::vector<uint32_t> in, out;
  RcpApproxHostModel model() const { return {in.data(), out.data(), in.size()}; }
};

RcpTable read_rcp_table(const std::string& path) {
  RcpTable t;
  if (path.empty()) return t;
  Reader r(path);
  r.magic("FHRCPEX1");
  const uint64_t count = r.get<uint64_t>();
  if (r.size() != 16 + count * 8) bad(path + ": size does not match its count " + std::to_string(count));
  t.in.resize(count);
  t.out.resize(count);
  for (uint64_t k = 0; k < count; ++k) {
    t.in[k] = r.get<uint32_t>();
    t.out[k] = r.get<uint32_t>();
    if (k && t.in[k] <= t.in[k - 1]) bad(path + ": inputs are not strictly ascending at entry " + std::to_string(k));
  }
  return t;
}

int thread_count(int requested) {
  if (requested > 0) return requested;
  return int(std::max(1u, std::min(64u, std::thread::hardware_concurrency())));
}

template <class F>
void parallel_chunks(int64_t n, int threads, F&& f) {
  const int64_t chunk = 1 << 16, nchunks = (n + chunk - 1) / chunk;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int64_t c = t; c < nchunks; c += threads) f(c * chunk, std::min(n, (c + 1) * chunk));
    });
  for (auto& th : pool) th.join();
}

std::string hex(float x) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08X", f2u(x));
  return b;
}

void run_adamw(const Options& o) {
  const RcpTable table = read_rcp_table(o.rcp_file);
  Reader r(o.in);
  r.magic("FHTCADW1");
  const uint64_t n = r.get<uint64_t>(), steps = r.get<uint64_t>();
  AdamWTorchFused::Hyper h;
  h.lr = r.get<double>();
  h.beta1 = r.get<double>();
  h.beta2 = r.get<double>();
  h.eps = r.get<double>();
  h.weight_decay = r.get<double>();
  const uint32_t maximize = r.get<uint32_t>(), dtype = r.get<uint32_t>();
  if (maximize > 1) bad(o.in + ": maximize must be 0 or 1");
  if (dtype > 1) bad(o.in + ": dtype must be 0 (fp32) or 1 (bf16)");
  if (n == 0 || n > (uint64_t(1) << 34)) bad(o.in + ": n must be in [1, 2^34]");
  if (steps == 0 || steps > uint64_t(AdamWTorchFused::kMaxStep)) bad(o.in + ": steps must be in [1, 2^24]");
  h.maximize = maximize != 0;
  h.lrwd_in_double = o.lrwd_in_double;
  h.powf_build = o.powf_build;
  AdamWTorchFused::validate(h);
  const uint64_t esize = dtype ? 2 : 4;
  const uint64_t expect = r.pos() + esize * n * (steps + 1);
  if (r.size() != expect)
    bad(o.in + ": file has " + std::to_string(r.size()) + " bytes, the header implies " + std::to_string(expect));
  const bool bf16 = dtype == 1;

  // State as torch keeps it: params, exp_avg, exp_avg_sq in the parameter's dtype, zeros at start.
  std::vector<float> p32, m32, v32, g32;
  std::vector<fh::bf16> p16, m16, v16, g16;  // fh::: the flag above takes the name here
  if (bf16) {
    p16.resize(n); m16.assign(n, fh::bf16::from_bits(0)); v16.assign(n, fh::bf16::from_bits(0)); g16.resize(n); g32.resize(n);
    r.bytes(p16.data(), n * 2);
  } else {
    p32.resize(n); m32.assign(n, 0.0f); v32.assign(n, 0.0f); g32.resize(n);
    r.bytes(p32.data(), n * 4);
  }
  ParamView pv;
  pv.rows = 1;
  pv.cols = pv.global_cols = int64_t(n);
  pv.master = bf16 ? nullptr : p32.data();
  pv.bf16 = bf16 ? p16.data() : nullptr;  // fp32 params have no bf16 working copy
  pv.state[0].bf16 = bf16 ? m16.data() : nullptr;
  pv.state[1].bf16 = bf16 ? v16.data() : nullptr;
  pv.state[0].f32 = bf16 ? nullptr : m32.data();
  pv.state[1].f32 = bf16 ? nullptr : v32.data();
  pv.state[1].nonnegative = true;

  Writer w(o.out);
  w.bytes("FHTCOUT1", 8);
  w.put<uint64_t>(n);
  w.put<uint64_t>(o.every_step ? steps : 1);
  w.put<uint32_t>(dtype);
  w.put<uint32_t>(0);
  const int threads = thread_count(o.threads);
  std::printf("forge-torch-compat adamw: n=%" PRIu64 " steps=%" PRIu64 " dtype=%s lr=%.17g betas=(%.17g, %.17g) "
              "eps=%.17g weight_decay=%.17g maximize=%u lrwd=%s powf=%s rcp_exceptions=%zu threads=%d\n",
              n, steps, bf16 ? "bf16" : "fp32", h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, maximize,
              h.lrwd_in_double ? "double" : "fp32", powf_build_name(h.powf_build), table.in.size(), threads);
  for (uint64_t t = 1; t <= steps; ++t) {
    const AdamWTorchFused::Scalars s = AdamWTorchFused::scalars(h, int64_t(t), table.model());
    std::printf("step %" PRIu64 ": bc1=%s bc2_sqrt=%s step_size=%s lrwd=%s decay=%d\n", t, hex(s.bc1).c_str(),
                hex(s.bc2_sqrt).c_str(), hex(s.step_size).c_str(), hex(s.lrwd).c_str(), int(s.decay));
    if (bf16) {
      r.bytes(g16.data(), n * 2);
      for (uint64_t i = 0; i < n; ++i) g32[i] = bf16_to_float(g16[i]);  // exact
    } else {
      r.bytes(g32.data(), n * 4);
    }
    parallel_chunks(int64_t(n), threads, [&](int64_t c0, int64_t c1) {
      if (bf16)
        update_segment<AdamWTorchFused, StateFormat::bf16, WeightStore::bf16_rne>(s, pv, 0, c0, int(c1 - c0), g32.data() + c0);
      else
        update_segment<AdamWTorchFused, StateFormat::fp32, WeightStore::fp32_master>(s, pv, 0, c0, int(c1 - c0), g32.data() + c0);
    });
    if (o.every_step || t == steps) {
      w.put<uint64_t>(t);
      if (bf16) { w.bytes(p16.data(), n * 2); w.bytes(m16.data(), n * 2); w.bytes(v16.data(), n * 2); }
      else { w.bytes(p32.data(), n * 4); w.bytes(m32.data(), n * 4); w.bytes(v32.data(), n * 4); }
    }
  }
  w.close();
}

void run_powf(const Options& o) {
  if (o.every_step || o.lrwd_in_double) bad("--every-step and --lrwd belong to the adamw mode");
  const RcpTable table = read_rcp_table(o.rcp_file);
  const RcpApproxHostModel model = table.model();
  Reader r(o.in);
  r.magic("FHTCPOW1");
  const uint64_t n = r.get<uint64_t>();
  if (n > (uint64_t(1) << 34)) bad(o.in + ": n too large");
  if (r.size() != 16 + n * 8) bad(o.in + ": size does not match n = " + std::to_string(n));
  std::vector<float> x(n), y(n);
  r.bytes(x.data(), n * 4);
  r.bytes(y.data(), n * 4);
  std::vector<uint32_t> res(n);
  std::vector<uint8_t> sens(n);
  parallel_chunks(int64_t(n), thread_count(o.threads), [&](int64_t c0, int64_t c1) {
    for (int64_t i = c0; i < c1; ++i) {
      const float v = o.powf_build == PowfBuild::fmad ? cuda_powf_with<PowfBuild::fmad>(x[i], y[i], model)
                                                      : cuda_powf_with<PowfBuild::no_fmad>(x[i], y[i], model);
      res[size_t(i)] = f2u(v);
      sens[size_t(i)] = cuda_powf_rcp_sensitive(o.powf_build, x[i], y[i]) ? 1 : 0;
    }
  });
  Writer w(o.out);
  w.bytes("FHTCPWO1", 8);
  w.put<uint64_t>(n);
  w.bytes(res.data(), n * 4);
  w.bytes(sens.data(), n);
  w.close();
  std::printf("forge-torch-compat powf: n=%" PRIu64 " powf=%s rcp_exceptions=%zu\n", n,
              powf_build_name(o.powf_build), table.in.size());
}

}  // namespace
}  // namespace fh

int main(int argc, char** argv) {
  try {
    const fh::Options o = fh::parse(argc, argv);
    if (o.mode == "adamw") fh::run_adamw(o);
    else fh::run_powf(o);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "forge-torch-compat: %s\n%s", e.what(), fh::kUsage);
    return 2;
  }
}
