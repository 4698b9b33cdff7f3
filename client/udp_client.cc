#include "client/udp_client.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "client/clock_op.h"
#include "client/join_op.h"
#include "client/leave_op.h"
#include "client/pull_op.h"
#include "net/address.h"

namespace serene {

Client::~Client() = default;

namespace client {
namespace {

// A pull or a clock interrupted this many times in a row (evicted again,
// the job lost again) gives up with an error instead of trying for ever.
constexpr int kMaxInterruptions = 3;

}  // namespace

UdpClient::UdpClient(const ClientOptions& options, net::UdpSocket socket,
                     proto::Endpoint switch_ep)
    : options_(options), transport_(options_, std::move(socket), switch_ep, &stats_) {}

Status UdpClient::Run(Operation& op) {
  early_.SetFloor(rank_.clock());
  return RunOperation(transport_, op, &stats_, &early_);
}

Status UdpClient::CheckSize(const char* call, const char* what, size_t size) const {
  if (!rank_.joined) return Status::FailedPrecondition(std::string(call) + " before Join()");
  if (size == rank_.info.elements) return Status::Ok();
  return Status::InvalidArgument(std::string(call) + ": " + what + " has " +
                                 std::to_string(size) + " elements, job has " +
                                 std::to_string(rank_.info.elements));
}

Status UdpClient::SaturationError() const {
  return Status::FailedPrecondition(
      "job " + std::to_string(options_.job) +
      ": the switch's table saturated (a sum left the fixed-point range +-2^" +
      std::to_string(31 - static_cast<int>(rank_.info.scale_log2)) +
      "); the model is no longer exact. Use a smaller scale or a smaller learning rate");
}

Status UdpClient::Adopt(const JobInfo& ack) {
  if (ack.row_width == 0 || ack.row_width > proto::kMaxValues || ack.elements == 0 ||
      ack.rows != (ack.elements + ack.row_width - 1) / ack.row_width) {
    return Status::Internal("switch " + transport_.switch_name() +
                            " sent an inconsistent JOIN_ACK");
  }
  if (options_.world_size != 0 && ack.workers != options_.world_size) {
    return Status::InvalidArgument("world size " + std::to_string(options_.world_size) +
                                   " does not match job " + std::to_string(options_.job) +
                                   " on switch " + transport_.switch_name() + ", which has " +
                                   std::to_string(ack.workers) + " ranks");
  }
  if (rank_.joined && (ack.elements != rank_.info.elements ||
                       ack.row_width != rank_.info.row_width ||
                       ack.scale_log2 != rank_.info.scale_log2)) {
    return Status::FailedPrecondition(
        "job " + std::to_string(options_.job) + " on switch " + transport_.switch_name() +
        " changed shape (now " + std::to_string(ack.elements) + " elements in rows of " +
        std::to_string(ack.row_width) + ", scale 2^" + std::to_string(ack.scale_log2) +
        "): it was created again with another geometry; restart the training job");
  }
  if (!rank_.joined) {
    rank_.inc.assign(ack.elements, 0);
    pull_buf_.assign(ack.elements, 0);
    history_.Start(ack.elements);
  }
  rank_.info = ack;
  transport_.SetJobShape(ack.workers, ack.elements);
  // Without the group every row is READ and answered to this rank: slower
  // on a host with several ranks, never wrong, so a failure is not fatal.
  if (options_.group && !ack.group.empty()) (void)transport_.OpenGroup(ack.group, ack.elements * 4);
  // Rows kept from before this JOIN may be of another incarnation's model.
  early_.Reset(ack, transport_.group_open());
  early_.LandIn(pull_buf_);
  rank_.done = ack.done;
  rank_.pushed = false;
  rank_.joined = true;
  return Status::Ok();
}

Result<JobInfo> UdpClient::Join() {
  JoinOp op(transport_);
  Status s = Run(op);
  if (!s.ok()) return s;
  const bool first = !rank_.joined;
  s = Adopt(op.ack());
  if (!s.ok()) return s;
  if (first && rank_.done != proto::kNoClock) {
    history_.MarkIncomplete("this rank's process joined the job at clock " +
                            ClockText(rank_.clock()) +
                            " and does not hold its rank's updates from before");
  }
  return rank_.info;
}

Status UdpClient::AwaitPendingRelease() {
  if (!rank_.info.waiting) return Status::Ok();
  // Rejoined while waiting: CLOCK(done) again is a retransmission.
  ClockOp op(transport_, rank_, rank_.info.done, 0, &stats_);
  Status s = Run(op);
  if (!s.ok()) return s;
  if (op.end() == ClockOp::End::kLost) return Recover("its job was created again");
  if (op.end() == ClockOp::End::kRejoinedAhead) return Adopt(op.ack());
  rank_.info.waiting = false;
  return Status::Ok();
}

Status UdpClient::Rejoin() {
  ++stats_.rejoins;
  rejoined_ = true;
  JoinOp op(transport_);
  Status s = Run(op);
  if (!s.ok()) return s;
  if (op.ack().incarnation != rank_.info.incarnation && op.ack().incarnation != 0) {
    return Recover("its job was created again");
  }
  s = Adopt(op.ack());
  return s.ok() ? AwaitPendingRelease() : s;
}

Status UdpClient::Recover(const std::string& why) {
  ++stats_.switch_restarts;
  restarted_ = true;
  const std::string lost = "job " + std::to_string(options_.job) + ": switch " +
                           transport_.switch_name() + " lost the job (" + why + ")";
  if (std::string no = history_.Incomplete(); !no.empty()) {
    return Status::FailedPrecondition(lost + " and rank " + std::to_string(options_.rank) +
                                      " cannot rebuild it exactly: " + no);
  }
  // Where the rank stood: the new incarnation is brought back to it.
  const uint32_t done = rank_.done;
  const bool pushed = rank_.pushed;
  const std::span<const int32_t> in_flight = rank_.pushed_values;
  JoinOp join(transport_);
  Status s = Run(join);
  if (!s.ok()) return s;
  s = Adopt(join.ack());
  if (!s.ok()) return s;
  // A replay interrupted earlier goes on where the new switch stands.
  if (rank_.done != proto::kNoClock && proto::ClockDiff(rank_.done, done) > 0) {
    return Status::Internal(lost + ", and its new incarnation holds rank " +
                            std::to_string(options_.rank) + " at clock " +
                            ClockText(rank_.done) + ", ahead of the rank's own " +
                            ClockText(done));
  }
  if (rank_.info.waiting) {
    s = AwaitPendingRelease();
    if (!s.ok()) return s;
  }
  if (done != proto::kNoClock) {
    const std::vector<int32_t> fold =
        history_.FoldWithout(pushed ? in_flight : std::span<const int32_t>());
    s = Replay(rank_.done + 1, done, history_.HasFold(pushed) ? fold : std::span<const int32_t>());
    if (!s.ok()) return s;
  }
  rank_.done = done;
  rank_.pushed = false;
  if (pushed) return PushRows(in_flight, rank_.clock(), /*record=*/false);
  return Status::Ok();
}

Status UdpClient::Replay(uint32_t from, uint32_t to, std::span<const int32_t> fold) {
  // Rank 0's fold (its seed and more) goes in at the seeding clock; the
  // others may not INC there, theirs goes in at clock 1.
  const uint32_t fold_clock = options_.rank == 0 ? 0 : 1;
  for (uint32_t c = from; proto::ClockDiff(c, to) <= 0; ++c) {
    rank_.done = c - 1;
    rank_.pushed = false;
    const std::span<const int32_t> values = c == fold_clock ? fold : std::span<const int32_t>();
    if (!values.empty()) {
      Status s = PushRows(values, c, /*record=*/false);
      if (!s.ok()) return s;
    }
    ClockOp op(transport_, rank_, c, values.empty() ? 0 : rank_.info.rows, &stats_);
    Status s = Run(op);
    if (!s.ok()) return s;
    if (op.end() != ClockOp::End::kReleased) {
      return Status::Unavailable(
          "job " + std::to_string(options_.job) + ": switch " + transport_.switch_name() +
          (op.end() == ClockOp::End::kLost ? " lost the job again" : " evicted this rank") +
          " while rank " + std::to_string(options_.rank) + " replayed clock " + ClockText(c) +
          " of " + ClockText(to) + " into it");
    }
  }
  return Status::Ok();
}

Status UdpClient::Initialize(std::span<float> model) {
  if (!rank_.joined) return Status::FailedPrecondition("Initialize() before Join()");
  if (model.size() != rank_.info.elements) {
    return Status::InvalidArgument("model has " + std::to_string(model.size()) +
                                   " elements but job " + std::to_string(options_.job) +
                                   " has " + std::to_string(rank_.info.elements));
  }
  if (rank_.done == proto::kNoClock) {
    // Fresh job: rank 0 seeds clock 0 with the initial model; every rank clocks 0.
    if (options_.rank == 0) {
      Status s = Push(model);
      if (!s.ok()) return s;
    }
    Result<ClockResult> r = Clock();
    if (!r.ok()) return r.status();
  } else {
    Status s = AwaitPendingRelease();
    if (!s.ok()) return s;
  }
  return Pull(model);
}

Status UdpClient::Pull(std::span<float> model) {
  if (Status s = CheckSize("Pull()", "model", model.size()); !s.ok()) return s;
  Status s = PullRows(pull_buf_);
  if (!s.ok()) return s;
  Dequantize(pull_buf_, rank_.info.scale_log2, model);
  return Status::Ok();
}

Status UdpClient::PullFixed(std::span<int32_t> model) {
  if (Status s = CheckSize("Pull()", "model", model.size()); !s.ok()) return s;
  return PullRows(model);
}

Status UdpClient::TakeQueuedGroupRows() {
  if (!transport_.group_open()) return Status::Ok();
  early_.SetFloor(rank_.clock());
  do {
    Status s = transport_.Receive(SteadyClock::duration::zero(), [&](const proto::PacketView& v) {
      if (early_.Offer(v)) {
        transport_.NoteData();
      } else {
        ++stats_.stale_replies;
      }
      return false;
    });
    if (!s.ok()) return s;
  } while (transport_.backlog());
  return Status::Ok();
}

Status UdpClient::PullRows(std::span<int32_t> model) {
  const auto started = SteadyClock::now();
  // The data of a pull right after a Clock() includes its RELEASE.
  if (!clocked_since_pull_) transport_.ResetDataArrival();
  clocked_since_pull_ = false;
  for (int attempt = 0; attempt < kMaxInterruptions; ++attempt) {
    Status taken = TakeQueuedGroupRows();
    if (!taken.ok()) return taken;
    PullOp op(transport_, rank_, model, &stats_, &pull_registers_, &early_);
    Status s = Run(op);
    if (!s.ok()) return s;
    switch (op.end()) {
      case PullOp::End::kPulled:
        // Until the next JOIN, every row is READ and answered to this rank.
        if (op.GroupSilent()) transport_.CloseGroup();
        {
          const auto now = SteadyClock::now();
          stats_.pull_time += now - started;
          const auto arrived = transport_.data_arrival();  // min(): nothing noted
          data_arrival_ = arrived == SteadyClock::time_point::min() ? now : std::min(now, arrived);
        }
        return Status::Ok();
      case PullOp::End::kEvicted:
        // Evicted while away (a long stall, a partition): join again —
        // resuming at the slowest live rank's clock if behind — and pull the
        // model of the new clock.
        s = Rejoin();
        break;
      case PullOp::End::kNotJoined:
        s = Recover(
            "a READ was answered with a COOKIE: the switch does not know this rank at its address");
        break;
    }
    if (!s.ok()) return s;
  }
  return Status::Unavailable("job " + std::to_string(options_.job) + " rank " +
                             std::to_string(options_.rank) + ": a pull was interrupted " +
                             std::to_string(kMaxInterruptions) +
                             " times in a row (evicted, or the switch lost the job)");
}

Status UdpClient::Push(std::span<const float> update) {
  if (Status s = CheckPush(update.size()); !s.ok()) return s;
  Status q = Quantize(update, rank_.info.scale_log2, rank_.inc);
  if (!q.ok()) {
    return Status::InvalidArgument("Push() at clock " + ClockText(clock()) + ": " + q.message());
  }
  return PushFixed(rank_.inc);
}

Status UdpClient::PushFixed(std::span<const int32_t> update) {
  if (Status s = CheckPush(update.size()); !s.ok()) return s;
  // The caller may change `update` once Push returns: NACKs re-send a copy.
  if (update.data() != rank_.inc.data()) std::copy(update.begin(), update.end(), rank_.inc.begin());
  return PushRows(rank_.inc, clock(), /*record=*/true);
}

Status UdpClient::CheckPush(size_t elements) const {
  if (Status s = CheckSize("Push()", "update", elements); !s.ok()) return s;
  if (rank_.pushed) {
    // The switch takes one update per rank per clock: a second push's INCs
    // would be dropped as duplicates, except where a row of the first was
    // lost — its NACK would then re-send the second's values, a mix.
    const std::string c = ClockText(clock());
    return Status::FailedPrecondition(
        "Push() at clock " + c + ": rank " + std::to_string(options_.rank) +
        " already pushed its update for clock " + c +
        " (the switch takes one per rank per clock); call Clock() before pushing again, or "
        "add the updates into one push");
  }
  if (clock() == 0 && options_.rank != 0) {
    return Status::InvalidArgument(
        "Push() at clock 0 from rank " + std::to_string(options_.rank) +
        ": clock 0 seeds the model and only rank 0 pushes it (the switch would drop these "
        "INCs); call Initialize(), which pushes nothing on other ranks");
  }
  return Status::Ok();
}

Status UdpClient::PushRows(std::span<const int32_t> values, uint32_t c, bool record) {
  const auto started = SteadyClock::now();
  const uint32_t first = FirstRow(options_.rank, rank_.info);
  const auto row = [&](uint32_t i) {
    const size_t begin = size_t{RowAt(first, i, rank_.info.rows)} * rank_.info.row_width;
    return std::pair(begin, values.subspan(begin, std::min<size_t>(rank_.info.row_width,
                                                                   rank_.info.elements - begin)));
  };
  uint32_t recorded = 0;  // rows added to the history
  Status s;
  for (uint32_t i = 0; i < rank_.info.rows && s.ok(); ++i) {
    const auto [begin, v] = row(i);
    s = transport_.Queue(proto::Op::kInc, c, RowAt(first, i, rank_.info.rows), 0, v);
    // Into the history while the row is in cache from being encoded.
    if (s.ok() && record) {
      history_.AddRow(begin, v);
      ++recorded;
    }
  }
  if (s.ok()) s = transport_.Flush();
  if (!s.ok()) {
    // Not pushed: the caller may push again, so the history takes it back.
    for (uint32_t i = 0; i < recorded; ++i) {
      const auto [begin, v] = row(i);
      history_.AddRow(begin, v, -1);
    }
    return s;
  }
  if (record) history_.CountUpdate();
  rank_.pushed_values = values;
  rank_.pushed = true;
  stats_.push_time += SteadyClock::now() - started;
  return Status::Ok();
}

Result<ClockResult> UdpClient::Clock() {
  if (!rank_.joined) return Status::FailedPrecondition("Clock() before Join()");
  const auto started = SteadyClock::now();
  const uint32_t c = clock();
  ClockResult r;
  transport_.ResetDataArrival();
  clocked_since_pull_ = true;
  for (int attempt = 0;; ++attempt) {
    if (attempt == kMaxInterruptions) {
      return Status::Unavailable("job " + std::to_string(options_.job) + " rank " +
                                 std::to_string(options_.rank) + ": CLOCK " + ClockText(c) +
                                 " was interrupted " + std::to_string(kMaxInterruptions) +
                                 " times in a row (the switch lost the job each time)");
    }
    ClockOp op(transport_, rank_, c, rank_.pushed ? rank_.info.rows : 0, &stats_);
    Status s = Run(op);
    if (!s.ok()) return s;
    r = op.result();
    if (op.end() == ClockOp::End::kReleased) {
      rank_.done = c;
      rank_.pushed = false;
      break;
    }
    if (op.end() == ClockOp::End::kRejoinedAhead) {
      // Evicted and resumed at the live ranks' clock: this clock's update is
      // moot; the caller pulls the model of the new clock.
      if (rank_.pushed) history_.Remove(rank_.pushed_values);
      s = Adopt(op.ack());
      if (s.ok()) s = AwaitPendingRelease();
      if (!s.ok()) return s;
      r.clock = rank_.done;
      rejoined_ = true;
      break;
    }
    // kLost: rebuilt up to this clock, this clock's update pushed again;
    // CLOCK it on the new incarnation.
    s = Recover("its job was created again (incarnation " +
                std::to_string(rank_.info.incarnation) + " -> " +
                std::to_string(op.ack().incarnation) + ")");
    if (!s.ok()) return s;
  }
  r.waited = SteadyClock::now() - started;
  r.finished = finished();
  r.rejoined = rejoined_;
  r.switch_restarted = restarted_;
  rejoined_ = false;
  restarted_ = false;
  stats_.clock_wait += r.waited;
  if (transport_.saturated() && options_.fail_on_saturation) return SaturationError();
  return r;
}

Result<ClockResult> UdpClient::Exchange(std::span<const float> update, std::span<float> model) {
  if (Status s = CheckSize("Exchange()", "model", model.size()); !s.ok()) return s;
  // Early rows land in pull_buf_, which Pull() dequantizes from.
  if (Status s = Push(update); !s.ok()) return s;
  Result<ClockResult> r = Clock();
  if (!r.ok() || r->finished) return r;
  if (Status s = Pull(model); !s.ok()) return s;
  return r;
}

Result<ClockResult> UdpClient::ExchangeFixed(std::span<const int32_t> update,
                                             std::span<int32_t> model) {
  if (Status s = CheckSize("Exchange()", "model", model.size()); !s.ok()) return s;
  // `update` stays as it is until this call returns, unless rows land in it:
  // then NACKs re-send a copy, else `update` itself (no copy of the model).
  const auto at = [](const int32_t* p) { return reinterpret_cast<uintptr_t>(p); };
  const bool overlap = at(update.data()) < at(model.data() + model.size()) &&
                       at(model.data()) < at(update.data() + update.size());
  if (overlap) {
    if (Status s = PushFixed(update); !s.ok()) return s;
  } else {
    if (Status s = CheckPush(update.size()); !s.ok()) return s;
    if (Status s = PushRows(update, clock(), /*record=*/true); !s.ok()) return s;
  }
  // The next clock's rows that come while the barrier waits land in the
  // caller's model, not in pull_buf_ to be copied at the pull. (A JOIN on
  // the way, after an eviction or a lost job, lands them in pull_buf_ again:
  // the pull then copies them, as PullFixed does.)
  early_.LandIn(model);
  Result<ClockResult> r = Clock();
  if (r.ok() && !r->finished) {
    if (Status s = PullFixed(model); !s.ok()) r = s;
  }
  early_.LandIn(pull_buf_);
  // The clock failed with `update` still the pushed values: a later Clock()
  // re-sends from a copy, as after PushFixed (the caller may reuse `update`).
  if (rank_.pushed && rank_.pushed_values.data() == update.data()) {
    std::copy(update.begin(), update.end(), rank_.inc.begin());
  }
  rank_.pushed_values = rank_.inc;
  return r;
}

Status UdpClient::Leave(bool finish_job) {
  if (!rank_.joined) return Status::FailedPrecondition("Leave() before Join()");
  LeaveOp op(transport_, clock(), finish_job);
  Status s = Run(op);
  if (!s.ok()) return s;
  rank_.joined = false;
  if (finish_job) finished_ = true;
  return Status::Ok();
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
  if (options.deadline.count() <= 0) return Status::InvalidArgument("deadline must be positive");
  net::UdpSocketOptions so;
  so.address = options.bind_address;
  if (so.address.empty()) {
    so.address = sw->family == proto::Endpoint::Family::kIPv6 ? "::" : "0.0.0.0";
  }
  so.port = 0;
  so.recv_buffer_bytes = options.socket_buffer_bytes;
  so.send_buffer_bytes = options.socket_buffer_bytes;
  so.gso = options.offload;
  so.gro = options.offload;
  so.arrival_times = true;  // when replies reached the host (Client::data_arrival)
  Result<net::UdpSocket> sock = net::UdpSocket::Open(so);
  if (!sock.ok()) return sock.status();
  return std::unique_ptr<Client>(new client::UdpClient(options, std::move(*sock), *sw));
}

}  // namespace serene
