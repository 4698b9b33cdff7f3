// PullOp: READ every row of the model at the rank's current clock.
//
// READs are pipelined: at most `window` in flight, each retransmitted when
// its timeout (the round-trip estimate, doubling per attempt) expires, or
// when three later requests were answered before it and it is still missing
// a reordering window (reorder_window.h) after the first of them (fast
// retransmit: reordering alone rarely passes a request three times and by
// more than the reordering seen so far). A retransmitted row moves to the
// back of the send order. Round trips are sampled from replies
// to requests sent once (Karn). Progress: every new row.
//
// A timeout cannot tell a lost request from a slow switch (a process not
// scheduled for a while answers a whole window late). So when several rows
// time out together only the newest of them is re-sent, a probe, and the
// others are held: the switch answers a rank's requests in order, so once
// the probe's row is answered every older row that is still missing was
// lost, and those are re-sent then (reordering costs a needless re-send at
// worst). A stall costs one re-sent READ per timeout instead of a window; a
// lost burst costs one round trip more.
//
// With the job's reply group open, first READs carry flag GROUP: the switch
// answers them to the group, so every rank of the host gets the row, and a
// row that arrives so (or was kept in EarlyRows before the pull began) is
// not READ again. The rows are shared out: a rank READs its own share
// (FirstRow(rank) up to the next rank's) first, and the others' rows only
// if they have not come through the group once its own share is in and as
// long again has passed, at most a retransmission timeout (a peer that
// started late, or died, delays the pull by at most that; a row asked for
// twice costs every rank a copy).
// Retransmissions ask for a reply to this rank alone: a rank whose group
// delivery fails still progresses. A group reply answering another rank
// says nothing about this rank's round trip or ordering. An own reply that
// did not go to the group (the row was not exact: not SYNC) means the group
// is not in use at this clock: the other rows are READ at once.
//
// It ends when every row arrived, or when the switch refuses a READ: evicted
// (the client joins again and pulls at its new clock), a COOKIE (the switch
// does not know the rank at this address: it lost the rank, restarted; an
// older switch said not_joined), or any other code (an error).
#pragma once

#include <span>
#include <vector>

#include "client/operation.h"
#include "client/rank_state.h"

namespace serene::client {

class PullOp final : public Operation {
 public:
  enum class End { kPulled, kEvicted, kNotJoined };

  // A pull's per-row registers, kept by the client from one pull to the next:
  // a pull of a large model then allocates (and faults in) nothing; only
  // `state` is reset per pull, the others are written when a row is sent.
  struct Registers {
    std::vector<uint8_t> state;
    std::vector<SteadyClock::time_point> sent;
    std::vector<uint32_t> attempts;
    std::vector<uint32_t> overtaken;                    // later replies seen while in flight
    std::vector<SteadyClock::time_point> overtaken_at;  // the first of them
  };

  // Writes the rows into `model` (info.elements values), taking the rows of
  // this clock `early` holds (null: none). `registers` is the pull's scratch
  // (its contents on entry do not matter).
  PullOp(Transport& t, const RankState& rank, std::span<int32_t> model, ClientStats* stats,
         Registers* registers, const EarlyRows* early = nullptr);

  Status Start() override;
  Reply OnReply(const proto::PacketView& v) override;
  SteadyClock::time_point NextTimer() const override;
  Status OnTimer(SteadyClock::time_point now) override;
  Status Stalled(bool switch_silent) const override;

  // REQUIRES: outcome() is OK.
  End end() const { return end_; }
  // READs flagged GROUP had to be re-sent and nothing came through the
  // group: its datagrams do not reach this rank (no multicast route, a
  // firewall), so flagging READs only costs a timeout per pull.
  bool GroupSilent() const { return flagged_sent_ && retransmits_ > 0 && !group_heard_; }

 private:
  // When in-flight row `r` counts as lost: its timeout, or sooner once later
  // replies overtook it (fast retransmit; time_point::max() until they have).
  SteadyClock::time_point TimeoutAt(uint32_t r) const;
  SteadyClock::time_point OvertakenLostAt(uint32_t r) const;
  SteadyClock::time_point LostAt(uint32_t r) const;
  // Marks row `r` received (from any source) at `now`.
  void Got(uint32_t r, SteadyClock::time_point now);
  // The held rows are to be re-sent now.
  bool ProbeAnswered() const { return probe_ != kNoProbe && state_[probe_] == kDone; }

  // kHeld: timed out, not re-sent until the probe's row is answered.
  static constexpr uint8_t kIdle = 0, kInFlight = 1, kDone = 2, kHeld = 3;
  static constexpr uint32_t kNoProbe = 0xFFFFFFFFu;

  Transport& t_;
  ClientStats* stats_;
  const EarlyRows* early_;
  const uint32_t clock_;
  const uint32_t rows_;
  const uint32_t row_width_;
  const uint64_t elements_;
  std::span<int32_t> model_;
  End end_ = End::kPulled;

  const uint32_t first_row_;  // rows are sent from here, wrapping (FirstRow)
  const SteadyClock::time_point start_;
  // With the group: rows [first_row_, + share_) are this rank's; the others
  // are READ from foreign_at_ on (max() until own_left_ is 0). Without:
  // every row is its own.
  const uint32_t share_;
  uint32_t own_left_;
  SteadyClock::time_point foreign_at_ = SteadyClock::time_point::max();
  uint32_t next_ = 0;         // rows sent at least once: the next is RowAt(first_row_, next_)
  uint32_t got_ = 0;          // rows received
  // The registers' vectors, rows_ long (valid for a row once it was sent,
  // but state_).
  std::vector<uint8_t>& state_;
  std::vector<SteadyClock::time_point>& sent_;
  std::vector<uint32_t>& attempts_;
  std::vector<uint32_t>& overtaken_;
  std::vector<SteadyClock::time_point>& overtaken_at_;
  std::vector<uint32_t> in_flight_;                    // rows in send order
  std::vector<uint32_t> resent_;                       // scratch
  uint32_t probe_ = kNoProbe;  // the row re-sent alone while others are held
  bool flagged_sent_ = false;  // a READ went out flagged GROUP
  bool group_heard_ = false;   // a reply came through the group
  uint64_t retransmits_ = 0;   // READs this pull re-sent
};

}  // namespace serene::client
