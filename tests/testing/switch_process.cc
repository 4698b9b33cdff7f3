#include "testing/switch_process.h"

#include <signal.h>

#include <algorithm>

#include "loadgen/child_process.h"
#include "loadgen/switch_launch.h"

namespace serene::testing {

SwitchProcess::SwitchProcess(const std::vector<std::string>& args) {
  // "listening on" is an info line.
  auto given = [&](const char* flag) {
    return std::find(args.begin(), args.end(), flag) != args.end();
  };
  std::vector<std::string> argv = {"--log-level", "info"};
  if (!given("--bind")) argv.insert(argv.end(), {"--bind", "127.0.0.1"});
  if (!given("--port")) argv.insert(argv.end(), {"--port", "0"});
  // The runtime API on a free port, so tests running in parallel never
  // compete for the default 127.0.0.1:7001.
  if (!given("--control")) {
    argv.insert(argv.end(), {"--control", "127.0.0.1:0"});
  }
  argv.insert(argv.end(), args.begin(), args.end());
  child_ = std::make_unique<loadgen::ChildProcess>(SERENE_SWITCH_BINARY, argv);
  address_ = loadgen::WaitForListening(*child_).value_or("");
  if (!address_.empty()) {
    control_address_ = loadgen::WaitForControl(*child_, std::chrono::seconds(1)).value_or("");
  }
}

SwitchProcess::~SwitchProcess() { Stop(); }

std::string SwitchProcess::output() const { return child_ ? child_->output() : ""; }

void SwitchProcess::Kill() {
  if (!child_ || stopped_) return;
  child_->Signal(SIGKILL);
  child_->Wait();
  stopped_ = true;
}

int SwitchProcess::Stop() {
  if (!child_ || stopped_) return -1;
  child_->Signal(SIGTERM);
  stopped_ = true;
  return child_->Wait().value_or(-1);
}

}  // namespace serene::testing
