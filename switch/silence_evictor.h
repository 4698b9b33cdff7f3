// SilenceEvictor: the daemon's membership housekeeping (DESIGN.md §4
// "Membership"). A rank that stops sending — crashed, killed, partitioned —
// would hold its SYNC/SSP peers at the barrier for ever; every
// `sweep_interval` the evictor takes out of the barrier each joined, live
// rank of each job whose last packet is older than the job's evict_after
// (JobConfig::evict_after_ms; 0 = never). Peers it held are released; the
// rank may JOIN again and resumes from the switch's model.
//
// Only ranks that have joined are evicted: a rank that never started is
// absent, not silent, and clock 0 waits for every member (docs/control.md).
// The data plane stays pure: the evictor reads its clock and calls
// Pipeline::EvictIfSilent, which re-checks the silence under the job's lock.
//
// Thread-safe: Sweep() may run concurrently with packets; Start/Stop are for
// one owner.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "common/status.h"
#include "dataplane/output.h"
#include "dataplane/pipeline.h"

namespace serene::switchd {

class SilenceEvictor {
 public:
  using Sender = std::function<Status(const dataplane::Output&)>;
  using NowFn = std::function<dataplane::Timestamp()>;

  // `pipeline` must outlive the evictor; `send` puts the RELEASEs an eviction
  // emits on the wire.
  SilenceEvictor(dataplane::Pipeline* pipeline, Sender send, NowFn now);
  ~SilenceEvictor();  // stops
  SilenceEvictor(const SilenceEvictor&) = delete;
  SilenceEvictor& operator=(const SilenceEvictor&) = delete;

  // One pass over every job; returns the number of ranks evicted.
  uint32_t Sweep();

  // Runs Sweep() every `interval` on a thread of its own until Stop().
  void Start(std::chrono::milliseconds interval = std::chrono::milliseconds(100));
  void Stop();

  uint64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }

 private:
  dataplane::Pipeline* const pipeline_;
  const Sender send_;
  const NowFn now_;
  std::atomic<uint64_t> evictions_{0};

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace serene::switchd
