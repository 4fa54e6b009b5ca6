// HDF5 report writer, reader and schema checker. Layout: reports/SCHEMA.md.
#include "reports/report.h"

#include <fcntl.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>

namespace fh {

// ---------------------------------------------------------------------------------------------
// Verdicts, counts, checks, names
// ---------------------------------------------------------------------------------------------

namespace {

bool valid_utf8(std::string_view s) {
  static const uint32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};  // reject overlongs
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) { ++i; continue; }
    int len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
    else return false;
    if (i + len > s.size()) return false;
    for (int k = 1; k < len; ++k) {
      const unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (cp < kMinForLength[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

// "" when valid. Shared by the builder (which throws) and the checker (which lists).
std::string name_problem(const std::string& name) {
  if (name.empty()) return "empty name";
  if (name.find('/') != std::string::npos) return "name '" + name + "' contains '/'";
  if (name.find_first_not_of('.') == std::string::npos)
    return "name '" + name + "' is made only of '.'";
  if (name.find('\0') != std::string::npos) return "name contains a NUL character";
  if (!valid_utf8(name)) return "name is not valid UTF-8";
  return {};
}

// HDF5 strings are C strings declared UTF-8: an embedded NUL would silently truncate.
std::string text_problem(const std::string& text) {
  if (text.find('\0') != std::string::npos) return "text contains a NUL character";
  if (!valid_utf8(text)) return "text is not valid UTF-8";
  return {};
}

void require_valid_text(const std::string& text, const std::string& what) {
  if (auto p = text_problem(text); !p.empty()) throw std::invalid_argument(what + ": " + p);
}

// Contract 7: a verdict carries its evidence. "" when the check is consistent.
std::string evidence_problem(const Check& c) {
  if (auto p = name_problem(c.name); !p.empty()) return "check name: " + p;
  for (const std::string* s : {&c.reason, &c.metric_name, &c.first_diff})
    if (auto p = text_problem(*s); !p.empty()) return "check '" + c.name + "': " + p;
  if (c.verdict == Verdict::not_run && c.reason.empty())
    return "check '" + c.name + "': not-run needs a reason";
  if (c.verdict != Verdict::not_run) {
    if (c.metric_name.empty())
      return "check '" + c.name + "': " + verdict_name(c.verdict) + " needs a metric_name";
    if (std::isnan(c.bound))
      return "check '" + c.name + "': " + verdict_name(c.verdict) + " needs a bound";
  }
  if (c.differing < -1) return "check '" + c.name + "': differing must be >= 0 (or -1: none)";
  if (c.differing == -1 && (c.max_ulp != 0 || !c.first_diff.empty()))
    return "check '" + c.name + "': max_ulp/first_diff given without differing";
  if (c.differing >= 0 && !(c.max_ulp >= 0))
    return "check '" + c.name + "': max_ulp must be >= 0";
  if (c.differing > 0 && c.first_diff.empty())
    return "check '" + c.name + "': differing > 0 needs first_diff";
  return {};
}

const std::set<std::string>& aggregate_attr_names() {
  static const std::set<std::string> s = {"verdict", "n_pass", "n_fail", "n_not_run"};
  return s;
}

}  // namespace

void require_valid_name(const std::string& name, const char* what) {
  if (auto p = name_problem(name); !p.empty())
    throw std::invalid_argument(std::string(what) + ": " + p);
}

// ---------------------------------------------------------------------------------------------
// Meta
// ---------------------------------------------------------------------------------------------

const std::vector<std::string>& Meta::required_keys() {
  static const std::vector<std::string> keys = {
      "git_revision", "host",          "gpu_name",       "gpu_driver",   "cuda_runtime",
      "cublas",       "seed",          "configuration",  "tool_version", "start_time_utc"};
  return keys;
}

Meta Meta::unknown() {
  Meta m;
  for (const auto& k : required_keys()) m.values[k] = "unknown";
  m.values["start_time_utc"] = utc_now_iso8601();
  return m;
}

Meta& Meta::set(const std::string& key, const std::string& value) {
  values[key] = value;
  return *this;
}

std::string Meta::get(const std::string& key) const {
  auto it = values.find(key);
  return it == values.end() ? std::string() : it->second;
}

std::string utc_now_iso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// ---------------------------------------------------------------------------------------------
// Builder
// ---------------------------------------------------------------------------------------------

CaseRecord::CaseRecord(std::string claim, std::string name, const std::vector<std::string>* declared)
    : claim_(std::move(claim)), name_(std::move(name)), declared_(declared) {
  require_valid_name(claim_, "claim name");
  require_valid_name(name_, "case name");
}

CaseRecord& CaseRecord::set_attr(const std::string& key, const std::string& value) {
  require_valid_name(key, "case attribute name");
  if (aggregate_attr_names().count(key))
    throw std::invalid_argument("case attribute name '" + key + "' is reserved");
  require_valid_text(value, "case attribute '" + key + "'");
  for (auto& kv : attrs_)
    if (kv.first == key) { kv.second = value; return *this; }
  attrs_.emplace_back(key, value);
  return *this;
}

CaseRecord& CaseRecord::add_check(Check c) {
  if (auto p = evidence_problem(c); !p.empty())
    throw std::invalid_argument(claim_ + "/" + name_ + ": " + p);
  for (const auto& e : checks_)
    if (e.name == c.name)
      throw std::invalid_argument(claim_ + "/" + name_ + ": duplicate check '" + c.name + "'");
  checks_.push_back(std::move(c));
  return *this;
}

void CaseRecord::add_dataset(Dataset d) {
  require_valid_name(d.name, "dataset name");
  require_valid_text(d.description, "dataset '" + d.name + "' description");
  if (declared_ && std::find(declared_->begin(), declared_->end(), d.name) == declared_->end())
    throw std::invalid_argument(claim_ + "/" + name_ + ": dataset '" + d.name +
                                "' is not declared in the claim's registry row");
  for (const auto& e : datasets_)
    if (e.name == d.name)
      throw std::invalid_argument(claim_ + "/" + name_ + ": duplicate dataset '" + d.name + "'");
  datasets_.push_back(std::move(d));
}

CaseRecord& CaseRecord::add_f64(const std::string& name, std::vector<double> values,
                                std::string description) {
  Dataset d;
  d.name = name;
  d.dtype = DType::f64;
  d.shape = {values.size()};
  d.f64 = std::move(values);
  d.description = std::move(description);
  add_dataset(std::move(d));
  return *this;
}

CaseRecord& CaseRecord::add_i64(const std::string& name, std::vector<int64_t> values,
                                std::string description) {
  Dataset d;
  d.name = name;
  d.dtype = DType::i64;
  d.shape = {values.size()};
  d.i64 = std::move(values);
  d.description = std::move(description);
  add_dataset(std::move(d));
  return *this;
}

CaseRecord& CaseRecord::add_f64_2d(const std::string& name, uint64_t rows, uint64_t cols,
                                   std::vector<double> row_major, std::string description) {
  if (cols != 0 && rows > row_major.max_size() / cols)
    throw std::invalid_argument("dataset '" + name + "': shape overflows");
  if (row_major.size() != rows * cols)
    throw std::invalid_argument("dataset '" + name + "': " + std::to_string(row_major.size()) +
                                " values for shape " + std::to_string(rows) + "x" +
                                std::to_string(cols));
  Dataset d;
  d.name = name;
  d.dtype = DType::f64;
  d.shape = {rows, cols};
  d.f64 = std::move(row_major);
  d.description = std::move(description);
  add_dataset(std::move(d));
  return *this;
}

Counts CaseRecord::counts() const {
  Counts c;
  for (const auto& ch : checks_) c.add(ch.verdict);
  return c;
}

CaseData CaseRecord::data() const {
  CaseData d;
  d.name = name_;
  d.counts = counts();
  d.verdict = d.counts.verdict();
  d.attrs = attrs_;
  d.checks = checks_;
  d.datasets = datasets_;
  return d;
}

Report::Report(Meta meta) : meta_(std::move(meta)) {
  for (const auto& [k, v] : meta_.values) {
    require_valid_name(k, "meta key");
    require_valid_text(v, "meta '" + k + "'");
  }
  std::string missing;
  for (const auto& k : Meta::required_keys())
    if (!meta_.values.count(k)) missing += (missing.empty() ? "" : ", ") + k;
  if (!missing.empty())
    throw std::invalid_argument("report meta lacks required keys: " + missing +
                                " (start from Meta::unknown())");
}

Report::Report(Report&&) noexcept = default;
Report& Report::operator=(Report&&) noexcept = default;
Report::~Report() = default;

void Report::declare_claim(const std::string& claim, std::vector<std::string> datasets) {
  require_valid_name(claim, "claim name");
  for (const auto& d : datasets) require_valid_name(d, "declared dataset name");
  for (const auto& c : claims_)
    if (c.name == claim) throw std::invalid_argument("claim '" + claim + "' declared after its first case");
  declared_[claim] = std::move(datasets);
}

CaseRecord& Report::add_case(const std::string& claim, const std::string& case_name) {
  require_valid_name(claim, "claim name");
  require_valid_name(case_name, "case name");
  if (claim == "meta") throw std::invalid_argument("claim name 'meta' is reserved");
  const std::vector<std::string>* declared = nullptr;
  if (!declared_.empty()) {
    auto d = declared_.find(claim);
    if (d == declared_.end()) throw std::invalid_argument("claim '" + claim + "' is not declared");
    declared = &d->second;
  }
  auto it = std::find_if(claims_.begin(), claims_.end(),
                         [&](const Claim& c) { return c.name == claim; });
  if (it == claims_.end()) {
    claims_.push_back(Claim{claim, {}});
    it = std::prev(claims_.end());
  }
  for (const auto& c : it->cases)
    if (c->name() == case_name)
      throw std::invalid_argument("duplicate case '" + case_name + "' in claim '" + claim + "'");
  it->cases.push_back(std::make_unique<CaseRecord>(claim, case_name, declared));
  return *it->cases.back();
}

CaseRecord* Report::find_case(const std::string& claim, const std::string& case_name) {
  for (auto& cl : claims_)
    if (cl.name == claim)
      for (auto& c : cl.cases)
        if (c->name() == case_name) return c.get();
  return nullptr;
}

ReportData Report::snapshot() const {
  ReportData r;
  r.schema_version = kReportSchemaVersion;
  r.meta = meta_;
  for (const auto& cl : claims_) {
    ClaimData cd;
    cd.name = cl.name;
    for (const auto& cs : cl.cases) {
      cd.cases.push_back(cs->data());
      cd.counts += cd.cases.back().counts;
    }
    cd.n_cases = static_cast<int64_t>(cd.cases.size());
    cd.verdict = cd.counts.verdict();
    r.counts += cd.counts;
    r.claims.push_back(std::move(cd));
  }
  r.verdict = r.counts.verdict();
  return r;
}

Verdict Report::verdict() const {
  Counts c;
  for (const auto& cl : claims_)
    for (const auto& cs : cl.cases) c += cs->counts();
  return c.verdict();
}

const ClaimData* ReportData::find_claim(std::string_view name) const {
  for (const auto& c : claims)
    if (c.name == name) return &c;
  return nullptr;
}

const CaseData* ReportData::find_case(std::string_view claim, std::string_view case_name) const {
  const ClaimData* cl = find_claim(claim);
  if (!cl) return nullptr;
  for (const auto& c : cl->cases)
    if (c.name == case_name) return &c;
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// HDF5 plumbing
// ---------------------------------------------------------------------------------------------

namespace {

std::mutex& h5_mutex() {
  static std::mutex m;
  return m;
}

std::atomic<int64_t> g_write_fault{-1};
std::atomic<int64_t> g_last_write_steps{0};

// Turns HDF5's automatic stack printing off for the scope, restores the caller's setting after.
class QuietHdf5 {
 public:
  QuietHdf5() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietHdf5() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  QuietHdf5(const QuietHdf5&) = delete;
  QuietHdf5& operator=(const QuietHdf5&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// Owns one HDF5 identifier.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer close) : id_(id), close_(close) {}
  Handle(Handle&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), close_(o.close_) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
      close_ = o.close_;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  hid_t get() const { return id_; }
  operator hid_t() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Closes now and reports the status; the file's close is where buffered writes can fail.
  herr_t close() {
    herr_t rc = 0;
    if (id_ >= 0 && close_) rc = close_(id_);
    id_ = H5I_INVALID_HID;
    return rc;
  }

 private:
  void reset() {
    if (id_ >= 0 && close_) close_(id_);
    id_ = H5I_INVALID_HID;
  }
  hid_t id_ = H5I_INVALID_HID;
  Closer close_ = nullptr;
};

// The current HDF5 error stack, API call first and innermost cause last, in one line. Must run
// right after the failing call: the next API call clears the stack.
std::string hdf5_error_text() {
  std::vector<std::string> lines;
  auto walk = [](unsigned, const H5E_error2_t* e, void* out) -> herr_t {
    auto* v = static_cast<std::vector<std::string>*>(out);
    v->push_back(std::string(e->func_name ? e->func_name : "?") + ": " +
                 (e->desc ? e->desc : ""));
    return 0;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, walk, &lines);
  if (lines.empty()) return "HDF5 call failed";
  std::string s = lines.front();
  if (lines.size() > 1) s += " <- " + lines.back();
  return s;
}

Handle make_fapl() {
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  if (!fapl.valid()) return fapl;
  // Strong close: closing the file releases everything in it, so a failed write can be removed.
  H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
#if H5_VERSION_GE(1, 10, 7)
  // The temporary file is private; locking only adds failures on filesystems without locks.
  H5Pset_file_locking(fapl, false, true);
#endif
  return fapl;
}

// Creation order is tracked so that claims, cases, checks and attributes read back in the
// order they were added (h5dump still lists by name).
void track_order(hid_t gcpl) {
  H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  H5Pset_attr_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
}

// Variable-length UTF-8 strings: h5py reads them as str, h5dump prints them as text.
Handle vlen_utf8_type() {
  Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
  if (t.valid() && (H5Tset_size(t, H5T_VARIABLE) < 0 || H5Tset_cset(t, H5T_CSET_UTF8) < 0))
    t.close();
  return t;
}

// ---------------------------------------------------------------------------------------------
// Writer
// ---------------------------------------------------------------------------------------------

struct WriteFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Writer {
 public:
  explicit Writer(int64_t fault) : fault_(fault) {}

  // Every write step passes here first, so a test can make any one of them fail.
  void step(const std::string& what) {
    const int64_t n = steps_++;
    if (fault_ >= 0 && n == fault_)
      throw WriteFailure(what + ": injected fault at step " + std::to_string(n));
  }
  hid_t need_id(hid_t id, const std::string& what) {
    if (id < 0) throw WriteFailure(what + ": " + hdf5_error_text());
    return id;
  }
  void need_ok(herr_t rc, const std::string& what) {
    if (rc < 0) throw WriteFailure(what + ": " + hdf5_error_text());
  }
  int64_t steps() const { return steps_; }

  Handle group(hid_t parent, const std::string& name, const std::string& where, hid_t gcpl) {
    step("create group " + where);
    return Handle(need_id(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, gcpl, H5P_DEFAULT),
                          "create group " + where),
                  H5Gclose);
  }

  void attr_str(hid_t obj, const std::string& where, const std::string& name,
                const std::string& value) {
    const std::string what = "write attribute " + where + " @" + name;
    step(what);
    Handle type = vlen_utf8_type();
    need_id(type.get(), what);
    Handle space(need_id(H5Screate(H5S_SCALAR), what), H5Sclose);
    Handle a(need_id(H5Acreate2(obj, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), what),
             H5Aclose);
    const char* p = value.c_str();
    need_ok(H5Awrite(a, type, &p), what);
  }

  void attr_i64(hid_t obj, const std::string& where, const std::string& name, int64_t value) {
    scalar_attr(obj, where, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
  }
  void attr_f64(hid_t obj, const std::string& where, const std::string& name, double value) {
    scalar_attr(obj, where, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
  }

  void counts(hid_t obj, const std::string& where, Verdict v, const Counts& c) {
    attr_str(obj, where, "verdict", verdict_name(v));
    attr_i64(obj, where, "n_pass", c.n_pass);
    attr_i64(obj, where, "n_fail", c.n_fail);
    attr_i64(obj, where, "n_not_run", c.n_not_run);
  }

  void dataset(hid_t parent, const std::string& where, const Dataset& d) {
    const std::string what = "write dataset " + where;
    step(what);
    if (d.shape.empty() || d.shape.size() > 2) throw WriteFailure(what + ": rank must be 1 or 2");
    hsize_t dims[2] = {0, 0};
    uint64_t n = 1;
    for (size_t i = 0; i < d.shape.size(); ++i) {
      dims[i] = d.shape[i];
      n *= d.shape[i];
    }
    const bool f = d.dtype == DType::f64;
    if (n != (f ? d.f64.size() : d.i64.size()))
      throw WriteFailure(what + ": value count does not match shape");
    Handle space(need_id(H5Screate_simple(static_cast<int>(d.shape.size()), dims, nullptr), what),
                 H5Sclose);
    Handle ds(need_id(H5Dcreate2(parent, d.name.c_str(), f ? H5T_IEEE_F64LE : H5T_STD_I64LE,
                                 space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                      what),
              H5Dclose);
    if (n > 0) {
      const void* buf = f ? static_cast<const void*>(d.f64.data())
                          : static_cast<const void*>(d.i64.data());
      need_ok(H5Dwrite(ds, f ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64, H5S_ALL, H5S_ALL,
                       H5P_DEFAULT, buf),
              what);
    }
    if (!d.description.empty()) attr_str(ds, where, "description", d.description);
  }

 private:
  void scalar_attr(hid_t obj, const std::string& where, const std::string& name, hid_t file_type,
                   hid_t mem_type, const void* value) {
    const std::string what = "write attribute " + where + " @" + name;
    step(what);
    Handle space(need_id(H5Screate(H5S_SCALAR), what), H5Sclose);
    Handle a(need_id(H5Acreate2(obj, name.c_str(), file_type, space, H5P_DEFAULT, H5P_DEFAULT),
                     what),
             H5Aclose);
    need_ok(H5Awrite(a, mem_type, value), what);
  }

  int64_t fault_;
  int64_t steps_ = 0;
};

void write_hdf5(Writer& w, const ReportData& r, const std::string& file_name) {
  Handle fcpl(w.need_id(H5Pcreate(H5P_FILE_CREATE), "file creation properties"), H5Pclose);
  track_order(fcpl);
  Handle gcpl(w.need_id(H5Pcreate(H5P_GROUP_CREATE), "group creation properties"), H5Pclose);
  track_order(gcpl);
  Handle fapl = make_fapl();
  w.need_id(fapl.get(), "file access properties");

  w.step("create file");
  Handle file(w.need_id(H5Fcreate(file_name.c_str(), H5F_ACC_TRUNC, fcpl, fapl),
                        "create file '" + file_name + "'"),
              H5Fclose);
  {
    Handle root(w.need_id(H5Gopen2(file, "/", H5P_DEFAULT), "open /"), H5Gclose);
    w.attr_i64(root, "/", "schema_version", r.schema_version);
    w.counts(root, "/", r.verdict, r.counts);

    Handle meta = w.group(root, "meta", "/meta", gcpl);
    for (const auto& [k, v] : r.meta.values) w.attr_str(meta, "/meta", k, v);

    for (const auto& cl : r.claims) {
      const std::string cl_where = "/" + cl.name;
      Handle g = w.group(root, cl.name, cl_where, gcpl);
      w.counts(g, cl_where, cl.verdict, cl.counts);
      w.attr_i64(g, cl_where, "n_cases", cl.n_cases);
      for (const auto& cs : cl.cases) {
        const std::string cs_where = cl_where + "/" + cs.name;
        Handle cg = w.group(g, cs.name, cs_where, gcpl);
        w.counts(cg, cs_where, cs.verdict, cs.counts);
        for (const auto& [k, v] : cs.attrs) w.attr_str(cg, cs_where, k, v);

        Handle checks = w.group(cg, "checks", cs_where + "/checks", gcpl);
        for (const auto& ch : cs.checks) {
          const std::string ch_where = cs_where + "/checks/" + ch.name;
          Handle chg = w.group(checks, ch.name, ch_where, gcpl);
          w.attr_str(chg, ch_where, "verdict", verdict_name(ch.verdict));
          w.attr_str(chg, ch_where, "reason", ch.reason);
          w.attr_str(chg, ch_where, "metric_name", ch.metric_name);
          w.attr_f64(chg, ch_where, "metric", ch.metric);
          w.attr_f64(chg, ch_where, "bound", ch.bound);
          if (ch.has_bitwise()) {
            w.attr_i64(chg, ch_where, "differing", ch.differing);
            w.attr_f64(chg, ch_where, "max_ulp", ch.max_ulp);
            w.attr_str(chg, ch_where, "first_diff", ch.first_diff);
          }
        }
        Handle data = w.group(cg, "data", cs_where + "/data", gcpl);
        for (const auto& d : cs.datasets) w.dataset(data, cs_where + "/data/" + d.name, d);
      }
    }
  }
  w.step("close file");
  w.need_ok(file.close(), "close file '" + file_name + "'");
}

std::string errno_text(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

// Flushes the finished temporary file to disk before it takes the final name, so a crash after
// rename cannot expose a file whose blocks never reached the disk.
void fsync_path(const std::string& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw WriteFailure(errno_text("open '" + p + "' for fsync"));
  const int rc = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  errno = saved;
  if (rc != 0) throw WriteFailure(errno_text("fsync '" + p + "'"));
}

// Best effort: makes the rename itself durable. The report is already complete under its
// name, so a failure here is not an error.
void fsync_parent_dir(const std::string& p) {
  std::filesystem::path dir = std::filesystem::path(p).parent_path();
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

void Report::write(const std::string& path) const {
  if (path.empty()) throw std::runtime_error("fh::Report::write: empty path");
  const ReportData r = snapshot();
  std::lock_guard<std::mutex> lock(h5_mutex());
  QuietHdf5 quiet;
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  Writer w(g_write_fault.load());
  try {
    write_hdf5(w, r, tmp);  // every HDF5 handle is closed when this returns or throws
    w.step("fsync");
    fsync_path(tmp);
    w.step("rename");
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      throw WriteFailure(errno_text("rename '" + tmp + "' to '" + path + "'"));
  } catch (const std::exception& e) {
    ::unlink(tmp.c_str());
    throw std::runtime_error("fh::Report::write: cannot write report '" + path + "': " +
                             e.what());
  }
  g_last_write_steps = w.steps();
  fsync_parent_dir(path);
}

namespace testing_hooks {
void set_write_fault(int64_t n) { g_write_fault = n; }
int64_t last_write_steps() { return g_last_write_steps.load(); }
}  // namespace testing_hooks

// ---------------------------------------------------------------------------------------------
// Reader and schema checker: one walk over the file. A structural problem (something the
// reader needs is missing or has the wrong type) throws when reading and is listed when
// validating; a semantic one (unexpected objects, aggregates that disagree, evidence rules,
// string encoding) is only listed when validating.
// ---------------------------------------------------------------------------------------------

namespace {

enum class Kind { group, dataset, other, missing };

class Walker {
 public:
  explicit Walker(bool collect) : collect_(collect) {}

  std::vector<std::string> problems;

  void problem(const std::string& where, const std::string& what) {
    if (!collect_) throw std::runtime_error(where + ": " + what);
    problems.push_back(where + ": " + what);
  }
  void violation(const std::string& where, const std::string& what) {
    if (collect_) problems.push_back(where + ": " + what);
  }

  ReportData read(hid_t file) {
    ReportData r;
    Handle root(H5Gopen2(file, "/", H5P_DEFAULT), H5Gclose);
    if (!root.valid()) {
      problem("/", "cannot open root group: " + hdf5_error_text());
      return r;
    }
    r.schema_version = get_i64(root, "/", "schema_version").value_or(0);
    if (r.schema_version != kReportSchemaVersion)
      problem("/", "schema_version is " + std::to_string(r.schema_version) +
                       ", this reader knows " + std::to_string(kReportSchemaVersion));
    r.verdict = get_verdict(root, "/");
    r.counts = get_counts(root, "/");
    expect_only_attrs(root, "/", {"schema_version", "verdict", "n_pass", "n_fail", "n_not_run"});

    bool have_meta = false;
    Counts sum;
    for (const auto& name : links(root, "/")) {
      const std::string where = "/" + name;
      const Kind k = kind_of(root, name);
      if (name == "meta") {
        if (k != Kind::group) { problem(where, "is not a group"); continue; }
        have_meta = true;
        r.meta = read_meta(root);
        continue;
      }
      if (k != Kind::group) { violation(where, "unexpected object (a claim must be a group)"); continue; }
      r.claims.push_back(read_claim(root, name, sum));
    }
    if (!have_meta) problem("/meta", "missing group");
    check_aggregate("/", r.verdict, r.counts, sum);
    return r;
  }

 private:
  // --- objects ---

  std::vector<std::string> links(hid_t g, const std::string& where) {
    struct Acc { std::vector<std::string> names; bool non_hard = false; } acc;
    auto cb = [](hid_t, const char* name, const H5L_info_t* info, void* out) -> herr_t {
      auto* a = static_cast<Acc*>(out);
      if (info->type != H5L_TYPE_HARD) a->non_hard = true;
      a->names.emplace_back(name);
      return 0;
    };
    hsize_t idx = 0;
    if (H5Literate(g, H5_INDEX_CRT_ORDER, H5_ITER_INC, &idx, cb, &acc) < 0) {
      // No creation-order index (a file not written by us): fall back to name order.
      acc = Acc{};
      idx = 0;
      if (H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, cb, &acc) < 0)
        problem(where, "cannot list members: " + hdf5_error_text());
    }
    if (acc.non_hard) violation(where, "has soft or external links");
    return acc.names;
  }

  Kind kind_of(hid_t parent, const std::string& name) {
    Handle o(H5Oopen(parent, name.c_str(), H5P_DEFAULT), H5Oclose);
    if (!o.valid()) return Kind::missing;
    switch (H5Iget_type(o)) {
      case H5I_GROUP: return Kind::group;
      case H5I_DATASET: return Kind::dataset;
      default: return Kind::other;
    }
  }

  Handle open_group(hid_t parent, const std::string& name, const std::string& where) {
    Handle g(H5Gopen2(parent, name.c_str(), H5P_DEFAULT), H5Gclose);
    if (!g.valid()) problem(where, "cannot open group: " + hdf5_error_text());
    return g;
  }

  void check_name(const std::string& where, const std::string& name) {
    if (auto p = name_problem(name); !p.empty()) violation(where, p);
  }

  // --- attributes ---

  std::vector<std::string> attr_names(hid_t obj, const std::string& where) {
    std::vector<std::string> names;
    auto cb = [](hid_t, const char* name, const H5A_info_t*, void* out) -> herr_t {
      static_cast<std::vector<std::string>*>(out)->emplace_back(name);
      return 0;
    };
    hsize_t idx = 0;
    if (H5Aiterate2(obj, H5_INDEX_CRT_ORDER, H5_ITER_INC, &idx, cb, &names) < 0) {
      names.clear();
      idx = 0;
      if (H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &idx, cb, &names) < 0)
        problem(where, "cannot list attributes: " + hdf5_error_text());
    }
    return names;
  }

  void expect_only_attrs(hid_t obj, const std::string& where, const std::set<std::string>& ok) {
    for (const auto& n : attr_names(obj, where))
      if (!ok.count(n)) violation(where, "unexpected attribute '" + n + "'");
  }

  // Opens attribute `name` and checks it is a scalar of type class `cls`; invalid on problem.
  Handle open_attr(hid_t obj, const std::string& where, const std::string& name, H5T_class_t cls,
                   const char* cls_name, bool required) {
    const htri_t exists = H5Aexists(obj, name.c_str());
    if (exists <= 0) {
      if (required) problem(where, "missing attribute '" + name + "'");
      return Handle();
    }
    Handle a(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose);
    if (!a.valid()) {
      problem(where, "cannot open attribute '" + name + "': " + hdf5_error_text());
      return Handle();
    }
    Handle type(H5Aget_type(a), H5Tclose);
    Handle space(H5Aget_space(a), H5Sclose);
    if (!type.valid() || H5Tget_class(type) != cls) {
      problem(where, "attribute '" + name + "' is not " + cls_name);
      return Handle();
    }
    if (!space.valid() || H5Sget_simple_extent_type(space) != H5S_SCALAR) {
      problem(where, "attribute '" + name + "' is not a scalar");
      return Handle();
    }
    if (cls == H5T_STRING) {
      if (H5Tis_variable_str(type) <= 0)
        violation(where, "attribute '" + name + "' is not a variable-length string");
      if (H5Tget_cset(type) != H5T_CSET_UTF8)
        violation(where, "attribute '" + name + "' is not declared UTF-8");
    } else if (H5Tget_size(type) != 8) {
      violation(where, "attribute '" + name + "' is not 8 bytes wide");
    } else if (cls == H5T_INTEGER && H5Tget_sign(type) != H5T_SGN_2) {
      violation(where, "attribute '" + name + "' is not signed");
    }
    return a;
  }

  std::optional<std::string> get_str(hid_t obj, const std::string& where, const std::string& name,
                                     bool required = true) {
    Handle a = open_attr(obj, where, name, H5T_STRING, "a string", required);
    if (!a.valid()) return std::nullopt;
    Handle ftype(H5Aget_type(a), H5Tclose);
    std::string out;
    herr_t rc;
    if (H5Tis_variable_str(ftype) > 0) {
      Handle mtype(H5Tcopy(H5T_C_S1), H5Tclose);
      H5Tset_size(mtype, H5T_VARIABLE);
      H5Tset_cset(mtype, H5Tget_cset(ftype));
      char* p = nullptr;
      rc = H5Aread(a, mtype, &p);
      if (rc >= 0 && p) out = p;
      if (p) H5free_memory(p);
    } else {
      // Fixed-length strings are not what we write, but read them so that a checker can say why.
      const size_t n = H5Tget_size(ftype);
      std::string buf(n, '\0');
      rc = H5Aread(a, ftype, buf.data());
      out = buf.substr(0, buf.find('\0'));
    }
    if (rc < 0) {
      problem(where, "cannot read attribute '" + name + "': " + hdf5_error_text());
      return std::nullopt;
    }
    if (auto p = text_problem(out); !p.empty()) violation(where, "attribute '" + name + "': " + p);
    return out;
  }

  template <class T>
  std::optional<T> get_num(hid_t obj, const std::string& where, const std::string& name,
                           H5T_class_t cls, hid_t mem_type, const char* cls_name, bool required) {
    Handle a = open_attr(obj, where, name, cls, cls_name, required);
    if (!a.valid()) return std::nullopt;
    T v{};
    if (H5Aread(a, mem_type, &v) < 0) {
      problem(where, "cannot read attribute '" + name + "': " + hdf5_error_text());
      return std::nullopt;
    }
    return v;
  }
  std::optional<int64_t> get_i64(hid_t obj, const std::string& where, const std::string& name,
                                 bool required = true) {
    return get_num<int64_t>(obj, where, name, H5T_INTEGER, H5T_NATIVE_INT64, "an integer",
                            required);
  }
  std::optional<double> get_f64(hid_t obj, const std::string& where, const std::string& name,
                                bool required = true) {
    return get_num<double>(obj, where, name, H5T_FLOAT, H5T_NATIVE_DOUBLE, "a float", required);
  }

  Verdict get_verdict(hid_t obj, const std::string& where) {
    auto s = get_str(obj, where, "verdict");
    if (!s) return Verdict::not_run;
    try {
      return parse_verdict(*s);
    } catch (const std::invalid_argument& e) {
      problem(where, e.what());
      return Verdict::not_run;
    }
  }

  Counts get_counts(hid_t obj, const std::string& where) {
    Counts c;
    c.n_pass = get_i64(obj, where, "n_pass").value_or(0);
    c.n_fail = get_i64(obj, where, "n_fail").value_or(0);
    c.n_not_run = get_i64(obj, where, "n_not_run").value_or(0);
    return c;
  }

  void check_aggregate(const std::string& where, Verdict stored, const Counts& stored_counts,
                       const Counts& from_children) {
    if (!(stored_counts == from_children))
      violation(where, "counts (" + std::to_string(stored_counts.n_pass) + "," +
                           std::to_string(stored_counts.n_fail) + "," +
                           std::to_string(stored_counts.n_not_run) +
                           ") disagree with its members (" + std::to_string(from_children.n_pass) +
                           "," + std::to_string(from_children.n_fail) + "," +
                           std::to_string(from_children.n_not_run) + ")");
    if (stored != stored_counts.verdict())
      violation(where, std::string("verdict '") + verdict_name(stored) + "' disagrees with counts ('" +
                           verdict_name(stored_counts.verdict()) + "')");
  }

  // --- levels ---

  Meta read_meta(hid_t root) {
    Meta m;
    Handle g = open_group(root, "meta", "/meta");
    if (!g.valid()) return m;
    for (const auto& n : attr_names(g, "/meta")) {
      check_name("/meta", n);
      if (auto v = get_str(g, "/meta", n)) m.values[n] = *v;
    }
    for (const auto& k : Meta::required_keys())
      if (!m.values.count(k)) violation("/meta", "missing required attribute '" + k + "'");
    for (const auto& n : links(g, "/meta")) violation("/meta/" + n, "unexpected object");
    return m;
  }

  // Aggregates are checked against counts recomputed from the checks below them (added to
  // `actual`), so one damaged level is reported once, where it is, not again at every parent.
  ClaimData read_claim(hid_t root, const std::string& name, Counts& actual) {
    ClaimData c;
    c.name = name;
    const std::string where = "/" + name;
    check_name(where, name);
    Handle g = open_group(root, name, where);
    if (!g.valid()) return c;
    c.verdict = get_verdict(g, where);
    c.counts = get_counts(g, where);
    c.n_cases = get_i64(g, where, "n_cases").value_or(0);
    expect_only_attrs(g, where, {"verdict", "n_pass", "n_fail", "n_not_run", "n_cases"});
    Counts sum;
    for (const auto& cn : links(g, where)) {
      if (kind_of(g, cn) != Kind::group) {
        violation(where + "/" + cn, "unexpected object (a case must be a group)");
        continue;
      }
      c.cases.push_back(read_case(g, where, cn, sum));
    }
    if (c.n_cases != static_cast<int64_t>(c.cases.size()))
      violation(where, "n_cases is " + std::to_string(c.n_cases) + " but it has " +
                           std::to_string(c.cases.size()) + " cases");
    check_aggregate(where, c.verdict, c.counts, sum);
    actual += sum;
    return c;
  }

  CaseData read_case(hid_t claim, const std::string& claim_where, const std::string& name,
                     Counts& actual) {
    CaseData c;
    c.name = name;
    const std::string where = claim_where + "/" + name;
    check_name(where, name);
    Handle g = open_group(claim, name, where);
    if (!g.valid()) return c;
    c.verdict = get_verdict(g, where);
    c.counts = get_counts(g, where);
    for (const auto& n : attr_names(g, where)) {
      if (aggregate_attr_names().count(n)) continue;
      check_name(where, n);
      if (auto v = get_str(g, where, n)) c.attrs.emplace_back(n, *v);
    }
    bool have_checks = false, have_data = false;
    for (const auto& n : links(g, where)) {
      const std::string w = where + "/" + n;
      const Kind k = kind_of(g, n);
      if (n == "checks" && k == Kind::group) {
        have_checks = true;
        read_checks(g, w, c);
      } else if (n == "data" && k == Kind::group) {
        have_data = true;
        read_data(g, w, c);
      } else {
        violation(w, "unexpected object (a case holds only the groups 'checks' and 'data')");
      }
    }
    if (!have_checks) problem(where + "/checks", "missing group");
    if (!have_data) problem(where + "/data", "missing group");
    Counts sum;
    for (const auto& ch : c.checks) sum.add(ch.verdict);
    check_aggregate(where, c.verdict, c.counts, sum);
    actual += sum;
    return c;
  }

  void read_checks(hid_t parent, const std::string& where, CaseData& c) {
    Handle g = open_group(parent, "checks", where);
    if (!g.valid()) return;
    expect_only_attrs(g, where, {});
    for (const auto& n : links(g, where)) {
      const std::string w = where + "/" + n;
      if (kind_of(g, n) != Kind::group) {
        violation(w, "unexpected object (a check must be a group)");
        continue;
      }
      c.checks.push_back(read_check(g, w, n));
    }
  }

  Check read_check(hid_t parent, const std::string& where, const std::string& name) {
    Check c;
    c.name = name;
    Handle g = open_group(parent, name, where);
    if (!g.valid()) return c;
    c.verdict = get_verdict(g, where);
    c.reason = get_str(g, where, "reason").value_or("");
    c.metric_name = get_str(g, where, "metric_name").value_or("");
    c.metric = get_f64(g, where, "metric").value_or(c.metric);
    c.bound = get_f64(g, where, "bound").value_or(c.bound);
    const int present = (H5Aexists(g, "differing") > 0) + (H5Aexists(g, "max_ulp") > 0) +
                        (H5Aexists(g, "first_diff") > 0);
    if (present == 3) {
      c.differing = get_i64(g, where, "differing").value_or(-1);
      c.max_ulp = get_f64(g, where, "max_ulp").value_or(0);
      c.first_diff = get_str(g, where, "first_diff").value_or("");
      if (c.differing < 0) violation(where, "differing is negative");
    } else if (present != 0) {
      problem(where, "bitwise evidence needs all of differing, max_ulp, first_diff");
    }
    expect_only_attrs(g, where, {"verdict", "reason", "metric_name", "metric", "bound",
                                 "differing", "max_ulp", "first_diff"});
    for (const auto& n : links(g, where)) violation(where + "/" + n, "unexpected object");
    if (auto p = evidence_problem(c); !p.empty()) violation(where, p);
    return c;
  }

  void read_data(hid_t parent, const std::string& where, CaseData& c) {
    Handle g = open_group(parent, "data", where);
    if (!g.valid()) return;
    expect_only_attrs(g, where, {});
    for (const auto& n : links(g, where)) {
      const std::string w = where + "/" + n;
      if (kind_of(g, n) != Kind::dataset) {
        violation(w, "unexpected object (data holds only datasets)");
        continue;
      }
      check_name(w, n);
      if (auto d = read_dataset(g, w, n)) c.datasets.push_back(std::move(*d));
    }
  }

  std::optional<Dataset> read_dataset(hid_t parent, const std::string& where,
                                      const std::string& name) {
    Dataset d;
    d.name = name;
    Handle ds(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), H5Dclose);
    if (!ds.valid()) {
      problem(where, "cannot open dataset: " + hdf5_error_text());
      return std::nullopt;
    }
    Handle type(H5Dget_type(ds), H5Tclose);
    Handle space(H5Dget_space(ds), H5Sclose);
    const H5T_class_t cls = type.valid() ? H5Tget_class(type) : H5T_NO_CLASS;
    if (cls == H5T_FLOAT) {
      d.dtype = DType::f64;
    } else if (cls == H5T_INTEGER) {
      d.dtype = DType::i64;
    } else {
      problem(where, "dataset is neither float nor integer");
      return std::nullopt;
    }
    if (H5Tget_size(type) != 8) violation(where, "dataset element is not 8 bytes wide");
    if (cls == H5T_INTEGER && H5Tget_sign(type) != H5T_SGN_2)
      violation(where, "integer dataset is not signed");
    const int rank = space.valid() ? H5Sget_simple_extent_ndims(space) : -1;
    if (H5Sget_simple_extent_type(space) != H5S_SIMPLE || rank < 1 || rank > 2) {
      problem(where, "dataset must be 1-D or 2-D");
      return std::nullopt;
    }
    if (d.dtype == DType::i64 && rank != 1) violation(where, "integer dataset must be 1-D");
    hsize_t dims[2] = {0, 0};
    H5Sget_simple_extent_dims(space, dims, nullptr);
    uint64_t n = 1;
    for (int i = 0; i < rank; ++i) {
      d.shape.push_back(dims[i]);
      n *= dims[i];
    }
    herr_t rc = 0;
    if (d.dtype == DType::f64) {
      d.f64.resize(n);
      if (n > 0)
        rc = H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, d.f64.data());
    } else {
      d.i64.resize(n);
      if (n > 0) rc = H5Dread(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, d.i64.data());
    }
    if (rc < 0) {
      problem(where, "cannot read dataset: " + hdf5_error_text());
      return std::nullopt;
    }
    d.description = get_str(ds, where, "description", false).value_or("");
    expect_only_attrs(ds, where, {"description"});
    return d;
  }

  bool collect_;
};

Handle open_for_reading(const std::string& path, std::string& why) {
  Handle fapl = make_fapl();
  Handle f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl), H5Fclose);
  if (!f.valid()) why = hdf5_error_text();
  return f;
}

}  // namespace

ReportData read_report(const std::string& path) {
  std::lock_guard<std::mutex> lock(h5_mutex());
  QuietHdf5 quiet;
  std::string why;
  Handle f = open_for_reading(path, why);
  if (!f.valid())
    throw std::runtime_error("fh::read_report: cannot open '" + path + "': " + why);
  try {
    Walker w(false);
    return w.read(f);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("fh::read_report: '" + path + "': " + e.what());
  }
}

std::vector<std::string> validate_report_schema(const std::string& path) {
  std::lock_guard<std::mutex> lock(h5_mutex());
  QuietHdf5 quiet;
  std::string why;
  Handle f = open_for_reading(path, why);
  if (!f.valid()) return {"cannot open '" + path + "' as HDF5: " + why};
  Walker w(true);
  w.read(f);
  return w.problems;
}

}  // namespace fh
