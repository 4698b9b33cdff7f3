// Barrier rules as policy scripts see them (docs/policies.md "Rules").
//
// Globals: sync(), ssp(w), async(), quorum(k, l), hybrid{window=, quorum=,
// lag=}. Each returns a rule value: a userdata (so a script can neither forge
// nor alter one) with the read-only fields window, quorum, lag (math.huge for
// "no bound" / "every live rank"), clock (nil unless set with at), kind
// ("sync", "ssp", "async", "quorum", "hybrid") and text ("ssp(10) at 200"),
// and the method rule:at(clock) that returns a copy effective from `clock`.
// `==` compares the barrier points and ignores the clock; tostring gives text.
//
// Argument errors name the function, the argument and the value:
// "ssp: window must be an integer in 0..4294967294 or math.huge, got -1".
#pragma once

#include <cstdint>

#include "control/policy_script.h"
#include "dataplane/barrier_params.h"

struct lua_State;

namespace serene::control {

// The userdata behind a rule value.
struct LuaRule {
  dataplane::BarrierParams params;
  bool has_clock = false;
  uint32_t clock = 0;  // valid when has_clock
};

// Registers the rule constructors as globals and the rule metatable.
// REQUIRES: protected mode (it allocates).
void OpenRuleLib(lua_State* L);

// Pushes a rule value with no effective clock. REQUIRES: OpenRuleLib ran;
// protected mode.
void PushRule(lua_State* L, const dataplane::BarrierParams& params);

// The rule at `index`, or nullptr if the value there is not a rule.
const LuaRule* ToRule(lua_State* L, int index);

// The decision a rule value stands for.
PolicyDecision ToDecision(const LuaRule& rule);

}  // namespace serene::control
