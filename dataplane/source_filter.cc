#include "dataplane/source_filter.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace serene::dataplane {
namespace {

using Family = proto::Endpoint::Family;

constexpr uint8_t kV4MappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

size_t AddressBytes(Family f) { return f == Family::kIPv4 ? 4 : 16; }
uint8_t MaxLength(Family f) { return f == Family::kIPv4 ? 32 : 128; }

Status Bad(std::string_view text, std::string_view why) {
  return Status::InvalidArgument("allow '" + std::string(text) + "': " + std::string(why));
}

// True if the bits of `addr` past `length` are all zero.
bool HostBitsZero(const std::array<uint8_t, 16>& addr, size_t bytes, uint8_t length) {
  for (size_t i = 0; i < bytes; ++i) {
    const int keep = std::max(0, std::min(8, int{length} - static_cast<int>(i * 8)));
    const uint8_t host_mask = static_cast<uint8_t>(0xFFu >> keep);
    if ((addr[i] & host_mask) != 0) return false;
  }
  return true;
}

// `addr` with the bits past `length` cleared.
std::array<uint8_t, 16> Masked(std::array<uint8_t, 16> addr, size_t bytes, uint8_t length) {
  for (size_t i = 0; i < bytes; ++i) {
    const int keep = std::max(0, std::min(8, int{length} - static_cast<int>(i * 8)));
    addr[i] &= static_cast<uint8_t>(0xFF00u >> keep);
  }
  return addr;
}

// A prefix as ParseSourcePrefix makes them: a family, a length in range, no
// bits past the length (IPv4: none past the 4th byte).
Status CheckPrefix(const SourcePrefix& p, size_t index) {
  const std::string entry = "allow: entry " + std::to_string(index);
  if (p.family != Family::kIPv4 && p.family != Family::kIPv6) {
    return Status::InvalidArgument(entry + " has no address family");
  }
  if (p.length > MaxLength(p.family) || !HostBitsZero(p.addr, 16, p.length)) {
    return Status::InvalidArgument(entry + " (" + FormatSourcePrefix(p) +
                                   ") is not a prefix: bits set past its length");
  }
  return Status::Ok();
}

}  // namespace

bool SourcePrefix::Contains(const proto::Endpoint& src) const {
  if (src.family != family || family == Family::kNone) return false;
  const size_t full = length / 8;
  if (std::memcmp(src.addr.data(), addr.data(), full) != 0) return false;
  const unsigned rest = length % 8;
  if (rest == 0) return true;
  const uint8_t mask = static_cast<uint8_t>(0xFF00u >> rest);
  return (src.addr[full] & mask) == addr[full];
}

