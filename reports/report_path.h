// Internal to reports/: the report path policy's pieces that Report::write (report_write.cpp)
// uses, defined in report_path.cpp beside check_report_path. The policy itself is documented
// in report.h.
#pragma once
#include <sys/types.h>

#include <filesystem>
#include <string>

#include "reports/report.h"

namespace fh::report_detail {

// Throws ReportPathError unless `path` names a file (not "", ".", "..", nor a trailing '/')
// that is absent, or a regular file that `options` allow to replace. lstat: never follows.
void require_replaceable(const std::string& path, WriteOptions options);

struct FileIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
};

// The temporary file Report::write fills: created new, open for writing, with its identity.
// The descriptor is closed with the object (close() first to see close's own error).
class TempFile {
 public:
  TempFile(int fd, FileIdentity id) : fd_(fd), id_(id) {}
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() { close(); }
  int fd() const { return fd_; }
  const FileIdentity& id() const { return id_; }
  int close();  // 0, or -1 with errno; the descriptor is gone either way

 private:
  int fd_ = -1;
  FileIdentity id_;
};

// Creates `tmp` empty with O_CREAT|O_EXCL|O_NOFOLLOW (mode 0666 less the umask), open for
// writing; throws std::runtime_error with errno's text (errno kept) when it cannot.
TempFile create_exclusive(const std::string& tmp);

// "what: <strerror(err)>".
std::string errno_text(const std::string& what, int err);
// The folder a report path names its file in ("." for a bare name).
std::filesystem::path directory_of(const std::string& path);

// Gives the finished temporary file `tmp` the name `path` as the policy and `options` allow,
// after checking that `tmp` is still the regular file `id` (testing_hooks::set_before_rename's
// hook runs first). Throws ReportPathError when the policy refuses, std::runtime_error when a
// system call fails; `tmp` is then still there.
void publish(const std::string& tmp, const FileIdentity& id, const std::string& path,
             WriteOptions options);

}  // namespace fh::report_detail
