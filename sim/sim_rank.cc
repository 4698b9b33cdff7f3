#include "sim/sim_rank.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace serene::sim {
namespace {

using proto::Op;

double Seconds(SimTime d) { return ToSeconds(d); }

}  // namespace

SimRank::SimRank(const RankOptions& options, RankWork& work, EventQueue& events, Send send,
                 ReportPause report_pause)
    : o_(options),
      work_(work),
      events_(events),
      send_(std::move(send)),
      report_pause_(std::move(report_pause)),
      jitter_rng_(train::Rng(options.seed ^ 0x9E3779B97F4A7C15ull).Next() + options.rank) {
  elements_ = work.elements();
  rows_ = static_cast<uint32_t>((elements_ + o_.row_width - 1) / o_.row_width);
  if (work.has_data()) {
    pulled_.assign(elements_, 0);
    update_.assign(elements_, 0);
  } else {
    update_.assign(o_.row_width, 0);  // every INC carries zeros
  }
  have_row_.assign(rows_, 0);
  packet_.resize(proto::PacketSize(o_.row_width));
  if (o_.straggler && o_.straggler->kind != train::StragglerKind::kNone) {
    straggler_ = std::make_unique<train::StragglerInjector>(*o_.straggler,
                                                            train::StragglerSeed(o_.seed, o_.rank));
  }
  m_.backend = "serene-sim";
  m_.rank = o_.rank;
  m_.world_size = o_.world_size;
  m_.parameters = elements_;
  m_.seed = o_.seed;
  m_.straggler = straggler_ ? straggler_->spec().ToString() : "none";
  m_.target_accuracy = o_.target_accuracy > 0 ? o_.target_accuracy : train::kNaN;
  m_.max_steps = o_.max_steps;
  m_.eval_every = o_.eval_every;
  m_.evaluates = o_.evaluates;
}

double SimRank::RunClock() const { return Seconds(events_.now() - origin_); }

void SimRank::SendRequest(Op op, uint32_t clock, uint32_t row, uint16_t flags,
                          std::span<const int32_t> values) {
  proto::Header h;
  h.op = op;
  h.job = o_.job;
  h.worker = static_cast<uint16_t>(o_.rank);
  h.key = o_.key;
  h.clock = clock;
  h.row = row;
  if (op == Op::kJoin) {  // every JOIN echoes the last COOKIE's cookie
    h.clock = proto::cookie::High(cookie_);
    h.row = proto::cookie::Low(cookie_);
  }
  h.count = static_cast<uint16_t>(values.size());
  h.flags = flags;
  const size_t n = proto::Encode(h, values, packet_.data());
  ++counters_.packets_sent;
  send_(std::span<const uint8_t>(packet_.data(), n));
}

void SimRank::SendInc(uint32_t clock, uint32_t row, bool resend) {
  const uint64_t start = uint64_t{row} * o_.row_width;
  const size_t n = static_cast<size_t>(std::min<uint64_t>(o_.row_width, elements_ - start));
  std::span<const int32_t> values = work_.has_data()
                                        ? std::span<const int32_t>(update_.data() + start, n)
                                        : std::span<const int32_t>(update_.data(), n);
  if (resend) ++counters_.incs_resent;
  SendRequest(Op::kInc, clock, row, resend ? proto::flags::kRetransmit : 0, values);
}

void SimRank::SendClock(bool retransmit) {
  if (retransmit) ++counters_.clock_retransmits;
  SendRequest(Op::kClock, clock_, rows_sent_, retransmit ? proto::flags::kRetransmit : 0);
}

void SimRank::ArmTimer(SimTime delay) {
  const uint64_t generation = ++timer_generation_;
  events_.After(delay, [this, generation] { OnTimer(generation); });
}

void SimRank::OnTimer(uint64_t generation) {
  if (generation != timer_generation_ || !status_.ok()) return;
  switch (phase_) {
    case Phase::kJoin:
    case Phase::kRejoin:
      SendRequest(Op::kJoin, 0, 0, proto::flags::kRetransmit);
      ArmTimer(o_.rto);
      return;
    case Phase::kPull:
      for (uint32_t r = 0; r < rows_; ++r) {
        if (have_row_[r]) continue;
        ++counters_.read_retransmits;
        SendRequest(Op::kRead, clock_, r, proto::flags::kRetransmit);
      }
      ArmTimer(o_.rto);
      return;
    case Phase::kClockWait:
      SendClock(/*retransmit=*/true);
      backoff_ = std::min(2 * backoff_, o_.max_backoff);
      ArmTimer(backoff_);
      return;
    case Phase::kLeaving:
      SendRequest(Op::kLeave, clock_, 0, proto::flags::kRetransmit | leave_flags_);
      ArmTimer(o_.rto);
      return;
    case Phase::kCompute:
    case Phase::kDone:
      return;
  }
}

