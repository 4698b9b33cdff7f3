#include "client/pull_op.h"

#include <algorithm>
#include <string>

#include "proto/values.h"

namespace serene::client {
namespace {

constexpr uint32_t kFastRetransmit = 3;

// Rows of a rank's share when ranks share the READs out (see the header).
uint32_t ShareOf(uint32_t rank, const JobInfo& info, bool shared) {
  if (!shared || rank >= info.workers) return info.rows;
  const uint32_t end = rank + 1 == info.workers ? info.rows : FirstRow(rank + 1, info);
  return end - FirstRow(rank, info);
}

}  // namespace

PullOp::PullOp(Transport& t, const RankState& rank, std::span<int32_t> model, ClientStats* stats,
               Registers* registers, const EarlyRows* early)
    : t_(t),
      stats_(stats),
      early_(early),
      clock_(rank.clock()),
      rows_(rank.info.rows),
      row_width_(rank.info.row_width),
      elements_(rank.info.elements),
      model_(model),
      first_row_(FirstRow(t.options().rank, rank.info)),
      start_(SteadyClock::now()),
      share_(ShareOf(t.options().rank, rank.info, t.group_open())),
      own_left_(share_),
      state_(registers->state),
      sent_(registers->sent),
      attempts_(registers->attempts),
      overtaken_(registers->overtaken),
      overtaken_at_(registers->overtaken_at) {
  state_.assign(rows_, kIdle);
  sent_.resize(rows_);
  attempts_.resize(rows_);
  overtaken_.resize(rows_);
  overtaken_at_.resize(rows_);
  in_flight_.reserve(std::min<uint32_t>(rows_, t.options().window));
}

Status PullOp::Start() {
  if (early_ != nullptr) {
    for (uint32_t r = 0; r < rows_; ++r) {
      if (!early_->Has(r, clock_)) continue;
      // Rows usually landed in `model` itself (EarlyRows::LandIn).
      const auto row = early_->Row(r);
      int32_t* to = model_.data() + size_t{r} * row_width_;
      if (row.data() != to) std::copy(row.begin(), row.end(), to);
      Got(r, start_);
      ++stats_->group_rows;
    }
  }
  if (own_left_ == 0) foreign_at_ = start_;
  if (got_ == rows_) {
    Finish(Status::Ok());
    return Status::Ok();
  }
  return OnTimer(SteadyClock::now());
}

Operation::Reply PullOp::OnReply(const proto::PacketView& v) {
  const proto::Header& h = v.header;
  if (CookieAnswers(v, proto::Op::kRead)) {
    // The switch does not know the rank at this address (it lost the job,
    // or the rank was bound elsewhere): join again (what not_joined said).
    end_ = End::kNotJoined;
    Finish(Status::Ok());
    return Reply::kHandled;
  }
  if (h.op == proto::Op::kError && h.clock == clock_ && ErrorRefuses(v, proto::Op::kRead)) {
    switch (ErrorCodeOf(v)) {
      case proto::ErrorCode::kEvicted:
        end_ = End::kEvicted;
        Finish(Status::Ok());
        break;
      case proto::ErrorCode::kNotJoined:
        end_ = End::kNotJoined;
        Finish(Status::Ok());
        break;
      default:
        Finish(Refused(
            t_, "READ (row " + std::to_string(h.row) + ", clock " + ClockText(clock_) + ")", v));
    }
    return Reply::kHandled;
  }
  if (h.op != proto::Op::kReadReply || h.clock != clock_ || h.row >= rows_ ||
      state_[h.row] == kDone) {
    return Reply::kStale;
  }
  // A row this rank has not asked for (yet) comes only through the group.
  const bool ours = h.worker == t_.options().rank;
  if (!ours) {
    if ((h.flags & proto::flags::kExact) == 0) return Reply::kStale;
    ++stats_->group_rows;
  } else if (state_[h.row] == kIdle) {
    return Reply::kStale;
  }
  const size_t begin = size_t{h.row} * row_width_;
  const size_t len = std::min<size_t>(row_width_, elements_ - begin);
  if (h.count != len) return Reply::kStale;
  proto::LoadValues(v.values, model_.subspan(begin, len));
  const auto now = t_.received_at();
  // Karn: only replies to requests sent once measure the round trip; and a
  // reply to a retransmitted row may answer its first copy, sent before rows
  // now ahead of it in send order, so it proves nothing about them.
  if (ours && attempts_[h.row] == 0) {
    t_.rtt().Sample(now - sent_[h.row], now);
    // A reply that later ones overtook measures how late reordering makes one.
    if (overtaken_[h.row] > 0) t_.reorder().Sample(now - overtaken_at_[h.row], now);
    for (uint32_t r : in_flight_) {
      if (r == h.row) break;
      if (state_[r] == kInFlight && overtaken_[r]++ == 0) overtaken_at_[r] = now;
    }
  }
  // Our own READ answered to us alone: the group is not in use (the row was
  // not exact), so no peer's READ brings us the other rows either.
  // (Only a first transmission was flagged GROUP; Karn again.)
  if (ours && attempts_[h.row] == 0 && (h.flags & proto::flags::kGroup) == 0 &&
      foreign_at_ > now) {
    foreign_at_ = now;
  }
  if (h.flags & proto::flags::kGroup) group_heard_ = true;
  Got(h.row, now);
  if (got_ == rows_) {
    if (t_.saturated() && t_.options().fail_on_saturation) {
      Finish(
          Status::FailedPrecondition("job " + std::to_string(t_.options().job) +
                                     ": the switch's table saturated (a sum left the fixed-point "
                                     "range); the model is no longer exact. Use a smaller scale "
                                     "or a smaller learning rate"));
    } else {
      Finish(Status::Ok());
    }
  }
  return Reply::kProgress;
}

void PullOp::Got(uint32_t r, SteadyClock::time_point now) {
  state_[r] = kDone;
  ++got_;
  const uint32_t index = r >= first_row_ ? r - first_row_ : r + rows_ - first_row_;
  if (index < share_ && --own_left_ == 0 && foreign_at_ == SteadyClock::time_point::max()) {
    // As long again as the own share took, but no longer than a timeout: a
    // share slowed by losses says nothing about the peers, and a rank that
    // sends nothing for long is taken for dead (evicted).
    foreign_at_ = now + std::min<SteadyClock::duration>(now - start_, t_.rtt().Rto(0));
  }
}

SteadyClock::time_point PullOp::NextTimer() const {
  // Room in the window, or a row answered (to be dropped from the window and
  // replaced): work to do now.
  constexpr auto kNow = SteadyClock::time_point::min();
  if (ProbeAnswered()) return kNow;
  auto due = SteadyClock::time_point::max();
  if (next_ < rows_ && in_flight_.size() < t_.options().window) {
    if (next_ < share_) return kNow;
    due = foreign_at_;  // others' rows: from then on
  }
  for (uint32_t r : in_flight_) {
    if (state_[r] == kHeld) continue;
    if (state_[r] != kInFlight) return kNow;
    due = std::min(due, LostAt(r));
  }
  return due;
}

SteadyClock::time_point PullOp::TimeoutAt(uint32_t r) const {
  return sent_[r] + t_.rtt().Rto(attempts_[r]);
}

SteadyClock::time_point PullOp::OvertakenLostAt(uint32_t r) const {
  if (overtaken_[r] < kFastRetransmit) return SteadyClock::time_point::max();
  return overtaken_at_[r] + t_.reorder().Get();
}

SteadyClock::time_point PullOp::LostAt(uint32_t r) const {
  return std::min(TimeoutAt(r), OvertakenLostAt(r));
}

Status PullOp::OnTimer(SteadyClock::time_point now) {
  // Retransmit overtaken rows, the held ones once the probe is answered, and
  // of the rows that timed out the newest alone (the probe: the class
  // comment), holding the others; all to the back of the send order. Drop
  // answered rows.
  const bool release = ProbeAnswered();
  if (release) probe_ = kNoProbe;
  auto timed_out = [&](uint32_t r) { return now >= TimeoutAt(r); };
  auto overtaken_lost = [&](uint32_t r) { return now >= OvertakenLostAt(r); };
  uint32_t newest_overdue = kNoProbe;  // in_flight_ is in send order
  for (uint32_t r : in_flight_) {
    if (state_[r] == kInFlight && !overtaken_lost(r) && timed_out(r)) newest_overdue = r;
  }
  size_t kept = 0;
  resent_.clear();
  for (uint32_t r : in_flight_) {
    if (state_[r] == kDone) continue;
    const bool resend = state_[r] == kHeld ? release : overtaken_lost(r) || r == newest_overdue;
    if (!resend) {
      if (state_[r] == kInFlight && timed_out(r)) state_[r] = kHeld;
      in_flight_[kept++] = r;
      continue;
    }
    Status q = t_.Queue(proto::Op::kRead, clock_, r, proto::flags::kRetransmit, {});
    if (!q.ok()) return q;
    state_[r] = kInFlight;
    sent_[r] = now;
    overtaken_[r] = 0;
    ++attempts_[r];
    ++stats_->read_retransmits;
    ++retransmits_;
    resent_.push_back(r);
  }
  if (newest_overdue != kNoProbe) probe_ = newest_overdue;
  in_flight_.resize(kept);
  in_flight_.insert(in_flight_.end(), resent_.begin(), resent_.end());
  // Keep the window full.
  const uint16_t first_flags = t_.group_open() ? proto::flags::kGroup : 0;
  while (in_flight_.size() < t_.options().window && next_ < rows_ &&
         (next_ < share_ || now >= foreign_at_)) {
    const uint32_t r = RowAt(first_row_, next_++, rows_);
    if (state_[r] == kDone) continue;  // came through the group
    Status q = t_.Queue(proto::Op::kRead, clock_, r, first_flags, {});
    flagged_sent_ = flagged_sent_ || first_flags != 0;
    if (!q.ok()) return q;
    ++stats_->reads;
    state_[r] = kInFlight;
    sent_[r] = now;
    attempts_[r] = 0;
    overtaken_[r] = 0;
    in_flight_.push_back(r);
  }
  return t_.Flush();
}

Status PullOp::Stalled(bool) const {
  return SilenceError(
      t_, "READ (" + std::to_string(rows_ - got_) + " rows, clock " + ClockText(clock_) + ")");
}

}  // namespace serene::client
