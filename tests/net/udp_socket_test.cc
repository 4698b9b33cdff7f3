// UdpSocket over loopback: binding, batching, dual stack, SO_REUSEPORT,
// truncation, buffer sizes and error messages (net/udp_socket.h).
#include "net/udp_socket.h"

#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "net/address.h"

namespace serene::net {
namespace {

using namespace std::chrono_literals;
using Family = proto::Endpoint::Family;

struct Received {
  proto::Endpoint src;
  std::vector<uint8_t> data;
  proto::Endpoint local;  // the address the datagram reached (RecvBatch::local)
};

UdpSocket OpenOrDie(const UdpSocketOptions& o) {
  auto s = UdpSocket::Open(o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? std::move(*s) : UdpSocket();
}

UdpSocketOptions Opts(const std::string& address, uint16_t port = 0) {
  UdpSocketOptions o;
  o.address = address;
  o.port = port;
  return o;
}

// Receives until `want` datagrams arrived; the 5 s deadline only guards
// against a hang, it is not what the tests measure.
std::vector<Received> RecvN(UdpSocket& sock, size_t want, size_t batch_size = 8) {
  RecvBatch batch(batch_size);
  std::vector<Received> got;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (got.size() < want && std::chrono::steady_clock::now() < deadline) {
    auto n = sock.Recv(&batch, 50ms);
    EXPECT_TRUE(n.ok()) << n.status().message();
    if (!n.ok()) break;
    for (size_t i = 0; i < *n; ++i) {
      auto d = batch.data(i);
      got.push_back({batch.source(i), {d.begin(), d.end()}, batch.local(i)});
    }
  }
  return got;
}

std::vector<uint8_t> Payload(uint32_t i, size_t size = 8) {
  std::vector<uint8_t> p(size, static_cast<uint8_t>(i * 7));
  p[0] = static_cast<uint8_t>(i >> 8);
  p[1] = static_cast<uint8_t>(i);
  return p;
}

bool HaveIPv6Loopback() { return UdpSocket::Open(Opts("::1")).ok(); }

TEST(UdpSocketTest, BindsEphemeralPortAndReportsIt) {
  UdpSocket s = OpenOrDie(Opts("127.0.0.1"));
  ASSERT_TRUE(s.is_open());
  EXPECT_EQ(s.family(), AF_INET);
  EXPECT_NE(s.local().port, 0);
  EXPECT_EQ(FormatHost(s.local()), "127.0.0.1");
  // The chosen port is really bound: another socket without SO_REUSEPORT is refused.
  auto again = UdpSocket::Open(Opts("127.0.0.1", s.local().port));
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find(FormatEndpoint(s.local())), std::string::npos)
      << again.status().message();
  EXPECT_NE(again.status().message().find("in use"), std::string::npos) << again.status().message();
}

TEST(UdpSocketTest, BatchedSendAndReceivePreserveBytesSourcesAndOrder) {
  UdpSocket rx = OpenOrDie(Opts("127.0.0.1"));
  UdpSocket tx = OpenOrDie(Opts("127.0.0.1"));
  constexpr uint32_t kCount = 100;
  std::vector<std::vector<uint8_t>> payloads;
  for (uint32_t i = 0; i < kCount; ++i) payloads.push_back(Payload(i, 8 + i));
  SendBatch batch(32);
  size_t sent = 0;
  for (uint32_t i = 0; i < kCount; ++i) {
    if (batch.full()) {
      SendResult r = tx.Send(&batch);
      EXPECT_TRUE(r.error.ok()) << r.error.message();
      sent += r.sent;
      batch.Clear();
    }
    ASSERT_TRUE(batch.Add(rx.local(), payloads[i]));
  }
  SendResult r = tx.Send(&batch);
  sent += r.sent;
  EXPECT_EQ(r.failed, 0u);
  EXPECT_EQ(sent, kCount);

  auto got = RecvN(rx, kCount, 16);
  ASSERT_EQ(got.size(), kCount);
  for (uint32_t i = 0; i < kCount; ++i) {
    EXPECT_EQ(got[i].data, payloads[i]) << i;
    EXPECT_EQ(got[i].src, tx.local());
  }
}

TEST(UdpSocketTest, RecvReturnsZeroWhenNothingArrives) {
  UdpSocket s = OpenOrDie(Opts("127.0.0.1"));
  RecvBatch batch(4);
  auto n = s.Recv(&batch, 1ms);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u);
  EXPECT_EQ(batch.size(), 0u);
  n = s.Recv(&batch, 0ms);  // a pure poll
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u);
}

