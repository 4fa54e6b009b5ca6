// The fuzzers' findings, kept: every input under suites/fuzz/regressions/<target>/
// crashed, hung or was wrongly accepted by a reader before its fix. Each is replayed here, in the
// harness's own build, through the function its fuzz target calls (suites/fuzz/fuzz_inputs.h,
// which calls the real reader on a scratch file), and must end as suites/fuzz/regressions.txt
// says: refused with a message that names the file (the scratch input) and holds the given words
// (the object or field), or accepted. Nothing else may escape. scripts/fuzz.sh replays the same
// inputs under ASan and UBSan before it fuzzes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "suites/fuzz/fuzz_inputs.h"

namespace {

namespace fs = std::filesystem;

const fs::path kRegressions = fs::path(FH_SOURCE_DIR) / "suites" / "fuzz" / "regressions";

struct Expected {
  bool refused = true;
  std::string words;  // what the refusal's message must contain
};

// suites/fuzz/regressions.txt: "<target>/<file> refused <words...>" or "<target>/<file> accepted".
std::map<std::string, Expected> expectations() {
  std::map<std::string, Expected> out;
  std::ifstream in(fs::path(FH_SOURCE_DIR) / "suites" / "fuzz" / "regressions.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string key, outcome;
    ls >> key >> outcome;
    Expected e;
    e.refused = outcome == "refused";
    std::getline(ls >> std::ws, e.words);
    out[key] = e;
  }
  return out;
}

std::vector<char> bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(FuzzRegressions, EveryFindingStaysFixed) {
  const auto expected = expectations();
  ASSERT_FALSE(expected.empty()) << "suites/fuzz/regressions.txt lists no regression";
  std::set<std::string> seen;
  ASSERT_TRUE(fs::is_directory(kRegressions)) << kRegressions;
  for (const auto& dir : fs::directory_iterator(kRegressions)) {
    const std::string target = dir.path().filename().string();
    const fh::fuzz::Target* t = fh::fuzz::find_target(target);
    ASSERT_NE(t, nullptr) << "suites/fuzz/regressions/" << target << ": no fuzz target of that name";
    for (const auto& f : fs::directory_iterator(dir.path())) {
      const std::string key = target + "/" + f.path().filename().string();
      seen.insert(key);
      const auto it = expected.find(key);
      ASSERT_NE(it, expected.end()) << key << " is not in suites/fuzz/regressions.txt";
      const std::vector<char> b = bytes_of(f.path());
      fh::fuzz::Outcome o;
      try {
        o = t->run(reinterpret_cast<const uint8_t*>(b.data()), b.size());
      } catch (const std::exception& e) {
        ADD_FAILURE() << key << ": " << e.what();
        continue;
      }
      EXPECT_EQ(o.refused, it->second.refused) << key << ": " << (o.refused ? o.message : "accepted");
      if (!o.refused) continue;
      EXPECT_NE(o.message.find(it->second.words), std::string::npos) << key << ": " << o.message;
      // A producer's file and a JSON input are named in the message (a report's problem is named
      // by forge-verify diff, which prefixes "BASE '<file>'", and the rename map's likewise).
      if (target != "report" && target != "rename_map") {
        EXPECT_NE(o.message.find(fh::fuzz::scratch_dir()), std::string::npos) << key << ": the file is not named: " << o.message;
      }
    }
  }
  for (const auto& [key, e] : expected) EXPECT_TRUE(seen.count(key)) << key << " is listed but not in suites/fuzz/regressions/";
}

// The recipes each HDF5 target generates as seeds are the base files (accepted) and the planted
// classes of hostile input (refused): they still build what they say.
TEST(FuzzRegressions, GeneratedSeedsKeepTheirMeaning) {
  for (const char* target : {"results_file", "cases_file", "report"}) {
    const fs::path dir = fs::path(fh::fuzz::scratch_dir()) / (std::string("seeds_") + target);
    fs::create_directories(dir);
    const int n = fh::fuzz::write_seeds(target, dir.string());
    EXPECT_GT(n, 3) << target;
    for (const auto& f : fs::directory_iterator(dir)) {
      const std::string name = f.path().filename().string();
      if (name.ends_with(".h5")) continue;  // a file as it is: raw mode only (FH_FUZZ_RAW_HDF5=1)
      const std::vector<char> b = bytes_of(f.path());
      fh::fuzz::Outcome o;
      ASSERT_NO_THROW(o = fh::fuzz::find_target(target)->run(reinterpret_cast<const uint8_t*>(b.data()), b.size()))
          << target << "/" << name;
      const bool base = name.starts_with("base") || name.starts_with("recipe_base");
      EXPECT_EQ(o.refused, !base) << target << "/" << name << ": " << (o.refused ? o.message : "accepted");
    }
  }
}

}  // namespace
