#include "sim/link.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/duration.h"
#include "common/key_value.h"

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
  Status s = ForEachKeyValue(text, [&](std::string_view key, std::string_view val) {
    const std::string field = std::string(key) + "=" + std::string(val);
    if (key == "latency") {
      uint64_t ns = 0;
      if (!ParseDuration(val, &ns))
        return Status::InvalidArgument(field + " is not a duration (5us, 1ms)");
      spec.latency_s = static_cast<double>(ns) * 1e-9;
    } else if (key == "gbps") {
      if (!ParseDouble(val, &spec.gbps) || spec.gbps <= 0 || spec.gbps > 1e5) {
        return Status::InvalidArgument(field + " is not a bandwidth in (0, 100000] Gbit/s");
      }
    } else if (key == "loss") {
      if (!ParseDouble(val, &spec.loss) || spec.loss < 0 || spec.loss >= 1) {
        return Status::InvalidArgument(field + " is not a probability in [0, 1)");
      }
    } else {
      return Status::InvalidArgument("unknown key '" + std::string(key) + "'");
    }
    return Status::Ok();
  });
  if (!s.ok()) return Bad(text, std::string(s.message()));
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
