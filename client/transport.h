// Transport: a rank's UDP socket towards the switch — batched sends, filtered
// receives and the round-trip estimate every retransmission timer uses.
//
// Requests are encoded into a send batch (Queue) and leave with one sendmmsg
// (Flush). Receive() hands the operation only the replies of this job, rank
// and key, and notes what every reply says about the job (FINISHED,
// SATURATED) and when the switch was last heard.
//
// JOIN cookies (docs/protocol.md, "Return routability"): Receive() keeps the
// cookie of the last COOKIE, and every JOIN queued carries it (in clock and
// row, whatever the caller passes), so every way a rank joins — the first
// JOIN, a probe, a rejoin after an eviction, a recovery — echoes it.
//
// The job's reply group (OpenGroup): a second socket, bound to the group's
// multicast address and port and joined on the interface that reaches the
// switch, receives the rows the switch answers to the group. Receive() waits
// on both sockets and also hands over group READ_REPLYs answering another
// rank of the job (header.worker is that rank's).
//
// Not thread-safe: one per Client.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "client/reorder_window.h"
#include "client/windowed_max.h"
#include "include/serene/client.h"
#include "net/udp_socket.h"
#include "proto/codec.h"
#include "proto/endpoint.h"

namespace serene::client {

using SteadyClock = std::chrono::steady_clock;

// RFC 6298 round-trip estimate with exponential backoff per attempt.
class RttEstimator {
 public:
  RttEstimator(std::chrono::milliseconds initial, std::chrono::milliseconds max)
      : initial_(initial), max_(max) {}

  // A round trip measured at `now` (Karn: first transmissions only).
  void Sample(SteadyClock::duration sample, SteadyClock::time_point now);
  // Raises the lowest timeout above its 10 ms default (see Transport::SetJobShape).
  void SetFloor(SteadyClock::duration floor) { floor_ = floor; }
  SteadyClock::duration floor() const { return floor_; }
  // The timeout after `attempts` retransmissions of one request.
  SteadyClock::duration Rto(uint32_t attempts) const;

 private:
  std::chrono::milliseconds initial_;
  std::chrono::milliseconds max_;
  bool have_ = false;
  SteadyClock::duration floor_ = std::chrono::milliseconds(10);
  SteadyClock::duration srtt_{0};
  // The longest round trip of the current and the previous second: a timeout
  // below a round trip this machine just took (a scheduling stall, a queue
  // at the switch) would fire for replies that are only late.
  WindowedMax longest_;
  SteadyClock::duration rttvar_{0};
};

class Transport {
 public:
  Transport(const ClientOptions& options, net::UdpSocket socket, proto::Endpoint switch_ep,
            ClientStats* stats);

  // Encodes a request into the send batch, flushing first when it is full.
  Status Queue(proto::Op op, uint32_t clock, uint32_t row, uint16_t flags,
               std::span<const int32_t> values);
  Status Flush();
  // Queue + Flush.
  Status Send(proto::Op op, uint32_t clock, uint32_t row, uint16_t flags);

  // Subscribes to the job's reply group "A.B.C.D:PORT" (a no-op if already
  // subscribed to it), with room for `model_bytes` of rows queued (peers'
  // READs bring rows while this rank computes or pushes). On failure the
  // transport stays without a group.
  Status OpenGroup(const std::string& group, uint64_t model_bytes);
  // Leaves the group (it does not reach this rank: PullOp::GroupSilent).
  void CloseGroup() { group_socket_.Close(); }
  // READs may ask for replies to the group (flag GROUP).
  bool group_open() const { return group_socket_.is_open(); }

  // Receives for at most `timeout` and calls handle(view) for every reply of
  // this job and rank, and every group READ_REPLY of the job; stops early
  // when handle returns true.
  template <typename Handler>
  Status Receive(SteadyClock::duration timeout, Handler&& handle);

  // The last Receive filled its batch: more datagrams may be queued.
  bool backlog() const { return backlog_; }
  SteadyClock::time_point last_heard() const { return last_heard_; }
  // When the datagrams a Receive handler is given were read: one clock read
  // per batch, not per row (a clock read is dear in some VMs, and a pull of
  // small rows handles thousands).
  SteadyClock::time_point received_at() const { return received_at_; }
  // When the datagram a Receive handler is given reached this host (the
  // kernel's receive time): it may have waited for this process.
  SteadyClock::time_point arrived_at() const { return arrived_at_; }
  // The latest arrival of the data taken since ResetDataArrival: replies that
  // made progress and rows kept for a pull (NoteData). min(): none yet.
  void NoteData() { data_arrival_ = std::max(data_arrival_, arrived_at_); }
  void ResetDataArrival() { data_arrival_ = SteadyClock::time_point::min(); }
  SteadyClock::time_point data_arrival() const { return data_arrival_; }
  bool finished() const { return finished_; }
  // The last COOKIE's cookie (0: none yet), and whether the last JOIN sent
  // carried another one: a COOKIE answering a JOIN then asks for a new JOIN.
  uint64_t cookie() const { return cookie_; }
  bool cookie_unused() const { return cookie_ != join_cookie_; }
  bool saturated() const { return saturated_; }

