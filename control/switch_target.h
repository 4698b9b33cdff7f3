// SwitchTarget: the data plane the runtime API drives. RuntimeService
// (control/runtime_service.h) translates gRPC calls into these operations and
// does not care which switch carries them out: the software pipeline in this
// process (PipelineTarget, control/pipeline_target.h) or, through its own
// runtime interface, a hardware or reference target such as BMv2
// (docs/p4.md). A policy script, serene-ctl and the controller therefore work
// the same against every target.
//
// Operations mirror dataplane::Pipeline's control operations. A target puts
// the packets an operation emits (RELEASEs of ranks a change unblocks) on the
// wire itself and reports how many it released; a RELEASE that did not leave
// is recovered by the rank's CLOCK retransmission, so that is not an error.
//
// Thread-safety: implementations are called from gRPC's threads at once.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/status.h"
#include "dataplane/barrier_params.h"
#include "dataplane/job_config.h"
#include "dataplane/telemetry.h"

namespace serene::control {

struct TargetPolicyChange {
  dataplane::PolicyChange change;
  uint32_t released = 0;  // waiting ranks the new rule released at once
};

struct TargetEviction {
  bool was_live = false;  // the rank was in the barrier
  uint32_t released = 0;  // waiting ranks its departure released
};

class SwitchTarget {
 public:
  virtual ~SwitchTarget() = default;

  virtual std::vector<uint16_t> JobIds() const = 0;
  // NotFound for an unknown job.
  virtual Result<dataplane::JobTelemetry> Telemetry(uint16_t job) const = 0;
  // The job's geometry as created (fixed for its life), without reading its
  // registers: for checks that need only the rank count or the row width.
  // NotFound for an unknown job.
  virtual Result<dataplane::JobConfig> JobConfig(uint16_t job) const = 0;
  // FailedPrecondition when every job slot is in use; InvalidArgument for a
  // config the target cannot hold (naming the field).
  virtual Status CreateJob(const dataplane::JobConfig& config) = 0;
  virtual Status DeleteJob(uint16_t job) = 0;
  // Installs `params` in the job's idle policy bank, effective for CLOCK(c)
  // with c >= effective_clock (nullopt: as soon as possible).
  virtual Result<TargetPolicyChange> SetPolicy(uint16_t job, const dataplane::BarrierParams& params,
                                               std::optional<uint32_t> effective_clock) = 0;
  // Withdraws the pending change if no rank has completed its effective
  // clock (dataplane/policy_banks.h); `epoch`, if given, must be its epoch.
  // Returns the withdrawn change. Unimplemented on a target that cannot do
  // it atomically with respect to CLOCKs.
  virtual Result<dataplane::PolicyChange> CancelPolicyChange(uint16_t job,
                                                             std::optional<uint32_t> epoch) = 0;
  virtual Result<TargetEviction> Evict(uint16_t job, uint16_t rank) = 0;
  // Ends the job; returns how many waiting ranks were released (FINISHED).
  virtual Result<uint32_t> Finish(uint16_t job) = 0;
  // The time base of the target's telemetry stamps (steady nanoseconds).
  virtual dataplane::Timestamp Now() const = 0;
};

}  // namespace serene::control