TEST(UdpSocketTest, SendToAndReceiveOverIPv6) {
  if (!HaveIPv6Loopback()) GTEST_SKIP() << "no IPv6 loopback";
  UdpSocket rx = OpenOrDie(Opts("::1"));
  UdpSocket tx = OpenOrDie(Opts("::1"));
  EXPECT_EQ(rx.family(), AF_INET6);
  EXPECT_EQ(FormatHost(rx.local()), "::1");
  ASSERT_TRUE(tx.SendTo(rx.local(), Payload(5)).ok());
  auto got = RecvN(rx, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].src, tx.local());
  EXPECT_EQ(got[0].data, Payload(5));
}

TEST(UdpSocketTest, DualStackSocketSeesIPv4PeersAsIPv4AndAnswersThem) {
  if (!HaveIPv6Loopback()) GTEST_SKIP() << "no IPv6 loopback";
  UdpSocket server = OpenOrDie(Opts("::"));
  UdpSocket client = OpenOrDie(Opts("127.0.0.1"));
  auto dst = ParseEndpoint("127.0.0.1:" + std::to_string(server.local().port));
  ASSERT_TRUE(dst.ok());
  ASSERT_TRUE(client.SendTo(*dst, Payload(1)).ok());
  auto got = RecvN(server, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].src.family, Family::kIPv4);  // not ::ffff:127.0.0.1
  EXPECT_EQ(got[0].src, client.local());
  EXPECT_TRUE(server.CanReach(got[0].src));
  // The reply goes back through the IPv6 socket to the IPv4 peer.
  ASSERT_TRUE(server.SendTo(got[0].src, Payload(2)).ok());
  auto reply = RecvN(client, 1);
  ASSERT_EQ(reply.size(), 1u);
  EXPECT_EQ(reply[0].data, Payload(2));
}

TEST(UdpSocketTest, V6OnlySocketRefusesIPv4Destinations) {
  if (!HaveIPv6Loopback()) GTEST_SKIP() << "no IPv6 loopback";
  UdpSocketOptions o = Opts("::");
  o.v6_only = true;
  UdpSocket s = OpenOrDie(o);
  auto v4 = ParseEndpoint("127.0.0.1:9");
  ASSERT_TRUE(v4.ok());
  EXPECT_FALSE(s.CanReach(*v4));
  SendBatch batch(2);
  ASSERT_TRUE(batch.Add(*v4, Payload(1)));
  SendResult r = s.Send(&batch);
  EXPECT_EQ(r.sent, 0u);
  EXPECT_EQ(r.failed, 1u);
  EXPECT_NE(r.error.message().find("127.0.0.1:9"), std::string::npos) << r.error.message();
}

TEST(UdpSocketTest, IPv4SocketCannotSendToIPv6) {
  UdpSocket s = OpenOrDie(Opts("127.0.0.1"));
  auto v6 = ParseEndpoint("[::1]:9");
  ASSERT_TRUE(v6.ok());
  EXPECT_FALSE(s.CanReach(*v6));
  Status st = s.SendTo(*v6, Payload(1));
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("[::1]:9"), std::string::npos) << st.message();
}

TEST(UdpSocketTest, SendSkipsRefusedDatagramsAndSendsTheRest) {
  UdpSocket rx = OpenOrDie(Opts("127.0.0.1"));
  UdpSocket tx = OpenOrDie(Opts("127.0.0.1"));
  auto v6 = ParseEndpoint("[::1]:9");
  ASSERT_TRUE(v6.ok());
  std::vector<uint8_t> a = Payload(1), b = Payload(2);
  SendBatch batch(4);
  ASSERT_TRUE(batch.Add(rx.local(), a));
  ASSERT_TRUE(batch.Add(*v6, a));  // unreachable family: skipped, counted
  ASSERT_TRUE(batch.Add(rx.local(), b));
  SendResult r = tx.Send(&batch);
  EXPECT_EQ(r.sent, 2u);
  EXPECT_EQ(r.failed, 1u);
  EXPECT_FALSE(r.error.ok());
  auto got = RecvN(rx, 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].data, a);
  EXPECT_EQ(got[1].data, b);
}

TEST(UdpSocketTest, ReusePortSpreadsPeersOverSiblingSockets) {
  UdpSocketOptions o = Opts("127.0.0.1");
  o.reuse_port = true;
  UdpSocket first = OpenOrDie(o);
  o.port = first.local().port;
  UdpSocket second = OpenOrDie(o);
  ASSERT_TRUE(second.is_open());
  EXPECT_EQ(second.local(), first.local());

  // 64 peers, one datagram each: the kernel hashes each peer to one socket.
  constexpr size_t kPeers = 64;
  std::vector<UdpSocket> peers;
  for (size_t i = 0; i < kPeers; ++i) {
    peers.push_back(OpenOrDie(Opts("127.0.0.1")));
    ASSERT_TRUE(peers.back().SendTo(first.local(), Payload(static_cast<uint32_t>(i))).ok());
  }
  size_t a = 0, b = 0;
  RecvBatch batch(64);
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (a + b < kPeers && std::chrono::steady_clock::now() < deadline) {
    auto n1 = first.Recv(&batch, 10ms);
    ASSERT_TRUE(n1.ok());
    a += *n1;
    auto n2 = second.Recv(&batch, 10ms);
    ASSERT_TRUE(n2.ok());
    b += *n2;
  }
  EXPECT_EQ(a + b, kPeers);
  // With 64 random flows, one socket getting none has probability 2^-63.
  EXPECT_GT(a, 0u);
  EXPECT_GT(b, 0u);
}

