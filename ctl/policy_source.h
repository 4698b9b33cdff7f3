// PolicySource: what `serene-ctl policy set` and `control` take as a policy —
// a SPEC ("sync", "ssp:10", "async", "quorum:3:1", "window=W,quorum=K,lag=L";
// dataplane::BarrierParams::Parse) or a Lua script (a path ending in .lua,
// control/policy_script.h) with its --param k=v pairs.
//
// Every error here is the operator's input (a bad spec, a bad --param, a
// script that does not load), reported as InvalidArgument before anything is
// sent to the switch: serene-ctl exits 2 with the message.
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "control/policy_script.h"
#include "control/runtime.pb.h"

namespace serene::ctl {

namespace v1 = ::serene::control::v1;

// True for a path ending in ".lua".
bool IsScriptPath(std::string_view spec_or_file);

// "--param k=v" pairs to the script's `params` table. InvalidArgument for a
// pair without '=' or with an empty key, or a key given twice.
Result<control::PolicyScript::Params> ParseParams(const std::vector<std::string>& pairs);

// A rule to install now: from a SPEC, or from the rule a static script
// returned.
struct StaticPolicy {
  v1::Rule rule;
  std::optional<uint32_t> effective_clock;  // the script's rule:at(c); nullopt = ASAP
  std::string source;                       // "ssp:4", or "ssp(4) from ssp.lua"
  std::vector<std::string> log;             // lines the script logged while loading
};

// Resolves a SPEC or a static script. InvalidArgument: a bad SPEC (the
// parser's message), --param given with a SPEC, a script that fails to load,
// or an adaptive script (it needs `serene-ctl control`).
Result<StaticPolicy> ResolveStaticPolicy(const std::string& spec_or_file,
                                         const std::vector<std::string>& params);

// Loads a script for the controller; InvalidArgument if it does not load
// (bad --param, missing file, script error).
Result<std::unique_ptr<control::PolicyScript>> LoadScript(const std::string& path,
                                                          const std::vector<std::string>& params);

}  // namespace serene::ctl
