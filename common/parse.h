// Number parsing for flags, specs and environment variables: decimal or
// 0x-hex, the whole string, no sign, no surrounding spaces.
#pragma once

#include <charconv>
#include <cstdint>
#include <string_view>

namespace serene {

inline bool ParseUint64(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    base = 16;
  }
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, base);
  return ec == std::errc() && ptr == s.data() + s.size();
}

inline bool ParseUint32(std::string_view s, uint32_t* out) {
  uint64_t v = 0;
  if (!ParseUint64(s, &v) || v > 0xFFFFFFFFull) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

}  // namespace serene
