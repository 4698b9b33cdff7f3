// JoinOp: JOIN until a JOIN_ACK — binds the rank to this socket's address and
// learns the job (docs/protocol.md, JOIN). A COOKIE answering the JOIN is
// echoed in the next JOIN at once (the transport puts it in every JOIN).
//
// A rank still bound to another address and live (the switch answers
// rank_in_use: a previous incarnation of this worker has not been evicted
// yet) is not an error at once: the JOIN is retried with backoff until the
// switch evicts the old binding (after the job's evict_after of silence) or
// the deadline rule ends the call with a message saying so.
#pragma once

#include "client/operation.h"
#include "include/serene/client.h"

namespace serene::client {

// JOIN_ACK values as a JobInfo. REQUIRES: count >= join_ack::kIncarnation.
JobInfo ParseJoinAck(const proto::PacketView& v);

// Whether `v` is a JOIN_ACK with every value a JobInfo needs.
bool IsJoinAck(const proto::PacketView& v);

class JoinOp final : public Operation {
 public:
  explicit JoinOp(Transport& t) : t_(t) {}

  Status Start() override;
  Reply OnReply(const proto::PacketView& v) override;
  SteadyClock::time_point NextTimer() const override { return next_send_; }
  Status OnTimer(SteadyClock::time_point now) override;
  Status Stalled(bool switch_silent) const override;

  // REQUIRES: outcome() is OK.
  const JobInfo& ack() const { return ack_; }

 private:
  Transport& t_;
  uint32_t attempts_ = 0;
  SteadyClock::time_point next_send_;
  bool in_use_ = false;  // the switch said rank_in_use
  JobInfo ack_;
};

}  // namespace serene::client
