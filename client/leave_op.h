// LeaveOp: LEAVE until the switch answers — the rank leaves the barrier (and,
// with FINISHED, ends the job for every rank).
#pragma once

#include "client/operation.h"

namespace serene::client {

class LeaveOp final : public Operation {
 public:
  LeaveOp(Transport& t, uint32_t clock, bool finish_job)
      : t_(t), clock_(clock), flags_(finish_job ? proto::flags::kFinished : 0) {}

  Status Start() override;
  Reply OnReply(const proto::PacketView& v) override;
  SteadyClock::time_point NextTimer() const override { return next_send_; }
  Status OnTimer(SteadyClock::time_point now) override;
  Status Stalled(bool) const override { return SilenceError(t_, "LEAVE"); }

 private:
  Transport& t_;
  const uint32_t clock_;
  const uint16_t flags_;
  uint32_t attempts_ = 0;
  SteadyClock::time_point next_send_;
};

}  // namespace serene::client
