#include "net/address.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>

#include <charconv>
#include <cstring>

namespace serene::net {
namespace {

using Family = proto::Endpoint::Family;

constexpr uint8_t kV4MappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

Status BadAddress(std::string_view text, std::string_view why) {
  return Status::InvalidArgument("bad address '" + std::string(text) + "': " + std::string(why));
}

bool ParsePort(std::string_view s, uint16_t* port) {
  if (s.empty() || s.size() > 5) return false;
  uint32_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || v > 65535) return false;
  *port = static_cast<uint16_t>(v);
  return true;
}

// Parses an interface name or number after '%'.
bool ParseScope(std::string_view s, uint32_t* scope) {
  if (s.empty()) return false;
  uint32_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc() && ptr == s.data() + s.size()) {
    *scope = v;
    return true;
  }
  std::string name(s);
  unsigned idx = if_nametoindex(name.c_str());
  if (idx == 0) return false;
  *scope = idx;
  return true;
}

// Parses `host` (brackets optional for IPv6); errors quote `original`.
Result<proto::Endpoint> ParseHostIn(std::string_view host, uint16_t port,
                                    std::string_view original) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) return BadAddress(original, "empty host");
  proto::Endpoint ep;
  ep.port = port;
  if (host.find(':') == std::string_view::npos) {
    std::string h(host);
    in_addr a4{};
    if (inet_pton(AF_INET, h.c_str(), &a4) != 1) {
      return BadAddress(original,
                        "expected a numeric IPv4 address (a.b.c.d) or IPv6 address (::1); "
                        "host names are not resolved");
    }
    ep.family = Family::kIPv4;
    std::memcpy(ep.addr.data(), &a4, 4);
    return ep;
  }
  std::string_view addr_part = host;
  size_t pct = host.find('%');
  if (pct != std::string_view::npos) {
    addr_part = host.substr(0, pct);
    if (!ParseScope(host.substr(pct + 1), &ep.scope_id)) {
      return BadAddress(
          original, "unknown IPv6 scope (interface) '" + std::string(host.substr(pct + 1)) + "'");
    }
  }
  std::string h(addr_part);
  in6_addr a6{};
  if (inet_pton(AF_INET6, h.c_str(), &a6) != 1) {
    return BadAddress(original, "expected a numeric IPv6 address such as ::1 or fe80::1%eth0");
  }
  if (std::memcmp(&a6, kV4MappedPrefix, sizeof(kV4MappedPrefix)) == 0) {
    ep.family = Family::kIPv4;  // canonical form of ::ffff:a.b.c.d
    std::memcpy(ep.addr.data(), reinterpret_cast<const uint8_t*>(&a6) + 12, 4);
    ep.scope_id = 0;
    return ep;
  }
  ep.family = Family::kIPv6;
  std::memcpy(ep.addr.data(), &a6, 16);
  return ep;
}

}  // namespace

Result<proto::Endpoint> ParseHost(std::string_view host, uint16_t port) {
  return ParseHostIn(host, port, host);
}

Result<proto::Endpoint> ParseEndpoint(std::string_view text) {
  std::string_view host, port_text;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return BadAddress(text, "expected [IPv6]:port, e.g. [::1]:7000");
    }
    host = text.substr(0, close + 1);
    port_text = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return BadAddress(text, "missing port; expected host:port, e.g. 127.0.0.1:7000");
    }
    if (text.find(':') != colon) {
      return BadAddress(text, "IPv6 addresses need brackets, e.g. [::1]:7000");
    }
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  }
  uint16_t port = 0;
  if (!ParsePort(port_text, &port)) {
    return BadAddress(text, "port '" + std::string(port_text) + "' is not a number 0..65535");
  }
  return ParseHostIn(host, port, text);
}

std::string FormatHost(const proto::Endpoint& ep) {
  char buf[INET6_ADDRSTRLEN + 16] = {};
  if (ep.family == Family::kIPv4) {
    inet_ntop(AF_INET, ep.addr.data(), buf, sizeof(buf));
    return buf;
  }
  if (ep.family == Family::kIPv6) {
    inet_ntop(AF_INET6, ep.addr.data(), buf, sizeof(buf));
    std::string s = buf;
    if (ep.scope_id != 0) s += "%" + std::to_string(ep.scope_id);
    return s;
  }
  return "-";
}

