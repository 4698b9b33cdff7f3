// ChildProcess: runs a binary with its stdout and stderr captured together,
// for tools and tests that drive the real daemon (serene-bench starts its
// switch with it).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace serene::loadgen {

class ChildProcess {
 public:
  // Starts `path` with `args` (argv[1..]). Check started().
  ChildProcess(const std::string& path, const std::vector<std::string>& args);
  ~ChildProcess();  // kills the child if it still runs
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  // Waits until the output contains `text` (or the child closed its output,
  // or `guard` passed). Returns the output from the first match on, or
  // nullopt.
  std::optional<std::string> WaitForOutput(
      const std::string& text, std::chrono::milliseconds guard = std::chrono::seconds(10));

  // Sends a signal.
  void Signal(int sig);

  // Waits for the exit (killing the child after `guard`). Returns the exit
  // code, or 128 + signal if a signal ended it, or nullopt if it had to be killed.
  std::optional<int> Wait(std::chrono::milliseconds guard = std::chrono::seconds(10));

  // Everything captured so far.
  std::string output() const;

  // CPU seconds the child's threads have run so far (from the scheduler's
  // statistics, /proc/PID/task/*/schedstat); -1 once it has exited or if unknown.
  double CpuSeconds() const;

 private:
  void ReadLoop(int fd);

  pid_t pid_ = -1;
  std::optional<int> status_;
  std::thread reader_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string output_;  // guarded by mu_
  bool eof_ = false;    // guarded by mu_
};

// Runs a binary to completion; returns {exit code, output}.
std::pair<int, std::string> RunToExit(const std::string& path,
                                      const std::vector<std::string>& args);

}  // namespace serene::loadgen
