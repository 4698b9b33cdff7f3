#include "client/join_op.h"

#include <string>

#include "net/address.h"

namespace serene::client {
namespace {

// ERROR code 11 (rank_in_use): the rank is bound to another address and live.
constexpr int32_t kRankInUse = 11;

}  // namespace

bool IsJoinAck(const proto::PacketView& v) {
  return v.header.op == proto::Op::kJoinAck && v.header.count >= proto::join_ack::kIncarnation;
}

JobInfo ParseJoinAck(const proto::PacketView& v) {
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
  info.waiting = (v.header.flags & proto::flags::kWaiting) != 0;
  if (v.header.count > ja::kGroupPort && u(ja::kGroupPort) != 0 && u(ja::kGroupPort) <= 0xFFFF) {
    const proto::Endpoint group =
        net::Ipv4Endpoint(u(ja::kGroupAddress), static_cast<uint16_t>(u(ja::kGroupPort)));
    if (group.valid()) info.group = net::FormatEndpoint(group);
  }
  return info;
}

Status JoinOp::Start() {
  next_send_ = SteadyClock::now() + t_.rtt().Rto(0);
  return t_.Send(proto::Op::kJoin, 0, 0, 0);
}

Operation::Reply JoinOp::OnReply(const proto::PacketView& v) {
  if (IsJoinAck(v)) {
    ack_ = ParseJoinAck(v);
    Finish(Status::Ok());
    return Reply::kProgress;
  }
  if (CookieAnswers(v, proto::Op::kJoin)) {
    // Return routability: the JOIN is served once it echoes the cookie.
    Status s = JoinWithNewCookie(t_);
    if (!s.ok()) Finish(s);
    return Reply::kHandled;
  }
  // A JOIN is never refused as evicted: such an ERROR answers an earlier
  // request (the other READs of a pull that learned of an eviction).
  if (v.header.op != proto::Op::kError || !ErrorRefuses(v, proto::Op::kJoin) ||
      ErrorCodeOf(v) == proto::ErrorCode::kEvicted) {
    return Reply::kStale;
  }
  if (static_cast<int32_t>(ErrorCodeOf(v)) == kRankInUse) {
    in_use_ = true;  // retried on the timer until the old binding is evicted
    return Reply::kHandled;
  }
  Finish(Refused(t_, "JOIN", v));
  return Reply::kHandled;
}

Status JoinOp::OnTimer(SteadyClock::time_point now) {
  next_send_ = now + t_.rtt().Rto(++attempts_);
  return t_.Send(proto::Op::kJoin, 0, 0, proto::flags::kRetransmit);
}

Status JoinOp::Stalled(bool) const {
  if (in_use_) {
    return Status::DeadlineExceeded(
        "job " + std::to_string(t_.options().job) + " rank " +
        std::to_string(t_.options().rank) + " is bound to another address at switch " +
        t_.switch_name() +
        " and still live (rank_in_use): another worker runs as this rank, or this worker's "
        "previous run has not been evicted yet (the switch evicts a rank silent for the "
        "job's evict_after; `serene-ctl evict JOB RANK` does it at once)");
  }
  return SilenceError(t_, "JOIN");
}

}  // namespace serene::client
