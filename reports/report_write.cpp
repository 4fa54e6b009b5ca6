// The HDF5 writer: Report::write lays a snapshot out as reports/SCHEMA.md says, in a temporary
// file that is fsynced and renamed over the final name; every step can be made to fail through
// testing_hooks. Shared HDF5 plumbing: inputs/hdf5_util.h.
//
// HDF5 never touches the disk here: the file is built in memory (the core driver, no backing
// store) and its image is written out by write_file() with plain write() calls. The reason is
// HDF5 1.10's close: when H5Fclose cannot flush (a full disk, EFBIG past the file-size limit),
// H5F__dest frees the file anyway and returns an error, so the file's id stays registered with a
// dangling pointer; nothing can close it again, and H5_term_library does at exit, in H5F__close_cb
// on freed memory: SIGSEGV after the error was reported (issue 15 item 2; upstream HDFFV-11052,
// HDFGroup/hdf5 PR #2291). A file in memory cannot fail to flush, so every id is released, and
// an I/O error is ours to report. The same write() path turns SIGXFSZ into an error: see
// SigxfszAsError.
#include "reports/report.h"

#include <fcntl.h>
#include <hdf5.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "inputs/hdf5_util.h"
#include "reports/report_path.h"

namespace fh {

using hdf5_detail::Handle;
using hdf5_detail::h5_mutex;
using hdf5_detail::hdf5_error_text;
using hdf5_detail::make_fapl;
using hdf5_detail::QuietHdf5;

namespace {

std::atomic<int64_t> g_write_fault{-1};
std::atomic<int64_t> g_last_write_steps{0};

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
    attr_i64(obj, where, "n_error", c.n_error);
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

using report_detail::errno_text;

// While the image is written, reaching the file-size limit (RLIMIT_FSIZE) must be an error
// (write() fails with EFBIG, as on a full disk), not SIGXFSZ's default action, which kills the
// process with the temporary file left behind and the error never said. So SIGXFSZ is ignored
// for the scope when its action is the default; a handler or SIG_IGN the program set stays.
// The disposition is process-wide: another thread writing a file meanwhile sees EFBIG too.
class SigxfszAsError {
 public:
  SigxfszAsError() {
    if (::sigaction(SIGXFSZ, nullptr, &old_) != 0) return;
    if ((old_.sa_flags & SA_SIGINFO) || old_.sa_handler != SIG_DFL) return;
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    changed_ = ::sigaction(SIGXFSZ, &ign, nullptr) == 0;
  }
  ~SigxfszAsError() {
    if (changed_) ::sigaction(SIGXFSZ, &old_, nullptr);
  }
  SigxfszAsError(const SigxfszAsError&) = delete;
  SigxfszAsError& operator=(const SigxfszAsError&) = delete;

