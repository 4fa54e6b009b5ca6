// A kill matrix of the mutation tools (scripts/mutate.py for the CPU suites, scripts/mutate_gpu.py
// for the GPU suites; issue 32), read for the claim mutation_kill_matrix: each mutant's verdict
// over its reps, the tests that killed it and the first failing check's message.
#pragma once
#include <string>
#include <vector>

namespace fh {

struct KillMatrixMutant {
  std::string id, layer, file, why;
  std::string status;      // killed | survived | flaky | build_error
  std::string equivalent;  // the catalog's reason when argued equivalent; empty otherwise
  std::vector<std::string> killed_by, kill_units, flaky_kills, expected_but_survived;
  std::string first_message;  // the first killing test's first failing check (or the build error)
};

struct KillMatrix {
  std::string path, tool, device, revision;
  bool complete = false;  // false: the run stopped before its last mutant
  int64_t reps = 0;
  std::vector<KillMatrixMutant> mutants;
};

// Throws std::invalid_argument naming the file and the field when the file is not a JSON object
// written by one of the two tools (tool, complete, reps 1..100, mutants), a mutant lacks an id,
// layer or status, its status is none of the four, a list is not a list of strings, an id is
// given twice, or a string cannot reach the report (inputs/text_rules.h).
KillMatrix read_kill_matrix_json(const std::string& path);

}  // namespace fh
