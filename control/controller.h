// Controller: runs a policy script against one job of a switch — the loop
// that turns high-level policy code into switch rules (DESIGN.md §5).
//
//   telemetry stream (period) -> script (static rule once, or on_telemetry
//   each snapshot) -> a rule that differs from the one in force -> SetPolicy
//   (the data plane installs it in the idle bank with its effective clock)
//
// Script errors (syntax, runtime, budget) and refused changes are reported as
// events; the switch keeps its last policy and the loop goes on. A change the
// switch cannot take yet (the previous one has not retired) is retried at the
// next snapshot if the script still wants it. The loop ends when the job
// finishes or is deleted, the switch goes away, or Stop() is called.
//
// Thread-safe: Run() on one thread, Stop() from any.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "control/policy_script.h"
#include "control/runtime.pb.h"
#include "control/runtime_client.h"

namespace serene::control {

// One event of a controller's run, for the operator's log and reports.
struct ControllerEvent {
  enum class Kind {
    kApplied,      // a rule was installed (epoch, effective clock)
    kRetry,        // the switch could not take the change yet; retried next period
    kRefused,      // the switch refused the change (message says why)
    kScriptError,  // the script failed (message starts with file:line)
    kScriptLog,    // a line the script logged
    kInfo,         // start, end
  };
  Kind kind = Kind::kInfo;
  std::string message;
  double seconds = 0;     // since Run() started
  uint64_t unix_ms = 0;   // wall clock
  int64_t high = -1;      // the job's fastest clock when it happened (-1: none)
  // kApplied only:
  std::string rule_text;  // "ssp:10"
  uint32_t epoch = 0;
  uint32_t effective_clock = 0;
};

std::string_view EventKindName(ControllerEvent::Kind kind);

struct ControllerOptions {
  uint32_t job = 1;
  std::chrono::milliseconds period{1000};  // telemetry period, 10 ms .. 60 s
  // Receives every event as it happens (may be empty).
  std::function<void(const ControllerEvent&)> on_event;
  // Return once a static policy has been applied, instead of watching the
  // job until it ends.
  bool exit_after_static = false;
};

// What the controller would ask the switch for, given a decision and the
// job's state: nullopt when the rule (and clock) is already in force or
// pending, or when the snapshot is older than the controller's own last
// change (its newest epoch is below `last_applied_epoch`: a snapshot taken
// before that SetPolicy, which would ask for the same rule again). Pure; the
// loop's core, exposed for tests.
struct PolicyRequest {
  v1::Rule rule;
  std::optional<uint32_t> effective_clock;
};
std::optional<PolicyRequest> PlanChange(const PolicyDecision& decision,
                                        const v1::JobTelemetry& telemetry,
                                        uint32_t last_applied_epoch = 0);

class Controller {
 public:
  // `client` and `script` must outlive the controller.
  Controller(RuntimeClient* client, PolicyScript* script, ControllerOptions options);

  // Runs the loop (see above). OK when the job finished or Stop() was
  // called; NotFound when the job does not exist or was deleted; Unavailable
  // when the switch went away.
  Status Run();
  void Stop();

  // Every rule the controller installed, in order.
  std::vector<ControllerEvent> applied() const;

 private:
  void Emit(ControllerEvent e);
  // Asks the switch for a decision's rule if it is not in force or pending;
  // returns the kind of the event it emitted (kInfo: nothing asked).
  ControllerEvent::Kind Apply(const PolicyDecision& d, const v1::JobTelemetry& t);

  RuntimeClient* const client_;
  PolicyScript* const script_;
  const ControllerOptions options_;
  std::chrono::steady_clock::time_point started_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<ControllerEvent> applied_;  // guarded by mu_
  uint32_t last_applied_epoch_ = 0;       // the loop thread's own
};

}  // namespace serene::control
