// Does a flood of keyless JOINs slow a running job? (issue 31, item 3:
// authenticate before any lock or state.) One thread runs a SYNC job of 4
// ranks through the Pipeline as the daemon's loop does — each rank READs
// every row, INCs every row (receive batches of 32 as Pipeline::Burst) and
// CLOCKs — while a second thread, a second port's loop, sends JOINs for the
// same job with a wrong key (key 0, what a stranger guessing job ids sends)
// as fast as it can, in batches of 32. The two threads are pinned to CPUs 0
// and 1 (counter `pinned`), as the daemon's two loops run on two cores: the
// flood cannot take the job's core, only reach it through what they share.
//
// Each iteration runs kRounds rounds (a few milliseconds) in each of three
// phases, in a rotating order, side by side at the same moment of a shared,
// noisy machine: `quiet` (the second thread sleeps), `spin` (it only burns
// its core: what a busy neighbour costs the job without touching the
// pipeline — its share of the memory system, the host's scheduling of two
// vCPUs) and `flood`. Counters: the job's rounds per second in each phase,
// and the median (with quartiles, _p25 and _p75) over the iterations of
//   ratio_quiet = flood / quiet: all the flood costs the job (1 = nothing);
//   ratio       = flood / spin: what it costs beyond a busy neighbour;
//   spin_quiet  = spin / quiet: a busy neighbour alone.
//   build/bin/flood_bench --benchmark_repetitions=8
// `flood_pps` is the rate of keyless JOINs the flooding thread got through.
#include <benchmark/benchmark.h>

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "dataplane/pipeline.h"
#include "packet_builder.h"

namespace serene::testing {
namespace {

using dataplane::BarrierParams;
using proto::Op;

constexpr uint32_t kWorkers = 4, kRows = 64, kRow = 256, kBatch = 32, kRounds = 100;

enum class Neighbour { kOff, kSpin, kFlood };

// Pins the calling thread to CPU `cpu`; false if it cannot (fewer CPUs).
bool PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

// The second thread: sleeps, spins, or sends keyless JOINs for job 1.
class Flooder {
 public:
  explicit Flooder(dataplane::Pipeline* p) : thread_([this, p] { Run(p); }) {}
  ~Flooder() {
    stop_.store(true);
    mode_.store(Neighbour::kFlood);  // wakes the thread, which sees stop_
    mode_.notify_all();
    thread_.join();
  }
  // Switches the thread; returns once it is idle (kOff) or at work.
  void Set(Neighbour n) {
    mode_.store(n);
    mode_.notify_all();
    while (busy_.load() != (n != Neighbour::kOff)) std::this_thread::yield();
  }
  uint64_t sent() const { return sent_.load(); }
  bool pinned() const { return pinned_.load(); }

 private:
  void Run(dataplane::Pipeline* p) {
    pinned_ = PinTo(1);
    std::vector<std::vector<uint8_t>> joins;
    for (uint16_t w = 0; w < kWorkers; ++w) {
      joins.push_back(PacketBuilder(Op::kJoin, 1, w, /*key=*/0).Build());
    }
    dataplane::Output out = dataplane::Output::ForBatch(kBatch);
    const proto::Endpoint stranger = WorkerAddr(0, 50000);
    while (!stop_.load()) {
      mode_.wait(Neighbour::kOff);
      busy_.store(true);
      for (Neighbour n; (n = mode_.load()) != Neighbour::kOff && !stop_.load();) {
        if (n == Neighbour::kSpin) {
          for (uint32_t i = 0; i < 1000; ++i) benchmark::DoNotOptimize(i);
          continue;
        }
        dataplane::Pipeline::Burst burst(*p);
        out.Clear();
        for (uint32_t i = 0; i < kBatch; ++i) {
          burst.Process(joins[i % kWorkers], stranger, proto::Endpoint{}, 1, &out);
        }
        sent_.fetch_add(kBatch, std::memory_order_relaxed);
      }
      busy_.store(false);
    }
  }

  std::atomic<Neighbour> mode_{Neighbour::kOff};
  std::atomic<bool> busy_{false}, stop_{false}, pinned_{false};
  std::atomic<uint64_t> sent_{0};
  std::thread thread_;
};

// The job: kWorkers ranks, kRows rows of kRow values, SYNC, seeded; its
// packets built once (the clock patched in).
struct Job {
  Job() {
    h.CreateJob(TestJob(kWorkers, BarrierParams::Sync(), kRows * kRow, kRow));
    h.JoinAll(kWorkers);
    h.Seed(std::vector<int32_t>(kRows * kRow, 0));
    for (uint16_t w = 0; w < kWorkers; ++w) {
      std::vector<std::vector<uint8_t>> rd, in;
      for (uint32_t r = 0; r < kRows; ++r) {
        rd.push_back(h.Req(Op::kRead, w).Clock(1).Row(r).Build());
        in.push_back(h.Req(Op::kInc, w).Clock(1).Row(r).Values(std::vector<int32_t>(kRow, 1)).Build());
      }
      reads.push_back(std::move(rd));
      incs.push_back(std::move(in));
      clocks.push_back(h.Req(Op::kClock, w).Clock(1).Row(kRows).Build());
    }
  }