TEST(UdpSocketTest, FlagsTruncatedDatagrams) {
  UdpSocket rx = OpenOrDie(Opts("127.0.0.1"));
  UdpSocket tx = OpenOrDie(Opts("127.0.0.1"));
  ASSERT_TRUE(tx.SendTo(rx.local(), Payload(1, 32)).ok());
  ASSERT_TRUE(tx.SendTo(rx.local(), Payload(2, 16)).ok());
  RecvBatch batch(4, /*max_datagram=*/16);
  size_t seen = 0;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  std::vector<bool> truncated;
  std::vector<size_t> sizes;
  while (seen < 2 && std::chrono::steady_clock::now() < deadline) {
    auto n = rx.Recv(&batch, 50ms);
    ASSERT_TRUE(n.ok());
    for (size_t i = 0; i < *n; ++i) {
      truncated.push_back(batch.truncated(i));
      sizes.push_back(batch.data(i).size());
    }
    seen += *n;
  }
  ASSERT_EQ(seen, 2u);
  EXPECT_TRUE(truncated[0]);
  EXPECT_EQ(sizes[0], 16u);
  EXPECT_FALSE(truncated[1]);
  EXPECT_EQ(sizes[1], 16u);
}

TEST(UdpSocketTest, BufferSizesAreApplied) {
  UdpSocketOptions o = Opts("127.0.0.1");
  o.recv_buffer_bytes = 96 * 1024;
  o.send_buffer_bytes = 80 * 1024;
  UdpSocket s = OpenOrDie(o);
  auto rcv = s.RecvBufferSize();
  auto snd = s.SendBufferSize();
  ASSERT_TRUE(rcv.ok());
  ASSERT_TRUE(snd.ok());
  EXPECT_GE(*rcv, 96 * 1024);  // Linux doubles the request
  EXPECT_GE(*snd, 80 * 1024);
  ASSERT_TRUE(s.SetRecvBufferSize(200 * 1024).ok());
  EXPECT_GE(*s.RecvBufferSize(), 200 * 1024);
}

TEST(UdpSocketTest, BindErrorsNameTheAddress) {
  // 192.0.2.1 (TEST-NET-1) is not an address of this host.
  auto s = UdpSocket::Open(Opts("192.0.2.1", 7000));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Status::Code::kIoError);
  EXPECT_NE(s.status().message().find("192.0.2.1:7000"), std::string::npos) << s.status().message();
  auto bad = UdpSocket::Open(Opts("not-an-address"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not-an-address"), std::string::npos);
}

TEST(UdpSocketTest, MoveTransfersOwnership) {
  UdpSocket a = OpenOrDie(Opts("127.0.0.1"));
  const int fd = a.fd();
  UdpSocket b = std::move(a);
  EXPECT_FALSE(a.is_open());  // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_EQ(b.fd(), fd);
  b.Close();
  EXPECT_FALSE(b.is_open());
}

// --- Source addresses on multi-homed hosts (IP_PKTINFO / IPV6_PKTINFO) ---
// Linux routes all of 127.0.0.0/8 to lo, so 127.0.0.2 and 127.0.0.3 are
// addresses of this host that a socket bound to 0.0.0.0 serves, next to
// 127.0.0.1: a host with several addresses, without configuring any.

proto::Endpoint Host(const std::string& host, uint16_t port) {
  auto ep = ParseHost(host, port);
  EXPECT_TRUE(ep.ok()) << ep.status().message();
  return ep.ok() ? *ep : proto::Endpoint{};
}

TEST(UdpSocketTest, WildcardSocketReportsEachDatagramsDestination) {
  UdpSocket server = OpenOrDie(Opts("0.0.0.0"));
  EXPECT_TRUE(server.learns_destination());
  UdpSocket client = OpenOrDie(Opts("127.0.0.1"));
  const uint16_t port = server.local().port;
  for (const char* to : {"127.0.0.2", "127.0.0.1", "127.0.0.3"}) {
    ASSERT_TRUE(client.SendTo(Host(to, port), Payload(1)).ok());
  }
  auto got = RecvN(server, 3);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].local, Host("127.0.0.2", port));
  EXPECT_EQ(got[1].local, Host("127.0.0.1", port));
  EXPECT_EQ(got[2].local, Host("127.0.0.3", port));
  for (const auto& g : got) EXPECT_EQ(g.src, client.local());
}

