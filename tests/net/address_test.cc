// Endpoint parsing, formatting and sockaddr conversion (net/address.h).
#include "net/address.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstring>

namespace serene::net {
namespace {

using Family = proto::Endpoint::Family;

TEST(UdpAddressTest, ParsesAndFormatsIPv4) {
  auto ep = ParseEndpoint("127.0.0.1:7000");
  ASSERT_TRUE(ep.ok()) << ep.status().message();
  EXPECT_EQ(ep->family, Family::kIPv4);
  EXPECT_EQ(ep->port, 7000);
  EXPECT_EQ(ep->addr[0], 127);
  EXPECT_EQ(ep->addr[3], 1);
  EXPECT_EQ(FormatEndpoint(*ep), "127.0.0.1:7000");
  EXPECT_EQ(FormatHost(*ep), "127.0.0.1");
  EXPECT_TRUE(IsLoopback(*ep));
  EXPECT_FALSE(IsWildcard(*ep));
}

TEST(UdpAddressTest, ParsesAndFormatsIPv6) {
  auto ep = ParseEndpoint("[::1]:65535");
  ASSERT_TRUE(ep.ok()) << ep.status().message();
  EXPECT_EQ(ep->family, Family::kIPv6);
  EXPECT_EQ(ep->port, 65535);
  EXPECT_EQ(ep->addr[15], 1);
  EXPECT_EQ(FormatEndpoint(*ep), "[::1]:65535");
  EXPECT_TRUE(IsLoopback(*ep));

  auto scoped = ParseEndpoint("[fe80::1%7]:9");
  ASSERT_TRUE(scoped.ok()) << scoped.status().message();
  EXPECT_EQ(scoped->scope_id, 7u);
  EXPECT_EQ(FormatEndpoint(*scoped), "[fe80::1%7]:9");
  auto lo = ParseEndpoint("[fe80::1%lo]:9");
  ASSERT_TRUE(lo.ok()) << lo.status().message();
  EXPECT_NE(lo->scope_id, 0u);
}

TEST(UdpAddressTest, ParsesHostsWithoutPort) {
  auto any4 = ParseHost("0.0.0.0", 7000);
  ASSERT_TRUE(any4.ok());
  EXPECT_TRUE(IsWildcard(*any4));
  EXPECT_EQ(any4->port, 7000);
  auto any6 = ParseHost("::", 1);
  ASSERT_TRUE(any6.ok());
  EXPECT_EQ(any6->family, Family::kIPv6);
  EXPECT_TRUE(IsWildcard(*any6));
  auto bracketed = ParseHost("[::1]", 2);
  ASSERT_TRUE(bracketed.ok());
  EXPECT_EQ(FormatEndpoint(*bracketed), "[::1]:2");
}

TEST(UdpAddressTest, V4MappedTextIsCanonicalIPv4) {
  auto ep = ParseEndpoint("[::ffff:10.1.2.3]:80");
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(ep->family, Family::kIPv4);
  EXPECT_EQ(FormatEndpoint(*ep), "10.1.2.3:80");
}

TEST(UdpAddressTest, RefusesMalformedAddressesWithTheValue) {
  const char* bad[] = {"127.0.0.1",      "127.0.0.1:99999",
                       "127.0.0.1:-1",   "::1:7000",
                       "[::1]7000",      "[::1]:",
                       "[::1",           "localhost:7000",
                       "1.2.3:5",        "256.0.0.1:5",
                       ":7000",          "[fe80::1%nosuchif0]:1",
                       "127.0.0.1:70x0", ""};
  for (const char* text : bad) {
    auto ep = ParseEndpoint(text);
    EXPECT_FALSE(ep.ok()) << text;
    if (!ep.ok()) {
      EXPECT_NE(ep.status().message().find("'" + std::string(text) + "'"), std::string::npos)
          << ep.status().message();
      EXPECT_EQ(ep.status().code(), Status::Code::kInvalidArgument);
    }
  }
  EXPECT_FALSE(ParseHost("example.org", 1).ok());
  EXPECT_FALSE(ParseHost("", 1).ok());
}

TEST(UdpAddressTest, SockaddrRoundTrip) {
  for (const char* text : {"127.0.0.1:7000", "[::1]:7000", "[fe80::1%3]:1", "10.0.0.255:0"}) {
    auto ep = ParseEndpoint(text);
    ASSERT_TRUE(ep.ok());
    const int family = ep->family == Family::kIPv4 ? AF_INET : AF_INET6;
    sockaddr_storage ss;
    socklen_t len = ToSockaddr(*ep, family, &ss);
    ASSERT_GT(len, 0u) << text;
    EXPECT_EQ(FromSockaddr(reinterpret_cast<const sockaddr*>(&ss), len), *ep) << text;
  }
}

TEST(UdpAddressTest, IPv4ThroughIPv6SocketIsMappedAndUnmapped) {
  auto ep = ParseEndpoint("192.0.2.7:4242");
  ASSERT_TRUE(ep.ok());
  sockaddr_storage ss;
  socklen_t len = ToSockaddr(*ep, AF_INET6, &ss);
  ASSERT_EQ(len, sizeof(sockaddr_in6));
  sockaddr_in6 sin6;
  std::memcpy(&sin6, &ss, sizeof(sin6));
  EXPECT_EQ(sin6.sin6_family, AF_INET6);
  EXPECT_TRUE(IN6_IS_ADDR_V4MAPPED(&sin6.sin6_addr));
  EXPECT_EQ(ntohs(sin6.sin6_port), 4242);
  // Back from the kernel's mapped form: the canonical IPv4 endpoint.
  EXPECT_EQ(FromSockaddr(reinterpret_cast<const sockaddr*>(&ss), len), *ep);
}

TEST(UdpAddressTest, IPv6CannotGoThroughIPv4Socket) {
  auto ep = ParseEndpoint("[::1]:1");
  ASSERT_TRUE(ep.ok());
  sockaddr_storage ss;
  EXPECT_EQ(ToSockaddr(*ep, AF_INET, &ss), 0u);
  EXPECT_EQ(ToSockaddr(proto::Endpoint{}, AF_INET6, &ss), 0u);
  EXPECT_EQ(FormatEndpoint(proto::Endpoint{}), "-");
}

TEST(UdpAddressTest, UnknownFamilyGivesInvalidEndpoint) {
  sockaddr_storage ss{};
  ss.ss_family = AF_UNIX;
  EXPECT_FALSE(FromSockaddr(reinterpret_cast<const sockaddr*>(&ss), sizeof(ss)).valid());
  EXPECT_FALSE(FromSockaddr(nullptr, 0).valid());
}

TEST(UdpAddressTest, HostOrderIPv4RoundTrip) {
  const proto::Endpoint ep = Ipv4Endpoint(0x0A000102, 7000);
  EXPECT_EQ(FormatEndpoint(ep), "10.0.1.2:7000");
  EXPECT_EQ(Ipv4Of(ep), 0x0A000102u);
  EXPECT_EQ(Ipv4Of(*ParseEndpoint("192.168.7.9:1")), 0xC0A80709u);
  EXPECT_FALSE(Ipv4Endpoint(0, 7000).valid()) << "0.0.0.0 stands for no address";
  EXPECT_EQ(Ipv4Of(*ParseEndpoint("[::1]:7000")), 0u);
}

}  // namespace
}  // namespace serene::net
