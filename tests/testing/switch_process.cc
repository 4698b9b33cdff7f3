#include "testing/switch_process.h"

#include <signal.h>

#include "loadgen/child_process.h"

namespace serene::testing {

SwitchProcess::SwitchProcess(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"--bind", "127.0.0.1", "--port", "0", "--log-level", "warn"};
  argv.insert(argv.end(), args.begin(), args.end());
  // "listening" is logged at info; keep warn for the rest by asking for info.
  argv[5] = "info";
  child_ = std::make_unique<loadgen::ChildProcess>(SERENE_SWITCH_BINARY, argv);
  if (!child_->started()) return;
  auto line = child_->WaitForOutput("listening on ");
  if (!line) return;
  const size_t start = std::string("listening on ").size();
  const size_t end = line->find_first_of(" \n", start);
  address_ = line->substr(start, end - start);
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
