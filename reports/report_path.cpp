// The report path policy (report.h): what may be at a report's path, the temporary file beside
// it, the final rename that never replaces what it must not, and check_report_path, which
// checks all of it before a run spends its time.
#include "reports/report_path.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace fh {

namespace {

namespace fs = std::filesystem;
using Kind = ReportPathError::Kind;

std::mutex g_hook_mutex;
std::function<void()> g_before_rename;
std::atomic<bool> g_force_link_fallback{false};

std::string quoted(const std::string& s) { return "'" + s + "'"; }

const char* file_kind(mode_t m) {
  if (S_ISDIR(m)) return "directory";
  if (S_ISLNK(m)) return "symbolic link";
  if (S_ISCHR(m)) return "character device";
  if (S_ISBLK(m)) return "block device";
  if (S_ISFIFO(m)) return "FIFO";
  if (S_ISSOCK(m)) return "socket";
  return "file that is not a regular file";
}

using report_detail::directory_of;
using report_detail::errno_text;

// 0, or errno when `tmp` cannot be created as a new file; fd is then open on it (and `id` its
// identity).
int try_create(const std::string& tmp, int& fd, report_detail::FileIdentity& id) {
  fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) return errno;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fd = -1;
    ::unlink(tmp.c_str());
    return err;
  }
  id = {st.st_dev, st.st_ino};
  return 0;
}

// renameat2(RENAME_NOREPLACE): glibc >= 2.28 declares it; older ones get the system call.
int rename_noreplace_call(const char* from, const char* to) {
#if defined(RENAME_NOREPLACE)
  return ::renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
#elif defined(SYS_renameat2)
  return int(::syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, 1u /* RENAME_NOREPLACE */));
#else
  errno = ENOSYS;
  return -1;
#endif
}

