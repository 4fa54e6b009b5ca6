// The external-producer interface files (external_io.h, docs/EXTERNAL_PRODUCER.md).
#include "inputs/external_io.h"

#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <cstdio>
#include <functional>

#include "kernels/common/bf16.h"
#include "kernels/common/mma_params.h"
#include "inputs/hdf5_util.h"
#include "inputs/input_file.h"
#include "inputs/text_rules.h"

namespace fh::ext {

using hdf5_detail::Handle;
using hdf5_detail::h5_mutex;
using hdf5_detail::hdf5_error_text;
using hdf5_detail::QuietHdf5;

const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::bf16: return "bf16 (uint16)";
    case Dtype::fp32: return "fp32 (uint32)";
    case Dtype::int8: return "int8";
    case Dtype::i64: return "int64";
  }
  return "?";
}

size_t dtype_bytes(Dtype d) {
  switch (d) {
    case Dtype::bf16: return 2;
    case Dtype::fp32: return 4;
    case Dtype::int8: return 1;
    case Dtype::i64: return 8;
  }
  return 0;
}

Dtype dtype_of_storage(const std::string& name) {
  if (name == "bf16") return Dtype::bf16;
  if (name == "fp32") return Dtype::fp32;
  if (name == "int8") return Dtype::int8;
  throw ExternalFileError("unknown storage dtype '" + name + "' (bf16, fp32 or int8)");
}

static hid_t native_type(Dtype d) {
  switch (d) {
    case Dtype::bf16: return H5T_NATIVE_UINT16;
    case Dtype::fp32: return H5T_NATIVE_UINT32;
    case Dtype::int8: return H5T_NATIVE_INT8;
    case Dtype::i64: return H5T_NATIVE_INT64;
  }
  return H5T_NATIVE_UINT8;
}

