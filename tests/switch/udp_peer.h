// Test helpers for the switch: build request datagrams with proto::Encode and
// play a worker over a real UDP socket (send, receive and decode replies).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "net/udp_socket.h"
#include "proto/codec.h"

namespace serene::switchd::testing {

struct Request {
  proto::Op op = proto::Op::kJoin;
  uint16_t job = 1;
  uint16_t worker = 0;
  uint32_t key = 0;
  uint32_t clock = 0;
  uint32_t row = 0;
  std::vector<int32_t> values;
  uint16_t flags = 0;
};

// Encodes `r` into a datagram.
std::vector<uint8_t> Encode(const Request& r);

struct Reply {
  proto::Endpoint src;
  proto::Header header;
  std::vector<int32_t> values;
};

// One worker: a UDP socket bound to an ephemeral port of `host`. Like a
// worker, it answers a COOKIE that answers its JOIN (docs/protocol.md,
// "Return routability") with the same JOIN carrying the cookie, and Next()
// does not return that COOKIE: a test sees the JOIN_ACK or ERROR of the
// JOIN, one round trip later (set_echo_cookies(false) to see the COOKIE).
class UdpPeer {
 public:
  explicit UdpPeer(const std::string& host = "127.0.0.1");

  bool ok() const { return socket_.is_open(); }
  const proto::Endpoint& local() const { return socket_.local(); }

  // Sends to `dst` (the switch); false if the socket refused.
  bool Send(const proto::Endpoint& dst, const Request& r);
  bool SendRaw(const proto::Endpoint& dst, std::span<const uint8_t> datagram);

  // The next reply, waiting at most `guard` (a hang guard, not a timing
  // assertion). Undecodable datagrams fail the test. nullopt on timeout.
  std::optional<Reply> Next(std::chrono::milliseconds guard = std::chrono::seconds(5));

  void set_echo_cookies(bool on) { echo_cookies_ = on; }
  // COOKIEs answered so far (each with a JOIN).
  uint64_t cookies_echoed() const { return cookies_echoed_; }

 private:
  net::UdpSocket socket_;
  net::RecvBatch batch_{16};
  std::vector<Reply> queued_;  // received in one batch, not yet returned
  size_t next_ = 0;
  bool echo_cookies_ = true;
  std::optional<Request> last_join_;  // the last JOIN sent, and where to
  proto::Endpoint last_join_dst_;
  uint64_t cookies_echoed_ = 0;
};

}  // namespace serene::switchd::testing
