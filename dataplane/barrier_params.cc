#include "dataplane/barrier_params.h"

#include <charconv>
#include <vector>

namespace serene::dataplane {
namespace {

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    parts.push_back(s.substr(start, pos == std::string_view::npos ? pos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return parts;
}

// Parses a non-negative 32-bit number; `unbounded_word` ("inf"/"all") maps to 0xFFFFFFFF.
bool ParseU32(std::string_view s, std::string_view unbounded_word, uint32_t* out) {
  if (!unbounded_word.empty() && s == unbounded_word) {
    *out = 0xFFFFFFFFu;
    return true;
  }
  if (s.empty()) return false;
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || v > 0xFFFFFFFEull) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

Status Bad(std::string_view text, std::string_view why) {
  return Status::InvalidArgument("bad policy '" + std::string(text) + "': " + std::string(why) +
                                 " (expected sync, ssp:W, async, quorum:K:L or "
                                 "window=W,quorum=K,lag=L)");
}

}  // namespace

Result<BarrierParams> BarrierParams::Parse(std::string_view text) {
  auto parts = Split(text, ':');
  const std::string_view name = parts[0];
  if (name == "sync" && parts.size() == 1) return Sync();
  if (name == "async" && parts.size() == 1) return Async();
  if (name == "ssp") {
    uint32_t w = 0;
    if (parts.size() != 2 || !ParseU32(parts[1], "inf", &w)) {
      return Bad(text, "ssp needs a window, e.g. ssp:10");
    }
    return Ssp(w);
  }
  if (name == "quorum") {
    uint32_t k = 0, l = 0;
    if (parts.size() != 3 || !ParseU32(parts[1], "all", &k) || !ParseU32(parts[2], "inf", &l)) {
      return Bad(text, "quorum needs a quorum and a lag bound, e.g. quorum:3:8");
    }
    if (k == 0) return Bad(text, "quorum must be at least 1");
    return Quorum(k, l);
  }
  if (parts.size() == 1 && name.find('=') != std::string_view::npos) {
    BarrierParams p = Sync();
    for (std::string_view kv : Split(text, ',')) {
      auto eq = kv.find('=');
      if (eq == std::string_view::npos) return Bad(text, "expected key=value");
      std::string_view key = kv.substr(0, eq), val = kv.substr(eq + 1);
      bool ok = false;
      if (key == "window") ok = ParseU32(val, "inf", &p.window);
      else if (key == "quorum") ok = ParseU32(val, "all", &p.quorum) && p.quorum != 0;
      else if (key == "lag") ok = ParseU32(val, "inf", &p.lag);
      else return Bad(text, "unknown key '" + std::string(key) + "'");
      if (!ok) return Bad(text, "bad value for '" + std::string(key) + "'");
    }
    return p;
  }
  return Bad(text, "unknown strategy");
}

std::string BarrierParams::ToString() const {
  auto num = [](uint32_t v, const char* inf) {
    return v == 0xFFFFFFFFu ? std::string(inf) : std::to_string(v);
  };
  if (*this == Sync()) return "sync";
  if (*this == Async()) return "async";
  if (quorum == kAllWorkers && window == lag) return "ssp:" + num(window, "inf");
  if (window == 0) return "quorum:" + num(quorum, "all") + ":" + num(lag, "inf");
  return "window=" + num(window, "inf") + ",quorum=" + num(quorum, "all") +
         ",lag=" + num(lag, "inf");
}

}  // namespace serene::dataplane
