// The HDF5 reader and schema checker: read_report and validate_report_schema, one walk over
// the file (reports/SCHEMA.md). Shared HDF5 plumbing: inputs/hdf5_util.h; name and evidence rules:
// report_rules.h.
#include "reports/report.h"

#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "inputs/hdf5_util.h"
#include "inputs/input_file.h"
#include "reports/report_rules.h"

namespace fh {

using report_detail::aggregate_attr_names;
using report_detail::direction_problem;
using hdf5_detail::foreign_data_problem;
using report_detail::evidence_problem;
using hdf5_detail::Handle;
using hdf5_detail::h5_mutex;
using hdf5_detail::hdf5_error_text;
using hdf5_detail::make_fapl;
using report_detail::name_problem;
using hdf5_detail::QuietHdf5;
using report_detail::text_problem;

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

  // Schema version 2 requires n_error at every level and pass_if on pass/fail checks; a
  // version-1 file has neither (read as 0 and "<=").
  bool v2_ = true;

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
    v2_ = r.schema_version >= 2;
    if (r.schema_version < kOldestReadableSchemaVersion || r.schema_version > kReportSchemaVersion)
      problem("/", "schema_version is " + std::to_string(r.schema_version) + ", this reader knows " +
                       std::to_string(kOldestReadableSchemaVersion) + ".." + std::to_string(kReportSchemaVersion));
    r.verdict = get_verdict(root, "/");
    r.counts = get_counts(root, "/");
    expect_only_attrs(root, "/", {"schema_version", "verdict", "n_pass", "n_fail", "n_not_run", "n_error"});

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
      if (name == "benchmarks") {  // optional: benchmark timings, not a claim
        if (k != Kind::group) { problem(where, "is not a group"); continue; }
        read_benchmarks(root, r);
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
    c.n_error = get_i64(obj, where, "n_error", v2_).value_or(0);  // absent in schema version 1
    return c;
  }

