// The main of every GoogleTest binary (suites/cpu, suites/gpu): one run seed, after Eigen's
// test/main.h. It is parsed once (--seed=N on the command line, else FH_SEED, else none: each
// test then draws from its own fixed seed), printed once before the first test as "seed: ...",
// and every failure names the seeds its test drew (reference/case_gen.h's case_seed keeps
// them), so any failure is reproduced with FH_SEED=<seed> or --seed=<seed>.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "reference/case_gen.h"

namespace {

// Names the test's seeds under each failure, and clears them when a test starts.
class SeedNamer : public testing::EmptyTestEventListener {
 public:
  void OnTestStart(const testing::TestInfo&) override { fh::clear_seeds_drawn(); }
  void OnTestPartResult(const testing::TestPartResult& r) override {
    if (!r.failed()) return;
    const std::vector<uint64_t> seeds = fh::seeds_drawn();
    if (seeds.empty()) {
      std::printf("seed: this test drew no seed (its inputs are fixed)\n");
      return;
    }
    std::string list;
    for (size_t i = 0; i < seeds.size() && i < 8; ++i) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%s0x%016" PRIx64, i ? ", " : "", seeds[i]);
      list += buf;
    }
    if (seeds.size() > 8) list += ", ...";
    std::printf("seed: this test drew %s; FH_SEED=0x%016" PRIx64 " (or --seed=) reproduces it\n", list.c_str(),
                seeds.front());
  }
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);  // leaves the arguments it does not know
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--seed=", 7) != 0) continue;
    try {
      fh::set_run_seed(fh::parse_seed(argv[i] + 7, "--seed"));
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
      return 2;
    }
  }
  uint64_t seed = 0;
  // Test discovery (gtest_discover_tests) parses the listing: nothing else goes to stdout then.
  const bool listing = GTEST_FLAG_GET(list_tests);
  try {
    if (listing)
      fh::run_seed_given(&seed);  // a bad FH_SEED is still refused
    else if (fh::run_seed_given(&seed))
      std::printf("seed: 0x%016" PRIx64 " (every test draws from it)\n", seed);
    else
      std::printf("seed: each test's fixed seed (FH_SEED=N or --seed=N runs every test on N)\n");
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 2;
  }
  std::fflush(stdout);
  testing::UnitTest::GetInstance()->listeners().Append(new SeedNamer);
  return RUN_ALL_TESTS();
}