  // Sends `pkts` of rank w at clock c in receive batches of kBatch.
  void Batches(std::vector<std::vector<uint8_t>>& pkts, uint16_t w, uint32_t c) {
    for (size_t i = 0; i < pkts.size(); i += kBatch) {
      dataplane::Pipeline::Burst burst(h.pipeline());
      out.Clear();
      for (size_t k = i; k < i + kBatch && k < pkts.size(); ++k) {
        proto::StoreU32(pkts[k].data() + proto::kOffClock, c);
        burst.Process(pkts[k], WorkerAddr(w), proto::Endpoint{}, 1, &out);
      }
    }
  }

  // One SYNC round at clock `clock`: false if the last CLOCK released not everyone.
  bool Round() {
    for (uint16_t w = 0; w < kWorkers; ++w) Batches(reads[w], w, clock);
    size_t released = 0;
    for (uint16_t w = 0; w < kWorkers; ++w) {
      Batches(incs[w], w, clock);
      proto::StoreU32(clocks[w].data() + proto::kOffClock, clock);
      out.Clear();
      h.pipeline().Process(clocks[w], WorkerAddr(w), 1, &out);
      released = out.size();
    }
    ++clock;
    return released == kWorkers;
  }

  Harness h;
  std::vector<std::vector<std::vector<uint8_t>>> reads, incs;
  std::vector<std::vector<uint8_t>> clocks;
  dataplane::Output out = dataplane::Output::ForBatch(kBatch);
  uint32_t clock = 1;
};

// The median and quartiles of `v`.
struct Quartiles {
  double p25, median, p75;
};
Quartiles QuartilesOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))]; };
  return {at(0.25), at(0.5), at(0.75)};
}

void BM_KeylessJoinFlood(benchmark::State& state) {
  cpu_set_t before;
  pthread_getaffinity_np(pthread_self(), sizeof(before), &before);
  const bool pinned = PinTo(0);
  Job job;
  Flooder neighbour(&job.h.pipeline());
  using Clock = std::chrono::steady_clock;
  bool ok = true;
  // Seconds for kRounds rounds with the neighbour `n`.
  auto phase = [&](Neighbour n) {
    neighbour.Set(n);
    const auto t0 = Clock::now();
    for (uint32_t i = 0; i < kRounds; ++i) ok &= job.Round();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    neighbour.Set(Neighbour::kOff);
    return s;
  };
  // Per iteration, the three phases in a rotating order (none always first).
  std::vector<double> ratio, ratio_quiet, spin_quiet;
  double quiet_s = 0, spin_s = 0, flood_s = 0;
  for (auto _ : state) {
    double t[3];
    const size_t first = ratio.size() % 3;
    for (size_t k = 0; k < 3; ++k) {
      const size_t i = (first + k) % 3;
      t[i] = phase(static_cast<Neighbour>(i));
    }
    const double quiet = t[0], spin = t[1], flood = t[2];
    ratio.push_back(spin / flood);
    ratio_quiet.push_back(quiet / flood);
    spin_quiet.push_back(quiet / spin);
    quiet_s += quiet;
    spin_s += spin;
    flood_s += flood;
  }
  if (!ok) state.SkipWithError("a round did not release every rank");
  auto t = job.h.Telemetry();
  if (t.counters.drops[static_cast<size_t>(dataplane::DropReason::kBadKey)] != neighbour.sent()) {
    state.SkipWithError("not every keyless JOIN was counted as bad_key");
  }
  const double rounds = static_cast<double>(state.iterations()) * kRounds;
  state.counters["quiet_rounds_per_s"] = rounds / quiet_s;
  state.counters["spin_rounds_per_s"] = rounds / spin_s;
  state.counters["flood_rounds_per_s"] = rounds / flood_s;
  const Quartiles q = QuartilesOf(ratio_quiet), r = QuartilesOf(ratio), sq = QuartilesOf(spin_quiet);
  state.counters["ratio_quiet"] = q.median;
  state.counters["ratio_quiet_p25"] = q.p25;
  state.counters["ratio_quiet_p75"] = q.p75;
  state.counters["ratio"] = r.median;
  state.counters["ratio_p25"] = r.p25;
  state.counters["ratio_p75"] = r.p75;
  state.counters["spin_quiet"] = sq.median;
  state.counters["flood_pps"] = static_cast<double>(neighbour.sent()) / flood_s;
  state.counters["pinned"] = pinned && neighbour.pinned();
  pthread_setaffinity_np(pthread_self(), sizeof(before), &before);
}
BENCHMARK(BM_KeylessJoinFlood)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace serene::testing

BENCHMARK_MAIN();