void SimRank::Start() {
  phase_ = Phase::kJoin;
  SendRequest(Op::kJoin, 0, 0, 0);
  ArmTimer(o_.rto);
}

void SimRank::OnPacket(std::span<const uint8_t> datagram) {
  if (!status_.ok() || phase_ == Phase::kDone) return;
  proto::PacketView p;
  if (proto::Decode(datagram.data(), datagram.size(), &p) != proto::ParseError::kOk) {
    return Fail(Status::Internal("rank " + std::to_string(o_.rank) +
                                 " received a packet it cannot parse from the switch"));
  }
  switch (p.header.op) {
    case Op::kJoinAck:
      return OnJoinAck(p);
    case Op::kRelease:
      return OnRelease(p);
    case Op::kNack:
      return OnNack(p);
    case Op::kReadReply:
      return OnReadReply(p);
    case Op::kCookie:
      // Return routability (docs/protocol.md): the JOIN is served once it
      // echoes the cookie, as the client library does.
      if (proto::cookie::AnsweredOp(p.header.flags) == Op::kJoin &&
          (phase_ == Phase::kJoin || phase_ == Phase::kRejoin) &&
          cookie_ != proto::cookie::Of(p.header.clock, p.header.row)) {
        cookie_ = proto::cookie::Of(p.header.clock, p.header.row);
        SendRequest(Op::kJoin, 0, 0, 0);
      }
      return;
    case Op::kLeave:
      if (phase_ == Phase::kLeaving) {
        phase_ = Phase::kDone;
        ++timer_generation_;
      }
      return;
    case Op::kError: {
      const auto code = static_cast<proto::ErrorCode>(p.header.count > 0 ? p.Value(0) : 0);
      // Evicted (silent too long, see SimulationOptions::evict_after_s): JOIN
      // again and resume where the switch says, as the client library does.
      if (code == proto::ErrorCode::kEvicted &&
          (phase_ == Phase::kPull || phase_ == Phase::kClockWait)) {
        return Rejoin();
      }
      return Fail(Status::Internal(
          "rank " + std::to_string(o_.rank) + " got ERROR " + std::string(proto::ErrorName(code)) +
          " at clock " + std::to_string(p.header.clock) + " row " + std::to_string(p.header.row)));
    }
    default:
      return;
  }
}

void SimRank::Rejoin() {
  ++counters_.rejoins;
  phase_ = Phase::kRejoin;
  SendRequest(Op::kJoin, 0, 0, 0);
  ArmTimer(o_.rto);
}

void SimRank::OnJoinAck(const proto::PacketView& p) {
  if (phase_ != Phase::kJoin && phase_ != Phase::kRejoin) return;  // a duplicate
  if (p.header.count < proto::join_ack::kCount) {
    return Fail(Status::Internal("JOIN_ACK too short"));
  }
  const uint32_t done = static_cast<uint32_t>(p.Value(proto::join_ack::kDone));
  if (phase_ == Phase::kRejoin) {
    // Live again, at max(own done, the slowest live rank's done): the step
    // in flight is lost (its INCs were dropped while the rank was evicted).
    if ((p.header.flags & proto::flags::kWaiting) != 0) {
      clock_ = done;
      rows_sent_ = 0;
      return EnterClockWait(/*retransmit=*/true);  // CLOCK(done) asks for its RELEASE
    }
    clock_ = done;
    return BeginIteration();
  }
  if (done != proto::kNoClock) {
    return Fail(Status::FailedPrecondition("rank " + std::to_string(o_.rank) +
                                           " joined a job that is not fresh"));
  }
  clock_ = 0;
  rows_sent_ = 0;
  if (o_.rank == 0) {
    if (work_.has_data()) {
      Status s = work_.InitialModel(update_);
      if (!s.ok()) return Fail(s);
    }
    for (uint32_t r = 0; r < rows_; ++r) SendInc(0, r, false);
    rows_sent_ = rows_;
  }
  EnterClockWait(/*retransmit=*/false);
}

