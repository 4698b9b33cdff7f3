// SimController: a policy script driving the simulated switch — the loop of
// control/controller.h (telemetry -> script -> a rule that differs from the
// one in force -> SetPolicy), in virtual time and against the pipeline
// directly instead of over the runtime API. It converts telemetry and rules
// with the controller's own functions (TelemetryToProto, PlanChange,
// RuleFromProto), so a script sees exactly what it sees on a real switch.
//
// Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "control/pause_ledger.h"
#include "control/policy_script.h"
#include "dataplane/output.h"
#include "dataplane/pipeline.h"
#include "sim/event_queue.h"

namespace serene::sim {

class SimController {
 public:
  // Called with the packets a SetPolicy released.
  using Deliver = std::function<void(const dataplane::Output& out)>;

  static Result<std::unique_ptr<SimController>> Create(
      const std::string& script_path, const std::map<std::string, std::string>& params,
      dataplane::Pipeline* pipeline, uint16_t job, uint32_t workers, Deliver deliver);

  // Applies the script's static rule, if any (called once, at time 0).
  void Start(SimTime now);
  // One telemetry period: runs on_telemetry (adaptive scripts) or retries a
  // static rule the switch could not take yet.
  void Tick(SimTime now);
  // Rank `rank` spent `pause` evaluating (serene-train's ReportPause).
  void ReportPause(uint32_t rank, SimTime pause);
  bool adaptive() const { return script_->adaptive(); }

  struct Applied {
    SimTime at = 0;
    int64_t high = -1;
    uint32_t effective_clock = 0;
    std::string rule;
    uint32_t epoch = 0;
  };
  const std::vector<Applied>& applied() const { return applied_; }
  // Script log lines and errors, "t=12.5s: ..." (virtual seconds).
  const std::vector<std::string>& log() const { return log_; }

 private:
  SimController(std::unique_ptr<control::PolicyScript> script, dataplane::Pipeline* pipeline,
                uint16_t job, uint32_t workers, Deliver deliver);
  // Asks for a decision's rule if it is not in force or pending; false if the
  // switch could not take it yet (retry).
  bool Apply(const control::PolicyDecision& d, const control::v1::JobTelemetry& t, SimTime now);
  void Log(SimTime now, const std::string& line);

  std::unique_ptr<control::PolicyScript> script_;
  dataplane::Pipeline* pipeline_;
  uint16_t job_;
  uint32_t workers_;
  Deliver deliver_;
  control::PauseLedger pauses_;
  dataplane::Output out_;
  bool static_retry_ = false;
  uint32_t last_applied_epoch_ = 0;
  std::vector<Applied> applied_;
  std::vector<std::string> log_;
};

}  // namespace serene::sim
