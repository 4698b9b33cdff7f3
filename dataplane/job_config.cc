#include "dataplane/job_config.h"

#include "common/duration.h"
#include "common/parse.h"

#include <arpa/inet.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <string>

namespace serene::dataplane {
namespace {

std::string Range(uint64_t lo, uint64_t hi) {
  return std::to_string(lo) + ".." + std::to_string(hi);
}

}  // namespace

bool ParseScale(std::string_view text, uint32_t* log2_out) {
  uint64_t v = 0;
  if (text.starts_with("2^")) {
    if (!serene::ParseUint64(text.substr(2), &v) || v < 1 || v > 30) return false;
    *log2_out = static_cast<uint32_t>(v);
    return true;
  }
  if (!serene::ParseUint64(text, &v) || v < 2 || v > (1ull << 30) || (v & (v - 1)) != 0) return false;
  *log2_out = static_cast<uint32_t>(std::countr_zero(v));
  return true;
}

Result<proto::Endpoint> ParseGroup(std::string_view text) {
  const size_t colon = text.rfind(':');
  uint64_t port = 0;
  in_addr a4{};
  const std::string host(text.substr(0, colon == std::string_view::npos ? 0 : colon));
  if (colon == std::string_view::npos || inet_pton(AF_INET, host.c_str(), &a4) != 1 ||
      !serene::ParseUint64(text.substr(colon + 1), &port) || port < 1 || port > 65535) {
    return Status::InvalidArgument("group '" + std::string(text) +
                                   "' is not an IPv4 address and port, e.g. 239.83.0.1:7100");
  }
  proto::Endpoint g;
  g.family = proto::Endpoint::Family::kIPv4;
  g.port = static_cast<uint16_t>(port);
  std::memcpy(g.addr.data(), &a4, 4);
  if ((g.addr[0] & 0xF0) != 0xE0) {
    return Status::InvalidArgument("group '" + std::string(text) +
                                   "' is not a multicast address (224.0.0.0/4); use e.g. "
                                   "239.83.0.1:7100");
  }
  return g;
}

std::string FormatGroup(const proto::Endpoint& group) {
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, group.addr.data(), text, sizeof(text));
  return std::string(text) + ":" + std::to_string(group.port);
}

Status JobConfig::Validate() const {
  if (id == 0) return Status::InvalidArgument("job id 0 is reserved; use 1..65535");
  if (workers < 1 || workers > kMaxWorkers) {
    return Status::InvalidArgument("job " + std::to_string(id) + ": workers=" +
                                   std::to_string(workers) + " out of range " +
                                   Range(1, kMaxWorkers));
  }
  if (elements < 1 || elements > kMaxElements) {
    return Status::InvalidArgument("job " + std::to_string(id) + ": elements=" +
                                   std::to_string(elements) + " out of range " +
                                   Range(1, kMaxElements));
  }
  if (row_width < 1 || row_width > kMaxRowWidth) {
    return Status::InvalidArgument("job " + std::to_string(id) + ": row=" +
                                   std::to_string(row_width) + " out of range " +
                                   Range(1, kMaxRowWidth) + " (values per datagram)");
  }
  if (scale_log2 < 1 || scale_log2 > 30) {
    return Status::InvalidArgument("job " + std::to_string(id) + ": scale=2^" +
                                   std::to_string(scale_log2) + " out of range 2^1..2^30");
  }
  if (evict_after_ms > kMaxEvictAfterMs) {
    return Status::InvalidArgument("job " + std::to_string(id) + ": evict_after=" +
                                   std::to_string(evict_after_ms) + "ms out of range 0..1h");
  }
  if (policy.quorum == 0) {
    return Status::InvalidArgument("job " + std::to_string(id) + ": quorum must be at least 1");
  }
  if (Status s = allow.Validate(); !s.ok()) {
    return Status::InvalidArgument("job " + std::to_string(id) + ": " + s.message());
  }
  if (group.valid() && (group.family != proto::Endpoint::Family::kIPv4 ||
                        (group.addr[0] & 0xF0) != 0xE0 || group.port == 0)) {
    return Status::InvalidArgument("job " + std::to_string(id) +
                                   ": the reply group must be an IPv4 multicast address "
                                   "(224.0.0.0/4) with a port");
  }
  return Status::Ok();
}

