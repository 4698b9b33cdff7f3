#include "control/lua_watchdog.h"

#include <utility>

namespace serene::control {

LuaWatchdog::LuaWatchdog(std::function<void()> on_expiry)
    : on_expiry_(std::move(on_expiry)), thread_([this] { Loop(); }) {}

LuaWatchdog::~LuaWatchdog() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void LuaWatchdog::Arm(Clock::time_point deadline) {
  {
    std::lock_guard lock(mu_);
    armed_ = true;
    deadline_ = deadline;
  }
  cv_.notify_one();
}

void LuaWatchdog::Disarm() {
  std::lock_guard lock(mu_);
  armed_ = false;
}

void LuaWatchdog::Loop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    if (!armed_) {
      cv_.wait(lock);
    } else if (Clock::now() < deadline_) {
      cv_.wait_until(lock, deadline_);
    } else {
      // Under the lock: Disarm cannot return while the callback runs.
      armed_ = false;
      on_expiry_();
    }
  }
}

}  // namespace serene::control
