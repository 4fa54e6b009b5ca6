// The text and name rules (text_rules.h).
#include "inputs/text_rules.h"

#include <cstdint>
#include <string_view>

namespace fh {

namespace {

bool valid_utf8(std::string_view s) {
  static const uint32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};  // reject overlongs
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) { ++i; continue; }
    int len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
    else return false;
    if (i + len > s.size()) return false;
    for (int k = 1; k < len; ++k) {
      const unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (cp < kMinForLength[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

}  // namespace

std::string name_problem(const std::string& name) {
  if (name.empty()) return "empty name";
  if (name.find('/') != std::string::npos) return "name '" + name + "' contains '/'";
  if (name.find_first_not_of('.') == std::string::npos)
    return "name '" + name + "' is made only of '.'";
  if (name.find('\0') != std::string::npos) return "name contains a NUL character";
  if (!valid_utf8(name)) return "name is not valid UTF-8";
  return {};
}

std::string text_problem(const std::string& text) {
  if (text.find('\0') != std::string::npos) return "text contains a NUL character";
  if (!valid_utf8(text)) return "text is not valid UTF-8";
  return {};
}

}  // namespace fh