TEST(UdpSocketTest, SpecificBindReportsTheBoundAddress) {
  UdpSocket server = OpenOrDie(Opts("127.0.0.1"));
  EXPECT_FALSE(server.learns_destination());
  UdpSocket client = OpenOrDie(Opts("127.0.0.1"));
  ASSERT_TRUE(client.SendTo(server.local(), Payload(1)).ok());
  auto got = RecvN(server, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].local, server.local());
}

TEST(UdpSocketTest, LearningTheDestinationCanBeTurnedOff) {
  UdpSocketOptions o = Opts("0.0.0.0");
  o.learn_destination = false;
  UdpSocket server = OpenOrDie(o);
  EXPECT_FALSE(server.learns_destination());
  UdpSocket client = OpenOrDie(Opts("127.0.0.1"));
  ASSERT_TRUE(client.SendTo(Host("127.0.0.2", server.local().port), Payload(1)).ok());
  auto got = RecvN(server, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FALSE(got[0].local.valid()) << "unknown, not the wildcard";
}

// With arrival_times a datagram's arrival is when the kernel received it,
// however long it then waited to be read; without, when Recv() read it. The
// wildcard socket also learns destinations and takes GRO trains: every
// control message fits beside the timestamp.
TEST(UdpSocketTest, ArrivalIsTheKernelsReceiveTimeNotTheRead) {
  using SteadyClock = std::chrono::steady_clock;
  for (bool stamped : {true, false}) {
    UdpSocketOptions o = Opts("0.0.0.0");
    o.arrival_times = stamped;
    UdpSocket rx = OpenOrDie(o);
    EXPECT_EQ(rx.arrival_times(), stamped);
    UdpSocket tx = OpenOrDie(Opts("127.0.0.1"));
    const auto before_send = SteadyClock::now();
    ASSERT_TRUE(tx.SendTo(Host("127.0.0.1", rx.local().port), Payload(1)).ok());
    std::this_thread::sleep_for(100ms);  // the datagram waits in the socket
    const auto before_read = SteadyClock::now();
    RecvBatch batch(4);
    auto n = rx.Recv(&batch, 5s);
    ASSERT_TRUE(n.ok() && *n == 1u) << stamped;
    EXPECT_TRUE(batch.local(0).valid()) << "the destination is still learnt";
    const auto arrival = batch.arrival(0);
    if (stamped) {
      // Within a millisecond of the send (the steady and wall clocks are read
      // a few microseconds apart), long before the read.
      EXPECT_GE(arrival, before_send - 1ms);
      EXPECT_LT(arrival, before_send + 50ms);
    } else {
      EXPECT_GE(arrival, before_read);
    }
    // The batch's read time is the read, not the arrival; unstamped, the
    // arrival is that read.
    const auto after_read = SteadyClock::now();
    EXPECT_GE(batch.read_at(), before_read) << stamped;
    EXPECT_LE(batch.read_at(), after_read) << stamped;
    if (!stamped) {
      EXPECT_EQ(arrival, batch.read_at());
    }
    EXPECT_LE(arrival, after_read);
  }
}

TEST(UdpSocketTest, WildcardSocketSendsFromTheGivenSourceAddress) {
  UdpSocket server = OpenOrDie(Opts("0.0.0.0"));
  UdpSocket client = OpenOrDie(Opts("127.0.0.1"));
  const uint16_t port = server.local().port;
  // Without a source the kernel's routing picks 127.0.0.1 for a reply to
  // 127.0.0.1: that is what a multi-homed switch must not rely on.
  ASSERT_TRUE(server.SendTo(client.local(), Host("127.0.0.2", 0), Payload(1)).ok());
  std::vector<uint8_t> p2 = Payload(2), p3 = Payload(3), p4 = Payload(4);
  SendBatch batch(4);
  ASSERT_TRUE(batch.Add(client.local(), Host("127.0.0.3", port), p2));
  ASSERT_TRUE(batch.Add(client.local(), p3));  // no preference
  ASSERT_TRUE(batch.Add(client.local(), Host("127.0.0.2", port), p4));
  SendResult r = server.Send(&batch);
  EXPECT_EQ(r.sent, 3u);
  EXPECT_EQ(r.failed, 0u) << r.error.message();
  auto got = RecvN(client, 4);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].src, Host("127.0.0.2", port)) << "the port is always the socket's";
  EXPECT_EQ(got[1].src, Host("127.0.0.3", port));
  EXPECT_EQ(got[2].src, Host("127.0.0.1", port));
  EXPECT_EQ(got[3].src, Host("127.0.0.2", port));
  EXPECT_EQ(got[3].data, p4);
}

