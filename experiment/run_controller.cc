#include "experiment/run_controller.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <utility>

#include "control/runtime_client.h"
#include "dataplane/barrier_params.h"

namespace serene::experiment {
namespace {

using Clock = std::chrono::steady_clock;
using control::ControllerEvent;
using json = nlohmann::ordered_json;

// How long Start() waits for the controller to hold the job.
constexpr auto kStartTimeout = std::chrono::seconds(10);
// The deadline of each runtime API call.
constexpr auto kCallTimeout = std::chrono::seconds(5);

bool Asked(ControllerEvent::Kind kind) {
  return kind == ControllerEvent::Kind::kApplied || kind == ControllerEvent::Kind::kRetry ||
         kind == ControllerEvent::Kind::kRefused;
}

std::string OneLine(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  std::string out;
  for (char c : text) out += c == '\n' ? std::string(" | ") : std::string(1, c);
  return out;
}

double RunClock(Clock::time_point at, std::optional<Clock::time_point> origin) {
  return origin ? std::chrono::duration<double>(at - *origin).count() : train::kNaN;
}

}  // namespace

RunController::RunController(Options options) : options_(std::move(options)) {}

RunController::~RunController() { (void)Stop(); }

Result<std::unique_ptr<RunController>> RunController::Start(Options options) {
  auto script = control::PolicyScript::LoadFile(options.script_path, options.params);
  if (!script.ok()) return script.status();
  auto client = control::RuntimeClient::Create(options.control_address, "", kCallTimeout);
  if (!client.ok()) return Status::Unavailable("runtime API: " + client.status().message());

  std::unique_ptr<RunController> rc(new RunController(std::move(options)));
  rc->script_ = std::move(*script);
  rc->client_ = std::move(*client);
  // The switch starts the job under SYNC; a static rule other than that is
  // asked for before Start returns.
  const bool await_rule =
      rc->script_->initial() && rc->script_->initial()->rule != dataplane::BarrierParams::Sync();
  control::ControllerOptions co;
  co.job = rc->options_.job;
  co.period = rc->options_.period;
  RunController* self = rc.get();
  co.on_event = [self](const ControllerEvent& e) { self->Record(e); };
  rc->controller_ =
      std::make_unique<control::Controller>(rc->client_.get(), rc->script_.get(), std::move(co));
  rc->thread_ = std::thread([self] {
    const Status s = self->controller_->Run();
    std::lock_guard lock(self->mu_);
    self->ended_ = s;
    self->cv_.notify_all();
  });

  std::unique_lock lock(rc->mu_);
  const bool ready = rc->cv_.wait_for(lock, kStartTimeout, [&] {
    if (rc->ended_) return true;
    bool holds_job = false, asked = false;
    for (const TimedEvent& t : rc->events_) {
      holds_job = holds_job || t.event.kind == ControllerEvent::Kind::kInfo;
      asked = asked || Asked(t.event.kind);
    }
    return holds_job && (asked || !await_rule);
  });
  const std::optional<Status> ended = rc->ended_;
  lock.unlock();
  const std::string where = fmt::format("job {} through the runtime API at {}", rc->options_.job,
                                        rc->options_.control_address);
  if (ended && !ended->ok()) {
    (void)rc->Stop();
    return Status::Unavailable("the controller cannot reach " + where + ": " + ended->message());
  }
  if (!ready) {
    (void)rc->Stop();
    return Status::Unavailable(
        fmt::format("the controller did not reach {} within {} s", where, kStartTimeout.count()));
  }
  return rc;
}

Status RunController::Stop() {
  if (controller_) controller_->Stop();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  return ended_.value_or(Status::Ok());
}

std::vector<TimedEvent> RunController::events() const {
  std::lock_guard lock(mu_);
  return events_;
}

void RunController::Record(const ControllerEvent& e) {
  TimedEvent t{Clock::now(), e};
  {
    std::lock_guard lock(mu_);
    events_.push_back(t);
    cv_.notify_all();
  }
  if (options_.on_event) options_.on_event(t);
}

std::vector<PolicyChange> ToPolicyChanges(const std::vector<TimedEvent>& events,
                                          std::optional<Clock::time_point> origin) {
  std::vector<PolicyChange> changes;
  for (const TimedEvent& t : events) {
    if (t.event.kind != ControllerEvent::Kind::kApplied) continue;
    changes.push_back({RunClock(t.at, origin), t.event.unix_ms, t.event.high,
                       t.event.effective_clock, t.event.rule_text, t.event.epoch});
  }
  return changes;
}

std::string ControllerLog(const std::vector<TimedEvent>& events) {
  std::string out;
  for (const TimedEvent& t : events) {
    out += fmt::format("{:9.3f} {:<12} {}\n", t.event.seconds, control::EventKindName(t.event.kind),
                       OneLine(t.event.message));
  }
  return out;
}

std::string PolicyChangesJson(const RunSpec& run, const std::string& path, uint32_t job,
                              std::chrono::milliseconds period,
                              const std::vector<TimedEvent>& events,
                              std::optional<Clock::time_point> origin) {
  json params = json::object();
  for (const auto& [name, value] : run.params) params[name] = value;
  json changes = json::array();
  for (const TimedEvent& t : events) {
    if (t.event.kind != ControllerEvent::Kind::kApplied) continue;
    const double seconds = RunClock(t.at, origin);
    changes.push_back({{"seconds", std::isfinite(seconds) ? json(seconds) : json()},
                       {"controller_s", t.event.seconds},
                       {"unix_ms", t.event.unix_ms},
                       {"high", t.event.high},
                       {"effective_clock", t.event.effective_clock},
                       {"rule", t.event.rule_text},
                       {"epoch", t.event.epoch},
                       {"message", t.event.message}});
  }
  return json({{"script", run.policy},
               {"path", path},
               {"params", std::move(params)},
               {"job", job},
               {"period_ms", period.count()},
               {"changes", std::move(changes)}})
             .dump(2) +
         "\n";
}

}  // namespace serene::experiment