 private:
  struct sigaction old_ {};
  bool changed_ = false;
};

// Writes the file image through `fd`, the temporary file `p` open for writing, and flushes it
// to disk before it takes the final name, so a crash after the rename cannot expose a file
// whose blocks never reached the disk. The caller removes `p` on failure.
void write_file(Writer& w, int fd, const std::string& p, const std::vector<unsigned char>& bytes) {
  {
    SigxfszAsError sigxfsz;
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n > 0) {
        done += size_t(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      const int err = n < 0 ? errno : EIO;  // 0 bytes written for a non-empty request
      throw WriteFailure(errno_text("write '" + p + "'", err));
    }
  }
  w.step("fsync");
  if (::fsync(fd) != 0) throw WriteFailure(errno_text("fsync '" + p + "'", errno));
}

// Builds the report as an HDF5 file in memory (named `file_name`, which it does not touch) and
// returns the file's image. Every HDF5 id is closed, innermost first, when this returns or throws.
std::vector<unsigned char> build_image(Writer& w, const ReportData& r, const std::string& file_name) {
  Handle fcpl(w.need_id(H5Pcreate(H5P_FILE_CREATE), "file creation properties"), H5Pclose);
  track_order(fcpl);
  Handle gcpl(w.need_id(H5Pcreate(H5P_GROUP_CREATE), "group creation properties"), H5Pclose);
  track_order(gcpl);
  Handle fapl = make_fapl();
  w.need_id(fapl.get(), "file access properties");
  // In memory, grown 1 MiB at a time, never written by HDF5 (see the top of this file).
  w.need_ok(H5Pset_fapl_core(fapl, size_t(1) << 20, false), "file access properties");

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
          w.attr_str(chg, ch_where, "pass_if", pass_if_name(ch.pass_if));
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

    // /benchmarks only when there are some: a report without benchmarks has no such group.
    if (!r.benchmarks.empty()) {
      Handle benches = w.group(root, "benchmarks", "/benchmarks", gcpl);
      for (const auto& b : r.benchmarks) {
        const std::string key = benchmark_key(b.name);
        const std::string b_where = "/benchmarks/" + key;
        Dataset reps;
        reps.name = key;
        reps.shape = {b.repetitions_ns.size()};
        reps.f64 = b.repetitions_ns;
        w.dataset(benches, b_where, reps);
        Handle ds(w.need_id(H5Dopen2(benches, key.c_str(), H5P_DEFAULT), "open " + b_where), H5Dclose);
        w.attr_str(ds, b_where, "name", b.name);
        w.attr_f64(ds, b_where, "median", b.median_ns);
        w.attr_str(ds, b_where, "unit", b.unit);
      }
    }
  }
  w.step("close file");
  const std::string close_what = "close file '" + file_name + "'";
  w.need_ok(H5Fflush(file, H5F_SCOPE_LOCAL), close_what);
  const ssize_t size = H5Fget_file_image(file, nullptr, 0);
  if (size <= 0) throw WriteFailure(close_what + ": " + hdf5_error_text());
  std::vector<unsigned char> image(static_cast<size_t>(size));
  if (H5Fget_file_image(file, image.data(), image.size()) != size)
    throw WriteFailure(close_what + ": " + hdf5_error_text());
  w.need_ok(file.close(), close_what);
  return image;
}

// Best effort: makes the rename itself durable. The report is already complete under its
// name, so a failure here is not an error.
void fsync_parent_dir(const std::string& p) {
  const std::filesystem::path dir = report_detail::directory_of(p);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// The report path policy's write (report.h), one for the report and the text summaries:
// refuse what the policy refuses, create the temporary file exclusively, write what `make`
// returns (made once the temporary file exists, so its name can be the in-memory file's),
// fsync, publish under `path`, fsync the folder. On any failure the temporary file, once ours,
// is removed and the error rethrown.
void write_through_temp(Writer& w, const std::string& path, WriteOptions options,
                        const std::function<std::vector<unsigned char>(const std::string& tmp)>& make) {
  const std::string tmp = report_temp_path(path);
  bool created = false;  // the temporary file is ours to remove only once we created it
  try {
    report_detail::require_replaceable(path, options);
    report_detail::TempFile file = report_detail::create_exclusive(tmp);
    created = true;
    const std::vector<unsigned char> bytes = make(tmp);
    w.step("write file");
    write_file(w, file.fd(), tmp, bytes);
    if (file.close() != 0) throw WriteFailure(errno_text("close '" + tmp + "'", errno));
    w.step("rename");
    report_detail::publish(tmp, file.id(), path, options);
  } catch (...) {
    if (created) ::unlink(tmp.c_str());
    throw;
  }
  fsync_parent_dir(path);
}

}  // namespace

void Report::write(const std::string& path, WriteOptions options) const {
  if (path.empty()) throw std::runtime_error("fh::Report::write: empty path");
  const ReportData r = snapshot();
  std::lock_guard<std::mutex> lock(h5_mutex());
  QuietHdf5 quiet;
  Writer w(g_write_fault.load());
  try {
    // build_image closes every HDF5 handle when it returns or throws.
    write_through_temp(w, path, options, [&](const std::string& tmp) { return build_image(w, r, tmp); });
  } catch (const std::exception& e) {
    throw std::runtime_error("fh::Report::write: cannot write report '" + path + "': " + e.what());
  }
  g_last_write_steps = w.steps();
}

void write_text_file(const std::string& path, const std::string& text, WriteOptions options) {
  if (path.empty()) throw std::runtime_error("fh::write_text_file: empty path");
  Writer w(-1);  // no fault injection: the report's steps are what the fault tests count
  try {
    write_through_temp(w, path, options, [&](const std::string&) {
      return std::vector<unsigned char>(text.begin(), text.end());
    });
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot write '" + path + "': " + e.what());
  }
}

namespace testing_hooks {
void set_write_fault(int64_t n) { g_write_fault = n; }
int64_t last_write_steps() { return g_last_write_steps.load(); }
}  // namespace testing_hooks

}  // namespace fh
