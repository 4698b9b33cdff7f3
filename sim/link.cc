#include "sim/link.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/duration.h"

namespace serene::sim {
namespace {

Status Bad(std::string_view text, const std::string& why) {
  return Status::InvalidArgument("link spec '" + std::string(text) + "': " + why +
                                 " (expected latency=DURATION,gbps=G,loss=P, e.g. "
                                 "\"latency=5us,gbps=10,loss=0\")");
}

}  // namespace

Result<LinkSpec> LinkSpec::Parse(std::string_view text) {
  LinkSpec spec;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view kv = text.substr(start, end - start);
    start = end + 1;
    if (kv.empty()) continue;
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos)
      return Bad(text, "'" + std::string(kv) + "' is not key=value");
    const std::string_view key = kv.substr(0, eq), val = kv.substr(eq + 1);
    const std::string field(kv);
    if (key == "latency") {
      uint64_t ns = 0;
      if (!ParseDuration(val, &ns)) return Bad(text, field + " is not a duration (5us, 1ms)");
      spec.latency_s = static_cast<double>(ns) * 1e-9;
    } else if (key == "gbps") {
      if (!ParseDouble(val, &spec.gbps) || spec.gbps <= 0 || spec.gbps > 1e5) {
        return Bad(text, field + " is not a bandwidth in (0, 100000] Gbit/s");
      }
    } else if (key == "loss") {
      if (!ParseDouble(val, &spec.loss) || spec.loss < 0 || spec.loss >= 1) {
        return Bad(text, field + " is not a probability in [0, 1)");
      }
    } else {
      return Bad(text, "unknown key '" + std::string(key) + "'");
    }
  }
  return spec;
}

std::string LinkSpec::ToString() const {
  return fmt::format("latency={},gbps={:g},loss={:g}",
                     FormatDuration(static_cast<uint64_t>(FromSeconds(latency_s))), gbps, loss);
}

std::optional<SimTime> Link::Send(SimTime now, size_t payload) {
  ++sent_;
  const double bits = 8.0 * static_cast<double>(payload + kFrameOverhead);
  const SimTime start = std::max(now, busy_until_);
  busy_until_ = start + std::max<SimTime>(1, FromSeconds(bits / (spec_.gbps * 1e9)));
  if (spec_.loss > 0 && rng_.Uniform() < spec_.loss) {
    ++lost_;
    return std::nullopt;
  }
  return busy_until_ + FromSeconds(spec_.latency_s);
}

}  // namespace serene::sim
