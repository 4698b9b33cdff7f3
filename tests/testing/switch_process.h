// SwitchProcess: the real serene-switch binary on an ephemeral loopback port,
// for end-to-end tests. Stopped with SIGTERM when destroyed.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace serene::loadgen {
class ChildProcess;
}

namespace serene::testing {

class SwitchProcess {
 public:
  // Starts `serene-switch --bind 127.0.0.1 --port 0 <args>` and waits until it listens.
  explicit SwitchProcess(const std::vector<std::string>& args);
  ~SwitchProcess();
  SwitchProcess(const SwitchProcess&) = delete;
  SwitchProcess& operator=(const SwitchProcess&) = delete;

  bool ok() const { return !address_.empty(); }
  // "127.0.0.1:PORT"
  const std::string& address() const { return address_; }
  std::string output() const;
  // SIGKILL: the switch vanishes without a word.
  void Kill();
  // SIGTERM and wait; returns the exit code (or -1).
  int Stop();

 private:
  std::unique_ptr<loadgen::ChildProcess> child_;
  std::string address_;
  bool stopped_ = false;
};

}  // namespace serene::testing
