// Several switch threads on one job: INC and READ of one job run in parallel
// (the job's lock shared, a lock per row stripe), JOIN/CLOCK/LEAVE and
// control operations exclusive. Each test drives Pipeline::Process from
// several threads and checks exact sums, exactly-once INCs and exact
// counters; under TSan (build-tsan) they also check that nothing races.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "packet_builder.h"

namespace serene::testing {
namespace {

using dataplane::BarrierParams;
using dataplane::DropReason;
using dataplane::Output;
using dataplane::Pipeline;
using dataplane::ProcessResult;
using dataplane::Verdict;
using proto::Op;

constexpr uint32_t kThreads = 4;

// Rank w's update of clock c, value i: distinct per (w, c, i), small enough
// never to saturate.
int32_t Update(uint32_t w, uint32_t c, size_t i) {
  return static_cast<int32_t>((w + 1) * 1000 + c * 7 + i % 13) - 500;
}

std::vector<int32_t> RowOf(uint32_t w, uint32_t c, uint32_t row, uint32_t width) {
  std::vector<int32_t> v(width);
  for (uint32_t i = 0; i < width; ++i) v[i] = Update(w, c, size_t{row} * width + i);
  return v;
}

// Creates job 1 (n ranks, rows of `width`), joins every rank and seeds the
// model with `seed` everywhere.
void StartJob(Harness& h, uint32_t n, BarrierParams p, uint32_t rows, uint32_t width,
              int32_t seed) {
  h.CreateJob(TestJob(n, p, uint64_t{rows} * width, width));
  h.JoinAll(n);
  h.Seed(std::vector<int32_t>(size_t{rows} * width, seed));
}

// One thread's view of the switch: its own Output, like a daemon port.
class Port {
 public:
  Port(Pipeline& p, uint32_t key) : p_(p), key_(key) {}

  ProcessResult Send(const PacketBuilder& b, uint32_t from_rank) {
    out_.Clear();
    const auto d = b.Build();
    return p_.Process(d, WorkerAddr(from_rank), 1'000'000, &out_);
  }
  PacketBuilder Req(Op op, uint16_t w) const { return PacketBuilder(op, 1, w, key_); }
  std::vector<Emitted> Replies() const { return Harness::Decoded(out_); }

