// The fuzzed parsers (fuzz_inputs.h): scratch files, the valid base files, the HDF5 edit recipes,
// each target's call of the real reader and the promises checked after an accepted input.
#include "suites/fuzz/fuzz_inputs.h"

#include <fcntl.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>

#include "inputs/benchmark_json.h"
#include "inputs/convergence_run_json.h"
#include "inputs/external_bench.h"
#include "inputs/external_io.h"
#include "reports/report.h"
#include "reports/report_diff.h"
#include "reports/report_rules.h"

namespace fh::fuzz {

namespace fs = std::filesystem;

// ---- scratch files ----

namespace {

void remove_scratch();

std::string make_scratch() {
  const char* tmp = std::getenv("TMPDIR");
  // /dev/shm when there is one: every execution writes its input once.
  std::string base = tmp && *tmp ? tmp : (fs::is_directory("/dev/shm") ? "/dev/shm" : "/tmp");
  std::string t = base + "/fh-fuzz-" + std::to_string(::getpid()) + "-XXXXXX";
  if (!::mkdtemp(t.data())) throw std::runtime_error("fuzz: cannot create a scratch folder under " + base);
  return t;
}

void write_bytes(const std::string& path, const uint8_t* data, size_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("fuzz: cannot write " + path);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) {
      ::close(fd);
      throw std::runtime_error("fuzz: cannot write " + path);
    }
    done += size_t(n);
  }
  ::close(fd);
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::vector<uint8_t> out;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("fuzz: cannot read " + path);
  uint8_t buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.insert(out.end(), buf, buf + n);
  std::fclose(f);
  return out;
}

}  // namespace

const std::string& scratch_dir() {
  // Never destroyed: the exit handler that removes the folder runs after static destructors.
  static const std::string* dir = [] {
    auto* d = new std::string(make_scratch());
    std::atexit(remove_scratch);
    return d;
  }();
  return *dir;
}

namespace {

void remove_scratch() {
  std::error_code ec;
  fs::remove_all(scratch_dir(), ec);
}

std::string scratch(const std::string& name) { return scratch_dir() + "/" + name; }

// ---- deterministic values for the base files ----

struct Lcg {
  uint64_t s;
  uint64_t next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return s >> 11;
  }
  float unit() { return float(next() % 2000001) / 1000000.0f - 1.0f; }  // [-1, 1]
};

ext::Tensor filled(ext::Dtype d, std::vector<int64_t> shape, Lcg& rng) {
  std::vector<float> v(size_t(ext::Tensor::make(d, shape).numel()));
  if (d == ext::Dtype::i64) {
    std::vector<int64_t> idx(v.size());
    for (auto& x : idx) x = int64_t(rng.next() % 8);
    return ext::Tensor::from_i64(idx);
  }
  for (auto& x : v) x = d == ext::Dtype::int8 ? float(int(rng.next() % 255) - 127) : rng.unit();
  return ext::Tensor::from_floats(d, std::move(shape), v);
}

// ---- the valid base files ----

constexpr const char* kCasesId = "fuzz-cases-1";

std::vector<ext::CaseSpec> base_case_specs() {
  auto adamw = [](std::string id, std::string kind, int64_t out, int64_t in, int64_t T, int64_t steps, std::string wd,
                  std::string sd, int64_t first_step) {
    ext::CaseSpec c;
    c.id = std::move(id);
    c.kind = std::move(kind);
    c.out = out, c.in = in, c.tokens = T, c.steps = steps;
    c.weight_dtype = std::move(wd);
    c.state_dtype = std::move(sd);
    c.lr = 1e-3, c.beta1 = 0.9, c.beta2 = 0.999, c.eps = 1e-8, c.weight_decay = 0.01;
    c.first_step = first_step;
    c.qblock = c.kind == "adamw_int8" ? 8 : 0;
    c.g_order = "mma_chain k16 split_k 1";
    return c;
  };
  ext::CaseSpec probe;
  probe.id = "probe_8x16_t5";
  probe.kind = "order_probe";
  probe.out = 8, probe.in = 16, probe.tokens = 5, probe.steps = 1;
  probe.state_dtype = "none";
  return {probe, adamw("adamw_bf16_bf16_4x8_t3", "adamw", 4, 8, 3, 2, "bf16", "bf16", 1),
          adamw("adamw_fp32_fp32_4x8_t3", "adamw", 4, 8, 3, 2, "fp32", "fp32", 1000),
          adamw("int8_4x16_t3", "adamw_int8", 4, 16, 3, 2, "bf16", "int8", 1)};
}

void write_base_cases(const std::string& path) {
  ext::CasesHeader h;
  h.cases_id = kCasesId;
  h.case_set = "fuzz";
  h.harness_revision = "fuzz";
  h.seed = 1;
  Lcg rng{7};
  ext::write_cases_file(path, h, base_case_specs(), [&](const ext::CaseSpec& c) {
    std::map<std::string, ext::Tensor> d;
    for (const ext::DatasetSpec& s : ext::case_inputs(c)) {
      if (s.dtype == ext::Dtype::i64) {  // pair_i, pair_j: three pairs of tokens
        const int64_t off = s.name == "pair_i" ? 0 : 1;
        d[s.name] = ext::Tensor::from_i64({off % c.tokens, (2 + off) % c.tokens, (3 + off) % c.tokens});
        continue;
      }
      d[s.name] = filled(s.dtype, s.shape, rng);
    }
    return d;
  });
}

// Three results files for the base cases: a fused path declaring an mma_chain order (every case
// ok), a two-phase path declaring fp32_sequential (a failed and an unsupported case), a
// reference without an order declaration or meta.
void write_base_results(const std::string& path, int variant) {
  ext::ResultsHeader h;
  h.cases_id = kCasesId;
  h.producer = "fuzz";
  Lcg rng{uint64_t(11 + variant)};
  if (variant == 0) {
    h.path = "fuzz_fused", h.role = "fused";
    h.order = {"mma_chain", 16, 2, 8};
    h.meta = {{"package", "fuzz base"}, {"g_source", "cases:G"}};
  } else if (variant == 1) {
    h.path = "fuzz_two_phase", h.role = "two_phase";
    h.order = {"fp32_sequential", 16, 1, 16};
    h.meta = {{"package", "fuzz base"}};
  } else {
    h.path = "fuzz_reference", h.role = "reference";
  }
  std::vector<ext::ResultCaseOut> outs;
  for (const ext::CaseSpec& c : base_case_specs()) {
    ext::ResultCaseOut rc;
    rc.id = c.id;
    if (variant == 1 && c.kind == "order_probe") {
      rc.status = "unsupported";
      rc.error = "no probe on this path";
    } else if (variant == 1 && c.weight_dtype == "fp32") {
      rc.status = "failed";
      rc.error = "step 2 diverged";
      rc.detail = "planted by the fuzz base";
    } else {
      for (const ext::ResultDatasetSpec& s : ext::case_outputs(c))
        if (!s.optional || variant == 0) rc.data[s.name] = filled(s.dtype, s.shape, rng);
    }
    outs.push_back(std::move(rc));
  }
  ext::write_results_file(path, h, outs);
}

