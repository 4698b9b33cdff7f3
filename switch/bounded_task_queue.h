// BoundedTaskQueue: the connection queue of the metrics HTTP server
// (switch/metrics_http.cc): `workers` threads serve queued tasks, and at most
// `capacity` tasks wait. A task offered while the queue is full is not
// queued: it runs at once on the offering thread (the server's accept
// thread) with Shedding() true, so that the request handler answers 503
// without doing the work. Memory and threads stay bounded whatever the
// number of clients; further connections wait in the kernel's listen backlog
// while the accept thread answers one.
//
// Thread safety: Enqueue() and Shutdown() from any thread; Shutdown() once.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace serene::switchd {

class BoundedTaskQueue {
 public:
  // REQUIRES: workers >= 1.
  BoundedTaskQueue(size_t workers, size_t capacity);
  ~BoundedTaskQueue();  // Shutdown() if not done
  BoundedTaskQueue(const BoundedTaskQueue&) = delete;
  BoundedTaskQueue& operator=(const BoundedTaskQueue&) = delete;

  // Queues `task`, or runs it now with Shedding() true when `capacity`
  // tasks already wait.
  void Enqueue(std::function<void()> task);

  // Finishes the queued tasks and joins the workers.
  void Shutdown();

  // True on a thread running a task that Enqueue() did not queue.
  static bool Shedding();

  // Tasks run shed since construction.
  size_t shed() const;

 private:
  void Work();

  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;  // GUARDED_BY(mu_)
  bool stopping_ = false;                    // GUARDED_BY(mu_)
  size_t shed_ = 0;                          // GUARDED_BY(mu_)
  std::vector<std::thread> workers_;
};

}  // namespace serene::switchd
