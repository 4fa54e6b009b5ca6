// libFuzzer's entry points for one target of fuzz_inputs.h, chosen at compile time
// (-DFH_FUZZ_TARGET=results_file; scripts/fuzz.sh builds one binary per target).
// A refusal is an outcome; an exception that escapes the target is a finding: it is printed with
// its type and the process aborts, which libFuzzer records as a crash with the input.
// FH_FUZZ_WRITE_SEEDS=DIR: write the target's generated seeds into DIR and exit.
// FH_FUZZ_VERBOSE=1: print each input's outcome (accepted, or refused with the message).
#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <exception>
#include <string>
#include <typeinfo>

#include "suites/fuzz/fuzz_inputs.h"

#ifndef FH_FUZZ_TARGET
#error "FH_FUZZ_TARGET: the target's name, e.g. -DFH_FUZZ_TARGET=results_file"
#endif
#define FH_STR2(x) #x
#define FH_STR(x) FH_STR2(x)

namespace {

const fh::fuzz::Target& target() {
  static const fh::fuzz::Target* t = fh::fuzz::find_target(FH_STR(FH_FUZZ_TARGET));
  if (!t) {
    std::fprintf(stderr, "fuzz: no target '%s'\n", FH_STR(FH_FUZZ_TARGET));
    std::abort();
  }
  return *t;
}

std::string type_name(const std::type_info& t) {
  int status = 0;
  char* d = abi::__cxa_demangle(t.name(), nullptr, nullptr, &status);
  std::string s = status == 0 && d ? d : t.name();
  std::free(d);
  return s;
}

// FH_FUZZ_VERBOSE=1: each input's outcome on stderr (to check what a seed or a regression does).
bool verbose() {
  static const bool v = std::getenv("FH_FUZZ_VERBOSE") && *std::getenv("FH_FUZZ_VERBOSE") == '1';
  return v;
}

// FH_FUZZ_PLANT_FINDING=1 (planted, to show that scripts/fuzz.sh reports a finding): every
// non-empty input throws past the reader's refusal.
bool planted_finding() {
  static const bool v = std::getenv("FH_FUZZ_PLANT_FINDING") && *std::getenv("FH_FUZZ_PLANT_FINDING") == '1';
  return v;
}

void run(const uint8_t* data, size_t size) {
  try {
    if (planted_finding() && size > 0) throw std::runtime_error("planted finding (FH_FUZZ_PLANT_FINDING=1)");
    const fh::fuzz::Outcome o = target().run(data, size);
    if (verbose()) std::fprintf(stderr, "fuzz: %s: %s%s\n", target().name, o.refused ? "refused: " : "accepted", o.message.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nFUZZ FINDING in %s: %s escaped: %s\n", target().name, type_name(typeid(e)).c_str(), e.what());
    std::fflush(stderr);
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "\nFUZZ FINDING in %s: a non-std exception escaped\n", target().name);
    std::fflush(stderr);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("FH_FUZZ_WRITE_SEEDS")) {
    try {
      const int n = fh::fuzz::write_seeds(target().name, dir);
      std::printf("fuzz: %s: %d generated seeds in %s\n", target().name, n, dir);
      std::exit(0);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fuzz: %s: cannot write seeds: %s\n", target().name, e.what());
      std::exit(2);
    }
  }
  // The base files are made now, not inside the first input's time.
  static const uint8_t none = 0;
  run(&none, 0);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  run(data, size);
  return 0;
}
