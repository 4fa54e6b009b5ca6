// The parsers the harness exposes to files, each as one function of the bytes of one input:
// libFuzzer's targets (suites/fuzz/fuzz_<target>.cpp, built by
// scripts/fuzz.sh) and the CPU suite that replays the regression corpus
// (suites/cpu/test_fuzz_regressions.cpp) call the same functions, so a finding stays found.
//
// Each function writes the bytes to a per-process scratch file and calls the real reader on it,
// as forge-verify would: a clean refusal (the reader's input-error exception, which forge-verify
// turns into exit 2) is an outcome, `refused`; anything else that escapes (another exception, a
// crash, a sanitizer report, a hang) is a finding. After an accepted input each also checks what
// the reader promises about what it accepted (ranges, loads that must succeed), and throws
// Finding when a promise is broken.
//
// The three HDF5 targets take either a file as it is (bytes starting with HDF5's signature, when
// FH_FUZZ_RAW_HDF5=1: the HDF5 library's own parsing, then the reader's) or a recipe: a valid
// base file made here, then a list of edits made through the HDF5 API (set an attribute to any
// type and value, replace a dataset with any type, shape and layout, add soft, hard and external
// links, external storage, delete and move objects). A recipe reaches the reader's validation
// with files the library opens, which flipped bytes of a checksummed file rarely do.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace fh::fuzz {

// A broken promise after an accepted input: the reader let through what it says it refuses.
struct Finding : std::logic_error {
  using std::logic_error::logic_error;
};

struct Outcome {
  bool refused = false;
  std::string message;  // the refusal's message ("" when accepted)
};

using TargetFn = Outcome (*)(const uint8_t* data, size_t size);

struct Target {
  const char* name;  // fuzz_<name> is the binary; suites/fuzz/regressions/<name>/ its regressions
  const char* what;  // the input and the reader, in words
  TargetFn run;
};

// results_file, cases_file, report, bench_json, model_step_json, model_bench_json, rename_map.
const std::vector<Target>& targets();
const Target* find_target(const std::string& name);

// Writes the seed corpus of target `name` into folder `dir` (which exists): the valid base
// files as they are (HDF5 targets) and recipes that plant the classes of hostile input: sizes and
// counts past 2^31, non-finite or out-of-range numbers, text holding a NUL or not UTF-8, links
// and external storage, deep nesting (the JSON and rename-map targets' seeds are the project's own
// files, copied by scripts/fuzz.sh, and files under suites/fuzz/seeds/). Returns the number of
// files written.
int write_seeds(const std::string& name, const std::string& dir);

// The scratch folder of this process (created on first use under $TMPDIR, removed at exit).
const std::string& scratch_dir();

}  // namespace fh::fuzz