static hid_t file_type(Dtype d) {
  switch (d) {
    case Dtype::bf16: return H5T_STD_U16LE;
    case Dtype::fp32: return H5T_STD_U32LE;
    case Dtype::int8: return H5T_STD_I8LE;
    case Dtype::i64: return H5T_STD_I64LE;
  }
  return H5T_STD_U8LE;
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

uint32_t Tensor::bits(int64_t k) const {
  switch (dtype) {
    case Dtype::bf16: { uint16_t u; std::memcpy(&u, bytes.data() + 2 * k, 2); return u; }
    case Dtype::fp32: { uint32_t u; std::memcpy(&u, bytes.data() + 4 * k, 4); return u; }
    case Dtype::int8: return bytes[size_t(k)];
    case Dtype::i64: return uint32_t(i64(k));
  }
  return 0;
}

float Tensor::value(int64_t k) const {
  switch (dtype) {
    case Dtype::bf16: return bf16_to_float(bf16::from_bits(uint16_t(bits(k))));
    case Dtype::fp32: return u2f(bits(k));
    case Dtype::int8: return float(int8_t(bytes[size_t(k)]));
    case Dtype::i64: return float(i64(k));
  }
  return 0;
}

int64_t Tensor::i64(int64_t k) const {
  if (dtype != Dtype::i64) throw std::logic_error("Tensor::i64 on a non-int64 tensor");
  int64_t v;
  std::memcpy(&v, bytes.data() + 8 * k, 8);
  return v;
}

Tensor Tensor::slab(int64_t index) const {
  if (shape.empty() || index < 0 || index >= shape[0]) throw std::out_of_range("Tensor::slab: index out of range");
  Tensor t;
  t.dtype = dtype;
  t.shape.assign(shape.begin() + 1, shape.end());
  const size_t n = size_t(t.numel()) * dtype_bytes(dtype);
  t.bytes.assign(bytes.begin() + std::ptrdiff_t(n * size_t(index)), bytes.begin() + std::ptrdiff_t(n * size_t(index + 1)));
  return t;
}

std::vector<float> Tensor::floats() const {
  std::vector<float> v(static_cast<size_t>(numel()));
  for (int64_t k = 0; k < numel(); ++k) v[size_t(k)] = value(k);
  return v;
}

std::vector<bf16> Tensor::bf16s() const {
  if (dtype != Dtype::bf16) throw std::logic_error("Tensor::bf16s on a non-bf16 tensor");
  std::vector<bf16> v(static_cast<size_t>(numel()));
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

std::vector<uint8_t> Tensor::u8() const {
  if (dtype != Dtype::int8) throw std::logic_error("Tensor::u8 on a non-int8 tensor");
  return bytes;
}

Tensor Tensor::make(Dtype d, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype = d;
  t.shape = std::move(shape);
  t.bytes.assign(size_t(t.numel()) * dtype_bytes(d), 0);
  return t;
}

Tensor Tensor::from_floats(Dtype d, std::vector<int64_t> shape, const std::vector<float>& v) {
  Tensor t = make(d, std::move(shape));
  if (int64_t(v.size()) != t.numel()) throw std::invalid_argument("Tensor::from_floats: size mismatch");
  for (size_t k = 0; k < v.size(); ++k) {
    if (d == Dtype::bf16) {
      const bf16 b = float_to_bf16_rne(v[k]);
      std::memcpy(t.bytes.data() + 2 * k, &b, 2);
    } else if (d == Dtype::fp32) {
      const uint32_t u = f2u(v[k]);
      std::memcpy(t.bytes.data() + 4 * k, &u, 4);
    } else if (d == Dtype::int8) {
      t.bytes[k] = uint8_t(int8_t(v[k]));
    } else {
      throw std::invalid_argument("Tensor::from_floats: int64 tensors come from from_i64");
    }
  }
  return t;
}

Tensor Tensor::from_bf16s(std::vector<int64_t> shape, const std::vector<bf16>& v) {
  Tensor t = make(Dtype::bf16, std::move(shape));
  if (int64_t(v.size()) != t.numel()) throw std::invalid_argument("Tensor::from_bf16s: size mismatch");
  std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}

Tensor Tensor::from_i64(const std::vector<int64_t>& v) {
  Tensor t = make(Dtype::i64, {int64_t(v.size())});
  std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}

std::vector<DatasetSpec> case_inputs(const CaseSpec& c) {
  const int64_t S = c.steps, T = c.tokens, O = c.out, I = c.in;
  std::vector<DatasetSpec> d{{"X", Dtype::bf16, {S, T, I}}, {"dY", Dtype::bf16, {S, T, O}}};
  if (c.kind == "order_probe") {
    d.push_back({"pair_i", Dtype::i64, {-1}});
    d.push_back({"pair_j", Dtype::i64, {-1}});
    return d;
  }
  const Dtype w = dtype_of_storage(c.weight_dtype);
  d.push_back({"W0", w, {O, I}});
  d.push_back({"G", Dtype::fp32, {S, O, I}});
  if (c.kind == "adamw") {
    const Dtype s = dtype_of_storage(c.state_dtype);
    d.push_back({"m0", s, {O, I}});
    d.push_back({"v0", s, {O, I}});
  } else {
    d.push_back({"m0_q", Dtype::int8, {O, I}});
    d.push_back({"v0_q", Dtype::int8, {O, I}});
    d.push_back({"m0_scale", Dtype::fp32, {O, I / c.qblock}});
    d.push_back({"v0_scale", Dtype::fp32, {O, I / c.qblock}});
  }
  return d;
}

std::vector<ResultDatasetSpec> case_outputs(const CaseSpec& c) {
  const int64_t S = c.steps, O = c.out, I = c.in;
  if (c.kind == "order_probe") return {{{"G", Dtype::fp32, {O, I}}, false}};
  const Dtype w = dtype_of_storage(c.weight_dtype);
  std::vector<ResultDatasetSpec> d{{{"W", w, {S, O, I}}, false}, {{"G", Dtype::fp32, {S, O, I}}, true}};
  if (c.kind == "adamw") {
    const Dtype s = dtype_of_storage(c.state_dtype);
    d.push_back({{"m", s, {S, O, I}}, false});
    d.push_back({{"v", s, {S, O, I}}, false});
  } else {
    d.push_back({{"m_q", Dtype::int8, {S, O, I}}, false});
    d.push_back({{"v_q", Dtype::int8, {S, O, I}}, false});
    d.push_back({{"m_scale", Dtype::fp32, {S, O, I / c.qblock}}, false});
    d.push_back({{"v_scale", Dtype::fp32, {S, O, I / c.qblock}}, false});
  }
  return d;
}

std::string DeclaredOrder::describe() const {
  if (model == "mma_chain")
    return "mma_chain k" + std::to_string(k_group) + " split_k " + std::to_string(split_k) +
           (split_k > 1 ? " round " + std::to_string(split_round) : "");
  return model.empty() ? "none declared" : model;
}

// ---- HDF5 reading (every call under the module's HDF5 lock) ----

namespace {

[[noreturn]] void fail(const std::string& file, const std::string& where, const std::string& what) {
  throw ExternalFileError("'" + file + "'" + (where.empty() ? "" : " " + where) + ": " + what);
}

}  // namespace

// The file, opened once at validation and held open: every later read goes through this handle,
// never through the path, so what the claims read is what was validated even if the path is
// removed or replaced meanwhile.
struct OpenHdf5File {
  Handle f;
  std::string path;
  explicit OpenHdf5File(const std::string& p) : path(p) {
    if (const std::string why = input_file_problem(p, kMaxHdf5InputBytes); !why.empty()) fail(p, "", why);
    Handle fapl = hdf5_detail::make_fapl();
    f = Handle(H5Fopen(p.c_str(), H5F_ACC_RDONLY, fapl), H5Fclose);
    if (!f.valid()) fail(p, "", "not a readable HDF5 file (truncated?): " + hdf5_error_text());
    // Before any object is opened by name: a link or a dataset may lead to another file.
    if (const std::string why = hdf5_detail::foreign_data_problem(f); !why.empty()) fail(p, "", why);
  }
};

namespace {

using H5File = OpenHdf5File;

// Keeps a validated file open for the object's lifetime; closed under the HDF5 lock.
std::shared_ptr<const OpenHdf5File> keep_open(H5File&& f) {
  return std::shared_ptr<const OpenHdf5File>(new OpenHdf5File(std::move(f)), [](const OpenHdf5File* p) {
    std::lock_guard<std::mutex> lock(h5_mutex());
    QuietHdf5 quiet;
    delete p;
  });
}

bool has_attr(hid_t obj, const std::string& name) { return H5Aexists(obj, name.c_str()) > 0; }

std::string attr_str(const std::string& file, hid_t obj, const std::string& where, const std::string& name,
                     bool required = true) {
  if (!has_attr(obj, name)) {
    if (required) fail(file, where, "missing string attribute '" + name + "'");
    return {};
  }
  Handle a(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose);
  Handle t(H5Aget_type(a), H5Tclose);
  if (!a.valid() || !t.valid() || H5Tget_class(t) != H5T_STRING) fail(file, where, "attribute '" + name + "' is not a string");
  std::string out;
  if (H5Tis_variable_str(t) > 0) {
    Handle mt(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mt, H5T_VARIABLE);
    H5Tset_cset(mt, H5Tget_cset(t));
    char* s = nullptr;
    if (H5Aread(a, mt, &s) < 0) fail(file, where, "cannot read attribute '" + name + "': " + hdf5_error_text());
    out = s ? s : "";
    H5free_memory(s);
  } else {
    const size_t n = H5Tget_size(t);
    std::vector<char> buf(n + 1, 0);
    Handle mt(H5Tcopy(t), H5Tclose);
    if (H5Aread(a, mt, buf.data()) < 0) fail(file, where, "cannot read attribute '" + name + "': " + hdf5_error_text());
    out.assign(buf.data());
  }
  // The report's own text rule, here at the door: a producer's text that the report could not
  // hold would otherwise fail the run once the claims are under way.
  if (const std::string why = text_problem(out); !why.empty())
    fail(file, where, "attribute '" + name + "': " + why);
  return out;
}

template <class T>
T attr_num(const std::string& file, hid_t obj, const std::string& where, const std::string& name, hid_t mem,
           H5T_class_t cls, bool required, T fallback) {
  if (!has_attr(obj, name)) {
    if (required) fail(file, where, "missing numeric attribute '" + name + "'");
    return fallback;
  }
  Handle a(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose);
  Handle t(H5Aget_type(a), H5Tclose);
  Handle sp(H5Aget_space(a), H5Sclose);
  if (!a.valid() || H5Tget_class(t) != cls || H5Sget_simple_extent_npoints(sp) != 1)
    fail(file, where, "attribute '" + name + "' is not a scalar " + (cls == H5T_INTEGER ? "integer" : "float"));
  T v{};
  if (H5Aread(a, mem, &v) < 0) fail(file, where, "cannot read attribute '" + name + "'");
  return v;
}

int64_t attr_i64(const std::string& f, hid_t o, const std::string& w, const std::string& n, bool req = true, int64_t fb = 0) {
  return attr_num<int64_t>(f, o, w, n, H5T_NATIVE_INT64, H5T_INTEGER, req, fb);
}
// An integer attribute checked against its whole range at the door: a value that later
// becomes an int, a divisor or a loop count is never taken on trust.
int64_t attr_i64_in(const std::string& f, hid_t o, const std::string& w, const std::string& n, int64_t lo, int64_t hi,
                    bool req = true, int64_t fb = 0) {
  const int64_t v = attr_i64(f, o, w, n, req, fb);
  if (v < lo || v > hi)
    fail(f, w, "attribute '" + n + "' is " + std::to_string(v) + ", outside [" + std::to_string(lo) + ", " +
                   std::to_string(hi) + "]");
  return v;
}
double attr_f64(const std::string& f, hid_t o, const std::string& w, const std::string& n) {
  return attr_num<double>(f, o, w, n, H5T_NATIVE_DOUBLE, H5T_FLOAT, true, 0.0);
}

std::vector<std::string> members(const std::string& file, hid_t g, const std::string& where) {
  H5G_info_t info;
  if (H5Gget_info(g, &info) < 0) fail(file, where, "cannot list: " + hdf5_error_text());
  std::vector<std::string> out;
  for (hsize_t k = 0; k < info.nlinks; ++k) {
    const ssize_t n = H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, k, nullptr, 0, H5P_DEFAULT);
    if (n < 0) fail(file, where, "cannot read a member name");
    std::string s(size_t(n), '\0');
    H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, k, s.data(), size_t(n) + 1, H5P_DEFAULT);
    out.push_back(s);
  }
  return out;
}

Handle open_group(const std::string& file, hid_t parent, const std::string& name, const std::string& where) {
  if (H5Lexists(parent, name.c_str(), H5P_DEFAULT) <= 0) fail(file, where, "missing group '" + name + "'");
  Handle g(H5Gopen2(parent, name.c_str(), H5P_DEFAULT), H5Gclose);
  if (!g.valid()) fail(file, where + "/" + name, "not a group");
  return g;
}

// The bytes of a tensor of `shape` (no -1 in it), or -1 when the product overflows or exceeds
// kMaxDatasetBytes.
int64_t checked_bytes(const std::vector<int64_t>& shape, Dtype dtype) {
  int64_t n = int64_t(dtype_bytes(dtype));
  for (int64_t s : shape)
    if (s < 0 || __builtin_mul_overflow(n, s, &n) || n > kMaxDatasetBytes) return -1;
  return n;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string t = "[";
  for (size_t k = 0; k < shape.size(); ++k) t += (k ? "," : "") + (shape[k] < 0 ? std::string("n") : std::to_string(shape[k]));
  return t + "]";
}

struct CheckedDataset {
  Handle d;
  std::vector<int64_t> shape;
};

// Opens dataset `name` of group g, requiring dtype and shape (a -1 in `shape` matches any
// length) and at most kMaxDatasetBytes; reads no data.
CheckedDataset check_dataset(const std::string& file, hid_t g, const std::string& where, const std::string& name,
                             Dtype dtype, const std::vector<int64_t>& shape) {
  const std::string at = where + "/" + name;
  if (H5Lexists(g, name.c_str(), H5P_DEFAULT) <= 0) fail(file, at, "missing dataset");
  Handle d(H5Dopen2(g, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.valid()) fail(file, at, "not a dataset");
  Handle t(H5Dget_type(d), H5Tclose);
  const H5T_class_t cls = H5Tget_class(t);
  const bool want_signed = dtype == Dtype::int8 || dtype == Dtype::i64;
  if (cls != H5T_INTEGER || H5Tget_size(t) != dtype_bytes(dtype) || (H5Tget_sign(t) == H5T_SGN_2) != want_signed)
    fail(file, at, std::string("has the wrong type: expected ") + dtype_name(dtype) + " raw bits");
  Handle sp(H5Dget_space(d), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(sp);
  std::vector<hsize_t> dims(size_t(std::max(rank, 0)));
  if (rank > 0) H5Sget_simple_extent_dims(sp, dims.data(), nullptr);
  bool ok = rank == int(shape.size());
  for (size_t k = 0; ok && k < shape.size(); ++k)
    if (shape[k] >= 0 && dims[k] != hsize_t(shape[k])) ok = false;
  std::string got = "[";
  for (size_t k = 0; k < dims.size(); ++k) got += (k ? "," : "") + std::to_string(dims[k]);
  got += "]";
  if (!ok) fail(file, at, "has shape " + got + ", expected " + shape_text(shape));
  CheckedDataset c{std::move(d), {}};
  for (hsize_t v : dims) c.shape.push_back(v > hsize_t(kMaxDatasetBytes) ? -1 : int64_t(v));  // -1: refused below
  if (checked_bytes(c.shape, dtype) < 0)
    fail(file, at, "has shape " + got + ", over the limit of " + std::to_string(kMaxDatasetBytes) + " bytes");
  return c;
}

// Reads dataset `name` of group g after check_dataset.
Tensor read_dataset(const std::string& file, hid_t g, const std::string& where, const std::string& name, Dtype dtype,
                    const std::vector<int64_t>& shape) {
  CheckedDataset c = check_dataset(file, g, where, name, dtype, shape);
  Tensor out;
  out.dtype = dtype;
  out.shape = std::move(c.shape);
  out.bytes.resize(size_t(checked_bytes(out.shape, dtype)));
  if (!out.bytes.empty() && H5Dread(c.d, native_type(dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.bytes.data()) < 0)
    fail(file, where + "/" + name, "cannot read the data (truncated file?): " + hdf5_error_text());
  return out;
}

// An order_probe case's pairs: row o of G probes pair o % n_pairs, the tokens pair_i[k] and
// pair_j[k]. Both hold the same number of pairs, 1 to out (more are never probed), and each is a
// token in [0, tokens): no pairs made ext_order_probe divide by zero, fewer pair_j than pair_i
// had it read past pair_j (found by fuzzing, suites/fuzz/regressions/cases_file).
void check_probe_pairs(const std::string& file, hid_t g, const std::string& where, const CaseSpec& c) {
  const int64_t ni = check_dataset(file, g, where, "pair_i", Dtype::i64, {-1}).shape[0];
  const int64_t nj = check_dataset(file, g, where, "pair_j", Dtype::i64, {-1}).shape[0];
  if (ni < 1 || ni > c.out || nj != ni)
    fail(file, where, "pair_i and pair_j must hold the same number of pairs, 1 to out (" + std::to_string(c.out) +
                          "), not " + std::to_string(ni) + " and " + std::to_string(nj));
  for (const char* name : {"pair_i", "pair_j"}) {
    const Tensor t = read_dataset(file, g, where, name, Dtype::i64, {ni});
    for (int64_t k = 0; k < ni; ++k)
      if (t.i64(k) < 0 || t.i64(k) >= c.tokens)
        fail(file, where + "/" + name, "element " + std::to_string(k) + " is " + std::to_string(t.i64(k)) +
                                           ", not a token in [0, tokens = " + std::to_string(c.tokens) + ")");
  }
}

void require_interface(const std::string& file, hid_t root, const std::string& kind) {
  const int64_t v = attr_i64(file, root, "/", "fh_external_interface");
  if (v != kInterfaceVersion)
    fail(file, "/", "fh_external_interface is " + std::to_string(v) + ", this harness reads " + std::to_string(kInterfaceVersion));
  const std::string k = attr_str(file, root, "/", "file_kind");
  if (k != kind) fail(file, "/", "file_kind is '" + k + "', expected '" + kind + "'");
}

// Whether `s` is a name of 1..kMaxNameChars characters from a-z, 0-9, `punct`, and A-Z when
// `upper`. A loop, not std::regex: libstdc++'s matcher recurses once per character, so a long
// enough attribute overflowed the stack (found by fuzzing, suites/fuzz/regressions/results_file).
constexpr size_t kMaxNameChars = 255;
bool is_name(const std::string& s, bool upper, const char* punct) {
  if (s.empty() || s.size() > kMaxNameChars) return false;
  for (const char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (upper && c >= 'A' && c <= 'Z') ||
          (c != '\0' && std::strchr(punct, c))))
      return false;
  return true;
}

}  // namespace

// ---- cases file ----

CasesFile::CasesFile(std::string path) : path_(std::move(path)) {
  std::lock_guard<std::mutex> lock(h5_mutex());
  QuietHdf5 quiet;
  H5File f(path_);
  Handle root(H5Gopen2(f.f, "/", H5P_DEFAULT), H5Gclose);
  require_interface(path_, root, "cases");
  header_.cases_id = attr_str(path_, root, "/", "cases_id");
  header_.case_set = attr_str(path_, root, "/", "case_set");
  header_.harness_revision = attr_str(path_, root, "/", "harness_revision");
  header_.seed = attr_i64(path_, root, "/", "seed");
  Handle cg = open_group(path_, root, "cases", "/");
  for (const std::string& id : members(path_, cg, "/cases")) {
    const std::string where = "/cases/" + id;
    if (!is_name(id, false, "_.")) fail(path_, where, "case id must be 1-255 characters of [a-z0-9_.]");
    Handle g = open_group(path_, cg, id, "/cases");
    CaseSpec c;
    c.id = id;
    c.kind = attr_str(path_, g, where, "kind");
    if (c.kind != "order_probe" && c.kind != "adamw" && c.kind != "adamw_int8")
      fail(path_, where, "unknown kind '" + c.kind + "'");
    c.out = attr_i64_in(path_, g, where, "out", 1, kMaxCaseDim);
    c.in = attr_i64_in(path_, g, where, "in", 1, kMaxCaseDim);
    c.tokens = attr_i64_in(path_, g, where, "tokens", 1, kMaxCaseDim);
    c.steps = attr_i64_in(path_, g, where, "steps", 1, kMaxCaseSteps);
    c.weight_dtype = attr_str(path_, g, where, "weight_dtype");
    c.state_dtype = attr_str(path_, g, where, "state_dtype");
    // The storage types the case's datasets are read in, named here with their attribute:
    // case_inputs would refuse them later without the file, the case or the attribute.
    const auto storage = [&](const char* name, const std::string& value) {
      try {
        dtype_of_storage(value);
      } catch (const ExternalFileError& e) {
        fail(path_, where, std::string("attribute '") + name + "': " + e.what());
      }
    };
    if (c.kind != "order_probe") storage("weight_dtype", c.weight_dtype);
    if (c.kind == "adamw") storage("state_dtype", c.state_dtype);
    c.lr = attr_f64(path_, g, where, "lr");
    c.beta1 = attr_f64(path_, g, where, "beta1");
    c.beta2 = attr_f64(path_, g, where, "beta2");
    c.eps = attr_f64(path_, g, where, "eps");
    c.weight_decay = attr_f64(path_, g, where, "weight_decay");
    c.first_step = attr_i64_in(path_, g, where, "first_step", 1, kMaxCaseDim);
    c.qblock = attr_i64_in(path_, g, where, "qblock", 0, c.in, c.kind == "adamw_int8", 0);
    c.g_order = attr_str(path_, g, where, "g_order", false);
    if (c.kind == "adamw_int8" && (c.qblock < 1 || c.in % c.qblock != 0))
      fail(path_, where, "qblock must divide in");
    for (const auto& [name, v] : {std::pair<const char*, double>{"lr", c.lr}, {"beta1", c.beta1}, {"beta2", c.beta2},
                                  {"eps", c.eps}, {"weight_decay", c.weight_decay}})
      if (!std::isfinite(v) || v < 0) fail(path_, where, std::string("attribute '") + name + "' must be finite and >= 0");
    if (c.beta1 >= 1 || c.beta2 >= 1) fail(path_, where, "attributes 'beta1' and 'beta2' must be < 1");
    try {
      // Every input's type and shape now, and every output's implied size: a claim never meets
      // a dataset it cannot hold.
      for (const DatasetSpec& d : case_inputs(c)) check_dataset(path_, g, where, d.name, d.dtype, d.shape);
      if (c.kind == "order_probe") check_probe_pairs(path_, g, where, c);
      for (const ResultDatasetSpec& d : case_outputs(c))
        if (checked_bytes(d.shape, d.dtype) < 0)
          fail(path_, where, "its result " + d.name + " " + shape_text(d.shape) + " would exceed " +
                                 std::to_string(kMaxDatasetBytes) + " bytes");
    } catch (const ExternalFileError&) {
      throw;
    } catch (const std::exception& e) {
      fail(path_, where, e.what());
    }
    cases_.push_back(c);
  }
  if (cases_.empty()) fail(path_, "/cases", "holds no case");
  file_ = keep_open(std::move(f));
}

const CaseSpec* CasesFile::find(const std::string& id) const {
  for (const auto& c : cases_)
    if (c.id == id) return &c;
  return nullptr;
}

Tensor CasesFile::load(const std::string& case_id, const std::string& name) const {
  const CaseSpec* c = find(case_id);
  if (!c) throw ExternalFileError("'" + path_ + "': no case '" + case_id + "'");
  for (const DatasetSpec& d : case_inputs(*c)) {
    if (d.name != name) continue;
    std::lock_guard<std::mutex> lock(h5_mutex());
    QuietHdf5 quiet;
    Handle g(H5Gopen2(file_->f, ("/cases/" + case_id).c_str(), H5P_DEFAULT), H5Gclose);
    return read_dataset(path_, g, "/cases/" + case_id, name, d.dtype, d.shape);
  }
  throw ExternalFileError("'" + path_ + "': case '" + case_id + "' has no input '" + name + "'");
}

// ---- results file ----

ResultsFile::ResultsFile(std::string path, const CasesFile& cases) : path_(std::move(path)) {
  std::lock_guard<std::mutex> lock(h5_mutex());
  QuietHdf5 quiet;
  H5File f(path_);
  Handle root(H5Gopen2(f.f, "/", H5P_DEFAULT), H5Gclose);
  require_interface(path_, root, "results");
  const std::string cid = attr_str(path_, root, "/", "cases_id");
  if (cid != cases.header().cases_id)
    fail(path_, "/", "cases_id '" + cid + "' is not the cases file's ('" + cases.header().cases_id + "', " + cases.path() + ")");
  producer_ = attr_str(path_, root, "/", "producer");
  path_name_ = attr_str(path_, root, "/", "path");
  role_ = attr_str(path_, root, "/", "role");
  if (role_ != "fused" && role_ != "two_phase" && role_ != "reference")
    fail(path_, "/", "role is '" + role_ + "' (fused, two_phase or reference)");
  if (!is_name(path_name_, true, "_.-"))
    fail(path_, "/", "path must be a name of 1-255 characters of [A-Za-z0-9_.-]" +
                         (path_name_.size() > kMaxNameChars ? ", not " + std::to_string(path_name_.size()) : std::string()));
  order_.model = attr_str(path_, root, "/", "order_model", false);
  if (order_.model == "mma_chain") {
    order_.k_group = attr_i64_in(path_, root, "/", "order_k_group", 1, kMmaMaxGroup);
    order_.split_k = attr_i64_in(path_, root, "/", "order_split_k", 1, kMaxDeclaredSplit);
    order_.split_round = attr_i64_in(path_, root, "/", "order_split_round", 1, kMaxDeclaredSplit, false, 16);
  } else if (!order_.model.empty() && order_.model != "fp32_sequential") {
    fail(path_, "/", "order_model is '" + order_.model + "' (mma_chain or fp32_sequential)");
  }
  if (H5Lexists(root, "meta", H5P_DEFAULT) > 0) {
    Handle mg = open_group(path_, root, "meta", "/");
    H5O_info_t oi;
    H5Oget_info2(mg, &oi, H5O_INFO_NUM_ATTRS);
    for (hsize_t k = 0; k < oi.num_attrs; ++k) {
      const ssize_t n = H5Aget_name_by_idx(mg, ".", H5_INDEX_NAME, H5_ITER_INC, k, nullptr, 0, H5P_DEFAULT);
      std::string key(size_t(std::max<ssize_t>(n, 0)), '\0');
      H5Aget_name_by_idx(mg, ".", H5_INDEX_NAME, H5_ITER_INC, k, key.data(), size_t(n) + 1, H5P_DEFAULT);
      if (!is_name(key, true, "_"))
        fail(path_, "/meta", "key '" + key.substr(0, 64) + (key.size() > 64 ? "...'" : "'") +
                                 " must be 1-255 characters of [A-Za-z0-9_]");
      meta_[key] = attr_str(path_, mg, "/meta", key);
    }
  }
  Handle cg = open_group(path_, root, "cases", "/");
  for (const std::string& id : members(path_, cg, "/cases")) {
    const std::string where = "/cases/" + id;
    const CaseSpec* spec = cases.find(id);
    if (!spec) fail(path_, where, "the cases file holds no such case");
    Handle g = open_group(path_, cg, id, "/cases");
    ResultCase rc;
    rc.id = id;
    rc.status = attr_str(path_, g, where, "status");
    if (rc.status != "ok" && rc.status != "failed" && rc.status != "unsupported")
      fail(path_, where, "status is '" + rc.status + "' (ok, failed or unsupported)");
    rc.error = attr_str(path_, g, where, "error", rc.status != "ok");
    if (rc.status != "ok" && rc.error.empty()) fail(path_, where, "a case that is not ok needs a non-empty error");
    rc.detail = attr_str(path_, g, where, "detail", false);
    if (rc.status == "ok") {
      for (const ResultDatasetSpec& d : case_outputs(*spec)) {
        if (d.optional && H5Lexists(g, d.name.c_str(), H5P_DEFAULT) <= 0) continue;
        read_dataset(path_, g, where, d.name, d.dtype, d.shape);  // validates type, shape and that it reads
      }
    }
    cases_.push_back(rc);
  }
  file_ = keep_open(std::move(f));
}

const ResultCase* ResultsFile::find(const std::string& id) const {
  for (const auto& c : cases_)
    if (c.id == id) return &c;
  return nullptr;
}

bool ResultsFile::has(const std::string& case_id, const std::string& name) const {
  std::lock_guard<std::mutex> lock(h5_mutex());
  QuietHdf5 quiet;
  const hid_t f = file_->f;
  const std::string p = "/cases/" + case_id + "/" + name;
  return H5Lexists(f, ("/cases/" + case_id).c_str(), H5P_DEFAULT) > 0 && H5Lexists(f, p.c_str(), H5P_DEFAULT) > 0;
}

Tensor ResultsFile::load(const std::string& case_id, const std::string& name) const {
  const ResultCase* rc = find(case_id);
  if (!rc || rc->status != "ok") throw ExternalFileError("'" + path_ + "': case '" + case_id + "' has no ok result");
  std::lock_guard<std::mutex> lock(h5_mutex());
  QuietHdf5 quiet;
  Handle g(H5Gopen2(file_->f, ("/cases/" + case_id).c_str(), H5P_DEFAULT), H5Gclose);
  // The shape was validated at open; read whatever is there with its recorded type.
  Handle d(H5Dopen2(g, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.valid()) fail(path_, "/cases/" + case_id + "/" + name, "missing dataset");
  Handle t(H5Dget_type(d), H5Tclose);
  Dtype dt;
  const size_t sz = H5Tget_size(t);
  if (sz == 2) dt = Dtype::bf16;
  else if (sz == 4) dt = Dtype::fp32;
  else if (sz == 1) dt = Dtype::int8;
  else dt = Dtype::i64;
  Handle sp(H5Dget_space(d), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(sp);
  std::vector<int64_t> shape(size_t(rank), -1);
  return read_dataset(path_, g, "/cases/" + case_id, name, dt, shape);
}

// ---- writing a cases file ----

namespace {

void put_attr_str(hid_t obj, const std::string& name, const std::string& value) {
  Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  Handle sp(H5Screate(H5S_SCALAR), H5Sclose);
  Handle a(H5Acreate2(obj, name.c_str(), t, sp, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  const char* p = value.c_str();
  if (!a.valid() || H5Awrite(a, t, &p) < 0) throw std::runtime_error("cannot write attribute " + name + ": " + hdf5_error_text());
}

template <class T>
void put_attr_num(hid_t obj, const std::string& name, T v, hid_t ftype, hid_t mtype) {
  Handle sp(H5Screate(H5S_SCALAR), H5Sclose);
  Handle a(H5Acreate2(obj, name.c_str(), ftype, sp, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!a.valid() || H5Awrite(a, mtype, &v) < 0) throw std::runtime_error("cannot write attribute " + name + ": " + hdf5_error_text());
}

void put_dataset(hid_t g, const std::string& name, const Tensor& t) {
  std::vector<hsize_t> dims(t.shape.begin(), t.shape.end());
  Handle sp(H5Screate_simple(int(dims.size()), dims.data(), nullptr), H5Sclose);
  Handle d(H5Dcreate2(g, name.c_str(), file_type(t.dtype), sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  if (!d.valid() || (t.numel() > 0 && H5Dwrite(d, native_type(t.dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, t.bytes.data()) < 0))
    throw std::runtime_error("cannot write dataset " + name + ": " + hdf5_error_text());
}

// Writes `path` through a temporary file beside it: `fill` gets the open root group; the file is
// renamed into place when it closes cleanly and removed otherwise.
void write_through_tmp(const std::string& path, const std::function<void(hid_t root)>& fill) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  try {
    std::lock_guard<std::mutex> lock(h5_mutex());
    QuietHdf5 quiet;
    Handle fapl = hdf5_detail::make_fapl();
    Handle f(H5Fcreate(tmp.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl), H5Fclose);
    if (!f.valid()) throw std::runtime_error("cannot create '" + tmp + "': " + hdf5_error_text());
    {
      Handle root(H5Gopen2(f, "/", H5P_DEFAULT), H5Gclose);
      put_attr_num<int64_t>(root, "fh_external_interface", kInterfaceVersion, H5T_STD_I64LE, H5T_NATIVE_INT64);
      fill(root);
    }
    if (f.close() < 0) throw std::runtime_error("cannot close '" + tmp + "': " + hdf5_error_text());
    if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("cannot rename '" + tmp + "' to '" + path + "'");
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
}

}  // namespace

void write_cases_file(const std::string& path, const CasesHeader& header, const std::vector<CaseSpec>& cases,
                      const std::function<std::map<std::string, Tensor>(const CaseSpec&)>& tensors) {
  write_through_tmp(path, [&](hid_t root) {
    put_attr_str(root, "file_kind", "cases");
    put_attr_str(root, "cases_id", header.cases_id);
    put_attr_str(root, "case_set", header.case_set);
    put_attr_str(root, "harness_revision", header.harness_revision);
    put_attr_num<int64_t>(root, "seed", header.seed, H5T_STD_I64LE, H5T_NATIVE_INT64);
    Handle cg(H5Gcreate2(root, "cases", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    for (const CaseSpec& c : cases) {
      Handle g(H5Gcreate2(cg, c.id.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
      if (!g.valid()) throw std::runtime_error("cannot create case group " + c.id);
      put_attr_str(g, "kind", c.kind);
      for (auto [k, v] : {std::pair<const char*, int64_t>{"out", c.out}, {"in", c.in}, {"tokens", c.tokens},
                          {"steps", c.steps}, {"first_step", c.first_step}, {"qblock", c.qblock}})
        put_attr_num<int64_t>(g, k, v, H5T_STD_I64LE, H5T_NATIVE_INT64);
      for (auto [k, v] : {std::pair<const char*, double>{"lr", c.lr}, {"beta1", c.beta1}, {"beta2", c.beta2},
                          {"eps", c.eps}, {"weight_decay", c.weight_decay}})
        put_attr_num<double>(g, k, v, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE);
      put_attr_str(g, "weight_dtype", c.weight_dtype);
      put_attr_str(g, "state_dtype", c.state_dtype);
      put_attr_str(g, "g_order", c.g_order);
      const std::map<std::string, Tensor> data = tensors(c);
      for (const DatasetSpec& d : case_inputs(c)) {
        auto it = data.find(d.name);
        if (it == data.end()) throw std::logic_error("write_cases_file: case " + c.id + " lacks input " + d.name);
        if (it->second.dtype != d.dtype) throw std::logic_error("write_cases_file: " + c.id + "/" + d.name + " has the wrong dtype");
        put_dataset(g, d.name, it->second);
      }
    }
  });
}

void write_results_file(const std::string& path, const ResultsHeader& header, const std::vector<ResultCaseOut>& cases) {
  write_through_tmp(path, [&](hid_t root) {
    put_attr_str(root, "file_kind", "results");
    put_attr_str(root, "cases_id", header.cases_id);
    put_attr_str(root, "producer", header.producer);
    put_attr_str(root, "path", header.path);
    put_attr_str(root, "role", header.role);
    if (!header.order.model.empty()) put_attr_str(root, "order_model", header.order.model);
    if (header.order.model == "mma_chain")
      for (auto [k, v] : {std::pair<const char*, int64_t>{"order_k_group", header.order.k_group},
                          {"order_split_k", header.order.split_k}, {"order_split_round", header.order.split_round}})
        put_attr_num<int64_t>(root, k, v, H5T_STD_I64LE, H5T_NATIVE_INT64);
    Handle mg(H5Gcreate2(root, "meta", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    for (const auto& [k, v] : header.meta) put_attr_str(mg, k, v);
    Handle cg(H5Gcreate2(root, "cases", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    for (const ResultCaseOut& c : cases) {
      Handle g(H5Gcreate2(cg, c.id.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
      if (!g.valid()) throw std::runtime_error("cannot create case group " + c.id);
      put_attr_str(g, "status", c.status);
      if (!c.error.empty()) put_attr_str(g, "error", c.error);
      if (!c.detail.empty()) put_attr_str(g, "detail", c.detail);
      for (const auto& [name, t] : c.data) put_dataset(g, name, t);
    }
  });
}

}  // namespace fh::ext
