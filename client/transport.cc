#include "client/transport.h"

#include <algorithm>

#include "net/address.h"

namespace serene::client {
namespace {

// Datagrams one receive takes at most (a GRO train counts once).
constexpr size_t kRecvBatch = 64;
// A push leaves in sendmmsg calls of up to 1 MiB of encoded datagrams: with
// MTU-sized rows that is 16 full GSO trains of 44 datagrams per call (64
// datagrams per call, before, cut every third train short: 44 + 20), and
// the arena stays about one L2 cache in size.
constexpr size_t kSendArenaBytes = size_t{1} << 20;
static_assert(kSendArenaBytes >= proto::PacketSize(proto::kMaxValues));
// Smaller timeouts caused spurious retransmissions under CPU contention.
constexpr std::chrono::milliseconds kMinRto{10};
// A conservative rate at which a switch port drains its receive queue
// (measured: 1-2 GB/s for one loop thread on this 2-core machine).
constexpr double kDrainBytesPerSecond = 1e9;
constexpr uint64_t kMaxGroupBuffer = 256ull << 20;

}  // namespace

void RttEstimator::Sample(SteadyClock::duration sample, SteadyClock::time_point now) {
  longest_.Add(sample, now);
  // RFC 6298: SRTT and RTTVAR with gains 1/8 and 1/4.
  if (!have_) {
    srtt_ = sample;
    rttvar_ = sample / 2;
    have_ = true;
    return;
  }
  const auto err = sample > srtt_ ? sample - srtt_ : srtt_ - sample;
  rttvar_ = (3 * rttvar_ + err) / 4;
  srtt_ = (7 * srtt_ + sample) / 8;
}

SteadyClock::duration RttEstimator::Rto(uint32_t attempts) const {
  // Before the first sample: the initial timeout. Then SRTT + 4 RTTVAR, at
  // least the floor (10 ms, or what SetJobShape set) and twice the longest
  // recent round trip, doubling per attempt up to the maximum.
  auto t = have_ ? std::max({srtt_ + 4 * rttvar_, floor_, 2 * longest_.Get()})
                 : std::chrono::duration_cast<SteadyClock::duration>(initial_);
  const auto cap = std::chrono::duration_cast<SteadyClock::duration>(max_);
  for (uint32_t i = 0; i < attempts && t < cap; ++i) t *= 2;
  return std::min(t, cap);
}

Transport::Transport(const ClientOptions& options, net::UdpSocket socket,
                     proto::Endpoint switch_ep, ClientStats* stats)
    : options_(options),
      socket_(std::move(socket)),
      switch_ep_(switch_ep),
      switch_name_(net::FormatEndpoint(switch_ep)),
      stats_(stats),
      recv_(kRecvBatch),
      group_recv_(kRecvBatch),
      send_(net::kMaxBatch),
      send_arena_(kSendArenaBytes),
      last_heard_(SteadyClock::now()),
      received_at_(last_heard_),
      arrived_at_(last_heard_),
      rtt_(options.initial_timeout, options.max_timeout) {}

void Transport::SetJobShape(uint32_t workers, uint64_t elements) {
  const double queue_s = static_cast<double>(workers) * static_cast<double>(elements) * 4.0 /
                         kDrainBytesPerSecond;
  rtt_.SetFloor(std::chrono::duration_cast<SteadyClock::duration>(
      kMinRto + std::chrono::duration<double>(queue_s)));
}

Status Transport::OpenGroup(const std::string& group, uint64_t model_bytes) {
  Result<proto::Endpoint> g = net::ParseEndpoint(group);
  if (!g.ok()) return g.status();
  if (group_socket_.is_open() && group_ == *g) return Status::Ok();
  group_socket_.Close();
  // The group is joined on the interface this host reaches the switch by
  // (the loopback for a switch on this host).
  Result<proto::Endpoint> via = net::RouteSource(switch_ep_);
  if (!via.ok()) return via.status();
  if (via->family != proto::Endpoint::Family::kIPv4) {
    return Status::FailedPrecondition("the switch " + switch_name_ +
                                      " is reached over IPv6; reply groups are IPv4");
  }
  net::UdpSocketOptions so;
  so.address = net::FormatHost(*g);
  so.port = g->port;
  so.reuse_address = true;
  // A whole model, up to 256 MiB, and at least the socket buffer option (the
  // kernel caps it at net.core.rmem_max without CAP_NET_ADMIN).
  const auto option = static_cast<uint64_t>(std::max(options_.socket_buffer_bytes, 0));
  so.recv_buffer_bytes =
      static_cast<int>(std::max(option, std::min(model_bytes, kMaxGroupBuffer)));
  so.gro = options_.offload;
  so.gso = false;
  so.arrival_times = true;  // when rows reached the host (Client::data_arrival)
  Result<net::UdpSocket> sock = net::UdpSocket::Open(so);
  if (!sock.ok()) return sock.status();
  Status s = sock->JoinGroup(*g, *via);
  if (!s.ok()) return s;
  group_socket_ = std::move(*sock);
  group_ = *g;
  return Status::Ok();
}

std::string Transport::local_address() const { return net::FormatEndpoint(socket_.local()); }

Status Transport::Queue(proto::Op op, uint32_t clock, uint32_t row, uint16_t f,
                        std::span<const int32_t> values) {
  const size_t size = proto::PacketSize(values.size());
  if (send_.full() || send_used_ + size > send_arena_.size()) {
    Status s = Flush();
    if (!s.ok()) return s;
  }
  proto::Header h;
  h.op = op;
  h.job = options_.job;
  h.worker = static_cast<uint16_t>(options_.rank);
  h.key = options_.key;
  h.clock = clock;
  h.row = row;
  if (op == proto::Op::kJoin) {
    h.clock = proto::cookie::High(cookie_);
    h.row = proto::cookie::Low(cookie_);
    join_cookie_ = cookie_;
  }
  h.flags = f;
  uint8_t* p = send_arena_.data() + send_used_;
  proto::Encode(h, values, p);
  send_used_ += size;
  send_.Add(switch_ep_, {p, size});
  ++stats_->packets_sent;
  return Status::Ok();
}

Status Transport::Flush() {
  if (send_.empty()) return Status::Ok();
  net::SendResult r = socket_.Send(&send_);
  send_.Clear();
  send_used_ = 0;
  if (r.sent == 0 && r.failed > 0) return r.error;
  return Status::Ok();
}

Status Transport::Send(proto::Op op, uint32_t clock, uint32_t row, uint16_t f) {
  Status s = Queue(op, clock, row, f, {});
  return s.ok() ? Flush() : s;
}

}  // namespace serene::client
