// A report write that the file system refuses. The file-size limit
// (RLIMIT_FSIZE) stands in for a full disk: past it write() fails with EFBIG, and the kernel also
// raises SIGXFSZ, whose default action kills the process. Whatever the parent did with SIGXFSZ,
// forge-verify must print its verdict table, say that it could not write the report (naming the
// path), leave neither the report nor a temporary file behind, and exit with a non-zero status of
// its own, not die of a signal (before the fix: SIGSEGV in HDF5's shutdown when SIGXFSZ was
// ignored, death by SIGXFSZ with the temporary file left behind when it was not).
// The same is checked one layer down on Report::write in a child process, which must then exit
// cleanly through HDF5's atexit shutdown.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <hdf5.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "reports/report.h"

namespace {

namespace fs = std::filesystem;

struct Outcome {
  int raw = 0;  // waitpid status
  std::string out, err;

  bool exited() const { return WIFEXITED(raw); }
  int code() const { return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1; }
  std::string describe() const {
    if (WIFEXITED(raw)) return "exit status " + std::to_string(WEXITSTATUS(raw));
    if (WIFSIGNALED(raw))
      return std::string("killed by signal ") + std::to_string(WTERMSIG(raw)) + " (" +
             ::strsignal(WTERMSIG(raw)) + ")";
    return "raw wait status " + std::to_string(raw);
  }
};

enum class Xfsz { default_action, ignored };

// In the child, before it runs: the file-size limit and what SIGXFSZ does (as `ulimit -f` and
// `trap '' XFSZ` would set them up in a shell, but independent of what this test inherited).
void limit_child(rlim_t fsize_bytes, Xfsz xfsz) {
  struct sigaction sa {};
  sa.sa_handler = xfsz == Xfsz::ignored ? SIG_IGN : SIG_DFL;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGXFSZ, &sa, nullptr);
  sigset_t unblock;
  sigemptyset(&unblock);
  sigaddset(&unblock, SIGXFSZ);
  ::sigprocmask(SIG_UNBLOCK, &unblock, nullptr);
  // The soft limit only: the hard one stays, so the library test below can lift it again.
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_FSIZE, &rl) != 0) ::_exit(120);
  rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? fsize_bytes : std::min(fsize_bytes, rl.rlim_max);
  if (::setrlimit(RLIMIT_FSIZE, &rl) != 0) ::_exit(120);
}

// Reads both pipes to their end (through poll, so neither can fill up and stall the child).
void drain(int out_fd, int err_fd, std::string& out, std::string& err) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* dst[2] = {&out, &err};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        dst[i]->append(buf, size_t(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
}

// Runs forge-verify with `args` under the limit; stdout and stderr come back through pipes
// (which the file-size limit does not apply to).
Outcome run_limited(const std::vector<std::string>& args, rlim_t fsize_bytes, Xfsz xfsz) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe: " << std::strerror(errno);
    return {};
  }
  std::vector<std::string> argv_s = {FH_FORGE_VERIFY};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork: " << std::strerror(errno);
    return {};
  }
  if (pid == 0) {
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    limit_child(fsize_bytes, xfsz);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  Outcome o;
  drain(out_pipe[0], err_pipe[0], o.out, o.err);
  while (::waitpid(pid, &o.raw, 0) < 0 && errno == EINTR) {
  }
  return o;
}

std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(dir)) v.push_back(e.path().filename().string());
  return v;
}

class ReportFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("fh_report_faults_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // The whole contract of a refused write, for one file-size limit and one SIGXFSZ setting.
  void expect_clean_failure(rlim_t limit, Xfsz xfsz) {
    const std::string how = std::string(xfsz == Xfsz::ignored ? "SIGXFSZ ignored" : "SIGXFSZ default") +
                            ", limit " + std::to_string(limit) + " bytes";
    SCOPED_TRACE(how);
    const fs::path report = dir_ / "r.h5";
    const Outcome o = run_limited({"--claim", "sr_exact_mean", "--report", report.string()}, limit, xfsz);
    EXPECT_TRUE(o.exited()) << "forge-verify did not exit by itself: " << o.describe()
                            << "\nstderr:\n" << o.err;
    EXPECT_NE(o.code(), 0) << "a report that was not written must not exit 0";
    EXPECT_NE(o.code(), 2) << "not a usage error: " << o.err;
    EXPECT_NE(o.err.find("cannot write report '" + report.string() + "'"), std::string::npos)
        << "stderr:\n" << o.err;
    // The verdict table comes before the write, and the failed write must not lose it.
    EXPECT_NE(o.out.find("== sr_exact_mean: pass"), std::string::npos) << "stdout:\n" << o.out;
    EXPECT_NE(o.out.find("overall: pass"), std::string::npos) << "stdout:\n" << o.out;
    EXPECT_EQ(o.out.find("report: "), std::string::npos) << "claims a report it did not write:\n"
                                                         << o.out;
    // No report, no r.h5.tmp.PID, no probe file: the folder is as it was.
    EXPECT_EQ(listing(dir_), std::vector<std::string>{});
  }

  fs::path dir_;
};

