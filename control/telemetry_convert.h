// Conversions between the data plane's control types (dataplane/telemetry.h,
// barrier_params.h, job_config.h) and the runtime API's messages
// (control/runtime.proto). The service, the simulator and tests share them,
// so a policy sees the same telemetry whichever switch runs the job.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/status.h"
#include "control/runtime.pb.h"
#include "dataplane/barrier_params.h"
#include "dataplane/consts.h"
#include "dataplane/job_config.h"
#include "dataplane/telemetry.h"

namespace serene::control {

namespace v1 = ::serene::control::v1;

// The UNBOUNDED value of Rule.window and Rule.lag.
inline constexpr uint32_t kUnbounded = dataplane::BarrierParams::kUnbounded;

// A clock register as the API spells it: -1 for "no clock yet".
int64_t ClockValue(uint32_t clock);

v1::Rule RuleToProto(const dataplane::BarrierParams& params);

// Checks a rule from a request against a job of `workers` ranks; `field`
// names it in errors ("rule", "job.policy"). quorum 0 = every live rank.
// InvalidArgument naming the field and the value when it does not fit.
Result<dataplane::BarrierParams> RuleFromProto(const v1::Rule& rule, uint32_t workers,
                                               std::string_view field);

v1::Job JobToProto(const dataplane::JobConfig& config);

// A job from a CreateJob request: defaults for unset fields, every bound
// checked. The key must be 0 (the switch draws it). InvalidArgument names
// the field ("job.workers") and the value.
Result<dataplane::JobConfig> JobFromProto(const v1::Job& job);

v1::PolicyState PolicyToProto(const dataplane::JobTelemetry& t);

// The snapshot as the API serves it: `now` is the switch's monotonic clock
// (the time base of the data plane's time stamps), `unix_ms` the wall clock.
v1::JobTelemetry TelemetryToProto(const dataplane::JobTelemetry& t, dataplane::Timestamp now,
                                  uint64_t unix_ms);

}  // namespace serene::control
