// forge-verify external-cases (external_cases_main.h).
#include "suites/forge_verify/external_cases_main.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "reports/report.h"
#include "suites/claims/external_common.h"

namespace fh {

namespace {
const char* kUsage =
    "Usage: forge-verify external-cases --set ci|forge|forge_adamw [--seed N] [--force] OUT.h5\n"
    "Writes the cases an external producer runs (docs/EXTERNAL_PRODUCER.md): 'ci' is small (every\n"
    "case kind, judged on a CPU), 'forge' is the FORGE release audit (probes at the Llama-3.1-8B\n"
    "layer shapes, about 1.2 GB), 'forge_adamw' its AdamW and INT8 cases alone (the same inputs,\n"
    "a few MB: for paths that take no probe). OUT must be absent unless --force.\n";
}

int run_external_cases(int argc, char** argv, const std::string& revision) {
  std::string set, out;
  uint64_t seed = 20261203;
  bool force = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if ((a == "--set" || a == "--seed") && i + 1 >= argc) {
      std::fprintf(stderr, "forge-verify external-cases: %s needs a value\n%s", a.c_str(), kUsage);
      return 2;
    }
    if (a == "--set") set = argv[++i];
    else if (a == "--seed") {
      char* end = nullptr;
      errno = 0;
      seed = std::strtoull(argv[++i], &end, 10);
      if (errno || *end || argv[i][0] == '-' || argv[i][0] == 0) {
        std::fprintf(stderr, "forge-verify external-cases: --seed: not a decimal number: '%s'\n", argv[i]);
        return 2;
      }
    } else if (a == "--force") force = true;
    else if (a.starts_with("--") || !out.empty()) {
      std::fprintf(stderr, "forge-verify external-cases: unexpected argument '%s'\n%s", a.c_str(), kUsage);
      return 2;
    } else out = a;
  }
  if (set != "ci" && set != "forge" && set != "forge_adamw") {
    std::fprintf(stderr, "forge-verify external-cases: --set must be ci, forge or forge_adamw\n%s", kUsage);
    return 2;
  }
  if (out.empty()) {
    std::fprintf(stderr, "forge-verify external-cases: no output file\n%s", kUsage);
    return 2;
  }
  // The shared output policy, before the cases are built (the forge set is about 1.2 GB): a
  // missing or read-only folder is bad input, refused before the work instead of failing after it.
  try {
    check_output_path("forge-verify external-cases", out, WriteOptions{.replace_existing = force});
  } catch (const ReportPathError& e) {
    std::fprintf(stderr, "forge-verify external-cases: OUT: %s\n", e.what());
    return 2;
  }
  try {
    write_external_cases(out, set, seed, revision);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "forge-verify external-cases: cannot write '%s': %s\n", out.c_str(), e.what());
    return 3;
  }
  std::printf("wrote %s: case set %s, seed %llu, %zu cases\n", out.c_str(), set.c_str(), (unsigned long long)seed,
              external_case_specs(set).size());
  return 0;
}

}  // namespace fh