TEST(UdpSocketTest, ASourceAddressNotOnTheHostFallsBackToTheKernelsChoice) {
  // 198.51.100.77 (TEST-NET-2) is not an address of this host: the kernel
  // refuses it as a source, and the datagram goes out from what routing picks.
  UdpSocket server = OpenOrDie(Opts("0.0.0.0"));
  UdpSocket client = OpenOrDie(Opts("127.0.0.1"));
  const proto::Endpoint gone = Host("198.51.100.77", 0);
  Status sent = server.SendTo(client.local(), gone, Payload(1));
  ASSERT_TRUE(sent.ok()) << sent.message();
  std::vector<uint8_t> p = Payload(2);
  SendBatch batch(2);
  ASSERT_TRUE(batch.Add(client.local(), gone, p));
  SendResult r = server.Send(&batch);
  EXPECT_EQ(r.sent, 1u);
  EXPECT_EQ(r.failed, 0u) << r.error.message();
  auto got = RecvN(client, 2);
  ASSERT_EQ(got.size(), 2u);
  for (const auto& g : got) EXPECT_EQ(FormatHost(g.src), "127.0.0.1");
}

TEST(UdpSocketTest, CanSendFromTellsWhichSocketsCanUseASourceAddress) {
  UdpSocket wildcard = OpenOrDie(Opts("0.0.0.0"));
  UdpSocket bound = OpenOrDie(Opts("127.0.0.1"));
  const proto::Endpoint peer = Host("127.0.0.9", 5000);
  const proto::Endpoint v6_peer = Host("::1", 5000);
  EXPECT_TRUE(wildcard.CanSendFrom(Host("127.0.0.2", 7), peer));
  EXPECT_TRUE(wildcard.CanSendFrom(proto::Endpoint{}, peer)) << "no preference";
  EXPECT_FALSE(wildcard.CanSendFrom(Host("127.0.0.2", 7), v6_peer)) << "cannot reach";
  EXPECT_TRUE(bound.CanSendFrom(Host("127.0.0.1", 7), peer)) << "its own address, any port";
  EXPECT_FALSE(bound.CanSendFrom(Host("127.0.0.2", 7), peer));
  EXPECT_TRUE(bound.CanSendFrom(Host("0.0.0.0", 0), peer)) << "wildcard: no preference";
  EXPECT_FALSE(wildcard.CanSendFrom(Host("::1", 7), peer)) << "families must match";
}

TEST(UdpSocketTest, DualStackSocketLearnsAndAnswersFromIPv4Destinations) {
  if (!HaveIPv6Loopback()) GTEST_SKIP() << "no IPv6 loopback";
  UdpSocket server = OpenOrDie(Opts("::"));
  EXPECT_TRUE(server.learns_destination());
  UdpSocket client = OpenOrDie(Opts("127.0.0.1"));
  const uint16_t port = server.local().port;
  ASSERT_TRUE(client.SendTo(Host("127.0.0.2", port), Payload(1)).ok());
  auto got = RecvN(server, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].local, Host("127.0.0.2", port)) << "canonical IPv4, not ::ffff:127.0.0.2";
  ASSERT_TRUE(server.SendTo(got[0].src, got[0].local, Payload(2)).ok());
  auto reply = RecvN(client, 1);
  ASSERT_EQ(reply.size(), 1u);
  EXPECT_EQ(reply[0].src, Host("127.0.0.2", port));
}

// A global or unique-local IPv6 address of this host other than ::1, or "".
std::string OtherIPv6Address() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* i = list; i != nullptr && found.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET6) continue;
    const proto::Endpoint ep = FromSockaddr(i->ifa_addr, sizeof(sockaddr_in6));
    if (ep.family != Family::kIPv6 || IsLoopback(ep) ||
        (ep.addr[0] == 0xfe && (ep.addr[1] & 0xc0) == 0x80)) {
      continue;  // ::1, link-local
    }
    if (UdpSocket::Open(Opts(FormatHost(ep))).ok()) found = FormatHost(ep);
  }
  freeifaddrs(list);
  return found;
}

