// The seed discipline (kernels/common/seed_stream.h, suites/gtest_seed_main.cpp): named streams
// keep fixed values (so a printed seed reproduces a run on any machine, and
// scripts/seed_stream.py agrees), distinct names and indexes give distinct seeds, and a test
// binary's run seed reaches case_seed and is named under a failure.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>

#include "kernels/common/seed_stream.h"
#include "reference/case_gen.h"

namespace {

using namespace fh;

// The same values as scripts/check_seed_streams.py's REFERENCE (the Python twin is checked
// against them there).
TEST(SeedStreams, ReferenceValues) {
  static_assert(stream_name_hash("") == 0xCBF29CE484222325ull, "FNV-1a offset basis");
  static_assert(stream_name_hash("a") == 0xAF63DC4C8601EC8Cull, "FNV-1a of \"a\"");
  EXPECT_EQ(stream_seed(20261202, "prop1_twin/inputs"), 0xAE82AACE32084775ull);
  EXPECT_EQ(stream_seed(20261202, "prop1_twin/inputs", 1), 0xEC73D8AD1F97F114ull);
  EXPECT_EQ(stream_seed(0, ""), 0x7261E9031E12A9D7ull);
  // stream_seed is stream_draw of stream_state: the device draws the host's stream.
  EXPECT_EQ(stream_draw(stream_state(20261202, "prop1_twin/inputs"), 1), stream_seed(20261202, "prop1_twin/inputs", 1));
}

TEST(SeedStreams, NamesIndexesAndRunSeedsGiveDistinctSeeds) {
  std::set<uint64_t> seen;
  const char* names[] = {"prop1_twin/inputs", "prop1_twin/sr_key", "prop2_tp_sharded/inputs", "a/b", "b/a"};
  int64_t n = 0;
  for (uint64_t run : {uint64_t(0), uint64_t(1), uint64_t(20261202)})
    for (const char* name : names)
      for (uint64_t index = 0; index < 1000; ++index, ++n) seen.insert(stream_seed(run, name, index));
  EXPECT_EQ(int64_t(seen.size()), n) << "two (run seed, name, index) triples gave one seed";
}

// The run seed: --seed=N (set_run_seed) wins over each caller's fixed seed, and every seed
// case_seed hands out is kept for the failure line.
TEST(SeedStreams, RunSeedReachesCaseSeedAndIsKept) {
  uint64_t given = 0;
  const bool was_given = run_seed_given(&given);
  clear_seeds_drawn();
  const uint64_t a = case_seed(77);
  EXPECT_EQ(a, was_given ? given : 77u);
  ASSERT_EQ(seeds_drawn().size(), 1u);
  EXPECT_EQ(seeds_drawn()[0], a);
  case_seed(77);
  EXPECT_EQ(seeds_drawn().size(), 1u) << "a seed drawn twice is named once";
  EXPECT_THROW(parse_seed("12x", "--seed"), std::invalid_argument);
  EXPECT_THROW(parse_seed("-1", "--seed"), std::invalid_argument);
  EXPECT_THROW(parse_seed("", "--seed"), std::invalid_argument);
  EXPECT_EQ(parse_seed("0x10", "--seed"), 16u);
  EXPECT_EQ(parse_seed("18446744073709551615", "--seed"), UINT64_MAX);
  EXPECT_THROW(parse_seed("18446744073709551616", "--seed"), std::invalid_argument);
}

// A failure names its test's seeds: disabled, it runs only when scripts/test_seed_discipline.sh
// asks for it (--gtest_also_run_disabled_tests) and expects the failure and the line
// "seed: this test drew 0x000000000000007b".
TEST(SeedStreams, DISABLED_PlantedFailureNamesItsSeed) {
  const uint64_t seed = case_seed(0x7b);
  EXPECT_EQ(stream_seed(seed, "test_seed_streams/planted_failure"), 0u) << "planted: this failure must name its seed";
}

}  // namespace
