// Internal to reports/: the report path policy's pieces that Report::write (report_write.cpp)
// uses, defined in report_path.cpp beside check_report_path. The policy itself is documented
// in report.h.
#pragma once
#include <sys/types.h>

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

// Creates `tmp` empty with O_CREAT|O_EXCL|O_NOFOLLOW (mode 0666 less the umask) and returns
// its identity; throws std::runtime_error with errno's text (errno kept) when it cannot.
FileIdentity create_exclusive(const std::string& tmp);

// Gives the finished temporary file `tmp` the name `path` as the policy and `options` allow,
// after checking that `tmp` is still the regular file `id` (testing_hooks::set_before_rename's
// hook runs first). Throws ReportPathError when the policy refuses, std::runtime_error when a
// system call fails; `tmp` is then still there.
void publish(const std::string& tmp, const FileIdentity& id, const std::string& path,
             WriteOptions options);

}  // namespace fh::report_detail