TEST(UdpSocketTest, WildcardIPv6SocketAnswersFromTheAddressReached) {
  if (!HaveIPv6Loopback()) GTEST_SKIP() << "no IPv6 loopback";
  const std::string other = OtherIPv6Address();
  if (other.empty()) {
    GTEST_SKIP() << "this host has no IPv6 address besides ::1 and link-local ones; "
                    "IPV6_PKTINFO is not tested";
  }
  UdpSocketOptions o = Opts("::");
  o.v6_only = true;
  UdpSocket server = OpenOrDie(o);
  UdpSocket client = OpenOrDie(Opts("::1"));
  const uint16_t port = server.local().port;
  ASSERT_TRUE(client.SendTo(Host(other, port), Payload(1)).ok());
  ASSERT_TRUE(client.SendTo(Host("::1", port), Payload(2)).ok());
  auto got = RecvN(server, 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].local, Host(other, port));
  EXPECT_EQ(got[1].local, Host("::1", port));
  // Routing would answer ::1 from ::1; the reply leaves from `other`.
  ASSERT_TRUE(server.SendTo(got[0].src, got[0].local, Payload(3)).ok());
  auto reply = RecvN(client, 1);
  ASSERT_EQ(reply.size(), 1u);
  EXPECT_EQ(reply[0].src, Host(other, port)) << other;
}

// --- Segmentation offload (GSO trains out, GRO trains in) ---

UdpSocketOptions Offload(bool gso, bool gro) {
  UdpSocketOptions o = Opts("127.0.0.1");
  o.gso = gso;
  o.gro = gro;
  return o;
}

// Sends datagrams of `sizes` bytes (numbered payloads) to `dst` in one batch.
SendResult SendSizes(UdpSocket& tx, const proto::Endpoint& dst, const std::vector<size_t>& sizes,
                     std::vector<std::vector<uint8_t>>* payloads) {
  payloads->clear();
  for (size_t i = 0; i < sizes.size(); ++i) {
    payloads->push_back(Payload(static_cast<uint32_t>(i), sizes[i]));
  }
  SendBatch batch(sizes.size());
  for (const auto& p : *payloads) EXPECT_TRUE(batch.Add(dst, p));
  return tx.Send(&batch);
}

void ExpectSameDatagrams(const std::vector<Received>& got,
                         const std::vector<std::vector<uint8_t>>& sent) {
  ASSERT_EQ(got.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) EXPECT_EQ(got[i].data, sent[i]) << "datagram " << i;
}

TEST(UdpSocketOffloadTest, ATrainArrivesAsTheSameDatagramsWithAndWithoutGro) {
  // Equal sizes, then a short last one (a model's short last row).
  const std::vector<size_t> sizes = {1048, 1048, 1048, 1048, 1048, 300};
  for (bool gro : {true, false}) {
    SCOPED_TRACE(gro ? "GRO receiver" : "plain receiver");
    UdpSocket rx = OpenOrDie(Offload(true, gro));
    UdpSocket tx = OpenOrDie(Offload(true, true));
    EXPECT_EQ(rx.gro(), gro);
    std::vector<std::vector<uint8_t>> sent;
    SendResult r = SendSizes(tx, rx.local(), sizes, &sent);
    EXPECT_EQ(r.sent, sizes.size());
    EXPECT_EQ(r.failed, 0u);
    EXPECT_EQ(r.messages, 1u) << "one GSO train";
    ExpectSameDatagrams(RecvN(rx, sizes.size()), sent);
  }
}

TEST(UdpSocketOffloadTest, GroReceiverTakesALoopbackTrainAsOneMessage) {
  UdpSocket rx = OpenOrDie(Offload(true, true));
  UdpSocket tx = OpenOrDie(Offload(true, true));
  std::vector<std::vector<uint8_t>> sent;
  ASSERT_EQ(SendSizes(tx, rx.local(), std::vector<size_t>(40, 1000), &sent).messages, 1u);
  RecvBatch batch(8);
  auto n = rx.Recv(&batch, 5s);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 40u);
  EXPECT_EQ(batch.size(), 40u);
  EXPECT_EQ(batch.messages(), 1u);
  EXPECT_FALSE(batch.full());
  for (size_t i = 0; i < batch.size(); ++i) {
    auto d = batch.data(i);
    EXPECT_EQ(std::vector<uint8_t>(d.begin(), d.end()), sent[i]) << i;
    EXPECT_EQ(batch.source(i), tx.local());
    EXPECT_FALSE(batch.truncated(i));
  }
}

TEST(UdpSocketOffloadTest, TrainsBreakAtALongerDatagramAShortOneAndANewDestination) {
  UdpSocket rx1 = OpenOrDie(Offload(true, true));
  UdpSocket rx2 = OpenOrDie(Offload(true, true));
  UdpSocket tx = OpenOrDie(Offload(true, true));
  std::vector<std::vector<uint8_t>> p;
  for (uint32_t i = 0; i < 9; ++i) p.push_back(Payload(i, i == 3 ? 50 : (i == 4 ? 200 : 100)));
  SendBatch batch(16);
  // Trains: [0 1 2 3] (3 is short: it ends the train), [4 5] (4 is longer
  // than 3: a new train, which the shorter 5 ends), [6 7], then [8] to rx2.
  for (uint32_t i = 0; i < 8; ++i) batch.Add(rx1.local(), p[i]);
  batch.Add(rx2.local(), p[8]);
  SendResult r = tx.Send(&batch);
  EXPECT_EQ(r.sent, 9u);
  EXPECT_EQ(r.messages, 4u);
  auto got1 = RecvN(rx1, 8);
  ASSERT_EQ(got1.size(), 8u);
  for (uint32_t i = 0; i < 8; ++i) EXPECT_EQ(got1[i].data, p[i]) << i;
  auto got2 = RecvN(rx2, 1);
  ASSERT_EQ(got2.size(), 1u);
  EXPECT_EQ(got2[0].data, p[8]);
}

