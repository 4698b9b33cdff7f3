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
  // Starts `serene-switch --bind 127.0.0.1 --port 0 --control 127.0.0.1:0 <args>`
  // (each of those only if `args` does not give it) and waits until it listens.
  explicit SwitchProcess(const std::vector<std::string>& args);
  ~SwitchProcess();
  SwitchProcess(const SwitchProcess&) = delete;
  SwitchProcess& operator=(const SwitchProcess&) = delete;

  bool ok() const { return !address_.empty(); }
  // "127.0.0.1:PORT"
  const std::string& address() const { return address_; }
  // The runtime API's "127.0.0.1:PORT" ("" if it serves none, e.g. --control off).
  const std::string& control_address() const { return control_address_; }
  std::string output() const;
  // SIGKILL: the switch vanishes without a word.
  void Kill();
  // SIGTERM and wait; returns the exit code (or -1).
  int Stop();

 private:
  std::unique_ptr<loadgen::ChildProcess> child_;
  std::string address_;
  std::string control_address_;
  bool stopped_ = false;
};

}  // namespace serene::testing