// Two reports: every verdict, bitwise evidence, every pass_if, case attributes, 1-D and 2-D
// float and integer datasets and both kinds of benchmark; and a minimal one.
void write_base_report(const std::string& path, int variant) {
  Meta meta = Meta::unknown();
  meta.set("start_time_utc", "2026-01-01T00:00:00Z").set("git_revision", "fuzz");
  Report r(meta);
  if (variant == 0) {
    auto& c1 = r.add_case("alpha", "c1");
    c1.set_attr("rule", "adamw").set_attr("shape", "4x8");
    c1.add_check(Check::passed("exact", "differing", 0, 0).bitwise(0, 0, ""));
    c1.add_check(Check::failed("bounded", "max_rel_err", 2e-6, 1e-6, "over its bound"));
    c1.add_check(Check::passed("power", "power", 0.95, 0.8).passes_if(PassIf::at_least));
    c1.add_check(Check::not_run("gpu", "no GPU"));
    c1.add_f64("curve", {1.0, 2.0, 3.0}, "loss per step");
    c1.add_i64("hist", {0, 5, 2});
    c1.add_f64_2d("grid", 2, 2, {1, 2, 3, 4});
    auto& c2 = r.add_case("alpha", "c2");
    c2.add_check(Check::passed("grouped", "max_rel_err", 1e-7, 1e-6).bitwise(2, 1, "element=(0,3)"));
    r.add_case("beta", "only").add_check(Check::errored("threw", "planted"));
    r.add_benchmark(BenchmarkData{"adamw/4096/manual_time", {100000, 101000, 99000}, std::nan(""), "ns"});
    r.add_benchmark(BenchmarkData{"agg_only", {}, 5e5, "ns"});
  } else {
    r.add_case("gamma", "one").add_check(Check::passed("x", "err", 0.1, 1));
  }
  r.write(path, WriteOptions{.replace_existing = true});
}

struct Bases {
  std::string cases;
  std::vector<std::string> results, reports;
  std::vector<std::vector<uint8_t>> results_bytes, cases_bytes, report_bytes;
};

const Bases& bases() {
  static const Bases b = [] {
    Bases x;
    x.cases = scratch("base_cases.h5");
    write_base_cases(x.cases);
    x.cases_bytes.push_back(read_bytes(x.cases));
    for (int v = 0; v < 3; ++v) {
      x.results.push_back(scratch("base_results_" + std::to_string(v) + ".h5"));
      write_base_results(x.results.back(), v);
      x.results_bytes.push_back(read_bytes(x.results.back()));
    }
    for (int v = 0; v < 2; ++v) {
      x.reports.push_back(scratch("base_report_" + std::to_string(v) + ".h5"));
      write_base_report(x.reports.back(), v);
      x.report_bytes.push_back(read_bytes(x.reports.back()));
    }
    return x;
  }();
  return b;
}

const ext::CasesFile& base_cases_file() {
  static const ext::CasesFile c(bases().cases);
  return c;
}

const ReportData& base_report_data() {
  static const ReportData d = read_report(bases().reports[0]);
  return d;
}

// ---- recipes: a base file, then edits through the HDF5 API ----

// The bytes of a recipe, read front to back; past the end every read is 0.
struct Bytes {
  const uint8_t* p;
  size_t n, i = 0;
  bool done() const { return i >= n; }
  uint8_t u8() { return i < n ? p[i++] : 0; }
  uint64_t u64() {
    uint64_t v = 0;
    for (int k = 0; k < 8; ++k) v |= uint64_t(u8()) << (8 * k);
    return v;
  }
  std::string raw(size_t len) {
    std::string s;
    while (len-- && !done()) s.push_back(char(u8()));
    return s;
  }
};

// Names the readers look for, and values they compare against. Append only: a recipe names an
// entry by its index (here and in the pick_* tables), and suites/fuzz/regressions holds recipes.
const std::vector<std::string>& name_words() {
  static const std::vector<std::string> w = {
      // external producer files
      "fh_external_interface", "file_kind", "cases_id", "case_set", "harness_revision", "seed", "producer", "path",
      "role", "order_model", "order_k_group", "order_split_k", "order_split_round", "meta", "cases", "status", "error",
      "detail", "kind", "out", "in", "tokens", "steps", "weight_dtype", "state_dtype", "lr", "beta1", "beta2", "eps",
      "weight_decay", "first_step", "qblock", "g_order", "X", "dY", "W0", "G", "m0", "v0", "m0_q", "v0_q", "m0_scale",
      "v0_scale", "pair_i", "pair_j", "W", "m", "v", "m_q", "v_q", "m_scale", "v_scale", "probe_8x16_t5",
      "adamw_bf16_bf16_4x8_t3", "adamw_fp32_fp32_4x8_t3", "int8_4x16_t3", "package", "g_source",
      // reports
      "schema_version", "verdict", "n_pass", "n_fail", "n_not_run", "n_error", "n_cases", "reason", "metric_name",
      "n_confirmed", "n_refuted", "n_inconclusive", "contract", "finding", "confirmed", "refuted", "inconclusive",
      "metric", "bound", "pass_if", "differing", "max_ulp", "first_diff", "description", "name", "median", "unit",
      "checks", "data", "benchmarks", "alpha", "beta", "gamma", "c1", "c2", "only", "one", "exact", "bounded", "power",
      "gpu", "grouped", "threw", "curve", "hist", "grid", "rule", "shape", "git_revision", "host", "gpu_name",
      "start_time_utc", "configuration", "tool_version", "adamw%2F4096%2Fmanual_time", "agg_only", ".", "..", "a/b"};
  return w;
}

const std::vector<std::string>& value_words() {
  static const std::vector<std::string> w = {
      "ok", "failed", "unsupported", "fused", "two_phase", "reference", "mma_chain", "fp32_sequential", "cases",
      "results", "order_probe", "adamw", "adamw_int8", "bf16", "fp32", "int8", "none", kCasesId, "fuzz_fused",
      "pass", "fail", "not-run", "error", "<=", "<", ">=", ">", "ns", "us", "differing", "max_rel_err", "adamw/4096/manual_time",
      "", "x", "a b", "..", "/", "\xff\xfe", "caf\xc3\xa9", "\xed\xa0\x80"};
  return w;
}

int64_t pick_i64(Bytes& b) {
  static const int64_t t[] = {0, 1, -1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 48, 63, 64, 65, 127, 128, 255, 256,
                              1000, 1024, 4096, 10000, 10001, 65535, 65536, 65537, (int64_t(1) << 31) - 1,
                              int64_t(1) << 31, int64_t(1) << 32, int64_t(1) << 40, int64_t(1) << 62,
                              std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), -2, -65536};
  const uint8_t k = b.u8();
  return k < std::size(t) ? t[k] : k < 200 ? int64_t(k) - 100 : int64_t(b.u64());
}

double pick_f64(Bytes& b) {
  static const double inf = std::numeric_limits<double>::infinity();
  static const double t[] = {0.0, -0.0, 1.0, -1.0, 0.5, 0.9, 0.999, 1 - 1e-17, 1e-8, 1e-3, 1e300, -1e300, inf, -inf,
                             std::nan(""), std::numeric_limits<double>::denorm_min(), 2.0, 1e-320, 3.5e38, 1e-45};
  const uint8_t k = b.u8();
  if (k < std::size(t)) return t[k];
  if (k < 200) return double(int(k) - 100) / 8.0;
  double d;
  const uint64_t u = b.u64();
  std::memcpy(&d, &u, 8);
  return d;
}

