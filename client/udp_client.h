// UdpClient: the Client over one UDP socket (include/serene/client.h is the
// contract). Each call is one operation (join_op.h, pull_op.h, clock_op.h,
// leave_op.h) run by the one event loop of operation.h with its single
// deadline rule; this class sequences them and keeps the rank's state:
//
//   Pull    PullOp; evicted -> JOIN again (Rejoin) and pull at the new clock;
//           the switch lost the rank -> Recover
//   Push    INC every row (no wait); kept for NACK re-sends
//   Clock   ClockOp; rejoined ahead -> the new clock; the job lost -> Recover
//   Exchange Push, Clock, Pull; early rows land in the caller's model
//   Recover the switch lost the job (restarted): JOIN the new incarnation
//           and replay every clock up to the one the rank is in from its
//           ReplayHistory (the seed and its updates, each once); the
//           interrupted call then goes on at the same clock
//
// Not thread-safe.
#pragma once

#include <span>
#include <vector>

#include "client/early_rows.h"
#include "client/pull_op.h"
#include "client/rank_state.h"
#include "client/replay_history.h"
#include "client/transport.h"
#include "include/serene/client.h"

namespace serene::client {

class Operation;

class UdpClient final : public Client {
 public:
  UdpClient(const ClientOptions& options, net::UdpSocket socket, proto::Endpoint switch_ep);

  Result<JobInfo> Join() override;
  Status Initialize(std::span<float> model) override;
  Status Pull(std::span<float> model) override;
  Status PullFixed(std::span<int32_t> model) override;
  Status Push(std::span<const float> update) override;
  Status PushFixed(std::span<const int32_t> update) override;
  Result<ClockResult> Clock() override;
  Result<ClockResult> Exchange(std::span<const float> update, std::span<float> model) override;
  Result<ClockResult> ExchangeFixed(std::span<const int32_t> update,
                                    std::span<int32_t> model) override;
  Status Leave(bool finish_job) override;

  uint32_t clock() const override { return rank_.clock(); }
  const JobInfo& info() const override { return rank_.info; }
  bool finished() const override { return finished_ || transport_.finished(); }
  const ClientStats& stats() const override { return stats_; }
  std::string local_address() const override { return transport_.local_address(); }
  std::chrono::steady_clock::time_point data_arrival() const override { return data_arrival_; }

 private:
  Status Run(Operation& op);
  // Adopts a JOIN_ACK as where the rank stands.
  Status Adopt(const JobInfo& ack);
  // Waits for the RELEASE of the clock the rank completed before a JOIN.
  Status AwaitPendingRelease();
  // JOINs again after an eviction.
  Status Rejoin();
  // The switch lost the job (`why`): join its new incarnation and rebuild
  // the job's table from this rank's history, up to the clock it is in
  // (docs/protocol.md, Recovery). On success the rank stands where it stood:
  // the same clock, its update of that clock (if pushed) pushed again.
  Status Recover(const std::string& why);
  // Replays clocks `from` .. `to` (the rank's last released one) on the new
  // incarnation: CLOCK each, INCing `fold` (empty: none) at the fold's clock
  // (0 for rank 0, else 1), and wait for its RELEASE.
  Status Replay(uint32_t from, uint32_t to, std::span<const int32_t> fold);
  Status SaturationError() const;
  // INCs `values` (the job's elements) into every row of clock `c`, this
  // rank's rows first; NACKs re-send from `values`, which must stay as they
  // are until the clock is released. With `record`, a new update: each row
  // is added to the history as it goes out (a replay's are not).
  Status PushRows(std::span<const int32_t> values, uint32_t c, bool record);
  // Refuses an update of the wrong size (`elements`), a push at clock 0 but
  // from rank 0, and a second push in one clock. Called before anything is
  // written: NACKs of the first push re-send from rank_.inc.
  Status CheckPush(size_t elements) const;
  // Pulls the current clock's model into `model`, joining again as often as
  // an eviction or a lost job requires.
  Status PullRows(std::span<int32_t> model);
  // Keeps the group rows already queued on the sockets (EarlyRows), without
  // waiting: completed rows the switch sent before this rank's RELEASE may
  // still be unread behind it, and a pull would READ them again.
  Status TakeQueuedGroupRows();
  // Checks a Pull/Push/Exchange buffer's size against the job.
  Status CheckSize(const char* call, const char* what, size_t size) const;

  ClientOptions options_;
  ClientStats stats_;
  Transport transport_;
  RankState rank_;
  EarlyRows early_;  // group rows that came before the pull of their clock (in pull_buf_)
  PullOp::Registers pull_registers_;  // every pull's per-row scratch
  bool finished_ = false;
  std::vector<int32_t> pull_buf_;  // Pull()'s fixed-point landing area
  ReplayHistory history_;          // rebuilds a switch that lost the job
  bool rejoined_ = false;          // since the last ClockResult
  bool restarted_ = false;         // since the last ClockResult
  bool clocked_since_pull_ = false;
  SteadyClock::time_point data_arrival_ = SteadyClock::now();  // of the last pull
};

}  // namespace serene::client
