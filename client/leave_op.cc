#include "client/leave_op.h"

namespace serene::client {

Status LeaveOp::Start() {
  next_send_ = SteadyClock::now() + t_.rtt().Rto(0);
  return t_.Send(proto::Op::kLeave, clock_, 0, flags_);
}

Operation::Reply LeaveOp::OnReply(const proto::PacketView& v) {
  if (v.header.op == proto::Op::kLeave) {
    Finish(Status::Ok());
    return Reply::kProgress;
  }
  if (CookieAnswers(v, proto::Op::kLeave)) {
    // The switch does not know the rank at this address (it restarted):
    // nothing to leave.
    Finish(Status::Ok());
    return Reply::kHandled;
  }
  if (v.header.op == proto::Op::kError && v.header.clock == clock_ &&
      ErrorRefuses(v, proto::Op::kLeave)) {
    // A switch that no longer knows the rank (it restarted) has nothing to leave.
    if (ErrorCodeOf(v) == proto::ErrorCode::kNotJoined) {
      Finish(Status::Ok());
    } else {
      Finish(Refused(t_, "LEAVE", v));
    }
    return Reply::kHandled;
  }
  return Reply::kStale;
}

Status LeaveOp::OnTimer(SteadyClock::time_point now) {
  next_send_ = now + t_.rtt().Rto(++attempts_);
  return t_.Send(proto::Op::kLeave, clock_, 0,
                 static_cast<uint16_t>(flags_ | proto::flags::kRetransmit));
}

}  // namespace serene::client