uint64_t pick_dim(Bytes& b) {
  static const uint64_t t[] = {0, 1, 2, 3, 4, 5, 6, 8, 16, 48, 64, 65, 1000, uint64_t(1) << 16, uint64_t(1) << 20,
                               (uint64_t(1) << 31) - 1, uint64_t(1) << 31, uint64_t(1) << 32, uint64_t(1) << 40,
                               uint64_t(1) << 62, (uint64_t(1) << 63) + 1};
  const uint8_t k = b.u8();
  return k < std::size(t) ? t[k] : uint64_t(k % 32);
}

std::string pick_name(Bytes& b) {
  const uint8_t k = b.u8();
  if (k < 0xF0) return name_words()[k % name_words().size()];
  if (k < 0xFE) return b.raw(b.u8() % 32);
  return std::string(k == 0xFE ? 70000 : 300, char('a' + b.u8() % 26));  // long names
}

std::string pick_text(Bytes& b) {
  const uint8_t k = b.u8();
  switch (k % 8) {
    case 4: return b.raw(b.u8() % 64);
    case 5: {
      static const size_t lens[] = {256, 4096, 70000, 300000};
      const size_t len = lens[b.u8() % 4];
      return std::string(len, char('a' + b.u8() % 26));
    }
    case 6: return value_words()[b.u8() % value_words().size()] + b.raw(b.u8() % 8);
    default: return value_words()[(k / 8) % value_words().size()];
  }
}

