#include "switch/silence_evictor.h"

#include <spdlog/spdlog.h>

#include "common/duration.h"

namespace serene::switchd {

SilenceEvictor::SilenceEvictor(dataplane::Pipeline* pipeline, Sender send, NowFn now)
    : pipeline_(pipeline), send_(std::move(send)), now_(std::move(now)) {}

SilenceEvictor::~SilenceEvictor() { Stop(); }

uint32_t SilenceEvictor::Sweep() {
  uint32_t evicted = 0;
  dataplane::Output out = dataplane::Output::ForBatch(1);
  for (uint16_t id : pipeline_->JobIds()) {
    auto t = pipeline_->Telemetry(id);
    if (!t.ok() || t->finished || t->config.evict_after_ms == 0) continue;
    const uint64_t limit_ns = uint64_t{t->config.evict_after_ms} * 1'000'000;
    for (const dataplane::WorkerTelemetry& w : t->workers) {
      if (!w.live || !w.joined) continue;
      const dataplane::Timestamp now = now_();
      if (dataplane::Elapsed(w.last_seen, now) < limit_ns) continue;
      out.Clear();
      auto done = pipeline_->EvictIfSilent(id, static_cast<uint16_t>(w.rank), limit_ns, now, &out);
      if (!done.ok() || !*done) continue;
      ++evicted;
      evictions_.fetch_add(1, std::memory_order_relaxed);
      spdlog::warn(
          "job {}: evicted rank {} (silent for {}, evict_after={}); {} waiting rank(s) released; "
          "it may JOIN again",
          id, w.rank, FormatDuration(dataplane::Elapsed(w.last_seen, now) / 1'000'000 * 1'000'000),
          FormatDuration(limit_ns), out.size());
      if (!out.empty()) {
        Status s = send_(out);
        if (!s.ok()) spdlog::warn("job {}: sending the RELEASEs of an eviction: {}", id, s.message());
      }
    }
  }
  return evicted;
}

void SilenceEvictor::Start(std::chrono::milliseconds interval) {
  std::lock_guard guard(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this, interval] {
    std::unique_lock lock(mu_);
    while (!stop_) {
      lock.unlock();
      Sweep();
      lock.lock();
      cv_.wait_for(lock, interval, [this] { return stop_; });
    }
  });
}

void SilenceEvictor::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace serene::switchd