TEST(UdpSocketOffloadTest, TrainsRespectTheSegmentAndByteLimits) {
  UdpSocket rx = OpenOrDie(Offload(true, true));
  UdpSocket tx = OpenOrDie(Offload(true, true));
  rx.SetRecvBufferSize(8 << 20);
  std::vector<std::vector<uint8_t>> sent;
  // 130 small datagrams: trains of 64, 64 and 2.
  SendResult r = SendSizes(tx, rx.local(), std::vector<size_t>(130, 100), &sent);
  EXPECT_EQ(r.sent, 130u);
  EXPECT_EQ(r.messages, 3u);
  ExpectSameDatagrams(RecvN(rx, 130), sent);
  // 20 datagrams of 4000 bytes: 16 fit kMaxGsoBytes, then 4.
  static_assert(16 * 4000 <= kMaxGsoBytes && 17 * 4000 > kMaxGsoBytes);
  r = SendSizes(tx, rx.local(), std::vector<size_t>(20, 4000), &sent);
  EXPECT_EQ(r.sent, 20u);
  EXPECT_EQ(r.messages, 2u);
  ExpectSameDatagrams(RecvN(rx, 20), sent);
}

TEST(UdpSocketOffloadTest, DatagramsBackToBackInOneBufferArriveAsSent) {
  // How the client and the switch encode: datagrams back to back in one
  // arena, which a train hands the kernel as one iovec. Here: a train of
  // five 300-byte datagrams and a short one, all adjacent; then a train
  // that starts right where the first ends and has a datagram elsewhere (a
  // gap of 8 bytes) in its middle: two iovecs.
  UdpSocket rx = OpenOrDie(Offload(true, true));
  UdpSocket tx = OpenOrDie(Offload(true, true));
  std::vector<uint8_t> arena(8192);
  for (size_t i = 0; i < arena.size(); ++i) arena[i] = static_cast<uint8_t>(i * 7 + i / 251);
  std::vector<std::span<const uint8_t>> datagrams;
  size_t at = 0;
  auto take = [&](size_t size) {
    datagrams.emplace_back(arena.data() + at, size);
    at += size;
  };
  for (int i = 0; i < 5; ++i) take(300);
  take(120);  // short: ends the first train
  for (int i = 0; i < 4; ++i) take(500);
  take(500);
  at += 8;  // not adjacent to the one before: a second iovec in this train
  take(500);
  take(500);
  SendBatch batch(32);
  for (const auto& d : datagrams) ASSERT_TRUE(batch.Add(rx.local(), d));
  SendResult r = tx.Send(&batch);
  EXPECT_EQ(r.sent, datagrams.size());
  EXPECT_EQ(r.failed, 0u);
  EXPECT_EQ(r.messages, 2u) << "a train of 6, then one of 7";
  std::vector<std::vector<uint8_t>> sent;
  for (const auto& d : datagrams) sent.emplace_back(d.begin(), d.end());
  ExpectSameDatagrams(RecvN(rx, sent.size()), sent);
}

TEST(UdpSocketOffloadTest, WithoutGsoEveryDatagramIsAMessageAndAGroReceiverStillSplits) {
  UdpSocket rx = OpenOrDie(Offload(false, true));
  UdpSocket tx = OpenOrDie(Offload(false, false));
  EXPECT_FALSE(tx.gso());
  std::vector<std::vector<uint8_t>> sent;
  SendResult r = SendSizes(tx, rx.local(), {500, 500, 500, 20}, &sent);
  EXPECT_EQ(r.sent, 4u);
  EXPECT_EQ(r.messages, 4u);
  ExpectSameDatagrams(RecvN(rx, 4), sent);
}

