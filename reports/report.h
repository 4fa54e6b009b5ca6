// The HDF5 run report (DESIGN "Reports", contract 7). A run builds a Report in memory, one
// CaseRecord per (claim, case), and writes it once at the end; write() goes through a temporary
// file and a rename, so the final name only ever holds a complete report, and it replaces
// nothing but a regular file (the report path policy, below Report). The layout is
// documented in reports/SCHEMA.md; read_report() and validate_report_schema() are its reader
// and its checker (tests and baseline diffs use them).
//
// All HDF5 use in this module is serialised by one mutex (the serial HDF5 library is not
// thread-safe) and runs with HDF5's automatic error printing off; HDF5 errors become
// std::runtime_error. Bad names or inconsistent evidence handed to the builder are
// std::invalid_argument, thrown at the call that adds them.
//
// This is the module's one public header. Its sources: report_builder.cpp (names, Meta,
// CaseRecord, Report in memory, snapshot), report_write.cpp (write(), testing_hooks) and
// report_read.cpp (read_report, validate_report_schema), report_path.cpp (the report path
// policy: check_report_path, the temporary file, the final no-replace rename); internal to the
// module, hdf5_util.{h,cpp} (the HDF5 mutex, error handling, handles), report_path.h and
// report_rules.h (the name, text and evidence rules the builder enforces and the checker lists).
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "inputs/benchmark_json.h"
#include "oracles/evidence.h"

namespace fh {

enum class DType { f64, i64 };

// A per-case metric array. 1-D f64, 1-D i64, or 2-D f64 (row-major), e.g. curves, histograms.
struct Dataset {
  std::string name;
  DType dtype = DType::f64;
  std::vector<uint64_t> shape;  // {n} or {rows, cols}
  std::vector<double> f64;      // used when dtype == f64
  std::vector<int64_t> i64;     // used when dtype == i64
  std::string description;      // optional; written as an attribute when not empty
};

// Provenance, as string key/values, written as attributes of /meta. The required keys must all
// be present (a value may say "none" or "unknown"); other keys are allowed.
struct Meta {
  std::map<std::string, std::string> values;

  static const std::vector<std::string>& required_keys();
  // Every required key set to "unknown", except start_time_utc, which is now.
  static Meta unknown();
  Meta& set(const std::string& key, const std::string& value);
  std::string get(const std::string& key) const;  // "" when absent
  friend bool operator==(const Meta&, const Meta&) = default;
};

std::string utc_now_iso8601();  // e.g. "2026-07-01T12:34:56Z"

// What a report holds, as plain data: Report::snapshot() builds it from memory, read_report()
// from a file, so the two compare directly. Lists keep insertion (creation) order.
struct CaseData {
  std::string name;
  Verdict verdict = Verdict::not_run;
  Counts counts;
  std::vector<std::pair<std::string, std::string>> attrs;
  std::vector<Check> checks;
  std::vector<Dataset> datasets;
};
struct ClaimData {
  std::string name;
  Verdict verdict = Verdict::not_run;
  Counts counts;  // over all checks of all its cases
  int64_t n_cases = 0;
  std::vector<CaseData> cases;
};
struct ReportData {
  int64_t schema_version = 0;
  Verdict verdict = Verdict::not_run;
  Counts counts;
  Meta meta;
  std::vector<ClaimData> claims;
  std::vector<BenchmarkData> benchmarks;  // /benchmarks, in the order added; often empty

  const ClaimData* find_claim(std::string_view name) const;
  const CaseData* find_case(std::string_view claim, std::string_view case_name) const;
  const BenchmarkData* find_benchmark(std::string_view name) const;
};

// Version 2 added n_error (the `error` verdict) to every level and pass_if to checks; the reader
// still reads version 1 (no errors, every check pass_if "<=").
constexpr int64_t kReportSchemaVersion = 2;
constexpr int64_t kOldestReadableSchemaVersion = 1;

// Throws std::invalid_argument unless `name` can be an HDF5 link/attribute name in this schema:
// not empty, no '/', not made only of '.', no NUL, valid UTF-8. `what` goes into the message.
void require_valid_name(const std::string& name, const char* what);

class CaseRecord {
 public:
  // declared: the dataset names this case's claim may write (null: any).
  CaseRecord(std::string claim, std::string name, const std::vector<std::string>* declared = nullptr);