struct Quiet {
  H5E_auto2_t f = nullptr;
  void* d = nullptr;
  Quiet() {
    H5Eget_auto2(H5E_DEFAULT, &f, &d);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~Quiet() { H5Eset_auto2(H5E_DEFAULT, f, d); }
};

// Closes an HDF5 identifier at scope end.
struct Id {
  hid_t id;
  herr_t (*close)(hid_t);
  Id(hid_t i, herr_t (*c)(hid_t)) : id(i), close(c) {}
  ~Id() {
    if (id >= 0) close(id);
  }
  operator hid_t() const { return id; }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
};

struct Objects {
  std::vector<std::string> all, groups, datasets;
};

Objects list_objects(hid_t f) {
  Objects o;
  o.all.push_back("/");
  o.groups.push_back("/");
  auto cb = [](hid_t, const char* name, const H5O_info_t* info, void* data) -> herr_t {
    auto* o = static_cast<Objects*>(data);
    if (std::strcmp(name, ".") == 0) return 0;
    const std::string p = std::string("/") + name;
    o->all.push_back(p);
    if (info->type == H5O_TYPE_GROUP) o->groups.push_back(p);
    if (info->type == H5O_TYPE_DATASET) o->datasets.push_back(p);
    return o->all.size() > 4096 ? 1 : 0;
  };
  H5Ovisit2(f, H5_INDEX_NAME, H5_ITER_INC, cb, &o, H5O_INFO_BASIC);
  return o;
}

const std::string& pick(const std::vector<std::string>& v, Bytes& b) { return v[b.u8() % v.size()]; }

std::string join(const std::string& group, const std::string& name) {
  return group == "/" ? "/" + name : group + "/" + name;
}

// A file type for dataset and attribute kinds 0..11.
hid_t pick_type(uint8_t k, bool& vlen) {
  vlen = false;
  switch (k % 12) {
    case 0: return H5Tcopy(H5T_STD_U8LE);
    case 1: return H5Tcopy(H5T_STD_I8LE);
    case 2: return H5Tcopy(H5T_STD_U16LE);
    case 3: return H5Tcopy(H5T_STD_I16LE);
    case 4: return H5Tcopy(H5T_STD_U32LE);
    case 5: return H5Tcopy(H5T_STD_I32LE);
    case 6: return H5Tcopy(H5T_STD_U64LE);
    case 7: return H5Tcopy(H5T_STD_I64LE);
    case 8: return H5Tcopy(H5T_IEEE_F32LE);
    case 9: return H5Tcopy(H5T_IEEE_F64LE);
    case 10: return H5Tcopy(H5T_STD_U16BE);
    default: {
      vlen = true;
      hid_t t = H5Tcopy(H5T_C_S1);
      H5Tset_size(t, H5T_VARIABLE);
      H5Tset_cset(t, H5T_CSET_UTF8);
      return t;
    }
  }
}

void delete_attr_if(hid_t obj, const std::string& name) {
  if (H5Aexists(obj, name.c_str()) > 0) H5Adelete(obj, name.c_str());
}

// op 0: an attribute of any kind on any object.
void op_set_attr(hid_t f, const Objects& o, Bytes& b) {
  Id obj(H5Oopen(f, pick(o.all, b).c_str(), H5P_DEFAULT), H5Oclose);
  if (obj < 0) return;
  const std::string name = pick_name(b);
  const uint8_t kind = b.u8() % 11;
  delete_attr_if(obj, name);
  auto scalar = [&](hid_t ftype, hid_t mtype, const void* v) {
    Id sp(H5Screate(H5S_SCALAR), H5Sclose);
    Id a(H5Acreate2(obj, name.c_str(), ftype, sp, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (a >= 0) H5Awrite(a, mtype, v);
  };
  switch (kind) {
    case 0: { const int64_t v = pick_i64(b); scalar(H5T_STD_I64LE, H5T_NATIVE_INT64, &v); break; }
    case 1: { const double v = pick_f64(b); scalar(H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v); break; }
    case 2:
    case 3: {  // variable-length string, UTF-8 (2) or ASCII (3) declared
      const std::string s = pick_text(b);
      Id t(H5Tcopy(H5T_C_S1), H5Tclose);
      H5Tset_size(t, H5T_VARIABLE);
      H5Tset_cset(t, kind == 2 ? H5T_CSET_UTF8 : H5T_CSET_ASCII);
      const char* p = s.c_str();
      scalar(t, t, &p);
      break;
    }
    case 4: {  // fixed-length string (may hold NULs)
      const std::string s = pick_text(b);
      Id t(H5Tcopy(H5T_C_S1), H5Tclose);
      H5Tset_size(t, std::max<size_t>(s.size(), 1));
      H5Tset_strpad(t, b.u8() % 2 ? H5T_STR_NULLPAD : H5T_STR_NULLTERM);
      std::string buf = s;
      buf.resize(std::max<size_t>(s.size(), 1), '\0');
      scalar(t, t, buf.data());
      break;
    }
    case 5: { const int32_t v = int32_t(pick_i64(b)); scalar(H5T_STD_I32LE, H5T_NATIVE_INT32, &v); break; }
    case 6: { const uint64_t v = uint64_t(pick_i64(b)); scalar(H5T_STD_U64LE, H5T_NATIVE_UINT64, &v); break; }
    case 7: { const float v = float(pick_f64(b)); scalar(H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, &v); break; }
    case 8: {  // an array of two integers where a scalar is expected
      const int64_t v[2] = {pick_i64(b), pick_i64(b)};
      const hsize_t dims[1] = {2};
      Id sp(H5Screate_simple(1, dims, nullptr), H5Sclose);
      Id a(H5Acreate2(obj, name.c_str(), H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
      if (a >= 0) H5Awrite(a, H5T_NATIVE_INT64, v);
      break;
    }
    case 9: {  // a null dataspace: an attribute with no value
      Id sp(H5Screate(H5S_NULL), H5Sclose);
      Id a(H5Acreate2(obj, name.c_str(), H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
      break;
    }
    default: {  // a big-endian integer
      const int64_t v = pick_i64(b);
      scalar(H5T_STD_I64BE, H5T_NATIVE_INT64, &v);
      break;
    }
  }
}

// op 1: delete an attribute (by index).
void op_delete_attr(hid_t f, const Objects& o, Bytes& b) {
  Id obj(H5Oopen(f, pick(o.all, b).c_str(), H5P_DEFAULT), H5Oclose);
  if (obj < 0) return;
  H5O_info_t info;
  if (H5Oget_info2(obj, &info, H5O_INFO_NUM_ATTRS) < 0 || info.num_attrs == 0) return;
  H5Adelete_by_idx(obj, ".", H5_INDEX_NAME, H5_ITER_INC, b.u8() % info.num_attrs, H5P_DEFAULT);
}

// op 2: a dataset of any type, shape and layout in place of (or beside) what was there.
void op_dataset(hid_t f, const Objects& o, Bytes& b) {
  const std::string group = pick(o.groups, b);
  const std::string name = pick_name(b);
  const std::string p = join(group, name);
  if (H5Lexists(f, p.c_str(), H5P_DEFAULT) > 0) H5Ldelete(f, p.c_str(), H5P_DEFAULT);
  bool vlen = false;
  Id type(pick_type(b.u8(), vlen), H5Tclose);
  const uint8_t rk = b.u8() % 6;  // 0 scalar, 1..4 rank (4: rank 1 again), 5 null
  const int rank = rk == 0 || rk == 5 ? 0 : rk == 4 ? 1 : rk;
  hsize_t dims[3] = {1, 1, 1};
  for (int k = 0; k < rank; ++k) dims[k] = pick_dim(b);
  Id space(rk == 0 ? H5Screate(H5S_SCALAR) : rk == 5 ? H5Screate(H5S_NULL) : H5Screate_simple(rank, dims, nullptr),
           H5Sclose);
  if (space < 0) return;
  const uint8_t layout = b.u8() % 3;  // contiguous, chunked, compact
  Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  if (layout == 1 && rank > 0) {
    hsize_t chunk[3];
    for (int k = 0; k < rank; ++k) chunk[k] = std::clamp<hsize_t>(dims[k], 1, 64);
    H5Pset_chunk(dcpl, rank, chunk);
  } else if (layout == 2) {
    H5Pset_layout(dcpl, H5D_COMPACT);
  }
  Id d(H5Dcreate2(f, p.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose);
  if (d < 0 || vlen) return;
  // Data for a small dataset (a large one keeps its fill value: no bytes on disk).
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  const size_t bytes = size_t(n) * H5Tget_size(type);
  if (n <= 0 || bytes > (1u << 16) || b.u8() % 4 == 0) return;
  std::vector<uint8_t> buf(bytes);
  const std::string pat = b.raw(1 + b.u8() % 16);
  for (size_t k = 0; k < bytes; ++k) buf[k] = pat.empty() ? uint8_t(k) : uint8_t(pat[k % pat.size()]);
  H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data());
}

// op 3: overwrite an existing dataset's values (indices out of range, NaN, ...).
void op_set_data(hid_t f, const Objects& o, Bytes& b) {
  if (o.datasets.empty()) return;
  Id d(H5Dopen2(f, pick(o.datasets, b).c_str(), H5P_DEFAULT), H5Dclose);
  if (d < 0) return;
  Id type(H5Dget_type(d), H5Tclose);
  Id space(H5Dget_space(d), H5Sclose);
  if (H5Tis_variable_str(type) > 0 || H5Tget_class(type) == H5T_VLEN) return;
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  const size_t esize = H5Tget_size(type);
  if (n <= 0 || size_t(n) * esize > (1u << 20)) return;
  std::vector<uint8_t> buf(size_t(n) * esize);
  const uint8_t mode = b.u8() % 3;
  const std::string pat = b.raw(1 + b.u8() % 16);
  if (mode == 0) {  // one element
    const size_t at = size_t(b.u64() % uint64_t(n)) * esize;
    H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data());
    for (size_t k = 0; k < esize; ++k) buf[at + k] = pat.empty() ? 0xff : uint8_t(pat[k % pat.size()]);
  } else {
    for (size_t k = 0; k < buf.size(); ++k) buf[k] = pat.empty() ? 0xff : uint8_t(pat[k % pat.size()]);
  }
  H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data());
}

// op 4..: links, groups, moves, copies, foreign data.
void op_links(uint8_t op, hid_t f, const Objects& o, Bytes& b) {
  const std::string obj = pick(o.all, b);
  const std::string group = pick(o.groups, b);
  const std::string name = pick_name(b);
  const std::string p = join(group, name);
  if (op != 4 && b.u8() % 2 && H5Lexists(f, p.c_str(), H5P_DEFAULT) > 0) H5Ldelete(f, p.c_str(), H5P_DEFAULT);
  switch (op) {
    case 4: H5Ldelete(f, obj.c_str(), H5P_DEFAULT); break;
    case 5: { Id g(H5Gcreate2(f, p.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose); break; }
    case 6: {  // soft link: to an object, to nothing, to itself
      const uint8_t k = b.u8() % 3;
      H5Lcreate_soft(k == 0 ? obj.c_str() : k == 1 ? "/nowhere" : p.c_str(), f, p.c_str(), H5P_DEFAULT, H5P_DEFAULT);
      break;
    }
    case 7: {  // external link: to another file's object
      const uint8_t k = b.u8() % 3;
      const std::string file = k == 0 ? "/etc/passwd" : k == 1 ? bases().results[0] : bases().cases;
      H5Lcreate_external(file.c_str(), k == 2 ? "/cases" : "/", f, p.c_str(), H5P_DEFAULT, H5P_DEFAULT);
      break;
    }
    case 8: H5Lcreate_hard(f, obj.c_str(), f, p.c_str(), H5P_DEFAULT, H5P_DEFAULT); break;  // may close a cycle
    case 9: H5Lmove(f, obj.c_str(), f, p.c_str(), H5P_DEFAULT, H5P_DEFAULT); break;
    case 10: {  // rename an attribute (H5Ocopy is not used: HDF5 1.10 crashes and leaks copying into itself)
      Id o(H5Oopen(f, obj.c_str(), H5P_DEFAULT), H5Oclose);
      H5O_info_t info;
      if (o < 0 || H5Oget_info2(o, &info, H5O_INFO_NUM_ATTRS) < 0 || info.num_attrs == 0) break;
      const hsize_t k = b.u8() % info.num_attrs;
      char old_name[256] = {0};
      if (H5Aget_name_by_idx(o, ".", H5_INDEX_NAME, H5_ITER_INC, k, old_name, sizeof old_name, H5P_DEFAULT) > 0)
        H5Arename(o, old_name, name.c_str());
      break;
    }
    case 11: {  // a dataset whose data lives in another file (external storage or a virtual dataset)
      if (H5Lexists(f, p.c_str(), H5P_DEFAULT) > 0) H5Ldelete(f, p.c_str(), H5P_DEFAULT);
      const hsize_t dims[1] = {1 + hsize_t(b.u8() % 64)};
      Id space(H5Screate_simple(1, dims, nullptr), H5Sclose);
      Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
      if (b.u8() % 2) {
        H5Pset_external(dcpl, "/etc/passwd", 0, dims[0] * 2);
      } else {
        Id src(H5Screate_simple(1, dims, nullptr), H5Sclose);
        H5Pset_virtual(dcpl, space, bases().results[0].c_str(), "/cases/probe_8x16_t5/G", src);
      }
      Id d(H5Dcreate2(f, p.c_str(), H5T_STD_U16LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose);
      break;
    }
    default: break;
  }
}

constexpr int kOps = 12;

// The recipe's file at `path`: base `bases[byte 0]` with the edits that follow.
void build_recipe(const uint8_t* data, size_t size, const std::vector<std::vector<uint8_t>>& base_bytes,
                  const std::string& path) {
  Bytes b{data, size};
  const auto& base = base_bytes[b.u8() % base_bytes.size()];
  write_bytes(path, base.data(), base.size());
  Quiet quiet;
  Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
  Id f(H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl), H5Fclose);
  if (f < 0) throw std::runtime_error("fuzz: cannot reopen a base file");
  for (int ops = 0; !b.done() && ops < 64; ++ops) {
    const Objects o = list_objects(f);
    const uint8_t op = b.u8() % kOps;
    if (op == 0) op_set_attr(f, o, b);
    else if (op == 1) op_delete_attr(f, o, b);
    else if (op == 2) op_dataset(f, o, b);
    else if (op == 3) op_set_data(f, o, b);
    else op_links(op, f, o, b);
  }
}

// Raw files go to HDF5's own parser, which in 1.10.8 overruns buffers on some corrupt files (a
// library finding, not a reader's): only with FH_FUZZ_RAW_HDF5=1 (scripts/fuzz.sh's nightly
// mode); otherwise every input is a recipe, so every file is one the library wrote.
bool raw_hdf5_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("FH_FUZZ_RAW_HDF5");
    return v && std::string(v) == "1";
  }();
  return on;
}

bool is_hdf5(const uint8_t* data, size_t size) {
  return raw_hdf5_enabled() && size >= 8 && std::memcmp(data, "\x89HDF\r\n\x1a\n", 8) == 0;
}

// The input as a file: the bytes themselves, or the recipe's file.
std::string hdf5_input(const uint8_t* data, size_t size, const std::vector<std::vector<uint8_t>>& base_bytes) {
  const std::string path = scratch("input.h5");
  if (is_hdf5(data, size)) write_bytes(path, data, size);
  else build_recipe(data, size, base_bytes, path);
  return path;
}

std::string text_input(const uint8_t* data, size_t size, const char* name) {
  const std::string path = scratch(name);
  write_bytes(path, data, size);
  return path;
}

void promise(bool ok, const std::string& what) {
  if (!ok) throw Finding("accepted, but " + what);
}

// At most this many bytes of an accepted file's tensors are loaded per input (the loads must
// succeed; a huge one only costs time).
constexpr int64_t kLoadBudget = int64_t(16) << 20;

int64_t spec_bytes(const ext::DatasetSpec& s) {
  int64_t n = int64_t(ext::dtype_bytes(s.dtype));
  for (int64_t d : s.shape) n *= std::max<int64_t>(d, 1);
  return n;
}

uint64_t input_hash(const uint8_t* data, size_t size) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (size_t k = 0; k < size; ++k) h = (h ^ data[k]) * 1099511628211ull;
  return h;
}

// ---- the targets ----

Outcome results_file(const uint8_t* data, size_t size) {
  const ext::CasesFile& cases = base_cases_file();
  const std::string path = hdf5_input(data, size, bases().results_bytes);
  std::optional<ext::ResultsFile> r;
  try {
    r.emplace(path, cases);
  } catch (const ext::ExternalFileError& e) {
    return {true, e.what()};
  }
  // What a claim may now rely on.
  const ext::DeclaredOrder& ord = r->order();
  promise(r->role() == "fused" || r->role() == "two_phase" || r->role() == "reference", "role '" + r->role() + "'");
  if (ord.model == "mma_chain")
    promise(ord.k_group >= 1 && ord.k_group <= 64 && ord.split_k >= 1 && ord.split_k <= ext::kMaxDeclaredSplit &&
                ord.split_round >= 1 && ord.split_round <= ext::kMaxDeclaredSplit,
            "the declared order " + ord.describe() + " is out of range");
  for (const auto& [k, v] : r->meta())
    promise(report_detail::text_problem(v).empty() && !k.empty(), "meta '" + k + "' is not report text");
  std::vector<std::pair<std::string, ext::ResultDatasetSpec>> outputs;
  for (const ext::ResultCase& rc : r->cases()) {
    const ext::CaseSpec* spec = cases.find(rc.id);
    promise(spec != nullptr, "case '" + rc.id + "' is not in the cases file");
    promise(report_detail::text_problem(rc.error).empty() && report_detail::text_problem(rc.detail).empty(),
            "case '" + rc.id + "' error text is not report text");
    if (rc.status != "ok") {
      promise(!rc.error.empty(), "case '" + rc.id + "' is " + rc.status + " without an error");
      continue;
    }
    for (const ext::ResultDatasetSpec& s : ext::case_outputs(*spec)) outputs.emplace_back(rc.id, s);
  }
  // One output loaded as a claim would (each load opens the file again: one per input keeps the
  // executions fast; the corpus covers the others).
  if (outputs.empty()) return {};
  const auto& [id, s] = outputs[input_hash(data, size) % outputs.size()];
  if (!r->has(id, s.name)) {
    promise(s.optional, "ok case '" + id + "' lacks " + s.name);
    return {};
  }
  if (spec_bytes(s) > kLoadBudget) return {};
  ext::Tensor t;
  try {
    t = r->load(id, s.name);
  } catch (const ext::ExternalFileError& e) {
    throw Finding("accepted, but loading " + id + "/" + s.name + " failed: " + e.what());
  }
  promise(t.dtype == s.dtype && t.shape == s.shape && int64_t(t.bytes.size()) == spec_bytes(s),
          id + "/" + s.name + " loads with another type or shape than the cases file implies");
  return {};
}

Outcome cases_file(const uint8_t* data, size_t size) {
  (void)bases();
  const std::string path = hdf5_input(data, size, bases().cases_bytes);
  std::optional<ext::CasesFile> c;
  try {
    c.emplace(path);
  } catch (const ext::ExternalFileError& e) {
    return {true, e.what()};
  }
  std::vector<std::pair<std::string, ext::DatasetSpec>> inputs;
  for (const ext::CaseSpec& s : c->cases()) {
    promise(s.out >= 1 && s.in >= 1 && s.tokens >= 1 && s.steps >= 1 && s.steps <= ext::kMaxCaseSteps,
            "case '" + s.id + "' has a size out of range");
    for (double v : {s.lr, s.beta1, s.beta2, s.eps, s.weight_decay})
      promise(std::isfinite(v) && v >= 0, "case '" + s.id + "' has a hyperparameter that is not finite and >= 0");
    promise(s.beta1 < 1 && s.beta2 < 1, "case '" + s.id + "' has beta >= 1");
    if (s.kind == "adamw_int8") promise(s.qblock >= 1 && s.in % s.qblock == 0, "case '" + s.id + "': qblock");
    promise(report_detail::text_problem(s.g_order).empty(), "case '" + s.id + "': g_order is not report text");
    std::vector<ext::DatasetSpec> ins;
    try {
      ins = ext::case_inputs(s);
      (void)ext::case_outputs(s);
    } catch (const std::exception& e) {
      throw Finding("accepted, but case '" + s.id + "' has no datasets: " + e.what());
    }
    for (const ext::DatasetSpec& d : ins) inputs.emplace_back(s.id, d);
    if (s.kind == "order_probe") {
      // ext_order_probe takes pair k of row o as (pair_i[k], pair_j[k]) with k = o % n_pairs.
      ext::Tensor pi, pj;
      try {
        pi = c->load(s.id, "pair_i");
        pj = c->load(s.id, "pair_j");
      } catch (const ext::ExternalFileError& e) {
        throw Finding("accepted, but loading the probe pairs of " + s.id + " failed: " + e.what());
      }
      promise(pi.numel() >= 1 && pi.numel() == pj.numel(),
              "case '" + s.id + "' has " + std::to_string(pi.numel()) + " pair_i and " + std::to_string(pj.numel()) +
                  " pair_j (the claim divides by their number and reads pair_j at pair_i's indices)");
      for (int64_t k = 0; k < pi.numel(); ++k)
        promise(pi.i64(k) >= 0 && pi.i64(k) < s.tokens && pj.i64(k) >= 0 && pj.i64(k) < s.tokens,
                "case '" + s.id + "': probe pair " + std::to_string(k) + " is not two tokens");
    }
  }
  // One input loaded as a claim would (one per execution, as for results_file).
  if (inputs.empty()) return {};
  const auto& [id, d] = inputs[input_hash(data, size) % inputs.size()];
  if (spec_bytes(d) > kLoadBudget) return {};
  ext::Tensor t;
  try {
    t = c->load(id, d.name);
  } catch (const ext::ExternalFileError& e) {
    throw Finding("accepted, but loading " + id + "/" + d.name + " failed: " + e.what());
  }
  promise(t.dtype == d.dtype && int64_t(t.bytes.size()) == t.numel() * int64_t(ext::dtype_bytes(d.dtype)),
          id + "/" + d.name + " loads with another type or size");
  if (d.dtype == ext::Dtype::i64)
    for (int64_t k = 0; k < t.numel(); ++k) (void)t.i64(k);
  return {};
}

// forge-verify diff's JSON of the changes (diff_main.cpp's to_json, its strings): must dump.
void dump_changes(const DiffResult& r) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& c : r.changes)
    j.push_back({{"kind", c.kind}, {"path", c.path}, {"field", c.field}, {"base", c.base_value},
                 {"new", c.new_value}, {"regression", c.regression}, {"note", c.note}});
  try {
    (void)j.dump(2);
  } catch (const nlohmann::json::exception& e) {
    throw Finding(std::string("accepted, but forge-verify diff --json cannot write the changes: ") + e.what());
  }
}

Outcome report(const uint8_t* data, size_t size) {
  (void)base_report_data();
  const std::string path = hdf5_input(data, size, bases().report_bytes);
  // forge-verify diff's load(): the checker, then the reader; the checker never throws.
  const std::vector<std::string> problems = validate_report_schema(path);
  ReportData d;
  try {
    d = read_report(path);
  } catch (const std::runtime_error& e) {
    promise(!problems.empty(), std::string("read_report refused what the checker passed: ") + e.what());
    return {true, problems.front()};
  }
  if (!problems.empty()) return {true, problems.front()};
  for (const ClaimData& c : d.claims)
    for (const CaseData& cs : c.cases)
      for (const Dataset& ds : cs.datasets) {
        uint64_t n = 1;
        bool overflow = false;
        for (uint64_t x : ds.shape) overflow |= __builtin_mul_overflow(n, x, &n);
        promise(!overflow && n == (ds.dtype == DType::f64 ? ds.f64.size() : ds.i64.size()),
                c.name + "/" + cs.name + "/" + ds.name + ": its shape does not match its values");
      }
  // What diff then does with it, against a fixed report and against itself.
  dump_changes(diff_reports(base_report_data(), d));
  dump_changes(diff_reports(d, base_report_data()));
  const DiffResult self = diff_reports(d, d);
  dump_changes(self);
  promise(!self.regressed(), "a report regressed against itself");
  ReportData copy = d;
  (void)apply_renames(copy, {});
  return {};
}

Outcome bench_json(const uint8_t* data, size_t size) {
  const std::string path = text_input(data, size, "input.json");
  std::vector<BenchmarkData> got;
  std::map<std::string, std::string> errors;
  try {
    // --bench-json reads the first; --external-timing both, in this order.
    got = read_benchmark_json(path);
    errors = read_benchmark_errors(path);
  } catch (const std::invalid_argument& e) {
    return {true, e.what()};
  }
  // The claims then match the names with std::regex (suites/claims/ext_layer_speed.cpp,
  // speed_decomposition.cpp), whose matcher recurses once per character: a name must survive it.
  static const std::regex forge_name(R"(^forge/([A-Za-z0-9_]+)/(\d+x\d+x\d+)$)");
  static const std::regex bench_name(R"(^adamw_bf16_bf16_rne/(fused|cublas)/out(\d+)_in(\d+)_T(\d+)/)");
  std::smatch m;
  for (const BenchmarkData& b : got) (void)(std::regex_search(b.name, m, forge_name) || std::regex_search(b.name, m, bench_name));
  for (const auto& [name, error] : errors) {
    (void)std::regex_search(name, m, forge_name);
    promise(report_detail::text_problem(error).empty(), "an error message is not report text");
  }
  // --bench-json's benchmarks go into the report after the claims ran: each must be taken.
  Meta meta = Meta::unknown();
  Report r(meta);
  for (BenchmarkData& b : got) {
    const std::string name = b.name;
    try {
      r.add_benchmark(std::move(b));
    } catch (const std::invalid_argument& e) {
      throw Finding("accepted at the door, refused by the report after the run: " + std::string(e.what()));
    }
  }
  return {};
}

// The text fields of a model JSON reach the report as case attributes, the case name is
// config.model: each must be something the report takes.
void model_text_promises(const ModelBenchResult& r, const std::string& case_name) {
  for (const std::string* s : {&r.config, &r.model, &r.status, &r.error, &r.dtype, &r.device, &r.torch, &r.triton,
                               &r.transformers, &r.forge_commit, &r.switches, &r.state_mode})
    promise(report_detail::text_problem(*s).empty(), "a text field is not report text: " + report_detail::text_problem(*s));
  promise(report_detail::name_problem(case_name).empty(),
          "the case name '" + case_name + "' is not a report name: " + report_detail::name_problem(case_name));
}

// A JSON target's opening: the input written as a file and read by `read`; the reader's
// invalid_argument is the input refused (`refused` says so and why), anything else escapes.
template <class T>
std::optional<T> read_json_input(T (*read)(const std::string&), const uint8_t* data, size_t size, Outcome& refused) {
  const std::string path = text_input(data, size, "input.json");
  try {
    return read(path);
  } catch (const std::invalid_argument& e) {
    refused = {true, e.what()};
    return std::nullopt;
  }
}

Outcome model_step_json(const uint8_t* data, size_t size) {
  Outcome refused;
  const std::optional<ModelStepRun> got = read_json_input(read_model_step_json, data, size, refused);
  if (!got) return refused;
  const ModelStepRun& r = *got;
  model_text_promises(r.common, r.common.config + "." + r.common.model + ".L" + std::to_string(r.layers));
  promise(r.layers >= 1 && r.layers <= 1000, "layers out of range");
  for (const auto& ph : r.timeline) promise(report_detail::text_problem(ph.name).empty(), "a phase name is not report text");
  for (const auto& [k, v] : r.tag_peaks) promise(report_detail::text_problem(k).empty(), "a tag is not report text");
  for (const auto& [k, v] : r.model_terms) promise(report_detail::text_problem(k).empty(), "a term is not report text");
  return {};
}

// A convergence run reaches convergence_parity, which indexes each loss list by the run's steps and
// evaluation steps and each trace list by the traced steps: a file the reader takes must hold them.
Outcome convergence_run_json(const uint8_t* data, size_t size) {
  Outcome refused;
  const std::optional<ConvergenceRun> got = read_json_input(read_convergence_run_json, data, size, refused);
  if (!got) return refused;
  const ConvergenceRun& r = *got;
  for (const std::string* t : {&r.config, &r.model, &r.status, &r.error, &r.device, &r.planted, &r.update, &r.state,
                               &r.store, &r.dtype, &r.init_from})
    promise(report_detail::text_problem(*t).empty(), "a text field is not report text: " + report_detail::text_problem(*t));
  promise(report_detail::name_problem(r.config).empty(), "the config is not a report name");
  if (r.status != "ok") return {};
  promise(r.train_loss.size() == size_t(r.steps), "train_loss is not one loss per step");
  promise(!r.eval_steps.empty() && r.eval_steps.front() == 0 && r.eval_loss.size() == r.eval_steps.size(),
          "eval_loss is not one loss per eval step from 0");
  for (size_t i = 1; i < r.eval_steps.size(); ++i) promise(r.eval_steps[i] > r.eval_steps[i - 1], "eval steps not ascending");
  promise(r.producer_path != "harness" || r.step_digests.size() == size_t(r.steps), "a harness run without a digest a step");
  const size_t n = r.trace_max_update.size();
  promise(n <= size_t(r.steps) && r.trace_update_param.size() == n, "a trace list off the traced steps");
  promise(r.trace_v_zero.empty() || (r.trace_v_zero.size() == n && r.trace_v_zero_m_nonzero.size() == n),
          "a zero-v trace list off the traced steps");
  for (size_t i = 0; i < r.trace_v_zero.size(); ++i)
    promise(r.trace_v_zero_m_nonzero[i] <= r.trace_v_zero[i] && r.trace_v_zero[i] <= r.int8_v_total,
            "zero-v counts out of order");
  for (const auto& [name, e] : r.grad_rel_err)
    promise(report_detail::text_problem(name).empty() && e >= 0, "a gradient error's name or value");
  return {};
}

Outcome model_bench_json(const uint8_t* data, size_t size) {
  Outcome refused;
  const std::optional<ModelBenchResult> got = read_json_input(read_model_bench_json, data, size, refused);
  if (!got) return refused;
  const ModelBenchResult& r = *got;
  model_text_promises(r, r.config + "." + r.model);
  if (r.status == "ok") promise(r.peak_bytes >= 0 && r.median_ms >= 0, "ok without a peak or a time");
  for (double t : r.step_ms) promise(t >= 0, "a step time < 0");
  return {};
}

Outcome rename_map(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)base_report_data();
  std::vector<Rename> renames;
  try {
    renames = parse_rename_map(text);
    ReportData copy = base_report_data();
    (void)apply_renames(copy, renames);
    (void)diff_reports(copy, base_report_data());
  } catch (const std::invalid_argument& e) {
    return {true, e.what()};
  }
  return {};
}

