#include "client/clock_op.h"

#include <algorithm>
#include <string>

#include "client/join_op.h"

namespace serene::client {
namespace {

// A lost RELEASE is recovered only by the next CLOCK, so while waiting at the
// barrier CLOCK backs off to this, not max_timeout: a 24-byte packet every
// 100 ms costs nothing and bounds the recovery.
constexpr std::chrono::milliseconds kClockRtoCap{100};

}  // namespace

ClockOp::ClockOp(Transport& t, const RankState& rank, uint32_t clock, uint32_t rows_announced,
                 ClientStats* stats)
    : t_(t),
      rank_(rank),
      clock_(clock),
      rows_(rows_announced),
      stats_(stats),
      started_(SteadyClock::now()),
      // Probe at least four times per deadline, so one lost probe never
      // makes a live switch look silent.
      probe_every_(std::min<SteadyClock::duration>(
          std::max(t.rtt().Rto(30), std::chrono::duration_cast<SteadyClock::duration>(
                                        std::chrono::milliseconds(500))),
          std::chrono::duration_cast<SteadyClock::duration>(t.options().deadline) / 4)) {}

Status ClockOp::SendClock(uint16_t flags) {
  next_send_ =
      SteadyClock::now() + std::min<SteadyClock::duration>(t_.rtt().Rto(attempts_), kClockRtoCap);
  return t_.Send(proto::Op::kClock, clock_, rows_, flags);
}

Status ClockOp::Start() {
  next_probe_ = started_ + probe_every_;
  return SendClock(0);
}

SteadyClock::time_point ClockOp::NextTimer() const { return std::min(next_send_, next_probe_); }

Status ClockOp::OnTimer(SteadyClock::time_point now) {
  if (now >= next_send_) {
    ++attempts_;
    ++stats_->clock_retransmits;
    Status s = SendClock(proto::flags::kRetransmit);
    if (!s.ok()) return s;
  }
  if (now >= next_probe_) {
    if (now - t_.last_heard() >= probe_every_) {
      // Retransmitted CLOCKs get no answer while the rank waits at the
      // barrier; a JOIN does, and tells a dead switch from a slow peer.
      ++stats_->probes;
      next_probe_ = now + probe_every_;
      return t_.Send(proto::Op::kJoin, 0, 0, proto::flags::kRetransmit);
    }
    next_probe_ = t_.last_heard() + probe_every_;
  }
  return Status::Ok();
}

Status ClockOp::ResendRows(const proto::PacketView& nack) {
  if (!rank_.pushed) return Status::Ok();  // nothing of ours to re-send (e.g. clock 0 of rank > 0)
  const uint32_t rows = rank_.info.rows;
  const uint16_t count = nack.header.count;
  auto resend = [&](uint32_t r) {
    const size_t begin = size_t{r} * rank_.info.row_width;
    const size_t len = std::min<size_t>(rank_.info.row_width, rank_.info.elements - begin);
    ++stats_->rows_resent;
    return t_.Queue(proto::Op::kInc, clock_, r, proto::flags::kRetransmit,
                    rank_.pushed_values.subspan(begin, len));
  };
  if (count < proto::nack::kFirstMissing) {
    // Only [received]: which rows are missing is unknown. Re-send a window
    // of rows per NACK, moving on each time: a switch that drops the tail of
    // a burst (BMv2) would lose the same rows of every full re-send. Start
    // where the rows that arrived probably end.
    const uint32_t n = std::min(rows, std::max<uint32_t>(t_.options().window, 1));
    if (resend_next_ >= rows) {
      resend_next_ = static_cast<uint32_t>(
          std::min<int64_t>(std::max<int64_t>(nack.Value(proto::nack::kReceived), 0), rows) % rows);
    }
    for (uint32_t i = 0; i < n; ++i) {
      Status s = resend((resend_next_ + i) % rows);
      if (!s.ok()) return s;
    }
    resend_next_ = (resend_next_ + n) % rows;
    return t_.Flush();
  }
  // With a list: re-send the listed rows and every row >= scan_end.
  const uint32_t scan_end =
      std::min(rows, static_cast<uint32_t>(nack.Value(proto::nack::kScanEnd)));
  for (size_t i = proto::nack::kFirstMissing; i < count; ++i) {
    const uint32_t r = static_cast<uint32_t>(nack.Value(i));
    if (r >= scan_end) continue;
    Status s = resend(r);
    if (!s.ok()) return s;
  }
  for (uint32_t r = scan_end; r < rows; ++r) {
    Status s = resend(r);
    if (!s.ok()) return s;
  }
  return t_.Flush();
}

Operation::Reply ClockOp::OnJoinAck(const JobInfo& ack) {
  if (ack.incarnation != 0 && rank_.info.incarnation != 0 &&
      ack.incarnation != rank_.info.incarnation) {
    ack_ = ack;
    end_ = End::kLost;
    Finish(Status::Ok());
    return Reply::kProgress;
  }
  const int64_t d = proto::ClockDiff(ack.done, clock_);
  if (d < -1) return Reply::kStale;  // a delayed reply from before this clock
  if (d > 0) {
    // Evicted and resumed at the live ranks' clock, ahead of ours.
    ack_ = ack;
    result_ = ClockResult{};
    result_.clock = ack.done;
    result_.epoch = ack.epoch;
    result_.low = ack.low;
    result_.high = ack.high;
    result_.rejoined = true;
    end_ = End::kRejoinedAhead;
    Finish(Status::Ok());
    return Reply::kProgress;
  }
  Reply reply = Reply::kHandled;
  if (!seen_barrier_ || ack.low != low_ || ack.high != high_ || ack.epoch != epoch_) {
    if (seen_barrier_) reply = Reply::kProgress;
    seen_barrier_ = true;
    low_ = ack.low;
    high_ = ack.high;
    epoch_ = ack.epoch;
  }
  // d == 0 and released: the RELEASE was lost. d == -1: the CLOCK was (or
  // the rank rejoined at its own clock): CLOCK again now, not on the timer.
  if ((d == 0 && !ack.waiting) || d == -1) {
    Status s = SendClock(proto::flags::kRetransmit);
    if (!s.ok()) Finish(s);
  }
  return reply;
}

Operation::Reply ClockOp::OnReply(const proto::PacketView& v) {
  const proto::Header& h = v.header;
  switch (h.op) {
    case proto::Op::kRelease: {
      if (h.clock != clock_ || h.count < proto::release::kCount) return Reply::kStale;
      result_ = ClockResult{};
      result_.clock = clock_;
      result_.epoch = static_cast<uint32_t>(v.Value(proto::release::kEpoch));
      result_.low = static_cast<uint32_t>(v.Value(proto::release::kLow));
      result_.high = static_cast<uint32_t>(v.Value(proto::release::kHigh));
      result_.waited = SteadyClock::now() - started_;
      end_ = End::kReleased;
      Finish(Status::Ok());
      return Reply::kProgress;
    }
    case proto::Op::kNack: {
      if (h.clock != clock_ || h.count < 1) return Reply::kStale;
      ++stats_->nacks;
      ++nacks_;
      const int64_t received = static_cast<uint32_t>(v.Value(proto::nack::kReceived));
      Status s = ResendRows(v);
      if (s.ok()) s = SendClock(proto::flags::kRetransmit);
      if (!s.ok()) Finish(s);
      attempts_ = 0;
      if (received <= best_received_) return Reply::kHandled;
      best_received_ = received;
      return Reply::kProgress;
    }
    case proto::Op::kJoinAck:
      return IsJoinAck(v) ? OnJoinAck(ParseJoinAck(v)) : Reply::kStale;
    case proto::Op::kCookie: {
      // A COOKIE answers our probe or rejoin JOIN (the rank is not live
      // here: echo it), or our CLOCK (the switch does not know the rank at
      // this address: it lost the job; what not_joined said): JOIN with it.
      if (!CookieAnswers(v, proto::Op::kJoin) && !CookieAnswers(v, proto::Op::kClock)) {
        return Reply::kStale;
      }
      Status s = CookieAnswers(v, proto::Op::kJoin) ? JoinWithNewCookie(t_)
                                                    : t_.Send(proto::Op::kJoin, 0, 0, 0);
      if (!s.ok()) Finish(s);
      return Reply::kHandled;
    }
    case proto::Op::kError: {
      if (ErrorRefuses(v, proto::Op::kJoin) && v.header.count > proto::error_reply::kOp) {
        // Our probe or rejoin JOIN refused: the switch no longer takes this rank.
        Finish(Refused(t_, "JOIN (while waiting after CLOCK " + ClockText(clock_) + ")", v));
        return Reply::kHandled;
      }
      if (h.clock != clock_ || !ErrorRefuses(v, proto::Op::kClock)) return Reply::kStale;
      const proto::ErrorCode code = ErrorCodeOf(v);
      if (code == proto::ErrorCode::kEvicted || code == proto::ErrorCode::kNotJoined) {
        // Evicted: join again and resume. Not joined: the switch lost this
        // rank; the JOIN_ACK tells whether the job was created anew.
        if (code == proto::ErrorCode::kEvicted) ++stats_->rejoins;
        Status s = t_.Send(proto::Op::kJoin, 0, 0, 0);
        if (!s.ok()) Finish(s);
        return Reply::kHandled;
      }
      Finish(Refused(t_, "CLOCK " + ClockText(clock_), v));
      return Reply::kHandled;
    }
    default:
      return Reply::kStale;
  }
}

Status ClockOp::Stalled(bool switch_silent) const {
  if (switch_silent) return SilenceError(t_, "CLOCK " + ClockText(clock_));
  const auto secs =
      std::chrono::duration_cast<std::chrono::duration<double>>(t_.options().deadline);
  const std::string who =
      "job " + std::to_string(t_.options().job) + " rank " + std::to_string(t_.options().rank);
  const std::string for_s = " for " + std::to_string(secs.count()).substr(0, 5) + " s";
  if (nacks_ > 0 && best_received_ < static_cast<int64_t>(rows_)) {
    return Status::DeadlineExceeded(
        who + ": the switch kept NACKing CLOCK " + ClockText(clock_) + ": it holds " +
        std::to_string(std::max<int64_t>(best_received_, 0)) + " of the " + std::to_string(rows_) +
        " rows announced, and re-sent INCs did not add any" + for_s +
        "; it refuses them (see its drop counters, e.g. inc_early or bad_row_length)");
  }
  return Status::DeadlineExceeded(
      who + ": waited at the barrier after CLOCK " + ClockText(clock_) + for_s +
      " without progress" +
      (seen_barrier_ ? " (slowest live rank at clock " + ClockText(low_) + ", fastest at " +
                           ClockText(high_) + ", policy epoch " + std::to_string(epoch_) + ")"
                     : std::string()) +
      "; a peer rank is stuck, or the switch does not evict silent ranks (evict_after=0)");
}

}  // namespace serene::client
