// Pipeline::Burst: a receive batch processed with one job lookup and one hold
// of the job's shared lock per run of INCs and READs. It must have exactly
// Process's effect packet by packet, and must not hold back a writer.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "packet_builder.h"

namespace serene::testing {
namespace {

using dataplane::BarrierParams;
using dataplane::JobConfig;
using dataplane::Output;
using dataplane::Pipeline;
using dataplane::ProcessResult;
using proto::Op;

constexpr uint32_t kRanks = 3, kRows = 4, kWidth = 8;

JobConfig BurstJob() {
  JobConfig c = TestJob(kRanks, BarrierParams::Sync(), kRows * kWidth, kWidth);
  auto g = dataplane::ParseGroup("239.83.0.9:7100");  // completed rows are emitted too
  EXPECT_TRUE(g.ok());
  if (g.ok()) c.group = *g;
  return c;
}

// The burst job, every rank joined, seeded with `seed` in every value.
void StartBurstJob(Harness& h, int32_t seed) {
  h.CreateJob(BurstJob());
  h.JoinAll(kRanks);
  h.Seed(std::vector<int32_t>(kRows * kWidth, seed));
}

std::vector<int32_t> RowValues(uint32_t rank, uint32_t clock, uint32_t row) {
  std::vector<int32_t> v(kWidth);
  for (uint32_t i = 0; i < kWidth; ++i) v[i] = static_cast<int32_t>(rank * 100 + clock * 10 + row + i);
  return v;
}

struct Datagram {
  std::vector<uint8_t> bytes;
  uint32_t from;
};

// Two clocks of every rank, with what a switch also meets: a READ, a
// malformed datagram, a packet of an unknown job, a wrong key, a duplicate
// INC, and CLOCKs (exclusive) between the INCs.
std::vector<Datagram> MixedTraffic(uint32_t key) {
  std::vector<Datagram> d;
  auto add = [&](const PacketBuilder& b, uint32_t from) { d.push_back({b.Build(), from}); };
  for (uint32_t c = 1; c <= 2; ++c) {
    for (uint32_t w = 0; w < kRanks; ++w) {
      for (uint32_t r = 0; r < kRows; ++r) {
        add(PacketBuilder(Op::kInc, 1, w, key).Clock(c).Row(r).Values(RowValues(w, c, r)), w);
        if (r == 1) add(PacketBuilder(Op::kRead, 1, w, key).Clock(c).Row(3), w);
      }
      if (w == 0) {
        d.push_back({{0x53, 0x45, 0x01}, w});  // truncated
        add(PacketBuilder(Op::kInc, 2, w, key).Clock(c).Row(0).Values(RowValues(w, c, 0)), w);
        add(PacketBuilder(Op::kInc, 1, w, key + 1).Clock(c).Row(0).Values(RowValues(w, c, 0)), w);
        add(PacketBuilder(Op::kInc, 1, w, key).Clock(c).Row(2).Values(RowValues(w, c, 2)), w);
      }
      add(PacketBuilder(Op::kClock, 1, w, key).Clock(c).Row(kRows), w);
    }
  }
  return d;
}

void ExpectSameEmitted(const std::vector<Emitted>& a, const std::vector<Emitted>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE("emitted packet " + std::to_string(i));
    EXPECT_EQ(a[i].dst, b[i].dst);
    EXPECT_EQ(a[i].header.op, b[i].header.op);
    EXPECT_EQ(a[i].header.worker, b[i].header.worker);
    EXPECT_EQ(a[i].header.clock, b[i].header.clock);
    EXPECT_EQ(a[i].header.row, b[i].header.row);
    EXPECT_EQ(a[i].header.flags, b[i].header.flags);
    EXPECT_EQ(a[i].values, b[i].values);
  }
}

TEST(Burst, HasTheEffectOfProcessingOnePacketAtATime) {
  Harness one, burst;
  for (Harness* h : {&one, &burst}) StartBurstJob(*h, 7);
  const dataplane::GlobalCounters before = burst.pipeline().global_counters();
  const std::vector<Datagram> traffic = MixedTraffic(one.key());

  std::vector<Emitted> emitted_one, emitted_burst;
  std::vector<ProcessResult> results_one, results_burst;
  for (const Datagram& d : traffic) {
    ProcessResult r;
    auto e = one.SendRaw(d.bytes, WorkerAddr(d.from), &r);
    results_one.push_back(r);
    emitted_one.insert(emitted_one.end(), e.begin(), e.end());
  }
  {
    Output out = Output::ForBatch(4);
    Pipeline::Burst b(burst.pipeline());
    for (const Datagram& d : traffic) {
      if (!out.HasRoomForProcess()) {
        const auto e = Harness::Decoded(out);
        emitted_burst.insert(emitted_burst.end(), e.begin(), e.end());
        out.Clear();
      }
      results_burst.push_back(
          b.Process(d.bytes, WorkerAddr(d.from), proto::Endpoint{}, burst.now, &out));
    }
    // The packet counter is added when the burst ends.
    EXPECT_EQ(burst.pipeline().global_counters().packets, before.packets);
    b.End();
    const auto e = Harness::Decoded(out);
    emitted_burst.insert(emitted_burst.end(), e.begin(), e.end());
  }

  ASSERT_EQ(results_one.size(), results_burst.size());
  for (size_t i = 0; i < results_one.size(); ++i) {
    SCOPED_TRACE("datagram " + std::to_string(i));
    EXPECT_EQ(results_one[i].verdict, results_burst[i].verdict);
    EXPECT_EQ(results_one[i].reason, results_burst[i].reason);
    EXPECT_EQ(results_one[i].parse_error, results_burst[i].parse_error);
  }
  ExpectSameEmitted(emitted_one, emitted_burst);
  EXPECT_EQ(one.Model(), burst.Model());
  const auto t1 = one.Telemetry(), t2 = burst.Telemetry();
  EXPECT_EQ(t1.low, t2.low);
  EXPECT_EQ(t1.counters.rx_by_op, t2.counters.rx_by_op);
  EXPECT_EQ(t1.counters.drops, t2.counters.drops);
  EXPECT_EQ(t1.counters.completed_rows, t2.counters.completed_rows);
  EXPECT_EQ(t1.counters.folds, t2.counters.folds);
  EXPECT_EQ(t1.counters.releases, t2.counters.releases);
  EXPECT_GT(t2.counters.completed_rows, 0u);
  ASSERT_EQ(t1.workers.size(), t2.workers.size());
  for (size_t w = 0; w < t1.workers.size(); ++w) {
    EXPECT_EQ(t1.workers[w].counters.incs_applied, t2.workers[w].counters.incs_applied);
    EXPECT_EQ(t1.workers[w].rows_this_clock, t2.workers[w].rows_this_clock);
  }
  EXPECT_EQ(t2.low, 2u);  // both clocks completed by every rank
  const auto g1 = one.pipeline().global_counters(), g2 = burst.pipeline().global_counters();
  EXPECT_EQ(g1.packets, g2.packets);
  EXPECT_EQ(g2.packets - before.packets, traffic.size());
  EXPECT_EQ(g1.parse_errors, g2.parse_errors);
  EXPECT_EQ(g1.unknown_job, g2.unknown_job);
  EXPECT_EQ(g1.bad_key, g2.bad_key);
}

// A control operation that takes the job's lock exclusive and changes
// nothing: an eviction of rank 2 if it were silent for ~584 years.
void ExclusiveNoOp(Harness& h) {
  Output out = Output::ForBatch(1);
  (void)h.pipeline().EvictIfSilent(1, 2, UINT64_MAX, h.now, &out);
}

// Starts the burst job and has `b` hold it shared: processes one INC of
// rank 0 (clock 1, row 0) and returns it (sent again, it is a duplicate).
std::vector<uint8_t> HoldTheJob(Harness& h, Pipeline::Burst& b, Output* out) {
  StartBurstJob(h, 0);
  std::vector<uint8_t> inc =
      PacketBuilder(Op::kInc, 1, 0, h.key()).Clock(1).Row(0).Values(RowValues(0, 1, 0)).Build();
  b.Process(inc, WorkerAddr(0), proto::Endpoint{}, h.now, out);
  return inc;
}

// A burst that holds the job's lock between two INCs lets a waiting writer
// in at its next packet, not at its end.
TEST(Burst, AWaitingWriterGetsInBeforeTheBurstEnds) {
  Harness h;
  Output out = Output::ForBatch(1);
  Pipeline::Burst b(h.pipeline());
  const std::vector<uint8_t> inc = HoldTheJob(h, b, &out);

  std::atomic<bool> writer_done{false};
  std::thread writer([&] {
    ExclusiveNoOp(h);
    writer_done.store(true);
  });
  // Each further packet (a duplicate INC: still processed under the lock)
  // checks for a waiting writer; the writer gets in without End().
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  uint64_t packets = 1;
  while (!writer_done.load() && std::chrono::steady_clock::now() < deadline) {
    out.Clear();
    b.Process(inc, WorkerAddr(0), proto::Endpoint{}, h.now, &out);
    ++packets;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(writer_done.load()) << "the writer still waits after " << packets << " packets";
  b.End();
  writer.join();
  EXPECT_EQ(h.Telemetry().counters.drops[static_cast<size_t>(dataplane::DropReason::kIncDuplicate)],
            packets - 1);
}

// Telemetry (a /metrics scrape, a controller's poll) reads under the job's
// shared lock: it neither waits for a burst that holds the job (no further
// packet comes to let it in) nor stops the burst's INCs.
TEST(Burst, TelemetryDoesNotWaitForABurst) {
  Harness h;
  Output out = Output::ForBatch(1);
  Pipeline::Burst b(h.pipeline());
  (void)HoldTheJob(h, b, &out);

  std::atomic<bool> read{false};
  std::atomic<uint32_t> rows_seen{0};
  std::thread reader([&] {
    auto t = h.pipeline().Telemetry(1);
    if (t.ok()) rows_seen.store(t->workers[0].rows_this_clock);
    read.store(true);
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!read.load() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(read.load()) << "telemetry waited for the burst to end";
  b.End();  // lets an exclusive reader in, so that the thread can be joined
  reader.join();
  EXPECT_EQ(rows_seen.load(), 0u) << "the burst's tally is added at its end";
}

// Several threads, each with bursts of its rank's INCs and CLOCK, and a
// control thread taking the job's lock exclusive all the while: every sum is
// exact, nothing deadlocks (and TSan sees no race).
TEST(Burst, ThreadsWithBurstsAndAWriterKeepEverySumExact) {
  constexpr uint32_t kClocks = 30;
  Harness h;
  StartBurstJob(h, 0);
  const auto seeded = h.Telemetry();  // the seed's INCs (rank 0, clock 0) are counted too

  std::atomic<bool> stop{false};
  std::thread control([&] {
    while (!stop.load()) ExclusiveNoOp(h);
  });
  std::vector<std::thread> ranks;
  std::atomic<uint32_t> failures{0};
  for (uint32_t w = 0; w < kRanks; ++w) {
    ranks.emplace_back([&, w] {
      Output out = Output::ForBatch(2);
      for (uint32_t c = 1; c <= kClocks; ++c) {
        Pipeline::Burst b(h.pipeline());
        for (uint32_t r = 0; r < kRows; ++r) {
          out.Clear();
          const auto inc =
              PacketBuilder(Op::kInc, 1, w, h.key()).Clock(c).Row(r).Values(RowValues(w, c, r)).Build();
          if (b.Process(inc, WorkerAddr(w), proto::Endpoint{}, 1'000'000, &out).verdict !=
              dataplane::Verdict::kApplied) {
            ++failures;
          }
        }
        out.Clear();
        const auto clock = PacketBuilder(Op::kClock, 1, w, h.key()).Clock(c).Row(kRows).Build();
        b.Process(clock, WorkerAddr(w), proto::Endpoint{}, 1'000'000, &out);
        b.End();
        // SYNC: wait for the others' CLOCK before the next clock's INCs.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (h.pipeline().Telemetry(1)->low < c &&
               std::chrono::steady_clock::now() < deadline) {
          std::this_thread::yield();
        }
      }
    });
  }
  for (auto& t : ranks) t.join();
  stop.store(true);
  control.join();
  EXPECT_EQ(failures.load(), 0u);
  std::vector<int32_t> expect(kRows * kWidth, 0);
  for (uint32_t c = 1; c <= kClocks; ++c) {
    for (uint32_t w = 0; w < kRanks; ++w) {
      for (uint32_t r = 0; r < kRows; ++r) {
        const auto v = RowValues(w, c, r);
        for (uint32_t i = 0; i < kWidth; ++i) expect[r * kWidth + i] += v[i];
      }
    }
  }
  EXPECT_EQ(h.Model(), expect);
  const auto t = h.Telemetry();
  EXPECT_EQ(t.low, kClocks);
  // The bursts' tallies, added by several threads at once, are exact too.
  const size_t inc = static_cast<size_t>(Op::kInc);
  EXPECT_EQ(t.counters.rx_by_op[inc] - seeded.counters.rx_by_op[inc], kClocks * kRanks * kRows);
  EXPECT_EQ(t.counters.completed_rows - seeded.counters.completed_rows, kClocks * kRows);
  for (uint32_t w = 0; w < kRanks; ++w) {
    EXPECT_EQ(t.workers[w].counters.incs_applied - seeded.workers[w].counters.incs_applied,
              kClocks * kRows);
  }
}

// INCs of every rank interleaved in one hold of the job (a receive batch
// that mixes the ranks' trains): each rank's applied rows reach its own
// registers, so every CLOCK that follows in the same burst is RELEASEd
// (a miscounted rank would be NACKed), and the counters equal one packet
// at a time's.
TEST(Burst, InterleavedRanksEachCountTheirOwnRows) {
  Harness one, burst;
  for (Harness* h : {&one, &burst}) StartBurstJob(*h, 0);
  const auto seeded = burst.Telemetry();  // the seed's INCs (rank 0, clock 0) are counted too
  std::vector<Datagram> traffic;
  for (uint32_t r = 0; r < kRows; ++r) {
    for (uint32_t w = 0; w < kRanks; ++w) {
      // Rank 2 sends its last row twice in a row: the duplicate is not applied.
      const uint32_t copies = (w == 2 && r == kRows - 1) ? 2 : 1;
      for (uint32_t k = 0; k < copies; ++k) {
        traffic.push_back(
            {PacketBuilder(Op::kInc, 1, w, one.key()).Clock(1).Row(r).Values(RowValues(w, 1, r)).Build(),
             w});
      }
    }
  }
  for (uint32_t w = 0; w < kRanks; ++w) {
    traffic.push_back({PacketBuilder(Op::kClock, 1, w, one.key()).Clock(1).Row(kRows).Build(), w});
  }

  std::vector<Emitted> emitted_one;
  for (const Datagram& d : traffic) {
    auto e = one.SendRaw(d.bytes, WorkerAddr(d.from));
    emitted_one.insert(emitted_one.end(), e.begin(), e.end());
  }
  Output out = Output::ForBatch(traffic.size());
  {
    Pipeline::Burst b(burst.pipeline());
    for (const Datagram& d : traffic) {
      ASSERT_TRUE(out.HasRoomForProcess());
      b.Process(d.bytes, WorkerAddr(d.from), proto::Endpoint{}, burst.now, &out);
    }
  }
  const std::vector<Emitted> emitted_burst = Harness::Decoded(out);
  ExpectSameEmitted(emitted_one, emitted_burst);
  uint32_t releases = 0;
  for (const Emitted& e : emitted_burst) {
    EXPECT_NE(e.header.op, Op::kNack);
    if (e.header.op == Op::kRelease) ++releases;
  }
  EXPECT_EQ(releases, kRanks);

  const auto t1 = one.Telemetry(), t2 = burst.Telemetry();
  EXPECT_EQ(t2.low, 1u);
  EXPECT_EQ(t1.counters.rx_by_op, t2.counters.rx_by_op);
  EXPECT_EQ(t1.counters.completed_rows, t2.counters.completed_rows);
  EXPECT_EQ(t2.counters.completed_rows - seeded.counters.completed_rows, kRows);
  EXPECT_EQ(t1.counters.folds, t2.counters.folds);
  EXPECT_EQ(t2.counters.folds - seeded.counters.folds, kRows) << "each completed row folded";
  ASSERT_EQ(t2.workers.size(), kRanks);
  for (uint32_t w = 0; w < kRanks; ++w) {
    SCOPED_TRACE("rank " + std::to_string(w));
    EXPECT_EQ(t1.workers[w].counters.incs_applied, t2.workers[w].counters.incs_applied);
    EXPECT_EQ(t2.workers[w].counters.incs_applied - seeded.workers[w].counters.incs_applied,
              kRows);
    EXPECT_EQ(t1.workers[w].counters.incs_duplicate, t2.workers[w].counters.incs_duplicate);
    EXPECT_EQ(t1.workers[w].rows_this_clock, t2.workers[w].rows_this_clock);
  }
  EXPECT_EQ(t2.workers[2].counters.incs_duplicate, 1u);
  EXPECT_EQ(one.Model(), burst.Model());
}

}  // namespace
}  // namespace serene::testing