// ---- seeds: recipes that plant the classes of hostile input (see fuzz_inputs.h) ----

// Builds a recipe's bytes.
struct Recipe {
  std::vector<uint8_t> b;
  explicit Recipe(uint8_t base) { b.push_back(base); }
  Recipe& u8(uint8_t v) { b.push_back(v); return *this; }
  Recipe& u64(uint64_t v) { for (int k = 0; k < 8; ++k) b.push_back(uint8_t(v >> (8 * k))); return *this; }
  Recipe& name(const std::string& n) {
    const auto& w = name_words();
    const auto it = std::find(w.begin(), w.end(), n);
    if (it != w.end() && it - w.begin() < 0xF0) return u8(uint8_t(it - w.begin()));
    u8(0xF0).u8(uint8_t(n.size()));
    for (char c : n) b.push_back(uint8_t(c));
    return *this;
  }
  Recipe& raw_text(const std::string& s) {  // pick_text, case 4
    u8(4).u8(uint8_t(s.size()));
    for (char c : s) b.push_back(uint8_t(c));
    return *this;
  }
  Recipe& i64(int64_t v) { return u8(0xFF).u64(uint64_t(v)); }
  Recipe& f64(double v) { uint64_t u; std::memcpy(&u, &v, 8); return u8(0xFF).u64(u); }
  // The index of `path` among the objects of the base file (list_objects' order).
  Recipe& object(const std::vector<std::string>& all, const std::string& path) {
    const auto it = std::find(all.begin(), all.end(), path);
    if (it == all.end()) throw std::logic_error("fuzz seeds: no object " + path);
    return u8(uint8_t(it - all.begin()));
  }
};

