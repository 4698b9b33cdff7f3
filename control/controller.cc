#include "control/controller.h"

#include <mutex>

#include "control/telemetry_convert.h"

namespace serene::control {
namespace {

uint64_t UnixMillis() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

bool SameRule(const v1::Rule& a, const v1::Rule& b) {
  return a.window() == b.window() && a.quorum() == b.quorum() && a.lag() == b.lag();
}

ControllerEvent Event(ControllerEvent::Kind kind, std::string message, int64_t high) {
  ControllerEvent e;
  e.kind = kind;
  e.message = std::move(message);
  e.high = high;
  return e;
}

}  // namespace

std::string_view EventKindName(ControllerEvent::Kind kind) {
  switch (kind) {
    case ControllerEvent::Kind::kApplied: return "applied";
    case ControllerEvent::Kind::kRetry: return "retry";
    case ControllerEvent::Kind::kRefused: return "refused";
    case ControllerEvent::Kind::kScriptError: return "script_error";
    case ControllerEvent::Kind::kScriptLog: return "log";
    case ControllerEvent::Kind::kInfo: return "info";
  }
  return "unknown";
}

std::optional<PolicyRequest> PlanChange(const PolicyDecision& decision,
                                        const v1::JobTelemetry& telemetry,
                                        uint32_t last_applied_epoch) {
  PolicyRequest req;
  req.rule = RuleToProto(decision.rule);
  req.effective_clock = decision.effective_clock;
  const v1::PolicyState& p = telemetry.policy();
  const uint32_t newest_epoch = p.swap_pending() ? p.next_epoch() : p.active_epoch();
  if (static_cast<int32_t>(newest_epoch - last_applied_epoch) < 0) return std::nullopt;
  // The newest rule the switch knows: the pending one, else the one in force.
  const v1::Rule& newest = p.swap_pending() ? p.next() : p.active();
  if (SameRule(newest, req.rule)) {
    // Already asked for. A different effective clock for the same rule is
    // not worth a swap.
    return std::nullopt;
  }
  return req;
}

Controller::Controller(RuntimeClient* client, PolicyScript* script, ControllerOptions options)
    : client_(client), script_(script), options_(std::move(options)) {}

void Controller::Stop() {
  stop_.store(true);
  client_->CancelStreams();
}

std::vector<ControllerEvent> Controller::applied() const {
  std::lock_guard lock(mu_);
  return applied_;
}

void Controller::Emit(ControllerEvent e) {
  e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  e.unix_ms = UnixMillis();
  if (e.kind == ControllerEvent::Kind::kApplied) {
    std::lock_guard lock(mu_);
    applied_.push_back(e);
  }
  if (options_.on_event) options_.on_event(e);
}

ControllerEvent::Kind Controller::Apply(const PolicyDecision& d, const v1::JobTelemetry& t) {
  auto plan = PlanChange(d, t, last_applied_epoch_);
  if (!plan) return ControllerEvent::Kind::kInfo;
  auto r = client_->SetPolicy(options_.job, plan->rule, plan->effective_clock);
  ControllerEvent e;
  e.high = t.high();
  e.rule_text = plan->rule.text();
  if (r.ok()) {
    e.kind = ControllerEvent::Kind::kApplied;
    e.epoch = r->epoch();
    last_applied_epoch_ = r->epoch();
    e.effective_clock = r->effective_clock();
    e.message = "job " + std::to_string(options_.job) + ": " + d.text + " -> epoch " +
                std::to_string(r->epoch()) + " from clock " + std::to_string(r->effective_clock()) +
                (t.high() < 0 ? std::string(" (before any rank completed a clock, ")
                              : " (fastest rank at clock " + std::to_string(t.high()) + ", ") +
                std::to_string(r->released()) + " rank(s) released at once)";
  } else if (r.status().code() == Status::Code::kFailedPrecondition) {
    e.kind = ControllerEvent::Kind::kRetry;
    e.message = "job " + std::to_string(options_.job) + ": " + d.text +
                " not installed yet: " + r.status().message();
  } else {
    e.kind = ControllerEvent::Kind::kRefused;
    e.message = "job " + std::to_string(options_.job) + ": " + d.text +
                " refused: " + r.status().message();
  }
  const ControllerEvent::Kind kind = e.kind;
  Emit(std::move(e));
  return kind;
}

Status Controller::Run() {
  started_ = std::chrono::steady_clock::now();
  auto first = client_->GetTelemetry(options_.job);
  if (!first.ok()) return first.status();
  Emit(Event(ControllerEvent::Kind::kInfo,
             "controlling job " + std::to_string(options_.job) + " with " + script_->name() +
                 (script_->adaptive() ? " (on_telemetry every " +
                                            std::to_string(options_.period.count()) + " ms)"
                                      : " (static)"),
             first->high()));
  // A static rule the switch cannot take yet (a change pending) is retried
  // with each snapshot; one it refuses is not.
  bool static_retry = false;
  if (script_->initial()) {
    static_retry = Apply(*script_->initial(), *first) == ControllerEvent::Kind::kRetry;
    if (!script_->adaptive() && options_.exit_after_static && !static_retry) return Status::Ok();
  }
  bool finished = first->finished();
  Status ended;
  if (!finished) {
    ended = client_->StreamTelemetry(
        options_.job, options_.period, [&](const v1::JobTelemetry& t) {
          if (stop_.load()) return false;
          if (t.finished()) {
            finished = true;
            return false;
          }
          if (script_->adaptive()) {
            auto d = script_->OnTelemetry(t);
            for (std::string& line : script_->TakeLog()) {
              Emit(Event(ControllerEvent::Kind::kScriptLog, std::move(line), t.high()));
            }
            if (!d.ok()) {
              Emit(Event(ControllerEvent::Kind::kScriptError, d.status().message(), t.high()));
            } else if (*d) {
              Apply(**d, t);
            }
          } else if (static_retry) {
            static_retry = Apply(*script_->initial(), t) == ControllerEvent::Kind::kRetry;
            if (!static_retry && options_.exit_after_static) return false;
          }
          return !stop_.load();
        });
  }
  Emit(Event(ControllerEvent::Kind::kInfo,
             "job " + std::to_string(options_.job) +
                 (finished ? " finished" : stop_.load() ? ": stopped" : ": " + ended.message()),
             -1));
  if (finished || stop_.load()) return Status::Ok();
  return ended;
}

}  // namespace serene::control