std::string FormatEndpoint(const proto::Endpoint& ep) {
  if (ep.family == Family::kIPv4) return FormatHost(ep) + ":" + std::to_string(ep.port);
  if (ep.family == Family::kIPv6) return "[" + FormatHost(ep) + "]:" + std::to_string(ep.port);
  return "-";
}

proto::Endpoint Ipv4Endpoint(uint32_t host_order_ip, uint16_t port) {
  proto::Endpoint ep;
  if (host_order_ip == 0) return ep;
  ep.family = Family::kIPv4;
  ep.port = port;
  for (int i = 0; i < 4; ++i) ep.addr[i] = static_cast<uint8_t>(host_order_ip >> (24 - 8 * i));
  return ep;
}

uint32_t Ipv4Of(const proto::Endpoint& ep) {
  if (ep.family != Family::kIPv4) return 0;
  uint32_t ip = 0;
  for (int i = 0; i < 4; ++i) ip = (ip << 8) | ep.addr[i];
  return ip;
}

proto::Endpoint FromSockaddr(const sockaddr* sa, socklen_t len) {
  proto::Endpoint ep;
  if (sa == nullptr) return ep;
  if (sa->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    sockaddr_in sin;
    std::memcpy(&sin, sa, sizeof(sin));
    ep.family = Family::kIPv4;
    ep.port = ntohs(sin.sin_port);
    std::memcpy(ep.addr.data(), &sin.sin_addr, 4);
  } else if (sa->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    sockaddr_in6 sin6;
    std::memcpy(&sin6, sa, sizeof(sin6));
    ep.port = ntohs(sin6.sin6_port);
    const auto* bytes = reinterpret_cast<const uint8_t*>(&sin6.sin6_addr);
    if (std::memcmp(bytes, kV4MappedPrefix, sizeof(kV4MappedPrefix)) == 0) {
      ep.family = Family::kIPv4;
      std::memcpy(ep.addr.data(), bytes + 12, 4);
    } else {
      ep.family = Family::kIPv6;
      std::memcpy(ep.addr.data(), bytes, 16);
      ep.scope_id = sin6.sin6_scope_id;
    }
  }
  return ep;
}

socklen_t ToSockaddr(const proto::Endpoint& ep, int socket_family, sockaddr_storage* out) {
  std::memset(out, 0, sizeof(*out));
  if (socket_family == AF_INET) {
    if (ep.family != Family::kIPv4) return 0;
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_port = htons(ep.port);
    std::memcpy(&sin.sin_addr, ep.addr.data(), 4);
    std::memcpy(out, &sin, sizeof(sin));
    return sizeof(sin);
  }
  if (socket_family == AF_INET6) {
    sockaddr_in6 sin6{};
    sin6.sin6_family = AF_INET6;
    sin6.sin6_port = htons(ep.port);
    auto* bytes = reinterpret_cast<uint8_t*>(&sin6.sin6_addr);
    if (ep.family == Family::kIPv4) {
      std::memcpy(bytes, kV4MappedPrefix, sizeof(kV4MappedPrefix));
      std::memcpy(bytes + 12, ep.addr.data(), 4);
    } else if (ep.family == Family::kIPv6) {
      std::memcpy(bytes, ep.addr.data(), 16);
      sin6.sin6_scope_id = ep.scope_id;
    } else {
      return 0;
    }
    std::memcpy(out, &sin6, sizeof(sin6));
    return sizeof(sin6);
  }
  return 0;
}

bool IsLoopback(const proto::Endpoint& ep) {
  if (ep.family == Family::kIPv4) return ep.addr[0] == 127;
  if (ep.family == Family::kIPv6) {
    for (size_t i = 0; i < 15; ++i) {
      if (ep.addr[i] != 0) return false;
    }
    return ep.addr[15] == 1;
  }
  return false;
}

bool IsWildcard(const proto::Endpoint& ep) {
  if (ep.family == Family::kNone) return false;
  const size_t n = ep.family == Family::kIPv4 ? 4 : 16;
  for (size_t i = 0; i < n; ++i) {
    if (ep.addr[i] != 0) return false;
  }
  return true;
}

}  // namespace serene::net