Result<JobConfig> JobConfig::ParseSpec(std::string_view spec) {
  JobConfig c;
  bool have_id = false, have_workers = false, have_elements = false;
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument(
        "bad job spec '" + std::string(spec) + "': " + why +
        " (expected id=J,workers=N,elements=E[,row=R][,scale=2^B][,key=K][,evict_after=D]"
        "[,allow=PREFIX[;PREFIX...]][,group=ADDR:PORT][,policy=P])");
  };
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string_view::npos) end = spec.size();
    std::string_view kv = spec.substr(start, end - start);
    start = end + 1;
    if (kv.empty()) continue;
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos) return bad("'" + std::string(kv) + "' is not key=value");
    std::string_view key = kv.substr(0, eq), val = kv.substr(eq + 1);
    uint64_t v = 0;
    uint32_t v32 = 0;
    if (key == "id") {
      if (!serene::ParseUint64(val, &v) || v < 1 || v > 65535) return bad("id must be 1..65535");
      c.id = static_cast<uint16_t>(v);
      have_id = true;
    } else if (key == "workers") {
      if (!serene::ParseUint64(val, &v) || v > kMaxWorkers || v < 1) {
        return bad("workers must be " + Range(1, kMaxWorkers));
      }
      c.workers = static_cast<uint32_t>(v);
      have_workers = true;
    } else if (key == "elements") {
      if (!serene::ParseUint64(val, &v) || v < 1 || v > kMaxElements) {
        return bad("elements must be " + Range(1, kMaxElements));
      }
      c.elements = v;
      have_elements = true;
    } else if (key == "row") {
      if (!serene::ParseUint64(val, &v) || v < 1 || v > kMaxRowWidth) {
        return bad("row must be " + Range(1, kMaxRowWidth));
      }
      c.row_width = static_cast<uint32_t>(v);
    } else if (key == "scale") {
      if (!ParseScale(val, &c.scale_log2)) {
        return bad("scale must be a power of two 2^1..2^30, written 2^24 or 16777216");
      }
    } else if (key == "key") {
      if (!serene::ParseUint32(val, &v32)) return bad("key must be a 32-bit decimal or 0x-hex number");
      c.key = v32;
    } else if (key == "evict_after") {
      uint64_t ns = 0;
      if (!serene::ParseDuration(val, &ns) || ns % 1'000'000 != 0) {
        return bad("evict_after must be a duration in whole milliseconds up to 1h, e.g. 10s or "
                   "500ms (0 = never)");
      }
      c.evict_after_ms = static_cast<uint32_t>(ns / 1'000'000);
    } else if (key == "allow") {
      auto list = SourceAllowList::Parse(val);
      if (!list.ok()) return bad(list.status().message());
      c.allow = *list;
    } else if (key == "group") {
      auto g = ParseGroup(val);
      if (!g.ok()) return bad(g.status().message());
      c.group = *g;
    } else if (key == "policy") {
      // The general form "window=W,quorum=K,lag=L" has commas of its own: it
      // takes the rest of the spec, so it must come last.
      if (val.starts_with("window=") || val.starts_with("quorum=") || val.starts_with("lag=")) {
        val = spec.substr(static_cast<size_t>(kv.data() - spec.data()) + eq + 1);
        start = spec.size() + 1;
      }
      auto p = BarrierParams::Parse(val);
      if (!p.ok()) return bad(p.status().message());
      c.policy = *p;
    } else {
      return bad("unknown field '" + std::string(key) + "'");
    }
  }
  if (!have_id) return bad("missing id");
  if (!have_workers) return bad("missing workers");
  if (!have_elements) return bad("missing elements");
  Status s = c.Validate();
  if (!s.ok()) return s;
  return c;
}

std::string JobConfig::ToString() const {
  return "id=" + std::to_string(id) + ",workers=" + std::to_string(workers) +
         ",elements=" + std::to_string(elements) + ",row=" + std::to_string(row_width) +
         ",scale=2^" + std::to_string(scale_log2) +
         ",evict_after=" + serene::FormatDuration(uint64_t{evict_after_ms} * 1'000'000) +
         (allow.empty() ? std::string() : ",allow=" + allow.ToString()) +
         (group.valid() ? ",group=" + FormatGroup(group) : std::string()) +
         ",policy=" + policy.ToString();
}

}  // namespace serene::dataplane