TEST(UdpSocketOffloadTest, ATrainToAWildcardSocketKeepsItsSourceAddress) {
  // The packet-info control message and UDP_SEGMENT share one message.
  UdpSocketOptions o = Offload(true, true);
  o.address = "0.0.0.0";
  UdpSocket server = OpenOrDie(o);
  UdpSocket peer = OpenOrDie(Offload(true, true));
  const proto::Endpoint to_server = Host("127.0.0.1", server.local().port);
  ASSERT_TRUE(peer.SendTo(to_server, Payload(0)).ok());
  auto hello = RecvN(server, 1);
  ASSERT_EQ(hello.size(), 1u);
  std::vector<std::vector<uint8_t>> p;
  SendBatch batch(8);
  for (uint32_t i = 0; i < 5; ++i) p.push_back(Payload(i, 600));
  for (const auto& d : p) batch.Add(hello[0].src, hello[0].local, d);
  SendResult r = server.Send(&batch);
  EXPECT_EQ(r.sent, 5u);
  EXPECT_EQ(r.messages, 1u);
  auto got = RecvN(peer, 5);
  ASSERT_EQ(got.size(), 5u);
  for (uint32_t i = 0; i < 5; ++i) {
    EXPECT_EQ(got[i].data, p[i]);
    EXPECT_EQ(got[i].src, to_server);
  }
}

// Several sockets of one host bound to a multicast group's address and
// port: each gets one copy of every datagram sent to the group, a GSO train
// split back into its datagrams (with or without GRO), and nothing of
// another group on the same port.
TEST(UdpSocketTest, EveryMemberOfAGroupReceivesEachDatagramOnce) {
  auto port = UdpSocket::Open(Opts("0.0.0.0"));
  ASSERT_TRUE(port.ok());
  const uint16_t p = port->local().port;
  port->Close();
  auto group = ParseHost("239.83.0.9", p);
  auto other = ParseHost("239.83.0.10", p);
  ASSERT_TRUE(group.ok() && other.ok());
  auto loopback = ParseHost("127.0.0.1", 0);
  ASSERT_TRUE(loopback.ok());
  std::vector<UdpSocket> members;
  for (int i = 0; i < 3; ++i) {
    UdpSocketOptions o = Opts("239.83.0.9", p);
    o.reuse_address = true;
    o.gro = i != 2;  // one member without GRO
    members.push_back(OpenOrDie(o));
    Status s = members.back().JoinGroup(*group, *loopback);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  UdpSocketOptions o = Opts("239.83.0.10", p);
  o.reuse_address = true;
  UdpSocket stranger = OpenOrDie(o);
  ASSERT_TRUE(stranger.JoinGroup(*other, *loopback).ok());

  UdpSocket tx = OpenOrDie(Opts("127.0.0.1"));
  constexpr uint32_t kCount = 20;  // one destination, one size: GSO trains
  std::vector<std::vector<uint8_t>> payloads;
  SendBatch batch(kCount);
  for (uint32_t i = 0; i < kCount; ++i) payloads.push_back(Payload(i, 1000));
  for (uint32_t i = 0; i < kCount; ++i) ASSERT_TRUE(batch.Add(*group, payloads[i]));
  SendResult r = tx.Send(&batch);
  ASSERT_TRUE(r.error.ok()) << r.error.message();
  EXPECT_EQ(r.sent, kCount);
  for (size_t m = 0; m < members.size(); ++m) {
    auto got = RecvN(members[m], kCount);
    ASSERT_EQ(got.size(), kCount) << "member " << m;
    for (uint32_t i = 0; i < kCount; ++i) EXPECT_EQ(got[i].data, payloads[i]) << m << " " << i;
    RecvBatch more(8);
    auto extra = members[m].Recv(&more, 20ms);
    ASSERT_TRUE(extra.ok());
    EXPECT_EQ(*extra, 0u) << "member " << m << " got a datagram twice";
  }
  RecvBatch none(8);
  auto n = stranger.Recv(&none, 20ms);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u) << "another group's member received this group's datagrams";
  auto v6 = ParseHost("::1", 0);
  ASSERT_TRUE(v6.ok());
  EXPECT_FALSE(members[0].JoinGroup(*group, *v6).ok()) << "groups are IPv4";
}

TEST(UdpSocketTest, WaitEitherSaysWhichSocketIsReadable) {
  UdpSocket a = OpenOrDie(Opts("127.0.0.1"));
  UdpSocket b = OpenOrDie(Opts("127.0.0.1"));
  auto idle = UdpSocket::WaitEither(a, b, 10ms);
  ASSERT_TRUE(idle.ok());
  EXPECT_EQ(*idle, 0u);
  ASSERT_TRUE(a.SendTo(b.local(), Payload(1)).ok());
  auto ready = UdpSocket::WaitEither(a, b, 5s);
  ASSERT_TRUE(ready.ok());
  EXPECT_EQ(*ready, 2u);
  RecvBatch batch(4);
  auto n = b.RecvQueued(&batch);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1u);
  n = b.RecvQueued(&batch);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u) << "RecvQueued does not wait";
}

}  // namespace
}  // namespace serene::net
