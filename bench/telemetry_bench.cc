// Does the control plane slow the packet path? A SYNC clock round of N ranks
// through the Pipeline (N INCs of 4 rows + N CLOCKs) while another thread
// takes telemetry snapshots as a runtime API stream does — Pipeline::Telemetry
// under the job's lock, converted to the API's message and serialized — every
// `period` (0 = no stream). Side by side in one run:
//   build/bin/telemetry_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// period_us:100000 is the 10 Hz stream of serene-ctl top / a controller;
// period_us:1000 (1 kHz) shows what a much greedier reader would cost.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "control/telemetry_convert.h"
#include "dataplane/pipeline.h"
#include "packet_builder.h"

namespace serene::testing {
namespace {

using dataplane::BarrierParams;
using proto::Op;

// Snapshots job 1 every `period` until destroyed; counts them.
class TelemetryReader {
 public:
  TelemetryReader(dataplane::Pipeline* p, std::chrono::microseconds period) {
    if (period.count() == 0) return;
    thread_ = std::thread([this, p, period] {
      std::unique_lock lock(mu_);
      while (!stop_) {
        lock.unlock();
        auto t = p->Telemetry(1);
        if (t.ok()) {
          std::string wire;
          control::TelemetryToProto(*t, 0, 0).SerializeToString(&wire);
          benchmark::DoNotOptimize(wire.data());
          ++snapshots_;
        }
        lock.lock();
        cv_.wait_for(lock, period, [this] { return stop_; });
      }
    });
  }
  ~TelemetryReader() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  uint64_t snapshots() const { return snapshots_.load(); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<uint64_t> snapshots_{0};
  std::thread thread_;
};

void BM_SyncRoundWithTelemetry(benchmark::State& state) {
  const uint32_t workers = static_cast<uint32_t>(state.range(0));
  const auto period = std::chrono::microseconds(state.range(1));
  constexpr uint32_t kRows = 4, kRow = 256;
  Harness h;
  h.CreateJob(TestJob(workers, BarrierParams::Sync(), kRows * kRow, kRow));
  h.JoinAll(workers);
  h.Seed(std::vector<int32_t>(kRows * kRow, 0));
  dataplane::Output out = dataplane::Output::ForBatch(1);
  // Packets prepared once per rank; the clock is patched in place.
  std::vector<std::vector<std::vector<uint8_t>>> incs(workers);
  std::vector<std::vector<uint8_t>> clocks(workers);
  for (uint16_t w = 0; w < workers; ++w) {
    for (uint32_t r = 0; r < kRows; ++r) {
      incs[w].push_back(
          h.Req(Op::kInc, w).Clock(1).Row(r).Values(std::vector<int32_t>(kRow, 1)).Build());
    }
    clocks[w] = h.Req(Op::kClock, w).Clock(1).Row(kRows).Build();
  }
  TelemetryReader reader(&h.pipeline(), period);
  uint32_t c = 1;
  for (auto _ : state) {
    for (uint16_t w = 0; w < workers; ++w) {
      for (auto& p : incs[w]) {
        proto::StoreU32(p.data() + proto::kOffClock, c);
        out.Clear();
        h.pipeline().Process(p, WorkerAddr(w), 1, &out);
      }
      proto::StoreU32(clocks[w].data() + proto::kOffClock, c);
      out.Clear();
      h.pipeline().Process(clocks[w], WorkerAddr(w), 1, &out);
    }
    if (out.size() != workers) state.SkipWithError("the last CLOCK did not release everyone");
    ++c;
  }
  state.SetItemsProcessed(state.iterations() * workers * (kRows + 1));
  state.counters["snapshots"] = static_cast<double>(reader.snapshots());
}
BENCHMARK(BM_SyncRoundWithTelemetry)
    ->ArgNames({"workers", "period_us"})
    ->ArgsProduct({{4, 256}, {0, 100'000, 1'000}})
    ->UseRealTime();

// What one snapshot costs: Pipeline::Telemetry (the part under the job's
// lock, which is all a packet can wait for) and the conversion and
// serialization a stream adds (outside the lock).
void BM_TelemetrySnapshot(benchmark::State& state) {
  const uint32_t workers = static_cast<uint32_t>(state.range(0));
  const bool serialize = state.range(1) != 0;
  Harness h;
  h.CreateJob(TestJob(workers, BarrierParams::Sync(), 1024, 256));
  h.JoinAll(workers);
  std::string wire;
  for (auto _ : state) {
    auto t = h.pipeline().Telemetry(1);
    if (serialize) {
      control::TelemetryToProto(*t, 0, 0).SerializeToString(&wire);
      benchmark::DoNotOptimize(wire.data());
    } else {
      benchmark::DoNotOptimize(t->workers.data());
    }
  }
}
BENCHMARK(BM_TelemetrySnapshot)
    ->ArgNames({"workers", "serialize"})
    ->ArgsProduct({{4, 256}, {0, 1}});

}  // namespace
}  // namespace serene::testing

BENCHMARK_MAIN();