// The limits used are well below the size of the report, so every run fails on it.
TEST_F(ReportFaults, UnlimitedRunWritesTheReport) {
  const fs::path report = dir_ / "r.h5";
  const Outcome o = run_limited({"--claim", "sr_exact_mean", "--report", report.string()},
                                RLIM_INFINITY, Xfsz::default_action);
  ASSERT_EQ(o.code(), 0) << o.describe() << "\n" << o.err;
  ASSERT_TRUE(fs::exists(report));
  EXPECT_GT(fs::file_size(report), 2u * 10240u);
  EXPECT_TRUE(fh::validate_report_schema(report.string()).empty());
  EXPECT_EQ(listing(dir_), std::vector<std::string>{"r.h5"});
}

// The path a full disk takes: write() fails with an error and nothing is signalled.
TEST_F(ReportFaults, FileSizeLimitWithSigxfszIgnored) {
  expect_clean_failure(10 * 1024, Xfsz::ignored);  // the shell's `ulimit -f 10; trap '' XFSZ`
  expect_clean_failure(4096, Xfsz::ignored);
}

// A plain `ulimit -f 10`: SIGXFSZ keeps its default action (terminate) in the parent shell.
TEST_F(ReportFaults, FileSizeLimitWithSigxfszDefault) {
  expect_clean_failure(10 * 1024, Xfsz::default_action);
  expect_clean_failure(4096, Xfsz::default_action);
}

// One layer down: Report::write under the limit throws (naming the path), removes its temporary
// file, leaves no HDF5 object open, restores SIGXFSZ's disposition, and a later write without the
// limit still works; then the process exits through HDF5's atexit shutdown without crashing.
// Runs in a child, as the limit and the HDF5 library state are per process.
TEST_F(ReportFaults, ReportWriteUnderFileSizeLimit) {
  for (const Xfsz xfsz : {Xfsz::default_action, Xfsz::ignored}) {
    SCOPED_TRACE(xfsz == Xfsz::ignored ? "SIGXFSZ ignored" : "SIGXFSZ default");
    const fs::path p = dir_ / "lib.h5";
    for (const auto& e : fs::directory_iterator(dir_)) fs::remove_all(e.path());
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0) << "fork: " << std::strerror(errno);
    if (pid == 0) {
      // Codes: 10+ a check that failed, 0 all good. No gtest in the child.
      fh::Meta meta = fh::Meta::unknown();
      fh::Report r(meta);
      std::vector<double> big(4096, 1.5);  // 32 KiB of raw data
      r.add_case("claim", "case").add_f64("values", big);
      r.add_case("claim", "case2").add_f64("values", std::vector<double>(16384, 2.5));  // 128 KiB
      limit_child(64 * 1024, xfsz);
      bool threw = false;
      std::string msg;
      try {
        r.write(p.string());
      } catch (const std::runtime_error& e) {
        threw = true;
        msg = e.what();
      }
      if (!threw) ::_exit(10);
      if (msg.find(p.string()) == std::string::npos) ::_exit(11);
      if (!listing(dir_).empty()) ::_exit(12);
      if (H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) != 0) ::_exit(13);
      struct sigaction now {};
      ::sigaction(SIGXFSZ, nullptr, &now);
      if (now.sa_handler != (xfsz == Xfsz::ignored ? SIG_IGN : SIG_DFL)) ::_exit(14);
      struct rlimit rl {};
      ::getrlimit(RLIMIT_FSIZE, &rl);
      rl.rlim_cur = rl.rlim_max;
      if (::setrlimit(RLIMIT_FSIZE, &rl) != 0) ::_exit(15);
      try {
        r.write(p.string());
      } catch (...) {
        ::_exit(16);
      }
      if (fh::read_report(p.string()).claims.size() != 1) ::_exit(17);
      fs::remove(p);
      std::exit(0);  // runs HDF5's atexit shutdown, which must survive the failed write
    }
    int raw = 0;
    while (::waitpid(pid, &raw, 0) < 0 && errno == EINTR) {
    }
    EXPECT_TRUE(WIFEXITED(raw)) << "child killed by signal " << (WIFSIGNALED(raw) ? WTERMSIG(raw) : 0);
    EXPECT_EQ(WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, 0)
        << "10 no throw, 11 path not named, 12 file left behind, 13 HDF5 object left open, "
           "14 SIGXFSZ disposition not restored, 15 setrlimit, 16 second write threw, "
           "17 report read back wrong";
    EXPECT_EQ(listing(dir_), std::vector<std::string>{});
  }
}

}  // namespace