  RttEstimator& rtt() { return rtt_; }
  ReorderWindow& reorder() { return reorder_; }
  // Sizes the timeout floor to the job: a request may legitimately wait at
  // the switch behind one push of every rank (workers x elements x 4 bytes,
  // which the switch's receive buffer is sized to hold), so a timer shorter
  // than the time to drain that queue only causes spurious retransmissions.
  // Losses inside a window are still repaired at once (fast retransmit).
  void SetJobShape(uint32_t workers, uint64_t elements);
  const std::string& switch_name() const { return switch_name_; }
  std::string local_address() const;
  const ClientOptions& options() const { return options_; }

 private:
  const ClientOptions& options_;
  net::UdpSocket socket_;
  proto::Endpoint switch_ep_;
  std::string switch_name_;
  ClientStats* stats_;
  net::RecvBatch recv_;
  net::UdpSocket group_socket_;
  proto::Endpoint group_;
  net::RecvBatch group_recv_;
  net::SendBatch send_;
  std::vector<uint8_t> send_arena_;
  size_t send_used_ = 0;
  bool backlog_ = false;
  SteadyClock::time_point last_heard_;
  SteadyClock::time_point received_at_;
  SteadyClock::time_point arrived_at_;
  SteadyClock::time_point data_arrival_ = SteadyClock::time_point::min();
  bool finished_ = false;
  bool saturated_ = false;
  uint64_t cookie_ = 0;       // from the last COOKIE
  uint64_t join_cookie_ = 0;  // carried by the last JOIN
  RttEstimator rtt_;
  ReorderWindow reorder_;

  // Hands the `n` datagrams of `batch` to handle (only those from
  // `only_from`, unless null); true if it stopped early. The group socket
  // takes only the switch's datagrams: another switch's job of the same id
  // and key whose group shares the address and port is not ours.
  template <typename Handler>
  bool Dispatch(const net::RecvBatch& batch, size_t n, Handler& handle,
                const proto::Endpoint* only_from = nullptr);
};

template <typename Handler>
Status Transport::Receive(SteadyClock::duration timeout, Handler&& handle) {
  if (timeout < SteadyClock::duration::zero()) timeout = SteadyClock::duration::zero();
  if (!group_socket_.is_open()) {
    Result<size_t> n = socket_.Recv(&recv_, timeout);
    if (!n.ok()) return n.status();
    backlog_ = recv_.full();
    Dispatch(recv_, *n, handle);
    return Status::Ok();
  }
  Result<unsigned> ready = net::UdpSocket::WaitEither(socket_, group_socket_, timeout);
  if (!ready.ok()) return ready.status();
  backlog_ = false;
  if (*ready & 1u) {
    Result<size_t> n = socket_.RecvQueued(&recv_);
    if (!n.ok()) return n.status();
    backlog_ = recv_.full();
    if (Dispatch(recv_, *n, handle)) return Status::Ok();
  }
  if (*ready & 2u) {
    Result<size_t> n = group_socket_.RecvQueued(&group_recv_);
    if (!n.ok()) return n.status();
    backlog_ = backlog_ || group_recv_.full();
    Dispatch(group_recv_, *n, handle, &switch_ep_);
  }
  return Status::Ok();
}

template <typename Handler>
bool Transport::Dispatch(const net::RecvBatch& batch, size_t n, Handler& handle,
                         const proto::Endpoint* only_from) {
  if (n > 0) received_at_ = batch.read_at();
  for (size_t i = 0; i < n; ++i) {
    if (only_from != nullptr && !(batch.source(i) == *only_from)) continue;
    proto::PacketView v;
    auto data = batch.data(i);
    if (batch.truncated(i) ||
        proto::Decode(data.data(), data.size(), &v) != proto::ParseError::kOk) {
      continue;
    }
    const proto::Header& h = v.header;
    if (h.job != options_.job || h.key != options_.key) continue;
    const bool group_row =
        h.op == proto::Op::kReadReply && (h.flags & proto::flags::kGroup) != 0;
    if (h.worker != options_.rank && !group_row) continue;
    ++stats_->packets_received;
    last_heard_ = received_at_;
    arrived_at_ = batch.arrival(i);
    if (h.op == proto::Op::kCookie) {
      cookie_ = proto::cookie::Of(h.clock, h.row);  // its flags are not job flags
    } else {
      if (h.flags & proto::flags::kFinished) finished_ = true;
      if (h.flags & proto::flags::kSaturated) saturated_ = true;
    }
    if (handle(v)) return true;
  }
  return false;
}

}  // namespace serene::client
