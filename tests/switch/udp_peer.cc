#include "udp_peer.h"

#include <gtest/gtest.h>

namespace serene::switchd::testing {

std::vector<uint8_t> Encode(const Request& r) {
  proto::Header h;
  h.op = r.op;
  h.job = r.job;
  h.worker = r.worker;
  h.key = r.key;
  h.clock = r.clock;
  h.row = r.row;
  h.flags = r.flags;
  std::vector<uint8_t> buf(proto::PacketSize(r.values.size()));
  buf.resize(proto::Encode(h, r.values, buf.data()));
  return buf;
}

UdpPeer::UdpPeer(const std::string& host) {
  net::UdpSocketOptions o;
  o.address = host;
  auto s = net::UdpSocket::Open(o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (s.ok()) socket_ = std::move(*s);
}

bool UdpPeer::Send(const proto::Endpoint& dst, const Request& r) {
  if (r.op == proto::Op::kJoin) {
    last_join_ = r;
    last_join_dst_ = dst;
  }
  const auto d = Encode(r);
  return SendRaw(dst, d);
}

bool UdpPeer::SendRaw(const proto::Endpoint& dst, std::span<const uint8_t> datagram) {
  Status s = socket_.SendTo(dst, datagram);
  EXPECT_TRUE(s.ok()) << s.message();
  return s.ok();
}

std::optional<Reply> UdpPeer::Next(std::chrono::milliseconds guard) {
  const auto deadline = std::chrono::steady_clock::now() + guard;
  while (next_ == queued_.size()) {
    queued_.clear();
    next_ = 0;
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= decltype(left)::zero()) return std::nullopt;
    auto n = socket_.Recv(&batch_, left);
    EXPECT_TRUE(n.ok()) << n.status().message();
    if (!n.ok()) return std::nullopt;
    for (size_t i = 0; i < *n; ++i) {
      auto data = batch_.data(i);
      proto::PacketView v;
      const proto::ParseError e = proto::Decode(data.data(), data.size(), &v);
      EXPECT_EQ(e, proto::ParseError::kOk) << "the switch sent a malformed packet";
      if (e != proto::ParseError::kOk) continue;
      Reply r{batch_.source(i), v.header, {}};
      for (size_t k = 0; k < v.header.count; ++k) r.values.push_back(v.Value(k));
      if (echo_cookies_ && v.header.op == proto::Op::kCookie && last_join_ &&
          proto::cookie::AnsweredOp(v.header.flags) == proto::Op::kJoin &&
          v.header.worker == last_join_->worker && v.header.job == last_join_->job) {
        Request again = *last_join_;
        again.clock = v.header.clock;
        again.row = v.header.row;
        ++cookies_echoed_;
        if (!SendRaw(last_join_dst_, Encode(again))) return std::nullopt;
        continue;
      }
      queued_.push_back(std::move(r));
    }
  }
  return queued_[next_++];
}

}  // namespace serene::switchd::testing
