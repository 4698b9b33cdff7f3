#include "client/udp_client.h"

#include <algorithm>
#include <string>

#include "net/address.h"
#include "proto/packet.h"

namespace serene {

Client::~Client() = default;

namespace client {
namespace {

using proto::Op;
namespace flags = proto::flags;

constexpr size_t kBatch = 64;
constexpr uint8_t kRowIdle = 0, kRowInFlight = 1, kRowDone = 2;
constexpr std::chrono::milliseconds kClockRtoCap{100};
constexpr std::chrono::milliseconds kMinRto{10};
constexpr uint32_t kFastRetransmit = 3;

std::string ClockText(uint32_t c) {
  return c == proto::kNoClock ? std::string("-1") : std::to_string(c);
}

}  // namespace

UdpClient::UdpClient(const ClientOptions& options, net::UdpSocket socket,
                     proto::Endpoint switch_ep)
    : options_(options),
      socket_(std::move(socket)),
      switch_ep_(switch_ep),
      switch_name_(net::FormatEndpoint(switch_ep)),
      recv_(kBatch),
      send_(kBatch),
      send_arena_(kBatch * proto::PacketSize(proto::kMaxValues)),
      last_heard_(SteadyClock::now()) {}

std::string UdpClient::local_address() const { return net::FormatEndpoint(socket_.local()); }

void UdpClient::SampleRtt(SteadyClock::duration sample) {
  // RFC 6298: SRTT and RTTVAR with gains 1/8 and 1/4.
  if (!have_rtt_) {
    srtt_ = sample;
    rttvar_ = sample / 2;
    have_rtt_ = true;
    return;
  }
  const auto err = sample > srtt_ ? sample - srtt_ : srtt_ - sample;
  rttvar_ = (3 * rttvar_ + err) / 4;
  srtt_ = (7 * srtt_ + sample) / 8;
}

UdpClient::SteadyClock::duration UdpClient::Rto(uint32_t attempts) const {
  // Before the first sample: initial_timeout. Then SRTT + 4 RTTVAR, at least
  // kMinRto (scheduling noise on a loaded host), doubling per attempt.
  auto t = have_rtt_ ? std::max<SteadyClock::duration>(srtt_ + 4 * rttvar_, kMinRto)
                     : std::chrono::duration_cast<SteadyClock::duration>(options_.initial_timeout);
  const auto cap = std::chrono::duration_cast<SteadyClock::duration>(options_.max_timeout);
  for (uint32_t i = 0; i < attempts && t < cap; ++i) t *= 2;
  return std::min(t, cap);
}

Status UdpClient::SilenceError(const std::string& what) const {
  const auto secs = std::chrono::duration_cast<std::chrono::duration<double>>(options_.deadline);
  return Status::DeadlineExceeded("switch " + switch_name_ + " did not answer " + what +
                                  " for " + std::to_string(secs.count()).substr(0, 5) +
                                  " s (job " + std::to_string(options_.job) + ", rank " +
                                  std::to_string(options_.rank) +
                                  "); is serene-switch running there with this job and key?");
}

Status UdpClient::Refused(const std::string& what, const proto::PacketView& error) const {
  std::string code = "unknown";
  if (error.header.count >= 1) {
    code = std::string(proto::ErrorName(static_cast<proto::ErrorCode>(error.Value(0))));
  }
  return Status::FailedPrecondition("switch " + switch_name_ + " refused " + what + " of job " +
                                    std::to_string(options_.job) + " rank " +
                                    std::to_string(options_.rank) + ": " + code);
}

Status UdpClient::NoProgressError(uint32_t c, const JobInfo& ack) const {
  const auto secs = std::chrono::duration_cast<std::chrono::duration<double>>(options_.deadline);
  return Status::DeadlineExceeded(
      "job " + std::to_string(options_.job) + " rank " + std::to_string(options_.rank) +
      ": waited at the barrier after CLOCK " + ClockText(c) + " for " +
      std::to_string(secs.count()).substr(0, 5) +
      " s without progress (slowest live rank at clock " + ClockText(ack.low) +
      ", fastest at " + ClockText(ack.high) + ", policy epoch " + std::to_string(ack.epoch) +
      "); a peer rank is stuck, or the switch does not evict silent ranks (evict_after=0)");
}

Status UdpClient::SaturationError() const {
  return Status::FailedPrecondition(
      "job " + std::to_string(options_.job) +
      ": the switch's table saturated (a sum left the fixed-point range +-2^" +
      std::to_string(31 - static_cast<int>(info_.scale_log2)) +
      "); the model is no longer exact. Use a smaller scale or a smaller learning rate");
}

void UdpClient::NoteFlags(uint16_t f) {
  if (f & flags::kFinished) finished_ = true;
  if (f & flags::kSaturated) saturated_ = true;
}

Status UdpClient::Queue(Op op, uint32_t clock, uint32_t row, uint16_t f,
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
  h.flags = f;
  uint8_t* p = send_arena_.data() + send_used_;
  proto::Encode(h, values, p);
  send_used_ += size;
  send_.Add(switch_ep_, {p, size});
  ++stats_.packets_sent;
  return Status::Ok();
}

Status UdpClient::QueueRow(uint32_t clock, uint32_t row, uint16_t f) {
  const size_t begin = size_t{row} * info_.row_width;
  const size_t len = std::min<size_t>(info_.row_width, info_.elements - begin);
  return Queue(Op::kInc, clock, row, f, {inc_buf_.data() + begin, len});
}

Status UdpClient::Flush() {
  if (send_.empty()) return Status::Ok();
  net::SendResult r = socket_.Send(&send_);
  send_.Clear();
  send_used_ = 0;
  if (r.sent == 0 && r.failed > 0) return r.error;
  return Status::Ok();
}

template <typename Handler>
Status UdpClient::Receive(SteadyClock::duration timeout, Handler&& handle) {
  if (timeout < SteadyClock::duration::zero()) timeout = SteadyClock::duration::zero();
  Result<size_t> n = socket_.Recv(&recv_, timeout);
  if (!n.ok()) return n.status();
  backlog_ = *n == recv_.capacity();
  for (size_t i = 0; i < *n; ++i) {
    proto::PacketView v;
    auto data = recv_.data(i);
    if (recv_.truncated(i) ||
        proto::Decode(data.data(), data.size(), &v) != proto::ParseError::kOk) {
      continue;
    }
    const proto::Header& h = v.header;
    if (h.job != options_.job || h.worker != options_.rank || h.key != options_.key) continue;
    ++stats_.packets_received;
    last_heard_ = SteadyClock::now();
    NoteFlags(h.flags);
    if (handle(v)) break;
  }
  return Status::Ok();
}

JobInfo UdpClient::ParseJoinAck(const proto::PacketView& v) const {
  namespace ja = proto::join_ack;
  JobInfo info;
  auto u = [&](size_t i) { return static_cast<uint32_t>(v.Value(i)); };
  info.workers = u(ja::kWorkers);
  info.elements = u(ja::kElements);
  info.row_width = u(ja::kRowWidth);
  info.done = u(ja::kDone);
  info.low = u(ja::kLow);
  info.high = u(ja::kHigh);
  info.epoch = u(ja::kEpoch);
  info.rows = u(ja::kRows);
  info.scale_log2 = u(ja::kScaleLog2);
  info.incarnation = v.header.count > ja::kIncarnation ? u(ja::kIncarnation) : 0;
  info.waiting = (v.header.flags & flags::kWaiting) != 0;
  return info;
}

Result<JobInfo> UdpClient::SendJoin() {
  uint32_t attempts = 0;
  Status s = Queue(Op::kJoin, 0, 0, 0, {});
  if (s.ok()) s = Flush();
  if (!s.ok()) return s;
  auto next_send = SteadyClock::now() + Rto(0);
  const auto started = SteadyClock::now();
  while (true) {
    std::optional<JobInfo> ack;
    Status refused;
    s = Receive(next_send - SteadyClock::now(), [&](const proto::PacketView& v) {
      if (v.header.op == Op::kJoinAck && v.header.count >= proto::join_ack::kIncarnation) {
        ack = ParseJoinAck(v);
        return true;
      }
      // A JOIN is never refused as evicted: such an ERROR answers an earlier
      // request (the other READs of a pull that learned of an eviction).
      if (v.header.op == Op::kError && !(v.header.count >= 1 &&
                                         v.Value(0) == static_cast<int32_t>(
                                                           proto::ErrorCode::kEvicted))) {
        refused = Refused("JOIN", v);
        return true;
      }
      ++stats_.stale_replies;
      return false;
    });
    if (!s.ok()) return s;
    if (!refused.ok()) return refused;
    if (ack) return *ack;
    if (SteadyClock::now() - started > options_.deadline) return SilenceError("JOIN");
    if (SteadyClock::now() >= next_send) {
      s = Queue(Op::kJoin, 0, 0, flags::kRetransmit, {});
      if (s.ok()) s = Flush();
      if (!s.ok()) return s;
      next_send = SteadyClock::now() + Rto(++attempts);
    }
  }
}

Status UdpClient::AllocateForJob() {
  if (info_.row_width == 0 || info_.row_width > proto::kMaxValues || info_.elements == 0 ||
      info_.rows != (info_.elements + info_.row_width - 1) / info_.row_width) {
    return Status::Internal("switch " + switch_name_ + " sent an inconsistent JOIN_ACK");
  }
  pull_buf_.assign(info_.elements, 0);
  inc_buf_.assign(info_.elements, 0);
  row_state_.assign(info_.rows, kRowIdle);
  row_sent_.assign(info_.rows, SteadyClock::time_point());
  row_attempts_.assign(info_.rows, 0);
  row_overtaken_.assign(info_.rows, 0);
  return Status::Ok();
}

Result<JobInfo> UdpClient::Join() {
  Result<JobInfo> ack = SendJoin();
  if (!ack.ok()) return ack;
  if (options_.world_size != 0 && ack->workers != options_.world_size) {
    return Status::InvalidArgument("world size " + std::to_string(options_.world_size) +
                                   " does not match job " + std::to_string(options_.job) +
                                   " on switch " + switch_name_ + ", which has " +
                                   std::to_string(ack->workers) + " ranks");
  }
  const bool same_geometry = joined_ && ack->elements == info_.elements &&
                             ack->row_width == info_.row_width;
  info_ = *ack;
  done_ = info_.done;
  pushed_ = false;
  if (!same_geometry) {
    Status s = AllocateForJob();
    if (!s.ok()) return s;
  }
  joined_ = true;
  return info_;
}

Status UdpClient::Initialize(std::span<float> model) {
  if (!joined_) return Status::FailedPrecondition("Initialize() before Join()");
  if (model.size() != info_.elements) {
    return Status::InvalidArgument("model has " + std::to_string(model.size()) +
                                   " elements but job " + std::to_string(options_.job) +
                                   " has " + std::to_string(info_.elements));
  }
  if (done_ == proto::kNoClock) {
    // Fresh job: rank 0 seeds clock 0 with the initial model; every rank clocks 0.
    if (options_.rank == 0) {
      Status s = Push(model);
      if (!s.ok()) return s;
    }
    Result<ClockResult> r = Clock();
    if (!r.ok()) return r.status();
  } else if (info_.waiting) {
    // Rejoined while waiting: CLOCK(done) again is a retransmission.
    Result<ClockResult> r = AwaitRelease(done_, 0, true);
    if (!r.ok()) return r.status();
  }
  return Pull(model);
}

Status UdpClient::Pull(std::span<float> model) {
  if (model.size() != info_.elements) {
    return Status::InvalidArgument("Pull(): model has " + std::to_string(model.size()) +
                                   " elements, job has " + std::to_string(info_.elements));
  }
  Status s = PullFixed(pull_buf_);
  if (!s.ok()) return s;
  Dequantize(pull_buf_, info_.scale_log2, model);
  return Status::Ok();
}

Status UdpClient::PullFixed(std::span<int32_t> model) {
  if (!joined_) return Status::FailedPrecondition("Pull() before Join()");
  if (model.size() != info_.elements) {
    return Status::InvalidArgument("Pull(): model has " + std::to_string(model.size()) +
                                   " elements, job has " + std::to_string(info_.elements));
  }
  // A rank evicted while it was away (a long stall, a partition) is told so
  // by its first READ: it joins again — resuming at the slowest live rank's
  // clock if it fell behind — and pulls the model of its new clock.
  for (int attempt = 0;; ++attempt) {
    bool evicted = false;
    Status s = PullOnce(model, &evicted);
    if (!evicted) return s;
    if (attempt == 2) {
      return Status::FailedPrecondition("job " + std::to_string(options_.job) + " rank " +
                                        std::to_string(options_.rank) +
                                        ": evicted again right after rejoining, three times");
    }
    s = Rejoin();
    if (!s.ok()) return s;
  }
}

Status UdpClient::Rejoin() {
  ++stats_.rejoins;
  Result<JobInfo> ack = SendJoin();
  if (!ack.ok()) return ack.status();
  info_.done = ack->done;
  info_.waiting = ack->waiting;
  info_.low = ack->low;
  info_.high = ack->high;
  info_.epoch = ack->epoch;
  done_ = ack->done;
  pushed_ = false;
  rejoined_ = true;
  if (!ack->waiting) return Status::Ok();
  // Rejoined while waiting at the barrier: wait for that release first.
  Result<ClockResult> r = AwaitRelease(done_, 0, true);
  return r.ok() ? Status::Ok() : r.status();
}

Status UdpClient::PullOnce(std::span<int32_t> model, bool* evicted) {
  const auto started = SteadyClock::now();
  const uint32_t c = clock();
  const uint32_t rows = info_.rows;
  std::fill(row_state_.begin(), row_state_.end(), kRowIdle);
  std::vector<uint32_t>& in_flight = in_flight_;  // rows in send order
  in_flight.clear();
  uint32_t next = 0, got = 0;
  Status refused;

  while (got < rows) {
    // Keep the window full.
    const auto now = SteadyClock::now();
    while (in_flight.size() < options_.window && next < rows) {
      Status q = Queue(Op::kRead, c, next, 0, {});
      if (!q.ok()) return q;
      row_state_[next] = kRowInFlight;
      row_sent_[next] = now;
      row_attempts_[next] = 0;
      row_overtaken_[next] = 0;
      in_flight.push_back(next++);
    }
    Status f = Flush();
    if (!f.ok()) return f;

    auto due = SteadyClock::now();
    if (!in_flight.empty()) {
      due = SteadyClock::time_point::max();
      for (uint32_t r : in_flight) due = std::min(due, row_sent_[r] + Rto(row_attempts_[r]));
    }
    Status s = Receive(due - SteadyClock::now(), [&](const proto::PacketView& v) {
      const proto::Header& h = v.header;
      if (h.op == Op::kError && h.clock == c && h.row < rows) {
        if (h.count >= 1 && v.Value(0) == static_cast<int32_t>(proto::ErrorCode::kEvicted)) {
          *evicted = true;
          return true;
        }
        refused = Refused("READ (row " + std::to_string(h.row) + ", clock " + ClockText(c) + ")",
                          v);
        return true;
      }
      if (h.op != Op::kReadReply || h.clock != c || h.row >= rows ||
          row_state_[h.row] != kRowInFlight) {
        ++stats_.stale_replies;
        return false;
      }
      const size_t begin = size_t{h.row} * info_.row_width;
      const size_t len = std::min<size_t>(info_.row_width, info_.elements - begin);
      if (h.count != len) {
        ++stats_.stale_replies;
        return false;
      }
      for (size_t i = 0; i < len; ++i) model[begin + i] = v.Value(i);
      // Karn: only replies to requests sent once measure the round trip.
      if (row_attempts_[h.row] == 0) SampleRtt(SteadyClock::now() - row_sent_[h.row]);
      row_state_[h.row] = kRowDone;
      ++got;
      // Requests sent before this one and still unanswered were overtaken.
      // A reply to a retransmitted row may answer its first copy, sent before
      // rows now ahead of it in send order: it proves nothing (Karn again).
      if (row_attempts_[h.row] == 0) {
        for (uint32_t r : in_flight) {
          if (r == h.row) break;
          if (row_state_[r] == kRowInFlight) ++row_overtaken_[r];
        }
      }
      return false;
    });
    if (!s.ok()) return s;
    if (!refused.ok()) return refused;
    if (*evicted) return Status::Ok();
    if (saturated_ && options_.fail_on_saturation) return SaturationError();

    // Drop answered rows; retransmit overdue ones, and (fast retransmit, as
    // TCP's three duplicate ACKs) those overtaken by kFastRetransmit later
    // replies: reordering alone rarely passes a request three times. A
    // retransmitted row moves to the back, in send order.
    std::erase_if(in_flight, [&](uint32_t r) { return row_state_[r] == kRowDone; });
    // Replies may still be queued in the socket (this process was not
    // scheduled for a while): read them before deciding anything timed out.
    if (backlog_) continue;
    const auto after = SteadyClock::now();
    size_t kept = 0;
    retransmitted_.clear();
    for (uint32_t r : in_flight) {
      if (after < row_sent_[r] + Rto(row_attempts_[r]) && row_overtaken_[r] < kFastRetransmit) {
        in_flight[kept++] = r;
        continue;
      }
      Status q = Queue(Op::kRead, c, r, flags::kRetransmit, {});
      if (!q.ok()) return q;
      row_sent_[r] = after;
      row_overtaken_[r] = 0;
      ++row_attempts_[r];
      ++stats_.read_retransmits;
      retransmitted_.push_back(r);
    }
    in_flight.resize(kept);
    in_flight.insert(in_flight.end(), retransmitted_.begin(), retransmitted_.end());
    if (got < rows && SilentTooLong()) {
      return SilenceError("READ (" + std::to_string(rows - got) + " rows, clock " + ClockText(c) +
                          ")");
    }
  }
  stats_.pull_time += SteadyClock::now() - started;
  return Status::Ok();
}

Status UdpClient::Push(std::span<const float> update) {
  if (!joined_) return Status::FailedPrecondition("Push() before Join()");
  if (update.size() != info_.elements) {
    return Status::InvalidArgument("Push(): update has " + std::to_string(update.size()) +
                                   " elements, job has " + std::to_string(info_.elements));
  }
  Status q = Quantize(update, info_.scale_log2, inc_buf_);
  if (!q.ok()) {
    return Status::InvalidArgument("Push() at clock " + ClockText(clock()) + ": " + q.message());
  }
  return PushFixed(inc_buf_);
}

Status UdpClient::PushFixed(std::span<const int32_t> update) {
  if (!joined_) return Status::FailedPrecondition("Push() before Join()");
  if (update.size() != info_.elements) {
    return Status::InvalidArgument("Push(): update has " + std::to_string(update.size()) +
                                   " elements, job has " + std::to_string(info_.elements));
  }
  const auto started = SteadyClock::now();
  if (update.data() != inc_buf_.data()) std::copy(update.begin(), update.end(), inc_buf_.begin());
  const uint32_t c = clock();
  for (uint32_t r = 0; r < info_.rows; ++r) {
    Status s = QueueRow(c, r, 0);
    if (!s.ok()) return s;
  }
  Status s = Flush();
  if (!s.ok()) return s;
  pushed_ = true;
  stats_.push_time += SteadyClock::now() - started;
  return Status::Ok();
}

Status UdpClient::ResendRows(uint32_t c, const proto::PacketView& nack) {
  if (!pushed_) return Status::Ok();  // nothing of ours to re-send (e.g. a stale NACK)
  const uint32_t rows = info_.rows;
  const uint16_t count = nack.header.count;
  // With a list: re-send listed rows and every row >= scan_end; without: all rows.
  uint32_t scan_end = 0;
  if (count >= proto::nack::kFirstMissing) {
    scan_end = std::min(rows, static_cast<uint32_t>(nack.Value(proto::nack::kScanEnd)));
    for (size_t i = proto::nack::kFirstMissing; i < count; ++i) {
      const uint32_t r = static_cast<uint32_t>(nack.Value(i));
      if (r >= scan_end) continue;
      Status s = QueueRow(c, r, flags::kRetransmit);
      if (!s.ok()) return s;
      ++stats_.rows_resent;
    }
  }
  for (uint32_t r = scan_end; r < rows; ++r) {
    Status s = QueueRow(c, r, flags::kRetransmit);
    if (!s.ok()) return s;
    ++stats_.rows_resent;
  }
  return Flush();
}

Result<ClockResult> UdpClient::Clock() {
  if (!joined_) return Status::FailedPrecondition("Clock() before Join()");
  const uint32_t n = pushed_ ? info_.rows : 0;
  return AwaitRelease(clock(), n, true);
}

Result<ClockResult> UdpClient::AwaitRelease(uint32_t c, uint32_t rows_announced, bool announce) {
  const auto started = SteadyClock::now();
  uint32_t attempts = 0;
  auto send_clock = [&](uint16_t f) -> Status {
    Status s = Queue(Op::kClock, c, rows_announced, f, {});
    return s.ok() ? Flush() : s;
  };
  if (announce) {
    Status s = send_clock(0);
    if (!s.ok()) return s;
  }
  auto next_send = SteadyClock::now() + Rto(0);
  // Probe at least four times per deadline, so one lost probe never makes a
  // live switch look silent.
  const auto probe_every = std::min<SteadyClock::duration>(
      std::max(Rto(30), std::chrono::duration_cast<SteadyClock::duration>(
                            std::chrono::milliseconds(500))),
      std::chrono::duration_cast<SteadyClock::duration>(options_.deadline) / 4);
  auto next_probe = SteadyClock::now() + probe_every;
  // The barrier's state as the probes' JOIN_ACKs show it; a wait in which it
  // does not move for `deadline` ends with an error instead of hanging (a
  // peer alive but stuck, or a switch that evicts nobody).
  struct Progress {
    uint32_t low, high, epoch;
    bool operator==(const Progress&) const = default;
  };
  std::optional<Progress> seen;
  auto last_progress = SteadyClock::now();

  while (true) {
    std::optional<ClockResult> released;
    const proto::PacketView* nack = nullptr;
    proto::PacketView nack_copy;
    std::optional<JobInfo> ack;
    Status refused;
    bool evicted = false;
    Status s = Receive(std::min(next_send, next_probe) - SteadyClock::now(),
                       [&](const proto::PacketView& v) {
      const proto::Header& h = v.header;
      if (h.op == Op::kRelease && h.clock == c && h.count >= proto::release::kCount) {
        ClockResult r;
        r.clock = c;
        r.epoch = static_cast<uint32_t>(v.Value(proto::release::kEpoch));
        r.low = static_cast<uint32_t>(v.Value(proto::release::kLow));
        r.high = static_cast<uint32_t>(v.Value(proto::release::kHigh));
        released = r;
        return true;
      }
      // NACKs and JOIN_ACKs do not end the batch: a RELEASE behind them wins.
      if (h.op == Op::kNack && h.clock == c && h.count >= 1) {
        nack_copy = v;  // points into the receive batch, valid until the next Receive
        nack = &nack_copy;
        return false;
      }
      if (h.op == Op::kJoinAck && h.count >= proto::join_ack::kIncarnation) {
        ack = ParseJoinAck(v);
        return false;
      }
      if (h.op == Op::kError && h.clock == c) {
        if (h.count >= 1 && v.Value(0) == static_cast<int32_t>(proto::ErrorCode::kEvicted)) {
          evicted = true;
        } else {
          refused = Refused("CLOCK " + ClockText(c), v);
        }
        return true;
      }
      ++stats_.stale_replies;
      return false;
    });
    if (!s.ok()) return s;
    if (!refused.ok()) return refused;

    if (released) {
      done_ = c;
      pushed_ = false;
      released->waited = SteadyClock::now() - started;
      released->finished = finished_;
      released->rejoined = rejoined_;
      rejoined_ = false;
      stats_.clock_wait += released->waited;
      if (saturated_ && options_.fail_on_saturation) return SaturationError();
      return *released;
    }
    if (nack != nullptr) {
      ++stats_.nacks;
      s = ResendRows(c, *nack);
      if (s.ok()) s = send_clock(flags::kRetransmit);
      if (!s.ok()) return s;
      attempts = 0;
      next_send = SteadyClock::now() + Rto(0);
      continue;
    }
    if (evicted) {
      // The controller evicted this rank (it was silent too long): join again.
      ++stats_.rejoins;
      Status q = Queue(Op::kJoin, 0, 0, 0, {});
      if (q.ok()) q = Flush();
      if (!q.ok()) return q;
      continue;
    }
    if (ack) {
      const Progress now_seen{ack->low, ack->high, ack->epoch};
      if (!seen || !(*seen == now_seen)) {
        seen = now_seen;
        last_progress = SteadyClock::now();
      } else if (SteadyClock::now() - last_progress > options_.deadline) {
        return NoProgressError(c, *ack);
      }
      if (ack->done == c && !ack->waiting) {
        // Released but the RELEASE was lost: ask again for it (with its epoch).
        s = send_clock(flags::kRetransmit);
        if (!s.ok()) return s;
      } else if (ack->done != c && ack->done + 1 != c) {
        // The rank was evicted and rejoined at another clock.
        info_.done = ack->done;
        info_.low = ack->low;
        info_.high = ack->high;
        info_.epoch = ack->epoch;
        done_ = ack->done;
        pushed_ = false;
        if (ack->waiting) {
          c = done_;
          rows_announced = 0;
          continue;
        }
        ClockResult r;
        r.clock = done_;
        r.epoch = ack->epoch;
        r.low = ack->low;
        r.high = ack->high;
        r.waited = SteadyClock::now() - started;
        r.finished = finished_;
        r.rejoined = true;
        rejoined_ = false;
        stats_.clock_wait += r.waited;
        return r;
      }
      continue;
    }

    const auto now = SteadyClock::now();
    if (SilentTooLong()) return SilenceError("CLOCK " + ClockText(c));
    if (now >= next_send) {
      s = send_clock(flags::kRetransmit);
      if (!s.ok()) return s;
      ++stats_.clock_retransmits;
      // A lost RELEASE is only recovered by the next CLOCK, so while waiting
      // at the barrier CLOCK backs off to kClockRtoCap, not max_timeout: a
      // 24-byte packet every 100 ms costs nothing and bounds the recovery.
      next_send = now + std::min<SteadyClock::duration>(Rto(++attempts), kClockRtoCap);
    }
    if (now >= next_probe && now - last_heard_ >= probe_every) {
      // Retransmitted CLOCKs get no answer while we wait at the barrier; a
      // JOIN does, and tells a dead switch from a slow peer. At most one
      // probe per probe_every, sent as soon as the switch was quiet that long.
      Status q = Queue(Op::kJoin, 0, 0, flags::kRetransmit, {});
      if (q.ok()) q = Flush();
      if (!q.ok()) return q;
      ++stats_.probes;
      next_probe = now + probe_every;
    } else if (now >= next_probe) {
      next_probe = last_heard_ + probe_every;
    }
  }
}

Status UdpClient::Leave(bool finish_job) {
  if (!joined_) return Status::FailedPrecondition("Leave() before Join()");
  const uint16_t f = finish_job ? flags::kFinished : 0;
  uint32_t attempts = 0;
  const auto started = SteadyClock::now();
  while (true) {
    Status s = Queue(Op::kLeave, clock(), 0, attempts > 0 ? (f | flags::kRetransmit) : f, {});
    if (s.ok()) s = Flush();
    if (!s.ok()) return s;
    bool left = false;
    Status refused;
    s = Receive(Rto(attempts), [&](const proto::PacketView& v) {
      if (v.header.op == Op::kLeave) {
        left = true;
        return true;
      }
      if (v.header.op == Op::kError && v.header.clock == clock()) {
        refused = Refused("LEAVE", v);
        return true;
      }
      return false;
    });
    if (!s.ok()) return s;
    if (!refused.ok()) return refused;
    if (left) {
      joined_ = false;
      if (finish_job) finished_ = true;
      return Status::Ok();
    }
    if (SteadyClock::now() - started > options_.deadline) return SilenceError("LEAVE");
    ++attempts;
  }
}

}  // namespace client

Result<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  Result<proto::Endpoint> sw = net::ParseEndpoint(options.switch_address);
  if (!sw.ok()) {
    return Status::InvalidArgument("bad switch address '" + options.switch_address +
                                   "': " + sw.status().message());
  }
  if (options.window == 0) return Status::InvalidArgument("window must be at least 1");
  if (options.initial_timeout.count() <= 0 || options.max_timeout < options.initial_timeout) {
    return Status::InvalidArgument("timeouts must satisfy 0 < initial_timeout <= max_timeout");
  }
  net::UdpSocketOptions so;
  so.address = options.bind_address;
  if (so.address.empty()) {
    so.address = sw->family == proto::Endpoint::Family::kIPv6 ? "::" : "0.0.0.0";
  }
  so.port = 0;
  so.recv_buffer_bytes = options.socket_buffer_bytes;
  so.send_buffer_bytes = options.socket_buffer_bytes;
  Result<net::UdpSocket> sock = net::UdpSocket::Open(so);
  if (!sock.ok()) return sock.status();
  return std::unique_ptr<Client>(
      new client::UdpClient(options, std::move(*sock), *sw));
}

}  // namespace serene
