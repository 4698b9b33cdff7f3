// PolicyScript: a synchronization policy written as code — a Lua 5.4 script,
// run in a sandbox — that the controller turns into switch rules
// (DESIGN.md §5, docs/policies.md).
//
// A script either returns a static rule from its main chunk
//
//   return ssp(params.w or 10)
//
// or defines on_telemetry(t), which the controller calls every period with
// the job's telemetry as a table, and which returns a rule or nil (keep the
// rule in force):
//
//   function on_telemetry(t)
//     if t.high >= 100 then return ssp(10) end
//   end
//
// Rules: sync(), ssp(w), async(), quorum(k, l), hybrid{window=, quorum=,
// lag=}; a rule may name its effective clock with rule:at(clock). The
// command line's --param k=v pairs are the global table `params` (values that
// read as numbers are numbers). log(...) records a line for the controller's
// log. State kept in globals persists between calls.
//
// Sandbox: no io, os, require, package, debug, dofile, loadfile, or load of
// bytecode; every call (the main chunk, each on_telemetry) has an instruction
// budget and the whole state a memory cap. A script error — syntax, runtime,
// a bad return value, budget or memory exceeded — is a Status whose message
// starts with "file:line:"; the script stays usable for the next call (the
// controller keeps the switch's last policy and goes on).
//
// Thread-compatible: one PolicyScript per thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "control/runtime.pb.h"
#include "dataplane/barrier_params.h"

namespace serene::control {

struct PolicyLimits {
  uint64_t instructions = 10'000'000;  // Lua VM instructions per call
  size_t memory_bytes = 32u << 20;     // bytes the whole Lua state may hold
};

// A rule a policy chose.
struct PolicyDecision {
  dataplane::BarrierParams rule;
  std::optional<uint32_t> effective_clock;  // rule:at(c); nullopt = as soon as possible
  std::string text;                         // how the rule prints: "ssp(10)", "sync() at 200"
};

class PolicyScript {
 public:
  using Params = std::map<std::string, std::string>;

  // Loads the script and runs its main chunk with `params` as the table
  // `params`. Errors: NotFound if the file cannot be read; InvalidArgument
  // "file:line: message" for a script error (syntax, runtime, a main chunk
  // returning something other than nil or a rule, budget, memory), or a
  // script that neither returns a rule nor defines on_telemetry.
  static Result<std::unique_ptr<PolicyScript>> LoadFile(const std::string& path,
                                                        const Params& params,
                                                        PolicyLimits limits = {});
  // The same from source text; `chunk_name` names it in messages.
  static Result<std::unique_ptr<PolicyScript>> LoadString(std::string_view source,
                                                          std::string_view chunk_name,
                                                          const Params& params,
                                                          PolicyLimits limits = {});

  virtual ~PolicyScript();
  PolicyScript(const PolicyScript&) = delete;
  PolicyScript& operator=(const PolicyScript&) = delete;

  // The script's name (file name or chunk name).
  virtual const std::string& name() const = 0;

  // The rule the main chunk returned (a static policy), if any.
  virtual const std::optional<PolicyDecision>& initial() const = 0;

  // True if the script defines on_telemetry.
  virtual bool adaptive() const = 0;

  // Calls on_telemetry(t); nullopt when it returned nil. Errors:
  // InvalidArgument "file:line: message" (see above); FailedPrecondition if
  // the script is not adaptive.
  virtual Result<std::optional<PolicyDecision>> OnTelemetry(const v1::JobTelemetry& t) = 0;

  // The lines log(...) recorded since the last call, oldest first.
  virtual std::vector<std::string> TakeLog() = 0;

 protected:
  PolicyScript() = default;
};

// "ssp(10)", "sync()", "async()", "quorum(3, 1)", "hybrid{window=2, quorum=3,
// lag=8}": a rule as a policy script writes it.
std::string RuleScriptText(const dataplane::BarrierParams& rule);

}  // namespace serene::control
