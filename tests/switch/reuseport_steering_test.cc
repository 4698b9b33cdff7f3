// SteerByRank: the sockets of one SO_REUSEPORT group each get the ranks
// (job + worker) mod N, from many source addresses, every datagram of a rank
// on the same socket (switch/reuseport_steering.h).
#include "switch/reuseport_steering.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <memory>
#include <vector>

#include "udp_peer.h"

namespace serene::switchd::testing {
namespace {

// The socket of `group` a datagram reached (waiting at most 5 s), or -1.
int ReceivingSocket(const std::vector<net::UdpSocket>& group) {
  std::vector<pollfd> fds;
  for (const auto& s : group) fds.push_back(pollfd{s.fd(), POLLIN, 0});
  if (poll(fds.data(), fds.size(), 5000) <= 0) return -1;
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents & POLLIN) {
      uint8_t buf[2048];
      (void)recv(fds[i].fd, buf, sizeof(buf), MSG_DONTWAIT);
      return static_cast<int>(i);
    }
  }
  return -1;
}

TEST(ReuseportSteering, EachRankGoesToSocketJobPlusWorkerModN) {
  constexpr uint32_t kSockets = 3;
  std::vector<net::UdpSocket> group;
  uint16_t port = 0;
  for (uint32_t i = 0; i < kSockets; ++i) {
    net::UdpSocketOptions o;
    o.address = "127.0.0.1";
    o.port = port;
    o.reuse_port = true;
    auto s = net::UdpSocket::Open(o);
    ASSERT_TRUE(s.ok()) << s.status().message();
    port = s->local().port;
    group.push_back(std::move(*s));
  }
  ASSERT_TRUE(SteerByRank(group[0].fd(), kSockets).ok());

  // Each rank from two source addresses, several datagrams each.
  for (uint16_t job : {1, 7}) {
    for (uint16_t worker = 0; worker < 8; ++worker) {
      for (int peer_i = 0; peer_i < 2; ++peer_i) {
        UdpPeer peer;
        for (int k = 0; k < 3; ++k) {
          Request r;
          r.job = job;
          r.worker = worker;
          ASSERT_TRUE(peer.Send(group[0].local(), r));
          EXPECT_EQ(ReceivingSocket(group), static_cast<int>((job + worker) % kSockets))
              << "job " << job << " worker " << worker;
        }
      }
    }
  }
}

}  // namespace
}  // namespace serene::switchd::testing
