// Data plane micro-benchmarks: packets per second of Pipeline::Process for
// the hot ops, with the same PacketBuilder fixtures as the unit tests.
//   build/bin/dataplane_bench --benchmark_min_time=0.2
// Compare variants side by side in one run; the machine is shared and noisy.
#include <benchmark/benchmark.h>

#include <vector>

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

// A full SYNC clock of N ranks with 1 row each: N INCs + N CLOCKs, the last
// of which releases everyone (the barrier's O(N) evaluation).
void BM_SyncClock(benchmark::State& state) {
  const uint32_t workers = static_cast<uint32_t>(state.range(0));
  Harness h;
  h.CreateJob(TestJob(workers, BarrierParams::Sync(), 16, 16));
  h.JoinAll(workers);
  h.Seed(std::vector<int32_t>(16, 0));
  dataplane::Output out = dataplane::Output::ForBatch(1);
  std::vector<uint8_t> inc, clk;
  uint32_t c = 1;
  for (auto _ : state) {
    for (uint16_t w = 0; w < workers; ++w) {
      inc = h.Req(Op::kInc, w).Clock(c).Row(0).Values(std::vector<int32_t>(16, 1)).Build();
      clk = h.Req(Op::kClock, w).Clock(c).Row(1).Build();
      out.Clear();
      h.pipeline().Process(inc, WorkerAddr(w), 1, &out);
      out.Clear();
      h.pipeline().Process(clk, WorkerAddr(w), 1, &out);
    }
    if (out.size() != workers) state.SkipWithError("the last CLOCK did not release everyone");
    ++c;
  }
  state.SetItemsProcessed(state.iterations() * workers * 2);
}
BENCHMARK(BM_SyncClock)->Arg(4)->Arg(64)->Arg(256);

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
