// Durations as people write them in flags, specs and config files:
// "0", "250ns", "250us", "2ms", "1.5s". Shared by the fault injector's spec,
// job specs (evict_after) and the tools.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

namespace serene {

// Parses a finite decimal number, the whole string.
inline bool ParseDouble(std::string_view s, double* out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size() && std::isfinite(*out);
}

// Parses a duration with a unit into nanoseconds; "0" needs none. Refuses
// negative values and anything above an hour (surely a typo).
inline bool ParseDuration(std::string_view text, uint64_t* out_ns) {
  struct Unit {
    std::string_view suffix;
    double ns;
  };
  // Longest suffixes first so "ms" is not read as "s".
  static constexpr Unit kUnits[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  if (text == "0") {
    *out_ns = 0;
    return true;
  }
  for (const Unit& u : kUnits) {
    if (text.size() > u.suffix.size() && text.ends_with(u.suffix)) {
      double v = 0;
      if (!ParseDouble(text.substr(0, text.size() - u.suffix.size()), &v) || v < 0) return false;
      const double ns = v * u.ns;
      if (ns > 3600e9) return false;
      *out_ns = static_cast<uint64_t>(std::llround(ns));
      return true;
    }
  }
  return false;
}

// Formats nanoseconds with the largest exact unit ("2ms", "1500us", "0").
inline std::string FormatDuration(uint64_t ns) {
  if (ns == 0) return "0";
  if (ns % 1'000'000'000 == 0) return std::to_string(ns / 1'000'000'000) + "s";
  if (ns % 1'000'000 == 0) return std::to_string(ns / 1'000'000) + "ms";
  if (ns % 1'000 == 0) return std::to_string(ns / 1'000) + "us";
  return std::to_string(ns) + "ns";
}

}  // namespace serene
