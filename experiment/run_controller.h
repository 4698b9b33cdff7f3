// RunController: the control plane of a dynamic run (a policy script,
// scenario.h). It runs the script's control::Controller (control/
// controller.h) against the run's switch, through the switch's runtime API,
// on a thread of its own for as long as the ranks train:
//
//   Start   load the script, connect to the runtime API, start the loop, and
//           return once the controller holds the job and, if the script's
//           main chunk returns a rule other than the switch's initial sync,
//           once it asked the switch for that rule: so a static script's
//           rule is in force before the ranks start.
//   (run)   every telemetry period the script may return a new rule, which
//           the controller installs (an event kApplied). A script error is an
//           event too: the switch keeps the rule in force and the loop goes on.
//   Stop    when the ranks are done (or the run fails): ends the loop, joins.
//
// Every event is kept with the launcher's time and handed to a callback; the
// runner prints the applied ones, and writes them all to controller.log and
// the applied ones to policy_changes.json (the pure formatters below).
//
// Thread-safe: events() and Stop() from any thread; the callback runs on the
// controller's thread, one event at a time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "control/controller.h"
#include "experiment/report.h"
#include "experiment/scenario.h"

namespace serene::experiment {

// A controller event and when the launcher received it.
struct TimedEvent {
  std::chrono::steady_clock::time_point at;
  control::ControllerEvent event;
};

class RunController {
 public:
  struct Options {
    std::string control_address;                // the switch's runtime API, "127.0.0.1:PORT"
    std::string script_path;                    // the policy script to load (resolved)
    std::map<std::string, std::string> params;  // its params table
    uint32_t job = 1;
    std::chrono::milliseconds period{250};  // telemetry period, 10 ms .. 60 s
    // Receives every event on the controller's thread (may be empty).
    std::function<void(const TimedEvent&)> on_event;
  };

  // Starts the controller (see above). Errors: the script's (InvalidArgument
  // "file:line: ...", NotFound), or Unavailable when the controller cannot
  // reach the job through the runtime API (its message says why); nothing is
  // left running then.
  static Result<std::unique_ptr<RunController>> Start(Options options);

  ~RunController();  // Stop()
  RunController(const RunController&) = delete;
  RunController& operator=(const RunController&) = delete;

  // Ends the loop if it still runs and joins its thread; idempotent. Returns
  // how the loop ended: OK when the job finished or it was stopped, else the
  // controller's error (the switch went away, the job was deleted).
  Status Stop();

  // Every event so far, in order.
  std::vector<TimedEvent> events() const;

 private:
  explicit RunController(Options options);
  void Record(const control::ControllerEvent& e);

  Options options_;
  std::unique_ptr<control::RuntimeClient> client_;
  std::unique_ptr<control::PolicyScript> script_;
  std::unique_ptr<control::Controller> controller_;
  std::thread thread_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<TimedEvent> events_;  // guarded by mu_
  std::optional<Status> ended_;     // guarded by mu_: Run()'s result once it returned
};

// The applied events as PolicyChanges, their `seconds` on the ranks' run
// clock whose zero is `origin` on the launcher's clock (NaN without one).
std::vector<PolicyChange> ToPolicyChanges(
    const std::vector<TimedEvent>& events,
    std::optional<std::chrono::steady_clock::time_point> origin);

// controller.log: one line per event, "SECONDS KIND MESSAGE", SECONDS since
// the controller started (just before the ranks were started); a message's
// line breaks are folded into " | ".
std::string ControllerLog(const std::vector<TimedEvent>& events);

// policy_changes.json: {"script": the policy as the scenario names it,
// "path": the file loaded, "params": {...}, "job", "period_ms", "changes":
// [{"seconds" (run clock, null if unknown), "controller_s", "unix_ms",
// "high", "effective_clock", "rule", "epoch", "message"}]}.
std::string PolicyChangesJson(const RunSpec& run, const std::string& path, uint32_t job,
                              std::chrono::milliseconds period,
                              const std::vector<TimedEvent>& events,
                              std::optional<std::chrono::steady_clock::time_point> origin);

}  // namespace serene::experiment
