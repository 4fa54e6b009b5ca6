// The door every input file passes (DESIGN contract 8): a regular file within a size limit,
// checked on the opened descriptor before a byte is read, so a FIFO never blocks, a device is
// never read and a directory is named as one. JSON inputs are read and parsed here, once, with
// duplicate keys and numbers out of the double range refused.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
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

// The file `path` leads to, by device and inode, read from the opened descriptor: a symlink, a
// hard link or another spelling of a path is the same file. nullopt when it cannot be opened
// (its reader then names why).
struct InputFileId {
  dev_t dev = 0;
  ino_t ino = 0;
  friend bool operator==(const InputFileId&, const InputFileId&) = default;
};
std::optional<InputFileId> input_file_id(const std::string& path);

// read_input_text, then strict JSON: not valid JSON, a duplicate key (the last would silently
// win), a number that overflows a double (1e999) or nesting deeper than kMaxJsonDepth throws
// std::invalid_argument naming `who`.
nlohmann::json read_json_input(const std::string& path, const std::string& who);

// A JSON field's value as the readers take it: one rule per kind of field, so that every reader
// refuses the same things in the same words. Each throws std::invalid_argument
// "<who>: \"<field>\" must be ..., got <value>", naming the file and the field.
// The largest count an input may hold (parameters, tokens, steps, iterations): far beyond any
// real run, and its products with small factors stay within int64.
inline constexpr int64_t kMaxJsonCount = int64_t(1) << 50;
// An integer in [lo, hi]: a float (1e300, 32.5), a string or a value out of range is refused.
int64_t json_integer(const nlohmann::json& v, const std::string& who, const std::string& field, int64_t lo,
                     int64_t hi);
// A finite number in [lo, hi] (a negative time turned a ratio's verdict around).
double json_number(const nlohmann::json& v, const std::string& who, const std::string& field, double lo, double hi);
// An array of at least `min_items` elements (a list of measurements that is empty measured nothing).
const nlohmann::json& json_list(const nlohmann::json& v, const std::string& who, const std::string& field,
                                size_t min_items);

}  // namespace fh