 private:
  Pipeline& p_;
  uint32_t key_;
  Output out_ = Output::ForBatch(1);
};

// Every thread sends every rank's every INC of the clock (each packet
// kThreads times, at once), while READs of the same rows run: each INC is
// applied exactly once, and exact READs see exactly the previous clock's
// model, whatever INC or fold runs beside them.
TEST(Concurrency, DuplicatedIncsFromManyThreadsApplyOnceAndReadsStayExact) {
  constexpr uint32_t kN = 4, kRows = 32, kWidth = 64, kClocks = 12;
  Harness h;
  StartJob(h, kN, BarrierParams::Sync(), kRows, kWidth, 0);
  std::vector<int64_t> model(kRows * kWidth, 0);

  std::atomic<uint64_t> applied{0}, duplicates{0}, wrong_reads{0};
  for (uint32_t c = 1; c <= kClocks; ++c) {
    std::vector<std::thread> threads;
    for (uint32_t t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        Port port(h.pipeline(), h.key());
        for (uint32_t i = 0; i < kRows; ++i) {
          const uint32_t row = (i + t * kRows / kThreads) % kRows;  // threads start apart, then meet
          for (uint16_t w = 0; w < kN; ++w) {
            ProcessResult r = port.Send(
                port.Req(Op::kInc, w).Clock(c).Row(row).Values(RowOf(w, c, row, kWidth)), w);
            (r.verdict == Verdict::kApplied ? applied : duplicates).fetch_add(1);
            if (r.verdict != Verdict::kApplied && r.reason != DropReason::kIncDuplicate) {
              ADD_FAILURE() << "INC w" << w << " row " << row << ": " << DropReasonName(r.reason);
            }
            // Rank (w + t) % kN reads the same row: the model after clock c - 1.
            const uint16_t reader = static_cast<uint16_t>((w + t) % kN);
            port.Send(port.Req(Op::kRead, reader).Clock(c).Row(row), reader);
            const auto e = port.Replies();
            bool same = e.size() == 1 && e[0].header.op == Op::kReadReply &&
                        (e[0].header.flags & proto::flags::kExact) != 0;
            for (uint32_t k = 0; same && k < kWidth; ++k) {
              same = e[0].values[k] == model[size_t{row} * kWidth + k];
            }
            if (!same) wrong_reads.fetch_add(1);
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    for (uint16_t w = 0; w < kN; ++w) {
      for (size_t i = 0; i < model.size(); ++i) model[i] += Update(w, c, i);
      h.Clock(w, c, kRows);
    }
  }
  EXPECT_EQ(wrong_reads.load(), 0u);
  EXPECT_EQ(applied.load(), uint64_t{kN} * kRows * kClocks);
  EXPECT_EQ(duplicates.load(), uint64_t{kThreads - 1} * kN * kRows * kClocks);
  const std::vector<int32_t> want(model.begin(), model.end());
  EXPECT_EQ(h.Model(), want);

  const auto tel = h.Telemetry();
  const uint64_t sent = uint64_t{kThreads} * kN * kRows * kClocks;
  EXPECT_EQ(tel.counters.rx_by_op[static_cast<size_t>(Op::kInc)], sent + kRows);  // + the seed
  EXPECT_EQ(tel.counters.rx_by_op[static_cast<size_t>(Op::kRead)], sent);
  EXPECT_EQ(tel.counters.drops[static_cast<size_t>(DropReason::kIncDuplicate)],
            sent - uint64_t{kN} * kRows * kClocks);
  // Each clock's pending rows fold once, at their first access in the next
  // clock (the last clock's are folded by Model(), which does not count).
  EXPECT_EQ(tel.counters.folds, uint64_t{kRows} * (kClocks - 1));
  EXPECT_FALSE(tel.saturated);
  uint64_t reads = 0;
  for (uint32_t w = 0; w < kN; ++w) {
    const auto& wc = tel.workers[w].counters;
    EXPECT_EQ(wc.incs_applied, uint64_t{kRows} * kClocks + (w == 0 ? kRows : 0)) << w;
    EXPECT_EQ(wc.incs_duplicate, uint64_t{kThreads - 1} * kRows * kClocks) << w;
    reads += wc.reads;
  }
  EXPECT_EQ(reads, sent);
}

// A CLOCK runs while the rank's INCs are still arriving on two other
// threads: each NACK it gets describes one consistent moment (received +
// missing == rows, received never goes back) and the RELEASE only comes once
// every row was applied.
TEST(Concurrency, ClockConcurrentWithIncsSeesConsistentState) {
  constexpr uint32_t kRows = 48, kWidth = 64, kClocks = 20;  // NACKs list up to 62 rows
  Harness h;
  StartJob(h, 1, BarrierParams::Async(), kRows, kWidth, 0);

  for (uint32_t c = 1; c <= kClocks; ++c) {
    std::atomic<uint32_t> incs_done{0};
    std::vector<std::thread> senders;
    for (uint32_t t = 0; t < 2; ++t) {
      senders.emplace_back([&, t] {
        Port port(h.pipeline(), h.key());
        for (uint32_t row = t; row < kRows; row += 2) {
          port.Send(port.Req(Op::kInc, 0).Clock(c).Row(row).Values(RowOf(0, c, row, kWidth)), 0);
          incs_done.fetch_add(1);
        }
      });
    }
    Port port(h.pipeline(), h.key());
    uint32_t last_received = 0;
    bool released = false;
    while (!released) {
      const uint32_t before = incs_done.load();
      port.Send(port.Req(Op::kClock, 0).Clock(c).Row(kRows), 0);
      const auto e = port.Replies();
      ASSERT_EQ(e.size(), 1u);
      if (e[0].header.op == Op::kRelease) {
        released = true;
        break;
      }
      ASSERT_EQ(e[0].header.op, Op::kNack);
      const auto& v = e[0].values;
      const uint32_t received = static_cast<uint32_t>(v[0]);
      ASSERT_EQ(static_cast<uint32_t>(v[1]), kRows);  // scan_end: every row scanned
      EXPECT_EQ(received + (v.size() - 2), kRows);
      EXPECT_GE(received, before);
      EXPECT_GE(received, last_received);
      last_received = received;
    }
    for (auto& th : senders) th.join();
  }
  std::vector<int32_t> want(kRows * kWidth, 0);
  for (uint32_t c = 1; c <= kClocks; ++c) {
    for (size_t i = 0; i < want.size(); ++i) want[i] += Update(0, c, i);
  }
  EXPECT_EQ(h.Model(), want);
  const auto tel = h.Telemetry();
  EXPECT_EQ(tel.workers[0].counters.incs_applied, uint64_t{kRows} * (kClocks + 1));
  EXPECT_EQ(tel.workers[0].counters.clocks, uint64_t{kClocks} + 1);
}

// A SYNC job served by kThreads threads, each owning some ranks, as the
// daemon's SO_REUSEPORT threads do: every rank READs (exact), INCs from its
// own first row and CLOCKs until released, while other threads do the same
// and the runtime API's telemetry polls the job.
TEST(Concurrency, SyncJobOnManyThreadsStaysExact) {
  constexpr uint32_t kN = 8, kRows = 24, kWidth = 32, kClocks = 15;
  Harness h;
  StartJob(h, kN, BarrierParams::Sync(), kRows, kWidth, 5);

  std::atomic<uint64_t> wrong_reads{0};
  std::atomic<bool> stop_telemetry{false};
  std::thread poller([&] {  // the runtime API polling telemetry meanwhile
    while (!stop_telemetry.load()) {
      auto t = h.pipeline().Telemetry(1);
      if (!t.ok()) ADD_FAILURE() << t.status().message();
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Port port(h.pipeline(), h.key());
      for (uint32_t c = 1; c <= kClocks; ++c) {
        for (uint16_t w = static_cast<uint16_t>(t); w < kN; w += kThreads) {
          const uint32_t first = w * kRows / kN;
          for (uint32_t i = 0; i < kRows; ++i) {
            const uint32_t row = (first + i) % kRows;
            port.Send(port.Req(Op::kRead, w).Clock(c).Row(row), w);
            const auto e = port.Replies();
            // The model after clock c - 1: 5 + sum of every rank's updates of 1..c-1.
            bool same = e.size() == 1 && e[0].header.op == Op::kReadReply;
            for (uint32_t k = 0; same && k < kWidth; ++k) {
              int64_t want = 5;
              for (uint32_t cc = 1; cc < c; ++cc) {
                for (uint32_t ww = 0; ww < kN; ++ww) want += Update(ww, cc, size_t{row} * kWidth + k);
              }
              same = e[0].values[k] == want;
            }
            if (!same) wrong_reads.fetch_add(1);
            port.Send(port.Req(Op::kInc, w).Clock(c).Row(row).Values(RowOf(w, c, row, kWidth)), w);
          }
        }
        // CLOCK every own rank, then re-send until each is released (a
        // RELEASE another thread's CLOCK triggered went into that thread's
        // Output; a waiting rank's CLOCK gets no reply).
        std::vector<uint16_t> waiting;
        for (uint16_t w = static_cast<uint16_t>(t); w < kN; w += kThreads) waiting.push_back(w);
        while (!waiting.empty()) {
          std::vector<uint16_t> still;
          for (uint16_t w : waiting) {
            port.Send(port.Req(Op::kClock, w).Clock(c).Row(kRows), w);
            const auto e = port.Replies();
            for (const auto& p : e) {
              if (p.header.op != Op::kRelease) ADD_FAILURE() << "CLOCK w" << w << ": op " << int(p.header.op);
            }
            if (std::none_of(e.begin(), e.end(), [&](const auto& p) { return p.header.worker == w; })) {
              still.push_back(w);
            }
          }
          waiting.swap(still);
          if (!waiting.empty()) std::this_thread::yield();
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  stop_telemetry = true;
  poller.join();

  EXPECT_EQ(wrong_reads.load(), 0u);
  std::vector<int32_t> want(kRows * kWidth, 5);
  for (uint32_t c = 1; c <= kClocks; ++c) {
    for (uint32_t w = 0; w < kN; ++w) {
      for (size_t i = 0; i < want.size(); ++i) want[i] += Update(w, c, i);
    }
  }
  EXPECT_EQ(h.Model(), want);
  const auto tel = h.Telemetry();
  EXPECT_EQ(tel.low, kClocks);
  for (uint32_t w = 0; w < kN; ++w) {
    const auto& wc = tel.workers[w].counters;
    EXPECT_EQ(wc.incs_applied, uint64_t{kRows} * kClocks + (w == 0 ? kRows : 0)) << w;
    EXPECT_EQ(wc.incs_duplicate, 0u) << w;
    EXPECT_EQ(wc.reads, uint64_t{kRows} * kClocks) << w;
    EXPECT_EQ(wc.clocks, uint64_t{kClocks} + 1) << w;
  }
}

}  // namespace
}  // namespace serene::testing
