// EventFormat: a controller event (control/controller.h) as a line of
// `serene-ctl control` output — for people "HH:MM:SS.mmm  kind  message",
// for scripts one JSON object per line.
//
// Pure (local time for the text form); thread-safe.
#pragma once

#include <string>

#include "control/controller.h"

namespace serene::ctl {

// "12:03:04.123  applied       job 1: ssp(10) -> epoch 2 from clock 57 (...)".
// No trailing newline.
std::string EventLine(const control::ControllerEvent& event);

// {"unix_ms":..., "seconds":..., "kind":"applied", "message":"...",
// "high":57} plus, for kind "applied", "rule", "epoch" and
// "effective_clock". One line, no trailing newline.
std::string EventJson(const control::ControllerEvent& event);

}  // namespace serene::ctl
