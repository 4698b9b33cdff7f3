#include "switch/bounded_task_queue.h"

#include <utility>

namespace serene::switchd {
namespace {

thread_local bool t_shedding = false;

}  // namespace

BoundedTaskQueue::BoundedTaskQueue(size_t workers, size_t capacity) : capacity_(capacity) {
  workers_.reserve(workers);
  for (size_t i = 0; i < workers; ++i) workers_.emplace_back([this] { Work(); });
}

BoundedTaskQueue::~BoundedTaskQueue() { Shutdown(); }

void BoundedTaskQueue::Enqueue(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    if (tasks_.size() < capacity_) {
      tasks_.push_back(std::move(task));
      cv_.notify_one();
      return;
    }
    ++shed_;
  }
  t_shedding = true;
  task();
  t_shedding = false;
}

void BoundedTaskQueue::Shutdown() {
  {
    std::lock_guard lock(mu_);
    if (stopping_ && workers_.empty()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) {
    if (t.joinable()) t.join();
  }
  workers_.clear();
}

bool BoundedTaskQueue::Shedding() { return t_shedding; }

size_t BoundedTaskQueue::shed() const {
  std::lock_guard lock(mu_);
  return shed_;
}

void BoundedTaskQueue::Work() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, nothing left
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace serene::switchd
