// LuaWatchdog: a thread that fires a callback when a call outlives its
// deadline. LuaSandbox uses it to stop a script between two hook events: a
// single VM instruction can take long (comparing two long strings of zero
// bytes is one strcoll per byte), and a line of such instructions passes few
// count events, so a clock read at hook events alone could come seconds late.
// On expiry the sandbox interrupts the thread running the call with a signal
// whose handler makes the very next instruction fire the count hook
// (lua_sethook with a count of 1, from a signal handler on the running
// thread, as lua.c does on Ctrl-C) and raises the time error there.
//
// Thread-safety: Arm and Disarm are called by the thread running the call;
// the callback runs on the watchdog's thread while Arm's caller may be
// running Lua, and never after Disarm returned.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace serene::control {

class LuaWatchdog {
 public:
  using Clock = std::chrono::steady_clock;

  explicit LuaWatchdog(std::function<void()> on_expiry);
  ~LuaWatchdog();
  LuaWatchdog(const LuaWatchdog&) = delete;
  LuaWatchdog& operator=(const LuaWatchdog&) = delete;

  // From now on, calls on_expiry once at `deadline` unless disarmed first.
  void Arm(Clock::time_point deadline);
  // Cancels the pending expiry; on_expiry is not running and will not run
  // for this arming when it returns.
  void Disarm();

 private:
  void Loop();

  const std::function<void()> on_expiry_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false;            // guarded by mu_
  bool stop_ = false;             // guarded by mu_
  Clock::time_point deadline_{};  // guarded by mu_
  std::thread thread_;
};

}  // namespace serene::control
