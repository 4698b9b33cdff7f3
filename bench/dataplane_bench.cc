// Data plane micro-benchmarks: packets per second of Pipeline::Process for
// the hot ops, with the same PacketBuilder fixtures as the unit tests.
//   build/bin/dataplane_bench --benchmark_min_time=0.2
// Compare variants side by side in one run; the machine is shared and noisy.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <vector>

#include "dataplane/job_config.h"
#include "dataplane/pipeline.h"
#include "packet_builder.h"

namespace serene::testing {
namespace {

using dataplane::BarrierParams;
using proto::Op;

// INC of one row, applied (not a duplicate): a single ASYNC rank cycles over
// the rows, then CLOCKs (released at once) and patches the next clock into
// the prepared packets.
void BM_IncRow(benchmark::State& state) {
  const uint32_t row = static_cast<uint32_t>(state.range(0));
  const uint32_t rows = 64;
  Harness h;
  h.CreateJob(TestJob(1, BarrierParams::Async(), uint64_t{rows} * row, row));
  h.Join(0);
  h.Seed(std::vector<int32_t>(size_t{rows} * row, 0));
  dataplane::Output out = dataplane::Output::ForBatch(1);
  std::vector<std::vector<uint8_t>> pkts;
  for (uint32_t r = 0; r < rows; ++r) {
    pkts.push_back(h.Req(Op::kInc, 0).Clock(1).Row(r).Values(std::vector<int32_t>(row, 1)).Build());
  }
  auto clk = h.Req(Op::kClock, 0).Clock(1).Row(rows).Build();
  const proto::Endpoint src = WorkerAddr(0);
  uint32_t clock = 1, r = 0;
  for (auto _ : state) {
    out.Clear();
    auto res = h.pipeline().Process(pkts[r], src, 1, &out);
    if (res.verdict != dataplane::Verdict::kApplied) state.SkipWithError("INC not applied");
    if (++r == rows) {
      state.PauseTiming();
      out.Clear();
      h.pipeline().Process(clk, src, 1, &out);
      ++clock;
      for (auto& p : pkts) proto::StoreU32(p.data() + proto::kOffClock, clock);
      proto::StoreU32(clk.data() + proto::kOffClock, clock);
      r = 0;
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * int64_t{row} * 4);
}
BENCHMARK(BM_IncRow)->Arg(256)->Arg(1024)->Arg(4096);

// READ of one row at clock 1 (served from the table into the Output).
void BM_ReadRow(benchmark::State& state) {
  const uint32_t row = static_cast<uint32_t>(state.range(0));
  const uint32_t rows = 64;
  Harness h;
  h.CreateJob(TestJob(1, BarrierParams::Sync(), uint64_t{rows} * row, row));
  h.Join(0);
  h.Seed(std::vector<int32_t>(size_t{rows} * row, 3));
  dataplane::Output out = dataplane::Output::ForBatch(1);
  std::vector<std::vector<uint8_t>> pkts;
  for (uint32_t r = 0; r < rows; ++r) pkts.push_back(h.Req(Op::kRead, 0).Clock(1).Row(r).Build());
  const proto::Endpoint src = WorkerAddr(0);
  uint64_t n = 0;
  for (auto _ : state) {
    out.Clear();
    benchmark::DoNotOptimize(h.pipeline().Process(pkts[n++ % rows], src, 1, &out));
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * int64_t{row} * 4);
}
BENCHMARK(BM_ReadRow)->Arg(256)->Arg(1024)->Arg(4096);

// A job of N ranks with 16 elements in one row, every rank joined and clock
// 0 seeded, and one packet of `op` per rank (INC: a row of ones; CLOCK:
// `rows` rows), built once: the benchmarks patch the clock in.
struct RoundFixture {
  RoundFixture(uint32_t n, BarrierParams p) : workers(n) {
    h.CreateJob(TestJob(workers, p, 16, 16));
    h.JoinAll(workers);
    h.Seed(std::vector<int32_t>(16, 0));
  }
  std::vector<std::vector<uint8_t>> Packets(Op op, uint32_t rows) {
    std::vector<std::vector<uint8_t>> pkts;
    for (uint16_t w = 0; w < workers; ++w) {
      auto b = h.Req(op, w).Clock(1).Row(op == Op::kInc ? 0 : rows);
      if (op == Op::kInc) b.Values(std::vector<int32_t>(16, 1));
      pkts.push_back(b.Build());
    }
    return pkts;
  }
  // Sends rank w's packet with clock c; returns what it emitted.
  size_t Send(std::vector<uint8_t>& pkt, uint16_t w, uint32_t c) {
    proto::StoreU32(pkt.data() + proto::kOffClock, c);
    out.Clear();
    h.pipeline().Process(pkt, WorkerAddr(w), 1, &out);
    return out.size();
  }
  const uint32_t workers;
  Harness h;
  dataplane::Output out = dataplane::Output::ForBatch(1);
};

// One SYNC round of N ranks: each INCs one row and CLOCKs; the last CLOCK
// releases all N. The packets are built once and the clock patched in.
void BM_SyncClock(benchmark::State& state) {
  const uint32_t workers = static_cast<uint32_t>(state.range(0));
  RoundFixture f(workers, BarrierParams::Sync());
  auto inc = f.Packets(Op::kInc, 0), clk = f.Packets(Op::kClock, 1);
  uint32_t c = 1;
  for (auto _ : state) {
    size_t released = 0;
    for (uint16_t w = 0; w < workers; ++w) {
      f.Send(inc[w], w, c);
      released = f.Send(clk[w], w, c);
    }
    if (released != workers) state.SkipWithError("the last CLOCK did not release everyone");
    ++c;
  }
  state.SetItemsProcessed(state.iterations() * workers * 2);
}
BENCHMARK(BM_SyncClock)->Arg(4)->Arg(64)->Arg(256);

// A whole SYNC clock of a large model: 4 ranks each INC every row (rows of
// `row` values: 4096, and 362 that fit a 1500-byte MTU; one rank after the
// other, as their pushes arrive) and CLOCK; the job
// has a reply group, so the last INC of each row completes it and emits it.
// The table (visible + pending: 8 bytes per value) outgrows the caches, so
// this measures the table's memory traffic per clock. `burst`: INCs served
// per Pipeline::Burst, as the daemon serves a receive batch (1: each its own,
// Process; 44: a GSO train of rows of 362). Bytes: the INCs' values.
void BM_SyncModelClock(benchmark::State& state) {
  constexpr uint32_t kWorkers = 4;
  const uint64_t elements = static_cast<uint64_t>(state.range(0));
  const auto kRow = static_cast<uint32_t>(state.range(1));
  const auto burst_len = static_cast<uint32_t>(state.range(2));
  dataplane::JobConfig config = TestJob(kWorkers, BarrierParams::Sync(), elements, kRow);
  auto group = dataplane::ParseGroup("239.83.0.7:7100");
  if (!group.ok()) {
    state.SkipWithError("no group");
    return;
  }
  config.group = *group;
  Harness h;
  h.CreateJob(config);
  h.JoinAll(kWorkers);
  h.Seed(std::vector<int32_t>(elements, 0));
  const uint32_t rows = static_cast<uint32_t>((elements + kRow - 1) / kRow);
  std::vector<std::vector<std::vector<uint8_t>>> inc(kWorkers);
  std::vector<std::vector<uint8_t>> clk;
  for (uint16_t w = 0; w < kWorkers; ++w) {
    for (uint32_t r = 0; r < rows; ++r) {
      const uint64_t len = std::min<uint64_t>(kRow, elements - uint64_t{r} * kRow);
      inc[w].push_back(h.Req(Op::kInc, w).Clock(1).Row(r).Values(std::vector<int32_t>(len, 1)).Build());
    }
    clk.push_back(h.Req(Op::kClock, w).Clock(1).Row(rows).Build());
  }
  dataplane::Output out = dataplane::Output::ForBatch(1);
  uint32_t c = 1;
  uint64_t completed = 0;
  for (auto _ : state) {
    for (uint16_t w = 0; w < kWorkers; ++w) {
      dataplane::Pipeline::Burst burst(h.pipeline());
      uint32_t in_burst = 0;
      for (auto& p : inc[w]) {
        proto::StoreU32(p.data() + proto::kOffClock, c);
        out.Clear();
        burst.Process(p, WorkerAddr(w), proto::Endpoint{}, 1, &out);
        completed += out.size();
        if (++in_burst == burst_len) {
          burst.End();
          in_burst = 0;
        }
      }
    }
    size_t released = 0;
    for (uint16_t w = 0; w < kWorkers; ++w) {
      proto::StoreU32(clk[w].data() + proto::kOffClock, c);
      out.Clear();
      h.pipeline().Process(clk[w], WorkerAddr(w), 1, &out);
      released = out.size();
    }
    if (released != kWorkers) state.SkipWithError("the last CLOCK did not release everyone");
    ++c;
  }
  if (completed != static_cast<uint64_t>(state.iterations()) * rows) state.SkipWithError("not every row completed");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kWorkers * elements * 4));
}
BENCHMARK(BM_SyncModelClock)
    ->ArgNames({"elements", "row", "burst"})
    ->Args({1'000'000, 4096, 1})
    ->Args({8'000'000, 4096, 1})
    ->Args({1'000'000, 362, 1})
    ->Args({1'000'000, 362, 44})
    ->Args({8'000'000, 362, 1})
    ->Args({8'000'000, 362, 44})
    ->Unit(benchmark::kMillisecond);

// The barrier alone: one SYNC round of N CLOCKs (no INC: each CLOCK says 0
// rows); the last releases all N. Time per round.
void BM_SyncBarrierRound(benchmark::State& state) {
  const uint32_t workers = static_cast<uint32_t>(state.range(0));
  RoundFixture f(workers, BarrierParams::Sync());
  auto clk = f.Packets(Op::kClock, 0);
  uint32_t c = 1;
  for (auto _ : state) {
    size_t released = 0;
    for (uint16_t w = 0; w < workers; ++w) released = f.Send(clk[w], w, c);
    if (released != workers) state.SkipWithError("the last CLOCK did not release everyone");
    ++c;
  }
  state.SetItemsProcessed(state.iterations() * workers);
}
BENCHMARK(BM_SyncBarrierRound)->Arg(4)->Arg(64)->Arg(256);

// SSP(4) with one straggler among N ranks: the fast ranks run 4 clocks ahead,
// wait, and are released each time the straggler completes a clock.
void BM_SspStragglerClock(benchmark::State& state) {
  const uint32_t workers = static_cast<uint32_t>(state.range(0));
  RoundFixture f(workers, BarrierParams::Ssp(4));
  auto clk = f.Packets(Op::kClock, 0);
  std::vector<uint32_t> next(workers, 1);
  for (auto _ : state) {
    // Every fast rank that is not waiting completes a clock; then the
    // straggler (rank 0) does, which releases the waiters.
    for (uint16_t w = 1; w < workers; ++w) {
      if (next[w] > next[0] + 4) continue;  // waiting at the window
      f.Send(clk[w], w, next[w]++);
    }
    f.Send(clk[0], 0, next[0]++);
  }
  state.SetItemsProcessed(state.iterations() * workers);
}
BENCHMARK(BM_SspStragglerClock)->Arg(4)->Arg(64)->Arg(256);


// Malformed and unauthorized packets: the cost of dropping garbage.
void BM_DropBadKey(benchmark::State& state) {
  Harness h;
  h.CreateJob(TestJob(1, BarrierParams::Sync(), 256, 256));
  dataplane::Output out = dataplane::Output::ForBatch(1);
  auto pkt = PacketBuilder(Op::kInc, 1, 0, h.key() + 1).Values(std::vector<int32_t>(256, 1)).Build();
  for (auto _ : state) benchmark::DoNotOptimize(h.pipeline().Process(pkt, WorkerAddr(0), 1, &out));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DropBadKey);

}  // namespace
}  // namespace serene::testing

BENCHMARK_MAIN();
