// forge-verify's report path, concurrency and exit codes, through
// the real binary, and the report path policy of Report::write (reports/report.h) in-process:
// - a report replaces nothing but a regular file (never a device node, FIFO, socket,
//   directory or symlink), and an existing regular file only with --force;
// - two runs in one folder never lose a report (unique default names, and a rename that
//   never replaces a file that appeared meanwhile);
// - everything about the report path is checked before the first claim runs, and stale
//   temporary files are cleaned;
// - an internal error (out of memory, a failed report write) exits 3, not 1.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "inputs/external_io.h"
#include "reports/report.h"
#include "suites/claims/external_common.h"

namespace {

namespace fs = std::filesystem;

struct RunResult {
  int status;  // the exit code; 128 + signal when killed
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

int decode(int raw) {
  if (WIFEXITED(raw)) return WEXITSTATUS(raw);
  if (WIFSIGNALED(raw)) return 128 + WTERMSIG(raw);
  return -1;
}

// Each test works in its own folder, removed at the end.
class ForgeVerifyPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("fvp_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Runs `prefix forge-verify args` in the test's folder through /bin/sh.
  RunResult verify(const std::string& args, const std::string& prefix = "") { return run(FH_FORGE_VERIFY, args, prefix); }

  // The same for any program.
  RunResult run(const std::string& program, const std::string& args, const std::string& prefix = "") {
    const fs::path out = dir_ / ".stdout", err = dir_ / ".stderr";
    const std::string cmd = "cd '" + dir_.string() + "' && " + prefix + " " + program + " " + args +
                            " >'" + out.string() + "' 2>'" + err.string() + "'";
    const int raw = std::system(cmd.c_str());
    RunResult r{decode(raw), slurp(out), slurp(err)};
    fs::remove(out);
    fs::remove(err);
    return r;
  }

  // The names in the folder (the test's own .stdout/.stderr aside).
  std::set<std::string> names() const {
    std::set<std::string> s;
    for (const auto& e : fs::directory_iterator(dir_)) {
      const std::string n = e.path().filename().string();
      if (n != ".stdout" && n != ".stderr") s.insert(n);
    }
    return s;
  }

  fs::path dir_;
};

constexpr const char* kQuick = "--claim sr_exact_mean";  // a claim that runs in well under a second

// Refused before any claim ran: exit 2, the message, no progress line, nothing new in the folder.
void expect_refused(const RunResult& r, const std::string& what, const std::string& message) {
  EXPECT_EQ(r.status, 2) << what << ": " << r.err;
  EXPECT_NE(r.err.find(message), std::string::npos) << what << " printed: " << r.err;
  EXPECT_EQ(r.err.find("[1/"), std::string::npos) << what << " started a claim: " << r.err;
  EXPECT_TRUE(r.out.empty()) << what << " printed a table: " << r.out;
}

// ---- what a report may replace --------------------------------------------------------------

TEST_F(ForgeVerifyPaths, CharacterDeviceIsNeverReplaced) {
  if (::geteuid() != 0) GTEST_SKIP() << "mknod needs root; the device-node case is not checked here";
  const fs::path node = dir_ / "null_node";
  // The null device's numbers, in the test's own folder (never a node under /dev).
  if (::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0)
    GTEST_SKIP() << "mknod failed here (" << std::strerror(errno) << "); the device-node case is not checked";
  for (const char* force : {"", " --force"}) {
    const RunResult r = verify(std::string(kQuick) + force + " --report " + node.string());
    expect_refused(r, std::string("device node") + force, "is a character device; a report never replaces");
    struct stat st {};
    ASSERT_EQ(::lstat(node.c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the device node was replaced" << force;
    EXPECT_EQ(st.st_rdev, makedev(1, 3));
  }
  EXPECT_EQ(names(), (std::set<std::string>{"null_node"}));
}

TEST_F(ForgeVerifyPaths, FifoSocketDirectoryAndSymlinksAreNeverReplaced) {
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0) << std::strerror(errno);
  const fs::path sock = dir_ / "sock";
  const int sfd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(sfd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(sock.string().size(), sizeof addr.sun_path);
  std::strcpy(addr.sun_path, sock.c_str());
  ASSERT_EQ(::bind(sfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
  const fs::path subdir = dir_ / "subdir";
  fs::create_directories(subdir / "inside");
  const fs::path target = dir_ / "target.txt";
  { std::ofstream(target) << "the symlink's target"; }
  const fs::path link = dir_ / "link";
  fs::create_symlink(target, link);
  const fs::path dangling = dir_ / "dangling";
  fs::create_symlink(dir_ / "absent.h5", dangling);

  const std::pair<fs::path, std::string> cases[] = {
      {fifo, "is a FIFO"}, {sock, "is a socket"}, {subdir, "is a directory"},
      {link, "is a symbolic link"}, {dangling, "is a symbolic link"}};
  for (const auto& [p, message] : cases)
    for (const char* force : {"", " --force"})
      expect_refused(verify(std::string(kQuick) + force + " --report " + p.string()), p.string() + force, message);
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  ASSERT_EQ(::lstat(sock.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_TRUE(fs::is_directory(subdir / "inside"));
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(fs::read_symlink(link), target);
  EXPECT_EQ(slurp(target), "the symlink's target");
  EXPECT_TRUE(fs::is_symlink(dangling));
  EXPECT_FALSE(fs::exists(dir_ / "absent.h5")) << "the dangling symlink was followed";
  EXPECT_EQ(names(), (std::set<std::string>{"fifo", "sock", "subdir", "target.txt", "link", "dangling"}));
  ::close(sfd);
}

TEST_F(ForgeVerifyPaths, ExistingFileIsReplacedOnlyWithForce) {
  const fs::path p = dir_ / "old.h5";
  { std::ofstream(p) << "a file the user keeps"; }
  fs::permissions(p, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);  // read-only
  expect_refused(verify(std::string(kQuick) + " --report " + p.string()), "existing file",
                 "already exists and is not replaced unless asked (--force replaces an existing regular file)");
  EXPECT_EQ(slurp(p), "a file the user keeps");

  const RunResult r = verify(std::string(kQuick) + " --force --quiet --report " + p.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fh::validate_report_schema(p.string()).empty());
  EXPECT_EQ(names(), (std::set<std::string>{"old.h5"}));
}

// In-process: Report::write itself never replaces a non-regular file, whatever its options.
TEST_F(ForgeVerifyPaths, WriteRefusesNonRegularTargets) {
  fh::Meta m = fh::Meta::unknown();
  fh::Report r(m);
  r.add_case("claim", "case").add_check(fh::Check::passed("c", "m", 0, 1));
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0);
  const fs::path link = dir_ / "link";
  fs::create_symlink(dir_ / "absent.h5", link);
  for (const fs::path& p : {fifo, link})
    for (bool replace : {true, false}) {
      EXPECT_THROW(r.write(p.string(), {.replace_existing = replace}), std::runtime_error) << p;
      EXPECT_THROW(fh::check_report_path(p.string(), {.replace_existing = replace}), fh::ReportPathError) << p;
    }
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(names(), (std::set<std::string>{"fifo", "link"}));
}

// ---- concurrent runs --------------------------------------------------------------------------

// Two runs started together in one folder with the default name (the same second, as a rule):
// two reports, each under the name its run printed.
TEST_F(ForgeVerifyPaths, ConcurrentDefaultRunsKeepBothReports) {
  const std::string v = std::string(FH_FORGE_VERIFY) + " " + kQuick + " --quiet";
  const std::regex name_re(R"(forge-verify-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ-\d+\.h5)");
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    for (const auto& n : names()) fs::remove(dir_ / n);
    const std::string cmd = "cd '" + dir_.string() + "' || exit 1; { " + v + " >a.out 2>a.err; echo $? >a.rc; } & { " +
                            v + " >b.out 2>b.err; echo $? >b.rc; } & wait";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    EXPECT_EQ(slurp(dir_ / "a.rc"), "0\n") << slurp(dir_ / "a.err");
    EXPECT_EQ(slurp(dir_ / "b.rc"), "0\n") << slurp(dir_ / "b.err");
    std::vector<std::string> reports;
    for (const auto& n : names())
      if (n.rfind("forge-verify-", 0) == 0) {
        EXPECT_TRUE(std::regex_match(n, name_re)) << n;
        EXPECT_TRUE(fh::validate_report_schema((dir_ / n).string()).empty()) << n;
        reports.push_back(n);
      }
    EXPECT_EQ(reports.size(), 2u) << "a report was lost";
    const std::string printed = slurp(dir_ / "a.out") + slurp(dir_ / "b.out");
    for (const auto& n : reports) EXPECT_NE(printed.find("report: " + n), std::string::npos) << n;
  }
}

fh::Report small_report() {
  fh::Report r(fh::Meta::unknown());
  r.add_case("claim", "case").add_check(fh::Check::passed("c", "m", 0, 1));
  return r;
}

// In-process: a file that appears at the path while the report is written (another run's
// report) is never replaced without replace_existing: the rename is renameat2(RENAME_NOREPLACE),
// and link()+unlink() where a filesystem lacks it.
TEST_F(ForgeVerifyPaths, RenameNeverReplacesAFileThatAppearedMeanwhile) {
  const fs::path p = dir_ / "r.h5";
  for (bool fallback : {false, true}) {
    SCOPED_TRACE(fallback ? "link()+unlink() fallback" : "renameat2(RENAME_NOREPLACE)");
    fs::remove(p);
    fh::testing_hooks::set_force_link_fallback(fallback);
    fh::testing_hooks::set_before_rename([&] { std::ofstream(p) << "another run's report"; });
    try {
      small_report().write(p.string(), {.replace_existing = false});
      ADD_FAILURE() << "write replaced the file that appeared";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("appeared while the report was written"), std::string::npos) << e.what();
    }
    fh::testing_hooks::set_before_rename(nullptr);
    EXPECT_EQ(slurp(p), "another run's report");
    EXPECT_EQ(names(), (std::set<std::string>{"r.h5"})) << "temporary file left behind";

    // Nothing there: the report takes the name, and no temporary name is left.
    fs::remove(p);
    small_report().write(p.string(), {.replace_existing = false});
    EXPECT_TRUE(fh::validate_report_schema(p.string()).empty());
    EXPECT_EQ(names(), (std::set<std::string>{"r.h5"}));
    // And an existing file is refused before anything is written.
    EXPECT_THROW(small_report().write(p.string(), {.replace_existing = false}), std::runtime_error);
    EXPECT_EQ(names(), (std::set<std::string>{"r.h5"}));
  }
  // With replace_existing, what appeared is replaced only if it is a regular file.
  fs::remove(p);
  fh::testing_hooks::set_before_rename([&] { fs::create_symlink(dir_ / "elsewhere", p); });
  EXPECT_THROW(small_report().write(p.string(), {.replace_existing = true}), std::runtime_error);
  fh::testing_hooks::set_before_rename(nullptr);
  fh::testing_hooks::set_force_link_fallback(false);
  EXPECT_TRUE(fs::is_symlink(p));
  EXPECT_FALSE(fs::exists(dir_ / "elsewhere"));
  EXPECT_EQ(names(), (std::set<std::string>{"r.h5"}));
}

// Through the binary: a file that appears at --report while the claims run is kept, the run
// exits 3 (internal error: the report could not be written), and its verdict table is printed.
TEST_F(ForgeVerifyPaths, ReportAppearingDuringTheRunIsKept) {
  const fs::path p = dir_ / "r.h5", err = dir_ / "run.err", out = dir_ / "run.out";
  // About 3 s of work, so the file is made long before the run ends.
  const std::string cmd = std::string(FH_FORGE_VERIFY) +
                          " --claim two_phase_exact_vs_seq --rule sgd --format fp32 --store fp32_master"
                          " --shape 512x512x512 --steps 2 --report " + p.string() + " >" + out.string() +
                          " 2>" + err.string();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // The progress line of the first claim comes after the report path was checked.
  int raw = 0;
  bool ended = false;
  while (slurp(err).find("[1/1]") == std::string::npos) {
    const pid_t w = ::waitpid(child, &raw, WNOHANG);
    ASSERT_GE(w, 0);
    if (w == child) {
      ended = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_FALSE(ended) << "the run ended before its first claim: exit " << decode(raw) << ": " << slurp(err);
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  const int open_errno = errno;
  if (fd >= 0) {
    const char text[] = "another run's report";
    EXPECT_EQ(::write(fd, text, sizeof text - 1), ssize_t(sizeof text - 1));
    ::close(fd);
  }
  ASSERT_EQ(::waitpid(child, &raw, 0), child);
  if (fd < 0) GTEST_SKIP() << "the run ended before the file could be made (" << std::strerror(open_errno) << ")";
  EXPECT_EQ(decode(raw), 3) << slurp(err);
  EXPECT_NE(slurp(err).find("forge-verify: internal error: "), std::string::npos) << slurp(err);
  // Refused by the check at the start of the write, or by the no-replace rename itself.
  const std::string e = slurp(err);
  EXPECT_TRUE(e.find("already exists and is not replaced") != std::string::npos ||
              e.find("appeared while the report was written") != std::string::npos) << e;
  EXPECT_EQ(slurp(p), "another run's report");
  EXPECT_NE(slurp(out).find("overall: pass"), std::string::npos) << "the verdict table was lost: " << slurp(out);
  EXPECT_EQ(names(), (std::set<std::string>{"r.h5", "run.err", "run.out"})) << "temporary file left behind";
}

// ---- everything about the report path, before the first claim -------------------------------

TEST_F(ForgeVerifyPaths, LongNamesAreRefusedBeforeTheRun) {
  // 250 bytes fit NAME_MAX (255), but its temporary name (".tmp.<pid>" more) does not.
  const std::string name250 = std::string(247, 'r') + ".h5";
  expect_refused(verify(std::string(kQuick) + " --report " + (dir_ / name250).string()), "250-byte name",
                 "with its temporary suffix");
  expect_refused(verify(std::string(kQuick) + " --report " + (dir_ / (std::string(253, 'r') + ".h5")).string()),
                 "256-byte name", "report file name is 256 bytes; this filesystem allows at most 255 (NAME_MAX)");
  // A path beyond PATH_MAX (every component short).
  std::string deep = dir_.string();
  while (deep.size() < 4100) deep += "/.";
  expect_refused(verify(std::string(kQuick) + " --report " + deep + "/r.h5"), "long path", "too long");
  EXPECT_EQ(names(), std::set<std::string>{});
  // A name that fits with its suffix is taken.
  const std::string fits = std::string(255 - 5 - 7 - 3, 'r') + ".h5";  // ".tmp." and pid_max's 7 digits
  const RunResult r = verify(std::string(kQuick) + " --quiet --report " + (dir_ / fits).string());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(names(), (std::set<std::string>{fits}));
}

// A pid that is gone: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

TEST_F(ForgeVerifyPaths, StaleTemporariesAreRemoved) {
  const pid_t gone = dead_pid();
  ASSERT_GT(gone, 0);
  ASSERT_NE(::kill(gone, 0), 0);
  const std::string stale = "r.h5.tmp." + std::to_string(gone);
  const std::string live = "r.h5.tmp." + std::to_string(::getpid());     // this test is alive
  const std::string other = "other.h5.tmp." + std::to_string(gone);      // another report's
  const std::string not_pid = "r.h5.tmp.12ab";
  for (const auto& n : {stale, live, other, not_pid}) std::ofstream(dir_ / n) << "partial";
  const std::string stale_link = "r.h5.tmp." + std::to_string(dead_pid());
  fs::create_symlink(dir_ / "somewhere", dir_ / stale_link);  // not a regular file: kept

  const RunResult r = verify(std::string(kQuick) + " --quiet --report " + (dir_ / "r.h5").string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("removed stale temporary file '" + (dir_ / stale).string() + "'"), std::string::npos) << r.err;
  EXPECT_EQ(names(), (std::set<std::string>{"r.h5", live, other, not_pid, stale_link}));
}

// ---- exit codes -------------------------------------------------------------------------------

// Out of memory during the run (a shape inside the documented ranges, under an address-space
// limit) is an internal error: exit 3, not 1 as a failed check. It happens inside a claim, so it
// is that claim's `error` verdict (one claim's failure never stops the others) and the report
// is still written.
TEST_F(ForgeVerifyPaths, OutOfMemoryIsAnInternalError) {
  const RunResult r = verify("--claim two_phase_exact_vs_seq --rule sgd --format fp32 --store fp32_master "
                             "--shape 8192x8192x1048576 --steps 1 --quiet --report r.h5",
                             "ulimit -v 4000000 &&");
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("claim two_phase_exact_vs_seq threw: std::bad_alloc"), std::string::npos) << r.err;
  EXPECT_EQ(names(), std::set<std::string>{"r.h5"});
  const fh::ReportData data = fh::read_report((dir_ / "r.h5").string());
  EXPECT_EQ(data.find_claim("two_phase_exact_vs_seq")->verdict, fh::Verdict::error);
}

// ---- inputs at the door, and outputs that are inputs --------------------------------------------

const char kModelJson[] = "{\"config\": \"forge\", \"model\": \"llama8b\", \"status\": \"ok\", "
                          "\"peak_bytes\": 1, \"median_ms\": 1}";

// A results file whose declared order_k_group is 2^62: once truncated to int it was a division
// by zero (SIGFPE, exit 136, no message). Now exit 2 naming the file and the attribute, no report.
TEST_F(ForgeVerifyPaths, DeclaredOrderOutOfRangeIsBadInput) {
  const std::string cases = (dir_ / "ci.h5").string(), results = (dir_ / "res.h5").string();
  fh::write_external_cases(cases, "ci", 1, "test");
  const fh::ext::CasesFile cf(cases);
  const fh::ext::ResultsHeader h{cf.header().cases_id, "planted", "planted_path", "fused",
                                 {"mma_chain", int64_t(1) << 62, 1, 16}, {}};
  // The order probe answered (zeros): judging it builds the declared order.
  const auto probe_it = std::find_if(cf.cases().begin(), cf.cases().end(),
                                    [](const fh::ext::CaseSpec& c) { return c.kind == "order_probe"; });
  ASSERT_NE(probe_it, cf.cases().end()) << "the cases file has no order probe";
  const fh::ext::CaseSpec& probe = *probe_it;
  fh::ext::write_results_file(
      results, h, {{probe.id, "ok", "", "", {{"G", fh::ext::Tensor::make(fh::ext::Dtype::fp32, {probe.out, probe.in})}}}});
  const RunResult r = verify("--external " + results + " --external-cases " + cases + " --report r.h5");
  expect_refused(r, "order_k_group 2^62", "'" + results + "'");
  EXPECT_NE(r.err.find("order_k_group"), std::string::npos) << r.err;
  EXPECT_EQ(names(), (std::set<std::string>{"ci.h5", "res.h5"}));
}

// Once every input is parsed and the claims started, a failure while a claim uses its inputs is
// an internal error by definition, never bad input: the planted switch makes the claims' input
// accessor (claim_inputs) throw std::invalid_argument, the very exception a bad file gives at the
// door. Exit 3, "internal error" naming the claim, and the claim's own error verdict in the
// report (a claim that throws is recorded and the run goes on, as --help says); exit 2 here
// would mean a late failure passed for a bad input.
TEST_F(ForgeVerifyPaths, AFailureWhileAClaimUsesItsParsedInputsIsAnInternalError) {
  { std::ofstream(dir_ / "m.json") << kModelJson; }
  const std::string args = "--external-model m.json --claim ext_model_memory --report r.h5";
  const RunResult healthy = verify(args);
  EXPECT_TRUE(healthy.status == 0 || healthy.status == 1) << "without the switch: " << healthy.err;
  fs::remove(dir_ / "r.h5");
  const RunResult r = verify(args, "env FH_PLANT_INPUT_ACCESS_THROW=1");
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("internal error: claim ext_model_memory threw: planted defect: FH_PLANT_INPUT_ACCESS_THROW=1"),
            std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("invalid input"), std::string::npos) << r.err;
  EXPECT_EQ(names(), (std::set<std::string>{"m.json", "r.h5"}));
  const fh::ReportData data = fh::read_report((dir_ / "r.h5").string());
  ASSERT_NE(data.find_claim("ext_model_memory"), nullptr);
  EXPECT_EQ(data.find_claim("ext_model_memory")->verdict, fh::Verdict::error);
}

// Every input is a regular file within its size limit, checked before a byte is read: a FIFO
// hung, /dev/zero was read until memory ran out, a directory was "not valid JSON"; a number
// beyond a double was exit 3 without the file's name. Each is exit 2 now, nothing written.
TEST_F(ForgeVerifyPaths, InputsThatAreNotRegularFilesOrNotJsonAreBadInput) {
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0) << std::strerror(errno);
  fs::create_directories(dir_ / "folder.json");
  { std::ofstream(dir_ / "overflow.json") << "{\"config\": \"forge\", \"model\": \"llama8b\", \"status\": \"ok\", "
                                           "\"peak_bytes\": 1e999, \"median_ms\": 1}"; }
  const std::string cases = (dir_ / "ci.h5").string();
  fh::write_external_cases(cases, "ci", 1, "test");
  const std::pair<std::string, std::string> bad[] = {
      {"--model-step " + fifo.string(), "'" + fifo.string() + "': is a FIFO, not a regular file"},
      {"--external-model " + fifo.string(), "'" + fifo.string() + "': is a FIFO"},
      {"--external " + fifo.string() + " --external-cases " + cases, "'" + fifo.string() + "': is a FIFO"},
      {"--external-timing /dev/zero", "'/dev/zero': is a character device"},
      {"--external-model " + (dir_ / "folder.json").string(), "folder.json': is a directory"},
      {"--external-model " + (dir_ / "overflow.json").string(), "overflow.json': not valid JSON"},
  };
  for (const auto& [args, message] : bad) {
    // The time limit turns a hang back into a failure here (exit 124) instead of a stuck suite.
    const RunResult r = verify(args + " --report r.h5", "timeout 60");
    expect_refused(r, args, message);
  }
  EXPECT_EQ(names(), (std::set<std::string>{"fifo", "folder.json", "overflow.json", "ci.h5"}));
}

// An output that is an input, or another output, is refused before any work, compared by device
// and inode: "./r.h5" and a hard link are the same file as "r.h5" (string comparison let
// --force replace the report with its own JSON summary).
TEST_F(ForgeVerifyPaths, AnOutputThatIsAnInputOrAnotherOutputIsRefused) {
  { std::ofstream(dir_ / "r.h5") << "the report the user keeps"; }
  { std::ofstream(dir_ / "m.json") << kModelJson; }
  fs::create_hard_link(dir_ / "m.json", dir_ / "m_link.json");
  expect_refused(verify(std::string(kQuick) + " --report r.h5 --json ./r.h5 --force"), "--json ./r.h5",
                 "--report and --json name the same file");
  expect_refused(verify(std::string(kQuick) + " --report new.h5 --junit ./new.h5"), "--junit ./new.h5 (absent)",
                 "--report and --junit name the same file");
  expect_refused(verify("--external-model m.json --report ./m.json --force"), "--report ./m.json",
                 "--report './m.json' is the input --external-model 'm.json'");
  expect_refused(verify("--external-model m.json --json m_link.json --force"), "--json hard link",
                 "--json 'm_link.json' is the input --external-model 'm.json'");
  EXPECT_EQ(slurp(dir_ / "r.h5"), "the report the user keeps");
  EXPECT_EQ(slurp(dir_ / "m.json"), kModelJson);
  EXPECT_EQ(names(), (std::set<std::string>{"r.h5", "m.json", "m_link.json"}));
}

// A producer's error text that is not valid UTF-8 is refused when the results file is opened (the
// report could not hold it: the claims ran, the report builder refused the text, exit 3 with a
// report written). Exit 2 naming the file, the case and the attribute; nothing written.
TEST_F(ForgeVerifyPaths, ProducerTextThatIsNotUtf8IsBadInput) {
  const std::string cases = (dir_ / "ci.h5").string(), results = (dir_ / "res.h5").string();
  fh::write_external_cases(cases, "ci", 1, "test");
  const fh::ext::CasesFile cf(cases);
  const fh::ext::CaseSpec& probe = cf.cases()[0];
  fh::ext::write_results_file(results, {cf.header().cases_id, "planted", "planted_path", "fused", {}, {}},
                              {{probe.id, "failed", "launch failed: \xff\xfe (bytes from a C library)", "", {}}});
  const RunResult r = verify("--external " + results + " --external-cases " + cases + " --report r.h5");
  expect_refused(r, "non-UTF-8 error text",
                 "'" + results + "' /cases/" + probe.id + ": attribute 'error': text is not valid UTF-8");
  EXPECT_EQ(names(), (std::set<std::string>{"ci.h5", "res.h5"}));
}

// forge-model-step's --out follows the report path policy, checked before any GPU work: it was
// checked only for its folder, so a device, a directory, a symlink or a user's file reached the
// measurement (without a GPU this run would say "no GPU" and exit 4; on the runner an 8B step
// would run, then fail to write or replace the file). --help is exit 0 with the usage on stdout.
TEST_F(ForgeVerifyPaths, ModelStepOutIsCheckedBeforeAnyGpuWork) {
  { std::ofstream(dir_ / "kept.json") << "a measurement the user keeps"; }
  fs::create_directories(dir_ / "folder.json");
  fs::create_symlink(dir_ / "kept.json", dir_ / "link.json");
  fs::create_symlink(dir_ / "absent.json", dir_ / "dangling.json");
  ASSERT_EQ(::mkfifo((dir_ / "fifo.json").c_str(), 0666), 0) << std::strerror(errno);
  const std::pair<std::string, std::string> bad[] = {
      {"--out kept.json", "already exists and is not replaced unless asked (--force replaces an existing regular file)"},
      {"--out folder.json --force", "is a directory"},
      {"--out link.json --force", "is a symbolic link"},
      {"--out dangling.json --force", "is a symbolic link"},
      {"--out fifo.json --force", "is a FIFO"},
      {"--out no/such.json", "report directory 'no' does not exist"},
  };
  for (const auto& [args, message] : bad) {
    const RunResult r = run(FH_FORGE_MODEL_STEP, "--model tiny --steps 1 " + args, "timeout 120");
    EXPECT_EQ(r.status, 2) << args << ": " << r.err;
    EXPECT_NE(r.err.find("forge-model-step: --out: "), std::string::npos) << args << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(r.err.find("no GPU:"), std::string::npos) << args << ": the GPU was looked for first";
    EXPECT_TRUE(r.out.empty()) << args << ": " << r.out;
  }
  EXPECT_EQ(slurp(dir_ / "kept.json"), "a measurement the user keeps");
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.json"));
  EXPECT_FALSE(fs::exists(dir_ / "absent.json")) << "the dangling symlink was followed";
  EXPECT_EQ(names(), (std::set<std::string>{"kept.json", "folder.json", "link.json", "dangling.json", "fifo.json"}));

  const RunResult help = run(FH_FORGE_MODEL_STEP, "--help");
  EXPECT_EQ(help.status, 0) << help.err;
  EXPECT_EQ(help.out.rfind("usage: forge-model-step", 0), 0u) << help.out;
  EXPECT_NE(help.out.find("--force"), std::string::npos) << help.out;
  EXPECT_TRUE(help.err.empty()) << help.err;
}

// A cases file and a results file that answers it (the probe failed: enough to be judged).
void write_cases_and_results(const std::string& cases, const std::string& results) {
  fh::write_external_cases(cases, "ci", 1, "test");
  const fh::ext::CasesFile cf(cases);
  fh::ext::write_results_file(results, {cf.header().cases_id, "planted", "planted_path", "fused", {}, {}},
                              {{cf.cases()[0].id, "failed", "launch failed", "", {}}});
}

// The same results file given twice to --external, also through a symlink or a hard link, judged
// every case twice: the claim threw "duplicate case" after the run started (exit 3, a report
// written). Refused at the door now, both spellings named, compared by device and inode.
TEST_F(ForgeVerifyPaths, TheSameResultsFileTwiceIsBadInput) {
  write_cases_and_results((dir_ / "ci.h5").string(), (dir_ / "res.h5").string());
  fs::create_symlink(dir_ / "res.h5", dir_ / "link.h5");
  fs::create_hard_link(dir_ / "res.h5", dir_ / "hard.h5");
  for (const char* second : {"res.h5", "link.h5", "hard.h5", "./res.h5"}) {
    const RunResult r = verify(std::string("--external res.h5 --external ") + second + " --external-cases ci.h5 --report r.h5");
    expect_refused(r, second, std::string("--external 'res.h5' and --external '") + second + "' are the same file");
  }
  EXPECT_EQ(names(), (std::set<std::string>{"ci.h5", "res.h5", "link.h5", "hard.h5"}));
}

// An unknown storage dtype in the cases file was refused without the file, the case or the
// attribute ("external producer: unknown storage dtype 'fp16'"). Now all three are named.
TEST_F(ForgeVerifyPaths, AnUnknownStorageDtypeNamesTheFileTheCaseAndTheAttribute) {
  const std::string results = (dir_ / "res.h5").string();
  for (const auto& [attribute, value] : {std::pair<const char*, const char*>{"weight_dtype", "fp16"}, {"state_dtype", "bogus"}}) {
    const std::string cases = (dir_ / "ci.h5").string();
    fs::remove(cases);
    fs::remove(results);
    write_cases_and_results(cases, results);
    std::string id;
    {  // the file named, so that the cases it returns outlive the loop
      const fh::ext::CasesFile file(cases);
      for (const fh::ext::CaseSpec& c : file.cases())
        if (c.kind == "adamw") id = c.id;
    }
    ASSERT_FALSE(id.empty()) << "the ci set has no adamw case";
    {  // the producer's edit: the attribute replaced by another UTF-8 string
      const hid_t f = H5Fopen(cases.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
      const hid_t g = H5Gopen2(f, ("/cases/" + id).c_str(), H5P_DEFAULT);
      ASSERT_GE(H5Adelete(g, attribute), 0) << attribute;
      const hid_t t = H5Tcopy(H5T_C_S1);
      H5Tset_size(t, H5T_VARIABLE);
      H5Tset_cset(t, H5T_CSET_UTF8);
      const hid_t sp = H5Screate(H5S_SCALAR);
      const hid_t a = H5Acreate2(g, attribute, t, sp, H5P_DEFAULT, H5P_DEFAULT);
      ASSERT_GE(H5Awrite(a, t, &value), 0) << attribute;
      H5Aclose(a);
      H5Sclose(sp);
      H5Tclose(t);
      H5Gclose(g);
      H5Fclose(f);
    }
    const RunResult r = verify("--external " + results + " --external-cases " + cases + " --report r.h5");
    expect_refused(r, attribute, "'" + cases + "' /cases/" + id + ": attribute '" + attribute +
                                     "': unknown storage dtype '" + value + "'");
    EXPECT_EQ(names(), (std::set<std::string>{"ci.h5", "res.h5"})) << attribute;
  }
}

// external-cases checked its OUT only for an existing file, then built the cases and failed to
// write them (exit 3). The report path policy now runs first: exit 2, nothing built or written.
TEST_F(ForgeVerifyPaths, ExternalCasesOutIsCheckedBeforeTheCasesAreBuilt) {
  { std::ofstream(dir_ / "kept.h5") << "a cases file the user keeps"; }
  fs::create_directories(dir_ / "ro");
  fs::permissions(dir_ / "ro", fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                   fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  std::vector<std::tuple<std::string, std::string, std::string>> bad = {
      {"no/new.h5", "", "OUT: report directory 'no' does not exist"},
      {"ro", "", "OUT: report path 'ro' is a directory"},
  };
  // A read-only folder binds root only without CAP_DAC_OVERRIDE (as scripts/test_script_inputs.sh).
  const std::string drop = "setpriv --bounding-set=-dac_override,-dac_read_search,-fowner";
  if (::geteuid() != 0) bad.emplace_back("ro/new.h5", "", "OUT: report directory 'ro' does not take the report");
  else if (std::system((drop + " true 2>/dev/null").c_str()) == 0)
    bad.emplace_back("ro/new.h5", drop, "OUT: report directory 'ro' does not take the report");
  else std::fprintf(stderr, "NOT RUN: the read-only folder (root, and setpriv cannot drop CAP_DAC_OVERRIDE)\n");
  for (const auto& [out, prefix, message] : bad) {
    const RunResult r = verify("external-cases --set ci --force " + out, prefix);
    EXPECT_EQ(r.status, 2) << out << ": " << r.err;
    EXPECT_EQ(r.err.rfind("forge-verify external-cases: " + message, 0), 0u) << out << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << out << ": " << r.out;
  }
  const RunResult no_force = verify("external-cases --set ci kept.h5");
  EXPECT_EQ(no_force.status, 2) << no_force.err;
  EXPECT_NE(no_force.err.find("'kept.h5' already exists"), std::string::npos) << no_force.err;
  EXPECT_EQ(slurp(dir_ / "kept.h5"), "a cases file the user keeps");
  EXPECT_TRUE(fs::is_empty(dir_ / "ro"));
  EXPECT_EQ(names(), (std::set<std::string>{"kept.h5", "ro"}));
}

// A Google Benchmark run as --bench-json and --external-timing read it.
std::string bench_json(const std::string& repetitions, const std::string& cpu_time) {
  return "{\"benchmarks\": [{\"name\": \"forge/torch_reference/64x64x16\", \"run_type\": "
         "\"iteration\", \"repetitions\": " + repetitions + ", \"repetition_index\": 0, \"threads\": 1, "
         "\"iterations\": 1, \"real_time\": 200.0, \"cpu_time\": " + cpu_time + ", \"time_unit\": \"us\"}]}";
}

// A finished forge-model-step run as suites/cpu/test_model_step_figures.cpp judges it; `step_ms`
// its step times.
std::string model_step_json(const std::string& step_ms) {
  return "{\"config\": \"harness_fused_bf16\", \"model\": \"llama31_8b\", \"status\": \"ok\", \"batch\": 1, \"seq\": 512, "
         "\"steps\": 4, \"warmup_steps\": 2, \"dtype\": \"bf16\", \"update\": \"fused\", \"state\": \"bf16\", \"store\": "
         "\"bf16_rne\", \"layers\": 32, \"tied\": false, \"params\": 8030261248, \"fused_params\": 7000000000, "
         "\"peak_bytes\": 54000000000, \"median_ms\": 100, \"step_ms\": " + step_ms + ", \"losses\": [11.9, 11.8, 11.7, "
         "11.6], \"tag_peaks\": {\"weights\": 1, \"gradients\": 0}, \"timeline\": [{\"name\": \"start\", \"in_use\": 1, "
         "\"peak\": 1, \"outside_pool\": 5}, {\"name\": \"step\", \"in_use\": 1, \"peak\": 2, \"outside_pool\": 5}], "
         "\"memory_model\": {\"terms\": [{\"name\": \"weights\", \"bytes\": 53500000000}, {\"name\": "
         "\"gradients_not_fusable\", \"bytes\": 1500000000}], \"total\": 55000000000, \"activation_bytes\": 7}, "
         "\"dx_digests_step1\": [\"01\", \"02\"], \"weight_digests\": [\"00000000000000aa\"], \"state_digests\": [\"03\"]}";
}

// Values the measurement readers took (exit 0, a report written): a negative cpu_time or
// repetitions in Google Benchmark's JSON, an empty step_ms of a finished run. Each is refused
// naming the file and the field; the same file with valid values is judged (so each refusal is
// the field's, not the file's).
TEST_F(ForgeVerifyPaths, MeasurementsOutOfRangeOrEmptyAreBadInput) {
  struct Case {
    std::string option, bad, good, message;
  };
  const std::string bench = "benchmark JSON 'in.json': benchmarks[0]: ";
  const Case cases[] = {
      {"--bench-json", bench_json("1", "-1.0"), bench_json("1", "180.0"), bench + "\"cpu_time\" must be a finite number >= 0, got -1.0"},
      {"--bench-json", bench_json("-3", "180.0"), bench_json("1", "180.0"), bench + "\"repetitions\" must be an integer in [1, "},
      {"--external-timing", bench_json("1", "-1.0"), bench_json("1", "180.0"), bench + "\"cpu_time\" must be a finite number >= 0"},
      {"--external-timing", bench_json("-3", "180.0"), bench_json("1", "180.0"), bench + "\"repetitions\" must be an integer in [1, "},
      {"--model-step", model_step_json("[]"), model_step_json("[1, 1, 1, 1]"),
       "model step JSON 'in.json': \"step_ms\" must be a list of at least one value, got []"},
      {"--external-model", std::string(kModelJson).substr(0, sizeof kModelJson - 2) + ", \"step_ms\": []}",
       std::string(kModelJson).substr(0, sizeof kModelJson - 2) + ", \"step_ms\": [1.5]}",
       "model bench JSON 'in.json': \"step_ms\" must be a list of at least one value, got []"},
  };
  for (const Case& c : cases) {
    // --bench-json is read by no claim: a quick one keeps the control short.
    const std::string args = c.option + " in.json" + (c.option == "--bench-json" ? std::string(" ") + kQuick : "");
    { std::ofstream(dir_ / "in.json") << c.bad; }
    expect_refused(verify(args + " --report r.h5", "timeout 120"), c.option + " " + c.bad, c.message);
    EXPECT_EQ(names(), (std::set<std::string>{"in.json"})) << c.option << " " << c.bad;
    { std::ofstream(dir_ / "in.json") << c.good; }
    const RunResult good = verify(args + " --quiet --report r.h5", "timeout 120");
    EXPECT_TRUE(good.status == 0 || good.status == 1) << c.option << " " << c.good << ": " << good.err;
    fs::remove(dir_ / "r.h5");
  }
}

// "--report ''" ran and wrote a default-named report: an empty value is refused like a missing
// one, before any work, for every option that takes a value.
TEST_F(ForgeVerifyPaths, AnEmptyOptionValueWritesNothing) {
  for (const char* option : {"--report", "--json", "--junit", "--bench-json", "--external-timing"}) {
    expect_refused(verify(std::string(kQuick) + " " + option + " ''"), option, std::string(option) + ": empty value");
    EXPECT_TRUE(names().empty()) << option;
  }
}

}  // namespace