void SimRank::EnterClockWait(bool retransmit) {
  phase_ = Phase::kClockWait;
  push_start_ = clock_sent_ = events_.now();
  SendClock(retransmit);
  backoff_ = o_.rto;
  ArmTimer(backoff_);
}

void SimRank::OnNack(const proto::PacketView& p) {
  if (phase_ != Phase::kClockWait || p.header.clock != clock_) return;
  ++counters_.nacks;
  // [received, scan_end, missing...]: re-send the listed rows and every row
  // from scan_end on (a NACK with only `received` asks for every row).
  const uint32_t count = p.header.count;
  const uint32_t scan_end =
      count >= 2 ? std::min<uint32_t>(static_cast<uint32_t>(p.Value(1)), rows_sent_) : 0;
  for (uint32_t i = 2; i < count; ++i) {
    const uint32_t r = static_cast<uint32_t>(p.Value(i));
    if (r < scan_end) SendInc(clock_, r, true);
  }
  for (uint32_t r = scan_end; r < rows_sent_; ++r) SendInc(clock_, r, true);
  SendClock(/*retransmit=*/false);
  backoff_ = o_.rto;
  ArmTimer(backoff_);
}

void SimRank::OnRelease(const proto::PacketView& p) {
  if (phase_ != Phase::kClockWait || p.header.clock != clock_) return;  // late or duplicate
  if ((p.header.flags & proto::flags::kFinished) != 0) finished_seen_ = true;
  const SimTime now = events_.now();
  if (clock_ == 0) {
    origin_ = now;
    m_.init_s = Seconds(now);
    if (finished_seen_) return Stop(train::StopReason::kFinishedByPeer, false);
    return BeginIteration();
  }
  const double push_s = Seconds(now - push_start_);
  const double barrier_s = Seconds(now - clock_sent_);
  m_.push_s += push_s;
  last_push_outside_barrier_s_ = push_s - barrier_s;
  last_push_s_ = push_s;
  if (finished_seen_) return Stop(train::StopReason::kFinishedByPeer, false);
  ++m_.iterations;
  loss_sum_ += step_loss_;
  ++loss_count_;
  BeginIteration();
}

void SimRank::BeginIteration() {
  clock_ += 1;
  phase_ = Phase::kPull;
  pull_start_ = events_.now();
  std::fill(have_row_.begin(), have_row_.end(), 0);
  missing_rows_ = rows_;
  for (uint32_t r = 0; r < rows_; ++r) SendRequest(Op::kRead, clock_, r, 0);
  ArmTimer(o_.rto);
}

void SimRank::OnReadReply(const proto::PacketView& p) {
  const proto::Header& h = p.header;
  if (phase_ != Phase::kPull || h.clock != clock_ || h.row >= rows_ || have_row_[h.row]) return;
  if (work_.has_data()) {
    const uint64_t start = uint64_t{h.row} * o_.row_width;
    const size_t n = std::min<size_t>(h.count, elements_ - start);
    for (size_t i = 0; i < n; ++i) pulled_[start + i] = p.Value(i);
  }
  have_row_[h.row] = 1;
  if (--missing_rows_ == 0) {
    ++timer_generation_;
    last_pull_s_ = Seconds(events_.now() - pull_start_);
    m_.pull_s += last_pull_s_;
    AfterPull();
  }
}

void SimRank::Evaluate(train::TimelinePoint* point) {
  Result<std::optional<Evaluation>> e = work_.Evaluate(pulled_);
  if (!e.ok()) return Fail(e.status());
  if (!e->has_value()) return;
  point->accuracy = (*e)->accuracy;
  point->test_loss = (*e)->loss;
  m_.final_accuracy = (*e)->accuracy;
  m_.final_test_loss = (*e)->loss;
}

