#include "sim/event_queue.h"

#include <algorithm>

namespace serene::sim {

void EventQueue::At(SimTime at, Action action) {
  heap_.push_back({std::max(at, now_), next_seq_++, std::move(action)});
  std::push_heap(heap_.begin(), heap_.end(), Later{});
}

bool EventQueue::RunNext() {
  if (heap_.empty()) return false;
  std::pop_heap(heap_.begin(), heap_.end(), Later{});
  Event e = std::move(heap_.back());
  heap_.pop_back();
  now_ = e.at;
  ++executed_;
  e.action();
  return true;
}

}  // namespace serene::sim
