// ClockOp: CLOCK(c, n) until the RELEASE of clock c — the barrier wait.
//
//   CLOCK ──▶ RELEASE(c)                    released: the rank is in c + 1
//         ──▶ NACK(c, received, missing…)   re-send the missing INC rows, CLOCK again
//         ──▶ nothing (waiting)             CLOCK again on a timer (≤ 100 ms: a lost
//                                           RELEASE is recovered only so); and once
//                                           the switch is quiet for probe_every, a
//                                           JOIN probe, whose JOIN_ACK says where
//                                           the rank and the job stand
//         ──▶ ERROR evicted                 JOIN again; the JOIN_ACK decides
//         ──▶ COOKIE (answering the CLOCK)  the switch does not know the rank at this
//                                           address — it lost the rank (an older switch:
//                                           ERROR not_joined): JOIN to learn its job's
//                                           incarnation
//         ──▶ COOKIE (answering a JOIN)     the probe or rejoin JOIN of a rank not live
//                                           here: JOIN again, echoing the cookie
//
// A JOIN_ACK (a probe's or a rejoin's) is read against the job's incarnation
// and the rank's own clock: another incarnation means the switch lost the
// job's state (it restarted) — the operation ends kLost; a `done` ahead of c
// means the rank was evicted and resumed at the live ranks' clock — it ends
// kRejoinedAhead; `done` = c and released means the RELEASE was lost — CLOCK
// again at once; `done` = c − 1 means the CLOCK was lost — CLOCK again at
// once; a `done` behind that is a delayed reply and is ignored.
//
// Progress (the deadline rule, operation.h): the RELEASE; a NACK that shows
// more rows received than any before (so INCs the switch keeps refusing end
// the call instead of looping); a JOIN_ACK showing the job's barrier moved
// (its low or high clock, or the policy epoch).
#pragma once

#include "client/operation.h"
#include "client/rank_state.h"

namespace serene::client {

class ClockOp final : public Operation {
 public:
  enum class End { kReleased, kRejoinedAhead, kLost };

  // Waits for the RELEASE of `clock`, sending CLOCK(clock, rows_announced)
  // first if `announce` (else only when a timer or a JOIN_ACK asks).
  ClockOp(Transport& t, const RankState& rank, uint32_t clock, uint32_t rows_announced,
          ClientStats* stats);

  Status Start() override;
  Reply OnReply(const proto::PacketView& v) override;
  SteadyClock::time_point NextTimer() const override;
  Status OnTimer(SteadyClock::time_point now) override;
  Status Stalled(bool switch_silent) const override;

  // REQUIRES: outcome() is OK.
  End end() const { return end_; }
  // kReleased, kRejoinedAhead: what the switch said.
  const ClockResult& result() const { return result_; }
  // kRejoinedAhead, kLost: the JOIN_ACK that said so.
  const JobInfo& ack() const { return ack_; }

 private:
  Reply OnJoinAck(const JobInfo& ack);
  Status SendClock(uint16_t flags);
  Status ResendRows(const proto::PacketView& nack);

  Transport& t_;
  const RankState& rank_;
  const uint32_t clock_;
  const uint32_t rows_;
  ClientStats* stats_;
  const SteadyClock::time_point started_;
  const SteadyClock::duration probe_every_;

  End end_ = End::kReleased;
  ClockResult result_;
  JobInfo ack_;

  uint32_t attempts_ = 0;
  SteadyClock::time_point next_send_;
  SteadyClock::time_point next_probe_;
  int64_t best_received_ = -1;  // most rows any NACK said arrived
  uint32_t nacks_ = 0;
  uint32_t resend_next_ = UINT32_MAX;  // short NACKs: the next row to re-send (unset)
  bool seen_barrier_ = false;          // low_, high_, epoch_ are set
  uint32_t low_ = 0, high_ = 0, epoch_ = 0;
};

}  // namespace serene::client
