#include "ctl/event_format.h"

#include <fmt/format.h>

#include <ctime>
#include <nlohmann/json.hpp>

namespace serene::ctl {

std::string EventLine(const control::ControllerEvent& event) {
  const auto seconds = static_cast<std::time_t>(event.unix_ms / 1000);
  std::tm tm{};
  std::string time = "--:--:--.---";
  if (localtime_r(&seconds, &tm) != nullptr) {
    time = fmt::format("{:02}:{:02}:{:02}.{:03}", tm.tm_hour, tm.tm_min, tm.tm_sec,
                       event.unix_ms % 1000);
  }
  return fmt::format("{}  {:<12}  {}", time, control::EventKindName(event.kind), event.message);
}

std::string EventJson(const control::ControllerEvent& event) {
  nlohmann::ordered_json j;
  j["unix_ms"] = event.unix_ms;
  j["seconds"] = event.seconds;
  j["kind"] = std::string(control::EventKindName(event.kind));
  j["message"] = event.message;
  j["high"] = event.high;
  if (event.kind == control::ControllerEvent::Kind::kApplied) {
    j["rule"] = event.rule_text;
    j["epoch"] = event.epoch;
    j["effective_clock"] = event.effective_clock;
  }
  // Replace invalid UTF-8 (a script may log anything) instead of throwing.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace serene::ctl
