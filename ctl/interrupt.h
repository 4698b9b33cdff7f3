// Interrupt and SignalThread: how serene-ctl's long-running commands (top,
// control) stop cleanly on Ctrl-C or SIGTERM.
//
// A command registers what stopping means for it (cancel the telemetry
// stream, stop the controller) with Interrupt::SetAction; SignalThread turns
// the first SIGINT/SIGTERM into Interrupt::Trigger(), on a thread of its own,
// so the action runs as ordinary code rather than in a signal handler (as
// serene-switch does with sigwait). Tests trigger an Interrupt directly.
//
// Interrupt is thread-safe. SignalThread: construct it on the main thread
// before any other thread starts (gRPC starts some when a client is created),
// so every thread inherits the blocked signals.
#pragma once

#include <pthread.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

namespace serene::ctl {

class Interrupt {
 public:
  // Sets the action Trigger() runs; if Trigger() already happened, runs it
  // now. `action` must not call back into this Interrupt.
  void SetAction(std::function<void()> action);
  // Removes the action; once it returns, the action is not running and will
  // not run (so what it refers to may be destroyed).
  void ClearAction();
  // Runs the action (once per call), or remembers the trigger for SetAction.
  void Trigger();
  bool triggered() const;

 private:
  mutable std::mutex mu_;
  std::function<void()> action_;  // guarded by mu_
  bool triggered_ = false;        // guarded by mu_
};

class SignalThread {
 public:
  // Blocks SIGINT and SIGTERM in the calling thread (and so in every thread
  // it starts later), then waits for them on a new thread: the first one
  // triggers `interrupt`, a second one ends the process at once with 128 +
  // the signal. `interrupt` must outlive this object.
  explicit SignalThread(Interrupt* interrupt);
  // Stops the waiting thread; the signals stay blocked.
  ~SignalThread();
  SignalThread(const SignalThread&) = delete;
  SignalThread& operator=(const SignalThread&) = delete;

 private:
  void Wait();

  Interrupt* const interrupt_;
  sigset_t signals_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace serene::ctl
