// inputs/input_file.h.
#include "inputs/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

namespace fh {

namespace {

const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

// The descriptor of `path` when it may be read (and its size), else -1 with `problem` set.
// O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one.
int open_checked(const std::string& path, uint64_t max_bytes, uint64_t& size, std::string& problem) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    problem = std::string("cannot open: ") + std::strerror(errno);
    return -1;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) problem = std::string("cannot stat: ") + std::strerror(errno);
  else if (!S_ISREG(st.st_mode)) problem = std::string("is ") + kind_of(st.st_mode) + ", not a regular file";
  else if (uint64_t(st.st_size) > max_bytes)
    problem = "is " + std::to_string(st.st_size) + " bytes, over this input's limit of " + std::to_string(max_bytes);
  if (!problem.empty()) {
    ::close(fd);
    return -1;
  }
  size = uint64_t(st.st_size);
  return fd;
}

}  // namespace

std::string input_file_problem(const std::string& path, uint64_t max_bytes) {
  uint64_t size = 0;
  std::string problem;
  const int fd = open_checked(path, max_bytes, size, problem);
  if (fd >= 0) ::close(fd);
  return problem;
}

std::optional<InputFileId> input_file_id(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  const bool ok = ::fstat(fd, &st) == 0;
  ::close(fd);
  if (!ok) return std::nullopt;
  return InputFileId{st.st_dev, st.st_ino};
}

std::string read_input_text(const std::string& path, const std::string& who, uint64_t max_bytes) {
  uint64_t size = 0;
  std::string problem;
  const int fd = open_checked(path, max_bytes, size, problem);
  if (fd < 0) throw std::invalid_argument(who + ": " + problem);
  // Read to the end, but never past the limit: a file that grows meanwhile is refused too.
  std::string text;
  text.reserve(size_t(size));
  std::vector<char> buf(1 << 16);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      problem = std::string("cannot read: ") + std::strerror(errno);
      break;
    }
    if (n == 0) break;
    text.append(buf.data(), size_t(n));
    if (text.size() > max_bytes) {
      problem = "grew past this input's limit of " + std::to_string(max_bytes) + " bytes while read";
      break;
    }
  }
  ::close(fd);
  if (!problem.empty()) throw std::invalid_argument(who + ": " + problem);
  return text;
}

nlohmann::json read_json_input(const std::string& path, const std::string& who) {
  const std::string text = read_input_text(path, who);
  // One set of keys per open object: a key seen twice in one object is refused.
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  struct TooDeep {};
  const nlohmann::json::parser_callback_t cb = [&](int depth, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    // depth counts the levels already open when an array or object starts.
    if ((ev == E::object_start || ev == E::array_start) && depth >= kMaxJsonDepth) throw TooDeep{};
    if (ev == E::object_start) open_objects.emplace_back();
    else if (ev == E::object_end && !open_objects.empty()) open_objects.pop_back();
    else if (ev == E::key && !open_objects.empty() && !open_objects.back().insert(parsed.get<std::string>()).second &&
             duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text, cb);
  } catch (const nlohmann::json::exception& e) {
    // parse_error, and out_of_range for a number beyond a double (1e999).
    throw std::invalid_argument(who + ": not valid JSON (" + e.what() + ")");
  } catch (const TooDeep&) {
    throw std::invalid_argument(who + ": arrays and objects nested more than " + std::to_string(kMaxJsonDepth) +
                                " deep");
  }
  if (!duplicate.empty())
    throw std::invalid_argument(who + ": key \"" + duplicate + "\" appears twice in one object (which one counts?)");
  return doc;
}

namespace {

// A bound for a message: "1e+300", "-1", "0".
std::string bound_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

int64_t json_integer(const nlohmann::json& v, const std::string& who, const std::string& field, int64_t lo,
                     int64_t hi) {
  const bool in_range = v.is_number_unsigned() ? v.get<uint64_t>() <= uint64_t(hi) && v.get<int64_t>() >= lo
                        : v.is_number_integer() ? v.get<int64_t>() >= lo && v.get<int64_t>() <= hi
                                                : false;
  if (!in_range)
    throw std::invalid_argument(who + ": \"" + field + "\" must be an integer in [" + std::to_string(lo) + ", " +
                                std::to_string(hi) + "], got " + v.dump());
  return v.get<int64_t>();
}

double json_number(const nlohmann::json& v, const std::string& who, const std::string& field, double lo, double hi) {
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lo || v.get<double>() > hi)
    throw std::invalid_argument(who + ": \"" + field + "\" must be a finite number " +
                                (std::isinf(hi) ? ">= " + bound_text(lo)
                                                : "in [" + bound_text(lo) + ", " + bound_text(hi) + "]") +
                                ", got " + v.dump());
  return v.get<double>();
}

const nlohmann::json& json_list(const nlohmann::json& v, const std::string& who, const std::string& field,
                                size_t min_items) {
  if (!v.is_array() || v.size() < min_items)
    throw std::invalid_argument(who + ": \"" + field + "\" must be a list" +
                                (min_items == 0   ? ""
                                 : min_items == 1 ? " of at least one value"
                                                  : " of at least " + std::to_string(min_items) + " values") + ", got " +
                                v.dump());
  return v;
}

}  // namespace fh