Objects base_objects(const std::string& path) {
  // A copy: the base cases file stays open in this process (base_cases_file holds it with the
  // input door's file-access properties), and HDF5 refuses a second open with other properties.
  const std::string copy = path + ".objects.h5";
  const std::vector<uint8_t> bytes = read_bytes(path);
  write_bytes(copy, bytes.data(), bytes.size());
  Quiet q;
  Id f(H5Fopen(copy.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (f.id < 0) throw std::runtime_error("fuzz seeds: cannot open " + copy);
  return list_objects(f);
}

void save(const std::string& dir, const std::string& name, const std::vector<uint8_t>& bytes, int& n) {
  write_bytes(dir + "/" + name, bytes.data(), bytes.size());
  ++n;
}

// set_attr recipes: op 0, object, name, kind, value.
Recipe attr_i64(uint8_t base, const Objects& o, const std::string& obj, const std::string& name, int64_t v) {
  Recipe r(base);
  r.u8(0).object(o.all, obj).name(name).u8(0).i64(v);
  return r;
}
Recipe attr_f64(uint8_t base, const Objects& o, const std::string& obj, const std::string& name, double v) {
  Recipe r(base);
  r.u8(0).object(o.all, obj).name(name).u8(1).f64(v);
  return r;
}
Recipe attr_text(uint8_t base, const Objects& o, const std::string& obj, const std::string& name, const std::string& v) {
  Recipe r(base);
  r.u8(0).object(o.all, obj).name(name).u8(2).raw_text(v);
  return r;
}

int hdf5_seeds(const std::string& target, const std::string& dir) {
  int n = 0;
  const Bases& bs = bases();
  if (target == "results_file") {
    for (size_t v = 0; v < bs.results.size(); ++v) save(dir, "base_" + std::to_string(v) + ".h5", bs.results_bytes[v], n);
    const Objects o = base_objects(bs.results[0]);
    save(dir, "recipe_base0", Recipe(0).b, n);
    save(dir, "recipe_base1", Recipe(1).b, n);
    save(dir, "recipe_base2", Recipe(2).b, n);
    save(dir, "recipe_k_group_2p62", attr_i64(0, o, "/", "order_k_group", int64_t(1) << 62).b, n);
    save(dir, "recipe_k_group_2p31", attr_i64(0, o, "/", "order_k_group", int64_t(1) << 31).b, n);
    save(dir, "recipe_split_k_2p40", attr_i64(0, o, "/", "order_split_k", int64_t(1) << 40).b, n);
    save(dir, "recipe_split_round_0", attr_i64(0, o, "/", "order_split_round", 0).b, n);
    save(dir, "recipe_role_text", attr_text(0, o, "/", "role", "fused\xff").b, n);
    save(dir, "recipe_error_not_utf8", attr_text(1, base_objects(bs.results[1]), "/cases/probe_8x16_t5", "error", "bad \xc3\x28").b, n);
    save(dir, "recipe_meta_key", attr_text(0, o, "/meta", "a b", "x").b, n);
    save(dir, "recipe_interface_2", attr_i64(0, o, "/", "fh_external_interface", 2).b, n);
    {  // the path attribute very long (the name pattern's matcher)
      Recipe r(0);
      r.u8(0).object(o.all, "/").name("path").u8(2).u8(5).u8(2).u8(0);  // pick_text case 5: 70000 x 'a'
      save(dir, "recipe_long_path", r.b, n);
    }
    {  // W replaced by a dataset of another shape, chunked, never written
      Recipe r(0);
      r.u8(2).object(o.groups, "/cases/adamw_bf16_bf16_4x8_t3").name("W").u8(2).u8(3).u8(17).u8(2).u8(6).u8(1);
      save(dir, "recipe_W_huge", r.b, n);
    }
    {  // an external link in place of a case
      Recipe r(0);
      r.u8(7).u8(0).object(o.groups, "/cases").name("probe_8x16_t5").u8(1).u8(1);
      save(dir, "recipe_external_link", r.b, n);
    }
    {  // W's data in /etc/passwd
      Recipe r(0);
      r.u8(11).u8(0).object(o.groups, "/cases/adamw_bf16_bf16_4x8_t3").name("W").u8(1).u8(31).u8(1);
      save(dir, "recipe_external_storage", r.b, n);
    }
    {  // a group that contains itself
      Recipe r(0);
      r.u8(8).object(o.all, "/cases").object(o.groups, "/cases").name("loop").u8(0);
      save(dir, "recipe_hard_link_cycle", r.b, n);
    }
  } else if (target == "cases_file") {
    save(dir, "base.h5", bs.cases_bytes[0], n);
    const Objects o = base_objects(bs.cases);
    save(dir, "recipe_base", Recipe(0).b, n);
    const std::string c = "/cases/adamw_bf16_bf16_4x8_t3";
    save(dir, "recipe_lr_nan", attr_f64(0, o, c, "lr", std::nan("")).b, n);
    save(dir, "recipe_beta2_inf", attr_f64(0, o, c, "beta2", std::numeric_limits<double>::infinity()).b, n);
    save(dir, "recipe_eps_neg", attr_f64(0, o, c, "eps", -1).b, n);
    save(dir, "recipe_out_2p31", attr_i64(0, o, c, "out", int64_t(1) << 31).b, n);
    save(dir, "recipe_steps_huge", attr_i64(0, o, c, "steps", int64_t(1) << 40).b, n);
    save(dir, "recipe_qblock_0", attr_i64(0, o, "/cases/int8_4x16_t3", "qblock", 0).b, n);
    save(dir, "recipe_qblock_3", attr_i64(0, o, "/cases/int8_4x16_t3", "qblock", 3).b, n);
    save(dir, "recipe_kind", attr_text(0, o, c, "kind", "adamw_fp8").b, n);
    {  // pair_i replaced by out-of-range indices
      Recipe r(0);
      r.u8(3).object(o.datasets, "/cases/probe_8x16_t5/pair_i").u8(1).u8(8).u64(uint64_t(1) << 40);
      save(dir, "recipe_pair_i_range", r.b, n);
    }
    for (const auto& [name, dim] : {std::pair<const char*, uint8_t>{"recipe_pair_j_empty", 0}, {"recipe_pair_j_short", 2}}) {
      // pair_j replaced by an int64 dataset of 0 (2) elements: fewer pairs than pair_i
      Recipe r(0);
      r.u8(2).object(o.groups, "/cases/probe_8x16_t5").name("pair_j").u8(7).u8(1).u8(dim).u8(0);
      if (dim) r.u8(1).u8(0);  // written: 16 bytes 0, 1, 2, ...
      save(dir, name, r.b, n);
    }
  } else if (target == "report") {
    for (size_t v = 0; v < bs.reports.size(); ++v) save(dir, "base_" + std::to_string(v) + ".h5", bs.report_bytes[v], n);
    const Objects o = base_objects(bs.reports[0]);
    save(dir, "recipe_base0", Recipe(0).b, n);
    save(dir, "recipe_base1", Recipe(1).b, n);
    save(dir, "recipe_schema_4", attr_i64(0, o, "/", "schema_version", 4).b, n);
    save(dir, "recipe_n_pass_neg", attr_i64(0, o, "/alpha", "n_pass", -1).b, n);
    save(dir, "recipe_verdict", attr_text(0, o, "/alpha/c1/checks/exact", "verdict", "passed").b, n);
    save(dir, "recipe_bound_nan", attr_f64(0, o, "/alpha/c1/checks/exact", "bound", std::nan("")).b, n);
    save(dir, "recipe_reason_not_utf8", attr_text(0, o, "/alpha/c1/checks/gpu", "reason", "\xff").b, n);
    {  // a case dataset replaced by a 2-D float dataset of 2^32 x 2^32, never written
      Recipe r(0);
      r.u8(2).object(o.groups, "/alpha/c1/data").name("curve").u8(9).u8(2).u8(17).u8(17).u8(1);
      save(dir, "recipe_dataset_huge", r.b, n);
    }
    {  // the same curve as 2^31-1 floats, chunked, never written (read in full: 16 GiB)
      Recipe r(0);
      r.u8(2).object(o.groups, "/alpha/c1/data").name("curve").u8(9).u8(1).u8(15).u8(1);
      save(dir, "recipe_dataset_2p31", r.b, n);
    }
    {
      Recipe r(0);
      r.u8(2).object(o.groups, "/benchmarks").name("agg_only").u8(9).u8(1).u8(16).u8(1);
      save(dir, "recipe_benchmark_huge", r.b, n);
    }
    {  // a claim as an external link
      Recipe r(0);
      r.u8(7).u8(0).object(o.groups, "/").name("beta").u8(1).u8(1);
      save(dir, "recipe_external_link", r.b, n);
    }
  }
  return n;
}

}  // namespace

const std::vector<Target>& targets() {
  static const std::vector<Target> t = {
      {"results_file", "an external producer's results file (HDF5), read against a fixed cases file: fh::ext::ResultsFile",
       results_file},
      {"cases_file", "an external-producer cases file (HDF5): fh::ext::CasesFile", cases_file},
      {"report", "a report given to forge-verify diff (HDF5): validate_report_schema, read_report, diff_reports", report},
      {"bench_json", "--bench-json and --external-timing (Google Benchmark JSON): read_benchmark_json, read_benchmark_errors",
       bench_json},
      {"model_step_json", "--model-step (forge-model-step JSON): read_model_step_json", model_step_json},
      {"model_bench_json", "--external-model (forge_model_bench.py JSON): read_model_bench_json", model_bench_json},
      {"convergence_run_json", "--convergence-run (forge-model-step --train, torch_train_reference.py JSON): "
       "read_convergence_run_json", convergence_run_json},
      {"rename_map", "forge-verify diff --rename-map: parse_rename_map, apply_renames", rename_map},
  };
  return t;
}

const Target* find_target(const std::string& name) {
  for (const Target& t : targets())
    if (name == t.name) return &t;
  return nullptr;
}

int write_seeds(const std::string& name, const std::string& dir) {
  if (!find_target(name)) throw std::invalid_argument("fuzz: no target '" + name + "'");
  return hdf5_seeds(name, dir);
}

}  // namespace fh::fuzz
