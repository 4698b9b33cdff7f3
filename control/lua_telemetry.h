// The telemetry table a policy's on_telemetry(t) receives: every field of
// v1::JobTelemetry a policy can use, with times in seconds (floats) and
// "no clock" as -1. docs/policies.md "The telemetry table" lists each field;
// keep the two in step. The job's key is left out: a policy has no use for it.
#pragma once

#include "control/runtime.pb.h"

struct lua_State;

namespace serene::control {

// Pushes `t` as a new table. REQUIRES: OpenRuleLib ran (t.rule is a rule
// value); protected mode (it allocates).
void PushTelemetry(lua_State* L, const v1::JobTelemetry& t);

}  // namespace serene::control