// Renames `tmp` to `path` unless something is at `path`: true when done, false when something
// is there (EEXIST); throws on any other failure.
bool rename_noreplace(const std::string& tmp, const std::string& path) {
  if (!g_force_link_fallback.load()) {
    if (rename_noreplace_call(tmp.c_str(), path.c_str()) == 0) return true;
    const int err = errno;
    if (err == EEXIST) return false;
    if (err != EINVAL && err != ENOSYS && err != EOPNOTSUPP)
      throw std::runtime_error(errno_text("rename " + quoted(tmp) + " to " + quoted(path), err));
  }
  // A filesystem without RENAME_NOREPLACE: link() never replaces either (nor follows `tmp`).
  if (::link(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    if (err == EEXIST) return false;
    throw std::runtime_error(errno_text("link " + quoted(tmp) + " to " + quoted(path), err));
  }
  ::unlink(tmp.c_str());  // the report is in place; only its temporary name goes
  return true;
}

// Stale temporaries of report file `name` in `dir`: "<name>.tmp.<pid>", a regular file, pid
// not alive (kill(pid, 0) fails with ESRCH) or this very process (which has not written yet).
std::vector<std::string> remove_stale_temps(const fs::path& dir, const std::string& name) {
  std::vector<std::string> removed;
  const std::string prefix = name + ".tmp.";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return removed;  // the probe that follows says why
  while (const dirent* e = ::readdir(d)) {
    const std::string entry = e->d_name;
    if (entry.size() <= prefix.size() || entry.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = entry.substr(prefix.size());
    if (digits.size() > 10 || digits[0] == '0' ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      continue;
    const long long pid = std::stoll(digits);
    if (pid > INT_MAX) continue;
    const bool gone = pid == ::getpid() || (::kill(pid_t(pid), 0) != 0 && errno == ESRCH);
    if (!gone) continue;
    const fs::path f = dir / entry;
    struct stat st {};
    if (::lstat(f.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (::unlink(f.c_str()) == 0) removed.push_back(f.string());
  }
  ::closedir(d);
  return removed;
}

}  // namespace

std::string report_temp_path(const std::string& path) {
  return path + ".tmp." + std::to_string(::getpid());
}

namespace report_detail {

std::string errno_text(const std::string& what, int err) { return what + ": " + std::strerror(err); }

std::filesystem::path directory_of(const std::string& path) {
  const fs::path dir = fs::path(path).parent_path();
  return dir.empty() ? fs::path(".") : dir;
}

int TempFile::close() {
  if (fd_ < 0) return 0;
  const int rc = ::close(fd_);
  fd_ = -1;
  return rc;
}

void require_replaceable(const std::string& path, WriteOptions options) {
  const std::string name = fs::path(path).filename().string();
  if (name.empty() || name == "." || name == "..")
    throw ReportPathError(Kind::not_regular,
                          "report path " + quoted(path) + " names a directory, not a file");
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) return;
    throw ReportPathError(err == ENAMETOOLONG ? Kind::too_long : Kind::no_directory,
                          errno_text("report path " + quoted(path), err));
  }
  if (!S_ISREG(st.st_mode))
    throw ReportPathError(Kind::not_regular,
                          "report path " + quoted(path) + " is a " + file_kind(st.st_mode) +
                              "; a report never replaces anything but a regular file");
  if (!options.replace_existing)
    throw ReportPathError(Kind::exists, "report path " + quoted(path) +
                                            " already exists and is not replaced unless asked");
}

TempFile create_exclusive(const std::string& tmp) {
  int fd = -1;
  FileIdentity id;
  if (const int err = try_create(tmp, fd, id)) {
    errno = err;
    throw std::runtime_error(errno_text("create " + quoted(tmp), err));
  }
  return TempFile(fd, id);
}

void publish(const std::string& tmp, const FileIdentity& id, const std::string& path,
             WriteOptions options) {
  {
    std::lock_guard<std::mutex> lock(g_hook_mutex);
    if (g_before_rename) g_before_rename();
  }
  struct stat st {};
  if (::lstat(tmp.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_dev != id.dev ||
      st.st_ino != id.ino)
    throw std::runtime_error("temporary file " + quoted(tmp) + " was replaced while it was written");
  if (options.replace_existing) {
    // Replace only a regular file, checked right before; an absent path takes the no-replace
    // rename, so whatever appears there meanwhile is examined again.
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (::lstat(path.c_str(), &st) == 0) {
        if (!S_ISREG(st.st_mode)) require_replaceable(path, options);  // throws, naming the kind
        if (::rename(tmp.c_str(), path.c_str()) != 0)
          throw std::runtime_error(errno_text("rename " + quoted(tmp) + " to " + quoted(path), errno));
        return;
      }
      if (errno != ENOENT)
        throw std::runtime_error(errno_text("report path " + quoted(path), errno));
      if (rename_noreplace(tmp, path)) return;
    }
    throw ReportPathError(Kind::exists, "report path " + quoted(path) + " keeps changing; not replaced");
  }
  if (!rename_noreplace(tmp, path))
    throw ReportPathError(Kind::exists,
                          "report path " + quoted(path) +
                              " appeared while the report was written (another run's report?); not replaced");
}

}  // namespace report_detail

std::vector<std::string> check_report_path(const std::string& path, WriteOptions options) {
  if (path.empty()) throw ReportPathError(Kind::no_directory, "empty report path");
  const std::string name = fs::path(path).filename().string();
  if (name.empty() || name == "." || name == "..")
    throw ReportPathError(Kind::not_regular,
                          "report path " + quoted(path) + " names a directory, not a file");
  const fs::path dir = directory_of(path);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    throw ReportPathError(err == ENAMETOOLONG ? Kind::too_long : Kind::no_directory,
                          err == ENOENT ? "report directory " + quoted(dir.string()) + " does not exist"
                                        : errno_text("report directory " + quoted(dir.string()), err));
  }
  if (!S_ISDIR(st.st_mode))
    throw ReportPathError(Kind::no_directory,
                          "report directory " + quoted(dir.string()) + " is not a directory");

  // Lengths: the name and the temporary name against NAME_MAX, the temporary path (the longer
  // of the two) against PATH_MAX, so the write at the end cannot fail on a name.
  const std::string tmp = report_temp_path(path);
  const std::string tmp_name = fs::path(tmp).filename().string();
  errno = 0;
  long name_max = ::pathconf(dir.c_str(), _PC_NAME_MAX);
  if (name_max <= 0) name_max = NAME_MAX;
  long path_max = ::pathconf(dir.c_str(), _PC_PATH_MAX);
  if (path_max <= 0) path_max = PATH_MAX;
  if (long(name.size()) > name_max)
    throw ReportPathError(Kind::too_long, "report file name is " + std::to_string(name.size()) +
                                              " bytes; this filesystem allows at most " +
                                              std::to_string(name_max) + " (NAME_MAX)");
  if (long(tmp_name.size()) > name_max)
    throw ReportPathError(Kind::too_long,
                          "report file name is " + std::to_string(name.size()) +
                              " bytes; with its temporary suffix (" + quoted(tmp_name) + ", " +
                              std::to_string(tmp_name.size()) + " bytes) it exceeds this filesystem's " +
                              std::to_string(name_max) + " (NAME_MAX); at most " +
                              std::to_string(name_max - long(tmp_name.size() - name.size())) + " bytes");
  if (long(tmp.size()) >= path_max)
    throw ReportPathError(Kind::too_long,
                          "report path is " + std::to_string(path.size()) +
                              " bytes; with its temporary suffix it reaches PATH_MAX (" +
                              std::to_string(path_max) + " with the terminating NUL)");

  report_detail::require_replaceable(path, options);
  std::vector<std::string> removed = remove_stale_temps(dir, name);

  // The probe: the temporary file itself, created and removed.
  int fd = -1;
  report_detail::FileIdentity id;
  if (const int err = try_create(tmp, fd, id)) {
    const std::string cause = errno_text("cannot create " + quoted(tmp), err);
    throw ReportPathError(err == ENAMETOOLONG ? Kind::too_long : Kind::not_writable,
                          err == EEXIST ? cause + " (it exists and belongs to a live process, or is not a regular file)"
                                        : "report directory " + quoted(dir.string()) + " does not take the report: " + cause);
  }
  ::close(fd);
  ::unlink(tmp.c_str());
  return removed;
}

void check_output_path(const std::string& tool, const std::string& path, WriteOptions options) {
  try {
    for (const std::string& stale : check_report_path(path, options))
      std::fprintf(stderr, "%s: removed stale temporary file '%s' (its process is gone)\n", tool.c_str(), stale.c_str());
  } catch (const ReportPathError& e) {
    if (e.kind != Kind::exists) throw;
    throw ReportPathError(e.kind, std::string(e.what()) + " (--force replaces an existing regular file)");
  }
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  const bool a_exists = ::stat(a.c_str(), &sa) == 0, b_exists = ::stat(b.c_str(), &sb) == 0;
  if (a_exists || b_exists) return a_exists && b_exists && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  return fs::path(a).filename() == fs::path(b).filename() &&
         ::stat(directory_of(a).c_str(), &sa) == 0 && ::stat(directory_of(b).c_str(), &sb) == 0 &&
         sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

namespace testing_hooks {
void set_before_rename(std::function<void()> f) {
  std::lock_guard<std::mutex> lock(g_hook_mutex);
  g_before_rename = std::move(f);
}
void set_force_link_fallback(bool on) { g_force_link_fallback = on; }
}  // namespace testing_hooks

}  // namespace fh