  const std::string& claim() const { return claim_; }
  const std::string& name() const { return name_; }

  // String attribute of the case (e.g. shape, rule, dtype). Setting a key again replaces it.
  // The aggregate names verdict, n_pass, n_fail, n_not_run, n_error are reserved.
  CaseRecord& set_attr(const std::string& key, const std::string& value);
  // Check names are unique within the case.
  CaseRecord& add_check(Check c);
  // Dataset names are unique within the case.
  CaseRecord& add_f64(const std::string& name, std::vector<double> values,
                      std::string description = {});
  CaseRecord& add_i64(const std::string& name, std::vector<int64_t> values,
                      std::string description = {});
  CaseRecord& add_f64_2d(const std::string& name, uint64_t rows, uint64_t cols,
                         std::vector<double> row_major, std::string description = {});

  const std::vector<std::pair<std::string, std::string>>& attrs() const { return attrs_; }
  const std::vector<Check>& checks() const { return checks_; }
  const std::vector<Dataset>& datasets() const { return datasets_; }
  Counts counts() const;
  Verdict verdict() const { return counts().verdict(); }
  CaseData data() const;

 private:
  friend class Report;  // absorb() moves a case between reports and re-points declared_
  void add_dataset(Dataset d);
  std::string claim_, name_;
  const std::vector<std::string>* declared_ = nullptr;
  std::vector<std::pair<std::string, std::string>> attrs_;
  std::vector<Check> checks_;
  std::vector<Dataset> datasets_;
};

// What Report::write may do to whatever is already at its path (the report path policy below).
struct WriteOptions {
  // true (the default, for tests that rewrite a scratch file): an existing regular file at the
  // path is replaced. false: nothing at the path is ever replaced, also not a file that appears
  // while the report is written (another run's report); write() throws instead.
  bool replace_existing = true;
};

class Report {
 public:
  // Throws std::invalid_argument if a required meta key is missing or a key/value is invalid.
  explicit Report(Meta meta);
  Report(Report&&) noexcept;
  Report& operator=(Report&&) noexcept;
  ~Report();

  // Creates the case (and its claim on first use). Claim "meta" is reserved; a case name may
  // appear once per claim. The reference stays valid for the Report's lifetime.
  CaseRecord& add_case(const std::string& claim, const std::string& case_name);

  CaseRecord* find_case(const std::string& claim, const std::string& case_name);  // null if absent

  // Moves every case of `part` here, claim by claim in the order `part` created them, each
  // claim's cases in their order: the result is what the same add_case calls made here would
  // have made (claims new to this report appended, existing ones extended). A claim of `part`
  // must be declared here when any is (with the same datasets, which its cases are then held
  // to), and a case name may not already be here; on such an error (std::invalid_argument)
  // nothing has moved. Meta and benchmarks of `part` are dropped. forge-verify --jobs builds each
  // claim in a Report of its own on a worker and absorbs them in registry order (main.cpp).
  void absorb(Report&& part);

  // Declares a claim and the per-case dataset names it may write (the claim registry's row).
  // Once any claim is declared, add_case refuses an undeclared claim and a case refuses an
  // undeclared dataset (std::invalid_argument), so a report holds only what the registry says.
  void declare_claim(const std::string& claim, std::vector<std::string> datasets);

  // Adds one benchmark's timings (/benchmarks). Claim name "benchmarks" is reserved for them.
  // Throws std::invalid_argument on an empty or duplicate name, a repetition that is not a
  // finite time >= 0, a unit other than "ns", or a median that is not the repetitions' median
  // (with no repetitions: not finite and >= 0).
  void add_benchmark(BenchmarkData b);
  const std::vector<BenchmarkData>& benchmarks() const { return benchmarks_; }

  const Meta& meta() const { return meta_; }
  Verdict verdict() const;
  ReportData snapshot() const;

