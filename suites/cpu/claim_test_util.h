// Shared by the CPU suites that judge hand-written measurement files: a scratch file per test
// process, and one check's verdict read back from a report snapshot.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "reports/report.h"

namespace fh::test {

// The process's scratch folders, removed when it exits (runs left one per test process in /tmp).
struct ScratchDirs {
  std::set<std::filesystem::path> dirs;
  ~ScratchDirs() {
    std::error_code ec;
    for (const auto& d : dirs) std::filesystem::remove_all(d, ec);
  }
};
inline ScratchDirs& scratch_dirs() {
  static ScratchDirs s;
  return s;
}

// Writes text to <tmp>/<prefix><pid>/<name> and returns the path (the folder goes at exit).
inline std::string write_scratch(const std::string& prefix, const std::string& name, const std::string& text) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / (prefix + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  scratch_dirs().dirs.insert(dir);
  const std::filesystem::path p = dir / name;
  std::ofstream(p) << text;
  return p.string();
}

// Check `check` of case `case_name`; a test failure (and nullptr) when absent.
inline const fh::Check* find_check(const fh::ReportData& r, const std::string& case_name, const std::string& check) {
  for (const auto& cl : r.claims)
    for (const auto& cs : cl.cases)
      if (cs.name == case_name)
        for (const auto& ck : cs.checks)
          if (ck.name == check) return &ck;
  ADD_FAILURE() << "no check " << check << " in case " << case_name;
  return nullptr;
}
// Its verdict (error when absent) and its reason (note; "" when absent).
inline fh::Verdict verdict(const fh::ReportData& r, const std::string& case_name, const std::string& check) {
  const fh::Check* ck = find_check(r, case_name, check);
  return ck ? ck->verdict : fh::Verdict::error;
}
inline std::string reason(const fh::ReportData& r, const std::string& case_name, const std::string& check) {
  const fh::Check* ck = find_check(r, case_name, check);
  return ck ? ck->reason : std::string();
}

// The f64 values of dataset `name` in case `case_name`; a test failure (and {}) when absent.
inline std::vector<double> dataset(const fh::ReportData& r, const std::string& case_name, const std::string& name) {
  for (const auto& cl : r.claims)
    for (const auto& cs : cl.cases)
      if (cs.name == case_name)
        for (const auto& d : cs.datasets)
          if (d.name == name) return d.f64;
  ADD_FAILURE() << "no dataset " << name << " in case " << case_name;
  return {};
}

}  // namespace fh::test