Result<SourcePrefix> ParseSourcePrefix(std::string_view text) {
  std::string_view host = text;
  std::string_view len_text;
  const size_t slash = text.find('/');
  if (slash != std::string_view::npos) {
    host = text.substr(0, slash);
    len_text = text.substr(slash + 1);
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) {
    return Bad(text, "expected an IPv4 or IPv6 prefix such as 10.0.0.0/8 or fd00::/8");
  }
  SourcePrefix p;
  const std::string h(host);
  if (host.find(':') == std::string_view::npos) {
    in_addr a4{};
    if (inet_pton(AF_INET, h.c_str(), &a4) != 1) {
      return Bad(text,
                 "expected a numeric IPv4 prefix such as 10.0.0.0/8 (host names are not "
                 "resolved)");
    }
    p.family = Family::kIPv4;
    std::memcpy(p.addr.data(), &a4, 4);
  } else {
    if (host.find('%') != std::string_view::npos) {
      return Bad(text, "a prefix has no IPv6 scope (%interface)");
    }
    in6_addr a6{};
    if (inet_pton(AF_INET6, h.c_str(), &a6) != 1) {
      return Bad(text, "expected a numeric IPv6 prefix such as fd00::/8");
    }
    p.family = Family::kIPv6;
    std::memcpy(p.addr.data(), &a6, 16);
  }
  const uint8_t max = MaxLength(p.family);
  uint32_t length = max;
  if (slash != std::string_view::npos) {
    auto [ptr, ec] = std::from_chars(len_text.data(), len_text.data() + len_text.size(), length);
    if (len_text.empty() || ec != std::errc() || ptr != len_text.data() + len_text.size() ||
        length > max) {
      return Bad(text, "prefix length must be 0.." + std::to_string(max) + " for an " +
                           (p.family == Family::kIPv4 ? "IPv4" : "IPv6") + " prefix");
    }
  }
  p.length = static_cast<uint8_t>(length);
  const size_t bytes = AddressBytes(p.family);
  if (!HostBitsZero(p.addr, bytes, p.length)) {
    SourcePrefix suggestion = p;
    suggestion.addr = Masked(p.addr, bytes, p.length);
    return Bad(text, "bits are set past the prefix length (did you mean " +
                         FormatSourcePrefix(suggestion) + "?)");
  }
  // Canonical form: ::ffff:a.b.c.d/96+n is the IPv4 prefix a.b.c.d/n.
  if (p.family == Family::kIPv6 && p.length >= 96 &&
      std::memcmp(p.addr.data(), kV4MappedPrefix, sizeof(kV4MappedPrefix)) == 0) {
    SourcePrefix v4;
    v4.family = Family::kIPv4;
    v4.length = static_cast<uint8_t>(p.length - 96);
    std::memcpy(v4.addr.data(), p.addr.data() + 12, 4);
    return v4;
  }
  return p;
}

std::string FormatSourcePrefix(const SourcePrefix& p) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (p.family == Family::kIPv4) {
    inet_ntop(AF_INET, p.addr.data(), buf, sizeof(buf));
  } else if (p.family == Family::kIPv6) {
    inet_ntop(AF_INET6, p.addr.data(), buf, sizeof(buf));
  } else {
    return "-";
  }
  return std::string(buf) + "/" + std::to_string(p.length);
}

bool SourceAllowList::Allows(const proto::Endpoint& src) const {
  if (size == 0) return true;
  for (size_t i = 0; i < size && i < prefixes.size(); ++i) {
    if (prefixes[i].Contains(src)) return true;
  }
  return false;
}

Status SourceAllowList::Add(const SourcePrefix& p) {
  if (size >= prefixes.size()) {
    return Status::InvalidArgument("allow: at most " + std::to_string(kMaxAllowPrefixes) +
                                   " prefixes per job");
  }
  Status s = CheckPrefix(p, size);
  if (!s.ok()) return s;
  prefixes[size++] = p;
  return Status::Ok();
}

Status SourceAllowList::Validate() const {
  if (size > prefixes.size()) {
    return Status::InvalidArgument("allow: " + std::to_string(size) + " prefixes, at most " +
                                   std::to_string(kMaxAllowPrefixes) + " per job");
  }
  for (size_t i = 0; i < size; ++i) {
    Status s = CheckPrefix(prefixes[i], i);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Result<SourceAllowList> SourceAllowList::Parse(std::string_view text) {
  SourceAllowList list;
  size_t start = 0;
  size_t given = 0;
  while (start <= text.size()) {
    size_t end = text.find(';', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    ++given;
    auto p = ParseSourcePrefix(item);
    if (!p.ok()) return p.status();
    if (list.size == list.prefixes.size()) continue;  // counted, refused below
    list.prefixes[list.size++] = *p;
  }
  if (given > kMaxAllowPrefixes) {
    return Status::InvalidArgument("allow: " + std::to_string(given) + " prefixes, at most " +
                                   std::to_string(kMaxAllowPrefixes) + " per job");
  }
  return list;
}

std::string SourceAllowList::ToString() const {
  std::string s;
  for (size_t i = 0; i < size && i < prefixes.size(); ++i) {
    if (i > 0) s += ';';
    s += FormatSourcePrefix(prefixes[i]);
  }
  return s;
}

}  // namespace serene::dataplane