  // Writes report_temp_path(path) (created with O_CREAT|O_EXCL|O_NOFOLLOW), fsyncs it, renames
  // it to `path` as the report path policy and `options` allow. On failure removes the
  // temporary file (only one it created), leaves whatever was at `path` untouched, and throws
  // std::runtime_error naming `path`. A full disk or the file-size limit is such a failure:
  // SIGXFSZ's default action (kill) is suspended while the file is written, so write() sees EFBIG.
  void write(const std::string& path, WriteOptions options = {}) const;

 private:
  struct Claim {
    std::string name;
    std::vector<std::unique_ptr<CaseRecord>> cases;
  };
  Meta meta_;
  std::vector<Claim> claims_;
  std::map<std::string, std::vector<std::string>> declared_;  // claim -> its datasets
  std::vector<BenchmarkData> benchmarks_;
};

// The report path policy (Report::write enforces it; check_report_path checks it up front):
// - The final path must be absent or a regular file. A directory, device node, FIFO, socket or
//   symbolic link (dangling or not) there is never followed, written or replaced (lstat).
// - An existing regular file is replaced only with WriteOptions::replace_existing, and then by
//   rename(2) only after lstat shows a regular file right before it. Otherwise the final rename
//   is renameat2(RENAME_NOREPLACE), or link()+unlink() on a filesystem without it: a file that
//   appears at the path meanwhile is never replaced.
// - The temporary file is report_temp_path(path), "<path>.tmp.<pid>" in the same directory,
//   created with O_CREAT|O_EXCL|O_NOFOLLOW, and checked to be the same file before the rename.
struct ReportPathError : std::runtime_error {
  enum class Kind { not_regular, exists, no_directory, too_long, not_writable };
  ReportPathError(Kind k, const std::string& what) : std::runtime_error(what), kind(k) {}
  Kind kind;
};

std::string report_temp_path(const std::string& path);  // path + ".tmp.<pid>"

// Everything about `path` that write() will need, checked before any work is done: the file
// name is not empty, "." or ".."; its directory exists; the file name and the temporary name
// fit NAME_MAX (pathconf, else 255) and the temporary path fits PATH_MAX; the final path is
// allowed by the policy and `options`; the directory takes the temporary file (probed by
// creating and removing that very name with O_EXCL). Before the probe it removes stale
// temporaries of this report name ("<name>.tmp.<pid>", regular files whose process is gone:
// kill(pid, 0) fails with ESRCH) and returns their paths. Throws ReportPathError.
std::vector<std::string> check_report_path(const std::string& path, WriteOptions options);

// check_report_path as every command checks its outputs before any work: each stale temporary
// it removed is named on stderr after `tool`, and refusing an existing file says that --force
// replaces it. Throws ReportPathError.
void check_output_path(const std::string& tool, const std::string& path, WriteOptions options);

// True when `a` and `b` name one file: the same device and inode when either exists, else the
// same name in the same folder (compared by the folder's device and inode), so "r.h5",
// "./r.h5" and a link to it are one file. An output that is an input, or another output, of the
// same run is refused with this before any work.
bool same_file(const std::string& a, const std::string& b);

// Writes `text` to `path` under the same policy as Report::write (temporary file, fsync,
// rename; never a non-regular file; an existing file only with replace_existing): the
// machine-readable summaries beside a report (--json, --junit) are never half written either.
void write_text_file(const std::string& path, const std::string& text, WriteOptions options);

// Reads a report written by Report::write. Throws std::runtime_error (naming the path and the
// object) if the file cannot be opened or lacks something the schema requires.
ReportData read_report(const std::string& path);

// Every way the file departs from reports/SCHEMA.md (types, required and unexpected objects,
// aggregates that disagree with their checks, evidence rules). Empty means valid.
std::vector<std::string> validate_report_schema(const std::string& path);

namespace testing_hooks {
// Fault injection for tests: the n-th write step (0-based; steps are file creation, each
// group/attribute/dataset, file close, file write, fsync, rename) fails as an HDF5 call would.
// -1: off.
void set_write_fault(int64_t n);
// Number of steps the last successful write() took.
int64_t last_write_steps();
// Called right before the final rename, after every other step (null: none): a test makes
// something appear at the path there.
void set_before_rename(std::function<void()> f);
// Takes the link()+unlink() path that filesystems without RENAME_NOREPLACE take.
void set_force_link_fallback(bool on);
}  // namespace testing_hooks

}  // namespace fh
