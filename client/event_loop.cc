#include <string>

#include "client/operation.h"
#include "client/rank_state.h"

namespace serene::client {

std::string ClockText(uint32_t clock) {
  return clock == proto::kNoClock ? std::string("-1") : std::to_string(clock);
}

Status RunOperation(Transport& t, Operation& op, ClientStats* stats, EarlyRows* early) {
  const auto deadline = std::chrono::duration_cast<SteadyClock::duration>(t.options().deadline);
  Status s = op.Start();
  if (!s.ok()) return s;
  auto last_progress = SteadyClock::now();
  while (!op.outcome()) {
    const auto until = std::min(op.NextTimer(), last_progress + deadline);
    const auto wait = until == SteadyClock::time_point::min() ? SteadyClock::duration::zero()
                                                              : until - SteadyClock::now();
    s = t.Receive(wait, [&](const proto::PacketView& v) {
      switch (op.OnReply(v)) {
        case Operation::Reply::kStale:
          if (early != nullptr && early->Offer(v)) {
            t.NoteData();
          } else {
            ++stats->stale_replies;
          }
          break;
        case Operation::Reply::kHandled: break;
        case Operation::Reply::kProgress:
          last_progress = t.received_at();
          t.NoteData();
          break;
      }
      return op.outcome().has_value();
    });
    if (!s.ok()) return s;
    if (op.outcome()) break;
    // Replies may still be queued (this process was not scheduled for a
    // while): read them before deciding that anything timed out.
    if (t.backlog()) continue;
    const auto now = SteadyClock::now();
    if (now >= op.NextTimer()) {
      s = op.OnTimer(now);
      if (!s.ok()) return s;
    }
    if (!op.outcome() && now - last_progress > deadline) {
      return op.Stalled(now - t.last_heard() > deadline);
    }
  }
  return *op.outcome();
}

Status SilenceError(const Transport& t, const std::string& what) {
  const auto secs =
      std::chrono::duration_cast<std::chrono::duration<double>>(t.options().deadline);
  return Status::DeadlineExceeded("switch " + t.switch_name() + " did not answer " + what +
                                  " for " + std::to_string(secs.count()).substr(0, 5) +
                                  " s (job " + std::to_string(t.options().job) + ", rank " +
                                  std::to_string(t.options().rank) +
                                  "); is serene-switch running there with this job and key?");
}

proto::ErrorCode ErrorCodeOf(const proto::PacketView& error) {
  return static_cast<proto::ErrorCode>(
      error.header.count > proto::error_reply::kCode ? error.Value(proto::error_reply::kCode) : 0);
}

bool CookieAnswers(const proto::PacketView& v, proto::Op op) {
  return v.header.op == proto::Op::kCookie && proto::cookie::AnsweredOp(v.header.flags) == op;
}

Status JoinWithNewCookie(Transport& t) {
  if (!t.cookie_unused()) return Status::Ok();
  return t.Send(proto::Op::kJoin, 0, 0, 0);
}

bool ErrorRefuses(const proto::PacketView& error, proto::Op op) {
  if (error.header.count <= proto::error_reply::kOp) return true;
  return error.Value(proto::error_reply::kOp) == static_cast<int32_t>(op);
}

Status Refused(const Transport& t, const std::string& what, const proto::PacketView& error) {
  return Status::FailedPrecondition(
      "switch " + t.switch_name() + " refused " + what + " of job " +
      std::to_string(t.options().job) + " rank " + std::to_string(t.options().rank) + ": " +
      std::string(proto::ErrorName(ErrorCodeOf(error))));
}

}  // namespace serene::client