  void check_aggregate(const std::string& where, Verdict stored, const Counts& stored_counts,
                       const Counts& from_children) {
    if (!(stored_counts == from_children))
      violation(where, "counts (" + std::to_string(stored_counts.n_pass) + "," +
                           std::to_string(stored_counts.n_fail) + "," +
                           std::to_string(stored_counts.n_not_run) + "," + std::to_string(stored_counts.n_error) +
                           ") disagree with its members (" + std::to_string(from_children.n_pass) +
                           "," + std::to_string(from_children.n_fail) + "," +
                           std::to_string(from_children.n_not_run) + "," + std::to_string(from_children.n_error) + ")");
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

  // /benchmarks/<key>: a 1-D f64 dataset of repetition times (ns) with attributes name, median,
  // unit; key is benchmark_key(name), and median the repetitions' median.
  void read_benchmarks(hid_t root, ReportData& r) {
    const std::string where = "/benchmarks";
    Handle g = open_group(root, "benchmarks", where);
    if (!g.valid()) return;
    for_each_dataset(g, where, "benchmarks", [&](const std::string& key, const std::string& w) {
      Handle ds(H5Dopen2(g, key.c_str(), H5P_DEFAULT), H5Dclose);
      if (!ds.valid()) {
        problem(w, "cannot open dataset: " + hdf5_error_text());
        return;
      }
      BenchmarkData b;
      b.name = get_str(ds, w, "name").value_or("");
      b.median_ns = get_f64(ds, w, "median").value_or(b.median_ns);
      b.unit = get_str(ds, w, "unit").value_or("");
      ds.close();
      auto reps = read_dataset(g, w, key, {"name", "median", "unit"});  // also lists stray attributes
      if (!reps) return;
      if (reps->dtype != DType::f64 || reps->shape.size() != 1) {
        problem(w, "benchmark repetitions must be a 1-D float dataset");
        return;
      }
      b.repetitions_ns = std::move(reps->f64);
      if (benchmark_key(b.name) != key)
        violation(w, "name '" + b.name + "' does not match the member's name (expected '" +
                         benchmark_key(b.name) + "')");
      if (b.unit != "ns") violation(w, "unit is '" + b.unit + "', expected 'ns'");
      for (double t : b.repetitions_ns)
        if (!std::isfinite(t) || t < 0) {
          violation(w, "a repetition's time is not a finite value >= 0");
          break;
        }
      if (!b.repetitions_ns.empty() && !(b.median_ns == median_of(b.repetitions_ns)))
        violation(w, "median " + std::to_string(b.median_ns) + " is not its repetitions' median " +
                         std::to_string(median_of(b.repetitions_ns)));
      if (b.repetitions_ns.empty() && !(std::isfinite(b.median_ns) && b.median_ns >= 0))
        violation(w, "no repetitions and no finite median >= 0");
      r.benchmarks.push_back(std::move(b));
    });
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
    expect_only_attrs(g, where, {"verdict", "n_pass", "n_fail", "n_not_run", "n_error", "n_cases"});
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
    if (auto p = get_str(g, where, "pass_if", v2_ && (c.verdict == Verdict::pass || c.verdict == Verdict::fail))) {
      // absent in schema version 1: "<="
      try {
        c.pass_if = parse_pass_if(*p);
      } catch (const std::invalid_argument& e) {
        problem(where, e.what());
      }
    }
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
    expect_only_attrs(g, where, {"verdict", "reason", "metric_name", "metric", "bound", "pass_if",
                                 "differing", "max_ulp", "first_diff"});
    for (const auto& n : links(g, where)) violation(where + "/" + n, "unexpected object");
    if (auto p = evidence_problem(c); !p.empty()) violation(where, p);
    if (v2_)
      if (auto p = direction_problem(c); !p.empty()) violation(where, p);
    return c;
  }

  void read_data(hid_t parent, const std::string& where, CaseData& c) {
    Handle g = open_group(parent, "data", where);
    if (!g.valid()) return;
    for_each_dataset(g, where, "data", [&](const std::string& n, const std::string& w) {
      if (auto d = read_dataset(g, w, n)) c.datasets.push_back(std::move(*d));
    });
  }

  // A group that holds only datasets and has no attributes (/benchmarks, a case's data): each
  // member that is a dataset with a valid name goes to f(name, its path); anything else is a
  // violation named after the group (`holder`).
  template <class F>
  void for_each_dataset(hid_t g, const std::string& where, const char* holder, F f) {
    expect_only_attrs(g, where, {});
    for (const auto& n : links(g, where)) {
      const std::string w = where + "/" + n;
      if (kind_of(g, n) != Kind::dataset) {
        violation(w, std::string("unexpected object (") + holder + " holds only datasets)");
        continue;
      }
      check_name(w, n);
      f(n, w);
    }
  }

  std::optional<Dataset> read_dataset(hid_t parent, const std::string& where,
                                      const std::string& name,
                                      const std::set<std::string>& attrs = {"description"}) {
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
    bool overflow = false;
    for (int i = 0; i < rank; ++i) {
      d.shape.push_back(dims[i]);
      overflow |= __builtin_mul_overflow(n, uint64_t(dims[i]), &n);
    }
    // Its data must be in the file (the writer stores every element): a dataset declared larger
    // than what it stores, never written and so read as its fill value, would have a few bytes of
    // file allocate any amount of memory here (found by fuzzing: suites/fuzz/regressions/report).
    const size_t element = std::max<size_t>(H5Tget_size(type), 1);
    const hsize_t stored = H5Dget_storage_size(ds);
    if (overflow || n > stored / element) {
      std::string shape;
      for (int i = 0; i < rank; ++i) shape += (i ? " x " : "") + std::to_string(dims[i]);
      problem(where, "dataset declares " + shape + " elements but stores " + std::to_string(stored) +
                         " bytes of them in the file");
      return std::nullopt;
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
    if (attrs.count("description"))
      d.description = get_str(ds, where, "description", false).value_or("");
    expect_only_attrs(ds, where, attrs);
    return d;
  }

  bool collect_;
};

Handle open_for_reading(const std::string& path, std::string& why) {
  why = input_file_problem(path, kMaxHdf5InputBytes);  // H5Fopen would wait on a FIFO
  if (!why.empty()) return Handle();
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
  if (why = foreign_data_problem(f); !why.empty())
    throw std::runtime_error("fh::read_report: '" + path + "': " + why);
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
  // Before the walk, which opens objects by name: a link or a dataset may lead to another file.
  if (why = foreign_data_problem(f); !why.empty()) return {why};
  Walker w(true);
  w.read(f);
  return w.problems;
}

}  // namespace fh
