// Conversions between proto::Endpoint (the data plane's plain-bytes address),
// the kernel's sockaddr and text ("127.0.0.1:7000", "[::1]:7000",
// "[fe80::1%eth0]:7000").
//
// Endpoints are canonical: an IPv4 peer seen through a dual-stack IPv6 socket
// (as ::ffff:a.b.c.d) is stored as an IPv4 endpoint, and converted back to the
// mapped form only when it is sent through an IPv6 socket. So the same worker
// has the same Endpoint whichever socket it reaches, and the data plane's
// address checks compare like with like.
//
// Only numeric addresses are accepted: no DNS lookups (a switch must not block
// on a resolver). All functions are pure and thread-safe.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "proto/endpoint.h"

namespace serene::net {

// Parses "a.b.c.d:port", "[v6]:port" or "[v6%scope]:port" (scope: interface
// name or number). Port 0..65535.
Result<proto::Endpoint> ParseEndpoint(std::string_view text);

// Parses a numeric host without a port ("0.0.0.0", "::", "::1", "[::1]",
// "fe80::1%eth0") and pairs it with `port`.
Result<proto::Endpoint> ParseHost(std::string_view host, uint16_t port);

// "127.0.0.1:7000", "[::1]:7000", "[fe80::1%2]:7000"; "-" for an invalid endpoint.
std::string FormatEndpoint(const proto::Endpoint& ep);
// The address without the port: "127.0.0.1", "::1".
std::string FormatHost(const proto::Endpoint& ep);

// Converts a kernel address to an Endpoint (IPv4-mapped IPv6 becomes IPv4).
// Returns an invalid Endpoint for families other than AF_INET/AF_INET6.
proto::Endpoint FromSockaddr(const sockaddr* sa, socklen_t len);

// Writes `ep` as an address usable on a socket of `socket_family` (AF_INET or
// AF_INET6): IPv4 endpoints are mapped into ::ffff:0:0/96 for IPv6 sockets.
// Returns the address length, or 0 if the socket cannot reach that family
// (an IPv6 endpoint on an IPv4 socket, or an invalid endpoint).
socklen_t ToSockaddr(const proto::Endpoint& ep, int socket_family, sockaddr_storage* out);

// An IPv4 endpoint from a host-order address (as P4 registers and tables hold
// it); invalid for 0 (0.0.0.0 means "none" there).
proto::Endpoint Ipv4Endpoint(uint32_t host_order_ip, uint16_t port);
// The host-order IPv4 address of an IPv4 endpoint; 0 for any other.
uint32_t Ipv4Of(const proto::Endpoint& ep);

// True for 127.0.0.0/8 and ::1.
bool IsLoopback(const proto::Endpoint& ep);
// True for 0.0.0.0 and ::.
bool IsWildcard(const proto::Endpoint& ep);

}  // namespace serene::net