// The training loop's decisions after a pull, as train/trainer.cc makes them.
void SimRank::AfterPull() {
  const int64_t step = m_.iterations;
  const bool at_limit = o_.max_steps > 0 && step >= o_.max_steps;
  double eval_s = 0;  // the evaluation's time, before the step as in train/trainer.cc
  if (step % o_.eval_every == 0 || at_limit) {
    train::TimelinePoint point;
    point.step = step;
    point.time_s = RunClock();
    point.train_loss = loss_count_ > 0 ? loss_sum_ / static_cast<double>(loss_count_) : train::kNaN;
    loss_sum_ = 0;
    loss_count_ = 0;
    if (o_.evaluates) {
      Evaluate(&point);
      if (!status_.ok()) return;
      last_eval_step_ = step;
      eval_s = o_.compute.eval_s;
      m_.eval_s += eval_s;
      if (report_pause_ && eval_s > 0 && !at_limit) {  // as train/trainer.cc: a step follows
        const SimTime pause = FromSeconds(eval_s);
        events_.After(pause, [this, pause] { report_pause_(pause); });
      }
    }
    m_.timeline.push_back(point);
    const bool reached =
        o_.evaluates && o_.target_accuracy > 0 && point.accuracy >= o_.target_accuracy;
    if (reached || at_limit) {
      // The rank stops once the evaluation is over, as a real one does.
      auto stop = [this, reached, at_limit] {
        if (!status_.ok()) return;
        if (!reached) return Stop(train::StopReason::kStepLimit, false);
        m_.target_reached_s = RunClock();
        Stop(train::StopReason::kTargetReached, /*finish_job=*/!at_limit);
      };
      if (eval_s == 0) return stop();
      phase_ = Phase::kCompute;
      events_.After(FromSeconds(eval_s), stop);
      return;
    }
  }

  // The step: the real math (or none), timed by the compute model.
  Result<double> loss = work_.Step(
      o_.rank, pulled_, work_.has_data() ? std::span<int32_t>(update_) : std::span<int32_t>());
  if (!loss.ok()) return Fail(loss.status());
  step_loss_ = *loss;
  const double u =
      o_.compute.jitter > 0 ? jitter_rng_.Uniform(-o_.compute.jitter, o_.compute.jitter) : 0.0;
  // The jitter is the computation's own variation; the floor is a sleep to a
  // fixed length after it (serene-train --compute-floor-ms), so it is not jittered.
  const double compute_s = std::max(o_.compute.floor_s, o_.compute.compute_s * (1 + u));
  m_.compute_s += compute_s;
  double sleep_s = 0;
  if (straggler_) {
    double base = compute_s;
    if (o_.straggler_base == StragglerBase::kIteration) {
      base = last_pull_s_ + compute_s + last_push_outside_barrier_s_;
    } else if (o_.straggler_base == StragglerBase::kWallIteration) {
      base = last_pull_s_ + compute_s + last_push_s_;
    }
    sleep_s = straggler_->NextDelay(base);
    m_.straggler_sleep_s += sleep_s;
    m_.slowed_iterations = straggler_->delayed_iterations();
  }
  phase_ = Phase::kCompute;
  events_.After(FromSeconds(eval_s + compute_s + sleep_s), [this] { Push(); });
}

void SimRank::Push() {
  if (!status_.ok()) return;
  for (uint32_t r = 0; r < rows_; ++r) SendInc(clock_, r, false);
  rows_sent_ = rows_;
  EnterClockWait(/*retransmit=*/false);
}

void SimRank::Stop(train::StopReason reason, bool finish_job) {
  m_.stop_reason = reason;
  m_.job_completion_s = RunClock();
  m_.wait_s = m_.pull_s + m_.push_s;
  if (o_.evaluates && last_eval_step_ != m_.iterations && !pulled_.empty()) {
    train::TimelinePoint point;
    point.step = m_.iterations;
    point.time_s = m_.job_completion_s;
    point.train_loss = loss_count_ > 0 ? loss_sum_ / static_cast<double>(loss_count_) : train::kNaN;
    Evaluate(&point);
    if (!status_.ok()) return;
    m_.eval_s += o_.compute.eval_s;  // after the job's end, as a real rank's final evaluation
    m_.timeline.push_back(point);
  }
  phase_ = Phase::kLeaving;
  leave_flags_ = finish_job ? proto::flags::kFinished : 0;
  SendRequest(Op::kLeave, clock_, 0, leave_flags_);
  ArmTimer(o_.rto);
}

void SimRank::Fail(Status s) {
  if (status_.ok()) status_ = std::move(s);
  phase_ = Phase::kDone;
  ++timer_generation_;
}

}  // namespace serene::sim
