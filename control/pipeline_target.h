// PipelineTarget: the SwitchTarget of the software switch — serene-switch's
// own dataplane::Pipeline, with the packets its control operations emit sent
// through the daemon's sockets.
//
// Thread-safe: the Pipeline serializes per job.
#pragma once

#include <functional>

#include "control/switch_target.h"
#include "dataplane/output.h"
#include "dataplane/pipeline.h"

namespace serene::control {

class PipelineTarget final : public SwitchTarget {
 public:
  // Puts packets a control operation emitted on the wire (SwitchServer::Send).
  using Sender = std::function<Status(const dataplane::Output&)>;
  // The data plane's clock: steady nanoseconds, the time base of its stamps.
  using NowFn = std::function<dataplane::Timestamp()>;

  // `pipeline` must outlive the target.
  PipelineTarget(dataplane::Pipeline* pipeline, Sender send, NowFn now);

  std::vector<uint16_t> JobIds() const override;
  Result<dataplane::JobTelemetry> Telemetry(uint16_t job) const override;
  Result<dataplane::JobConfig> JobConfig(uint16_t job) const override;
  Status CreateJob(const dataplane::JobConfig& config) override;
  Status DeleteJob(uint16_t job) override;
  Result<TargetPolicyChange> SetPolicy(uint16_t job, const dataplane::BarrierParams& params,
                                       std::optional<uint32_t> effective_clock) override;
  Result<dataplane::PolicyChange> CancelPolicyChange(uint16_t job,
                                                     std::optional<uint32_t> epoch) override;
  Result<TargetEviction> Evict(uint16_t job, uint16_t rank) override;
  Result<uint32_t> Finish(uint16_t job) override;
  dataplane::Timestamp Now() const override { return now_(); }

 private:
  // Sends what an operation emitted; returns how many packets that was.
  uint32_t Emit(const dataplane::Output& out);

  dataplane::Pipeline* const pipeline_;
  const Sender send_;
  const NowFn now_;
};

}  // namespace serene::control
