#include "ctl/exit_code.h"

namespace serene::ctl {

std::string ErrorMessage(const Status& status) {
  if (status.code() != Status::Code::kUnauthenticated) return status.message();
  std::string message = "unauthenticated: " + status.message();
  if (message.find("--token-file") == std::string::npos) {
    message += " (give the switch's token with --token-file FILE or SERENE_TOKEN_FILE)";
  }
  return message;
}

int Failed(const Status& status, Io io) {
  io.err << "serene-ctl: " << ErrorMessage(status) << '\n';
  return kExitFailed;
}

int UsageError(std::string_view message, Io io) {
  io.err << "serene-ctl: " << message << '\n';
  return kExitUsage;
}

}  // namespace serene::ctl
