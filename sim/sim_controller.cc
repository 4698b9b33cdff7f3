#include "sim/sim_controller.h"

#include <fmt/format.h>

#include "control/controller.h"
#include "control/telemetry_convert.h"

namespace serene::sim {

Result<std::unique_ptr<SimController>> SimController::Create(
    const std::string& script_path, const std::map<std::string, std::string>& params,
    dataplane::Pipeline* pipeline, uint16_t job, uint32_t workers, Deliver deliver) {
  auto script = control::PolicyScript::LoadFile(script_path, params);
  if (!script.ok()) return script.status();
  return std::unique_ptr<SimController>(
      new SimController(std::move(*script), pipeline, job, workers, std::move(deliver)));
}

SimController::SimController(std::unique_ptr<control::PolicyScript> script,
                             dataplane::Pipeline* pipeline, uint16_t job, uint32_t workers,
                             Deliver deliver)
    : script_(std::move(script)),
      pipeline_(pipeline),
      job_(job),
      workers_(workers),
      deliver_(std::move(deliver)),
      out_(dataplane::Output::ForBatch(1)) {}

void SimController::Log(SimTime now, const std::string& line) {
  log_.push_back(fmt::format("t={:.3f}s: {}", ToSeconds(now), line));
}

bool SimController::Apply(const control::PolicyDecision& d, const control::v1::JobTelemetry& t,
                          SimTime now) {
  auto plan = control::PlanChange(d, t, last_applied_epoch_);
  if (!plan) return true;
  auto params = control::RuleFromProto(plan->rule, workers_, "rule");
  if (!params.ok()) {
    Log(now, d.text + " refused: " + params.status().message());
    return true;
  }
  out_.Clear();
  auto change = pipeline_->SetPolicy(job_, *params, plan->effective_clock,
                                     static_cast<dataplane::Timestamp>(now), &out_);
  if (!change.ok()) {
    if (change.status().code() == Status::Code::kFailedPrecondition) return false;  // retry
    Log(now, d.text + " refused: " + change.status().message());
    return true;
  }
  last_applied_epoch_ = change->epoch;
  applied_.push_back({now, t.high(), change->effective_clock, params->ToString(), change->epoch});
  deliver_(out_);
  return true;
}

void SimController::Start(SimTime now) {
  if (!script_->initial()) return;
  auto t = pipeline_->Telemetry(job_);
  if (!t.ok()) return Log(now, t.status().message());
  auto proto = control::TelemetryToProto(*t, static_cast<dataplane::Timestamp>(now), 0);
  pauses_.Fill(job_, &proto);
  static_retry_ = !Apply(*script_->initial(), proto, now);
}

void SimController::ReportPause(uint32_t rank, SimTime pause) {
  if (pause > 0) pauses_.Add(job_, rank, static_cast<uint64_t>(pause));
}

void SimController::Tick(SimTime now) {
  if (!script_->adaptive() && !static_retry_) return;
  auto t = pipeline_->Telemetry(job_);
  if (!t.ok()) return Log(now, t.status().message());
  auto proto = control::TelemetryToProto(*t, static_cast<dataplane::Timestamp>(now), 0);
  pauses_.Fill(job_, &proto);
  if (!script_->adaptive()) {
    static_retry_ = !Apply(*script_->initial(), proto, now);
    return;
  }
  auto d = script_->OnTelemetry(proto);
  for (std::string& line : script_->TakeLog()) Log(now, line);
  if (!d.ok()) return Log(now, "script error: " + d.status().message());
  if (*d) Apply(**d, proto, now);
}

}  // namespace serene::sim
