// The door every input file passes (DESIGN contract 8): a regular file within a size limit,
// checked on the opened descriptor before a byte is read, so a FIFO never blocks, a device is
// never read and a directory is named as one. JSON inputs are read and parsed here, once, with
// duplicate keys and numbers out of the double range refused.
#pragma once
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <stdexcept>
#include <string>

namespace fh {

inline constexpr uint64_t kMaxJsonInputBytes = uint64_t(64) << 20;  // the audit's JSON files are KBs
inline constexpr uint64_t kMaxHdf5InputBytes = uint64_t(64) << 30;  // the "forge" case set is a few GB
// Arrays and objects nested deeper than this are refused: the audit's JSON nests 4 deep, and a
// value's text (nlohmann's dump, in messages and for non-string fields) recurses once per level,
// so 30000 '[' in a 60 kB file overflowed the stack (found by fuzzing, suites/fuzz/regressions).
inline constexpr int kMaxJsonDepth = 64;

// What is wrong with `path` as an input of at most `max_bytes` ("is a FIFO, not a regular
// file", "cannot open: No such file or directory", ...); empty when it may be read.
std::string input_file_problem(const std::string& path, uint64_t max_bytes);

// The whole file, after the same check. Throws std::invalid_argument "<who>: <problem>".
std::string read_input_text(const std::string& path, const std::string& who,
                            uint64_t max_bytes = kMaxJsonInputBytes);

// read_input_text, then strict JSON: not valid JSON, a duplicate key (the last would silently
// win), a number that overflows a double (1e999) or nesting deeper than kMaxJsonDepth throws
// std::invalid_argument naming `who`.
nlohmann::json read_json_input(const std::string& path, const std::string& who);

}  // namespace fh
