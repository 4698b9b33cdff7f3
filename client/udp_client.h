// UdpClient: the Client over one UDP socket (see include/serene/client.h for
// the contract). Each call runs its own send/receive loop: no threads.
//
// Not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "include/serene/client.h"
#include "net/udp_socket.h"
#include "proto/codec.h"
#include "proto/endpoint.h"

namespace serene::client {

class UdpClient final : public Client {
 public:
  using SteadyClock = std::chrono::steady_clock;

  UdpClient(const ClientOptions& options, net::UdpSocket socket, proto::Endpoint switch_ep);

  Result<JobInfo> Join() override;
  Status Initialize(std::span<float> model) override;
  Status Pull(std::span<float> model) override;
  Status PullFixed(std::span<int32_t> model) override;
  Status Push(std::span<const float> update) override;
  Status PushFixed(std::span<const int32_t> update) override;
  Result<ClockResult> Clock() override;
  Status Leave(bool finish_job) override;

  uint32_t clock() const override { return done_ + 1; }
  const JobInfo& info() const override { return info_; }
  bool finished() const override { return finished_; }
  const ClientStats& stats() const override { return stats_; }
  std::string local_address() const override;

 private:
  // Encodes a request into the send batch (flushing first when it is full).
  Status Queue(proto::Op op, uint32_t clock, uint32_t row, uint16_t flags,
               std::span<const int32_t> values);
  Status QueueRow(uint32_t clock, uint32_t row, uint16_t flags);  // INC from inc_buf_
  Status Flush();

  // Receives for at most `timeout` and calls handle(view) for every packet of
  // this job and rank; stops early when handle returns true.
  template <typename Handler>
  Status Receive(SteadyClock::duration timeout, Handler&& handle);

  // Waits for RELEASE of clock c (sending CLOCK(c, n) first if `announce`).
  Result<ClockResult> AwaitRelease(uint32_t c, uint32_t rows_announced, bool announce);
  Status ResendRows(uint32_t clock, const proto::PacketView& nack);
  Result<JobInfo> SendJoin();
  JobInfo ParseJoinAck(const proto::PacketView& v) const;
  Status AllocateForJob();

  // Retransmission timeout after `attempts` retransmissions (adaptive, from READ round trips).
  SteadyClock::duration Rto(uint32_t attempts) const;
  void SampleRtt(SteadyClock::duration sample);
  Status SilenceError(const std::string& what) const;  // DeadlineExceeded if silent too long
  bool SilentTooLong() const { return SteadyClock::now() - last_heard_ > options_.deadline; }
  Status Refused(const std::string& what, const proto::PacketView& error) const;
  Status SaturationError() const;
  // DeadlineExceeded: the barrier did not move for `deadline` while waiting after CLOCK(c).
  Status NoProgressError(uint32_t c, const JobInfo& ack) const;
  // One pass of PullFixed; sets *evicted (and stops) if the switch says the rank was evicted.
  Status PullOnce(std::span<int32_t> model, bool* evicted);
  // JOINs again after an eviction and waits for a pending release.
  Status Rejoin();
  void NoteFlags(uint16_t flags);

  ClientOptions options_;
  net::UdpSocket socket_;
  proto::Endpoint switch_ep_;
  std::string switch_name_;

  net::RecvBatch recv_;
  net::SendBatch send_;
  std::vector<uint8_t> send_arena_;
  size_t send_used_ = 0;

  bool joined_ = false;
  JobInfo info_;
  uint32_t done_ = proto::kNoClock;
  bool finished_ = false;
  bool saturated_ = false;
  bool rejoined_ = false;  // rejoined since the last ClockResult
  SteadyClock::time_point last_heard_;

  // Per-row state for pulls and the update of the current clock (for NACKs).
  std::vector<int32_t> pull_buf_;
  std::vector<int32_t> inc_buf_;
  bool pushed_ = false;  // inc_buf_ holds this clock's update
  std::vector<uint8_t> row_state_;
  std::vector<SteadyClock::time_point> row_sent_;
  std::vector<uint32_t> row_attempts_;
  std::vector<uint32_t> row_overtaken_;  // later replies seen while in flight
  std::vector<uint32_t> in_flight_;      // Pull's scratch, kept across calls
  std::vector<uint32_t> retransmitted_;  // scratch

  // The last Receive filled its batch: more datagrams may be queued.
  bool backlog_ = false;

  // Round-trip estimate (RFC 6298) from READs.
  bool have_rtt_ = false;
  SteadyClock::duration srtt_{0};
  SteadyClock::duration rttvar_{0};

  ClientStats stats_;
};

}  // namespace serene::client
