// Exit codes and error lines of serene-ctl's commands (docs/errors.md,
// docs/serene-ctl.md): 0 ok, 1 the call failed (the switch refused it or
// could not be reached), 2 a bad command line (nothing was sent). Errors are
// one line on stderr, "serene-ctl: <message>".
//
// Thread-compatible.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include "common/status.h"

namespace serene::ctl {

enum ExitCode : int { kExitOk = 0, kExitFailed = 1, kExitUsage = 2 };

// Where a command writes: results on `out`, errors on `err` (std::cout and
// std::cerr in the binary, string streams in tests).
struct Io {
  std::ostream& out;
  std::ostream& err;
};

// The error line for a failed call: the switch's message, with what to do
// for a missing or wrong token.
std::string ErrorMessage(const Status& status);

// Prints the error line for `status` and returns kExitFailed.
int Failed(const Status& status, Io io);

// Prints "serene-ctl: <message>" and returns kExitUsage.
int UsageError(std::string_view message, Io io);

}  // namespace serene::ctl
