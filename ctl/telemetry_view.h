// TelemetryView: one telemetry snapshot of a job as `serene-ctl telemetry`
// prints it for people — summary lines (job, policy, clocks, counters) and a
// table with a row per rank (state, clock, lag, waiting, pace, duplicates,
// NACKs, errors, address).
//
// Pure; thread-safe.
#pragma once

#include <string>

#include "control/runtime.pb.h"

namespace serene::ctl {

namespace v1 = ::serene::control::v1;

// The summary lines, a blank line, then the rank table; lines end with '\n'.
std::string RenderTelemetry(const v1::JobTelemetry& telemetry);

}  // namespace serene::ctl
