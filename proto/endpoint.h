// Endpoint: an IPv4 or IPv6 UDP address as plain bytes.
//
// The data plane learns a worker's address at JOIN and sends replies there,
// but it must not depend on sockets; Endpoint is the POD it stores (like a
// P4 register holding an address). net/ converts it to and from sockaddr.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>

namespace serene::proto {

struct Endpoint {
  enum class Family : uint8_t { kNone = 0, kIPv4 = 4, kIPv6 = 6 };

  Family family = Family::kNone;
  uint16_t port = 0;                  // host order
  std::array<uint8_t, 16> addr = {};  // IPv4 uses the first 4 bytes (network order)
  uint32_t scope_id = 0;              // IPv6 link-local scope

  bool valid() const { return family != Family::kNone; }

  friend bool operator==(const Endpoint& a, const Endpoint& b) {
    return a.family == b.family && a.port == b.port && a.addr == b.addr &&
           a.scope_id == b.scope_id;
  }
};

}  // namespace serene::proto
