#include "ctl/interrupt.h"

#include <signal.h>

#include <cstdlib>

namespace serene::ctl {

void Interrupt::SetAction(std::function<void()> action) {
  std::lock_guard lock(mu_);
  action_ = std::move(action);
  if (triggered_ && action_) action_();
}

void Interrupt::ClearAction() {
  // Taking the lock waits for a Trigger() running the action to finish.
  std::lock_guard lock(mu_);
  action_ = nullptr;
}

void Interrupt::Trigger() {
  std::lock_guard lock(mu_);
  triggered_ = true;
  if (action_) action_();
}

bool Interrupt::triggered() const {
  std::lock_guard lock(mu_);
  return triggered_;
}

SignalThread::SignalThread(Interrupt* interrupt) : interrupt_(interrupt) {
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGINT);
  sigaddset(&signals_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
  thread_ = std::thread([this] { Wait(); });
}

SignalThread::~SignalThread() {
  stopping_.store(true);
  // The waiting thread has SIGTERM blocked: this one is held for it and
  // wakes its sigwait, which then sees stopping_.
  pthread_kill(thread_.native_handle(), SIGTERM);
  thread_.join();
}

void SignalThread::Wait() {
  int received = 0;
  while (true) {
    int sig = 0;
    if (sigwait(&signals_, &sig) != 0) continue;
    if (stopping_.load()) return;
    if (++received > 1) std::_Exit(128 + sig);  // asked twice: stop now
    interrupt_->Trigger();
  }
}

}  // namespace serene::ctl
