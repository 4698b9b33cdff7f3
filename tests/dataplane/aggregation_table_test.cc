// Aggregation table: exactly-once INC, exact reads under SYNC, live reads
// under SSP, NACK of missing rows, saturation, job isolation, large models.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "packet_builder.h"

namespace serene::testing {
namespace {

using dataplane::BarrierParams;
using dataplane::DropReason;
using dataplane::JobConfig;
using dataplane::Verdict;
using proto::Op;

JobConfig Job(uint32_t workers, BarrierParams p, uint64_t elements = 10, uint32_t row = 4) {
  return TestJob(workers, p, elements, row);
}

std::vector<int32_t> Row(const std::vector<int32_t>& v, uint32_t r, uint32_t width) {
  const size_t b = size_t{r} * width, e = std::min(v.size(), b + width);
  return std::vector<int32_t>(v.begin() + b, v.begin() + e);
}

TEST(AggregationTable, LastRowIsShort) {
  Harness h;
  h.CreateJob(Job(1, BarrierParams::Sync(), 10, 4));
  h.Join(0);
  EXPECT_EQ(h.Inc(0, 0, 2, {1, 2}).verdict, Verdict::kApplied);
  EXPECT_EQ(h.Inc(0, 0, 1, {1, 2}).reason, DropReason::kBadRowLength);
  EXPECT_EQ(h.Inc(0, 0, 2, {1, 2, 3, 4}).reason, DropReason::kBadRowLength);
  EXPECT_EQ(h.Telemetry().rows, 3u);
}

TEST(AggregationTable, DuplicatedAndReorderedIncAppliedOnce) {
  Harness h;
  h.CreateJob(Job(2, BarrierParams::Sync(), 12, 4));
  h.JoinAll(2);
  h.Seed(std::vector<int32_t>(12, 100));
  // Rank 0 sends its rows reordered and each twice; rank 1 once, in order.
  std::vector<int32_t> u0 = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  std::vector<int32_t> u1(12, -1);
  for (uint32_t r : {2u, 0u, 2u, 1u, 0u, 1u}) h.Inc(0, 1, r, Row(u0, r, 4));
  EXPECT_EQ(h.Inc(0, 1, 0, Row(u0, 0, 4)).reason, DropReason::kIncDuplicate);
  auto t = h.Telemetry();
  EXPECT_EQ(t.workers[0].counters.incs_applied, 3u + 3u);  // 3 at seed + 3 now
  EXPECT_EQ(t.workers[0].counters.incs_duplicate, 4u);
  EXPECT_EQ(ReleasedRanks(h.Clock(0, 1, 3)), std::vector<uint32_t>{});
  EXPECT_EQ(ReleasedRanks(h.Step(1, 1, u1)), (std::vector<uint32_t>{0, 1}));
  // A late duplicate of clock 1 after the release is stale, and ignored.
  EXPECT_EQ(h.Inc(0, 1, 0, Row(u0, 0, 4)).reason, DropReason::kIncStale);
  std::vector<int32_t> expect(12);
  for (int i = 0; i < 12; ++i) expect[i] = 100 + u0[i] - 1;
  EXPECT_EQ(h.ReadAll(0, 2), expect);
  EXPECT_EQ(h.ReadAll(1, 2), expect);
  EXPECT_EQ(h.Model(), expect);
}

TEST(AggregationTable, RandomLossDuplicationReorderingGivesExactSum) {
  constexpr uint32_t kN = 4, kRows = 8, kWidth = 16, kClocks = 20;
  Harness h;
  h.CreateJob(Job(kN, BarrierParams::Sync(), kRows * kWidth, kWidth));
  h.JoinAll(kN);
  h.Seed(std::vector<int32_t>(kRows * kWidth, 0));
  std::mt19937 rng(7);
  std::vector<int64_t> expect(kRows * kWidth, 0);
  for (uint32_t c = 1; c <= kClocks; ++c) {
    for (uint16_t w = 0; w < kN; ++w) {
      std::vector<int32_t> u(kRows * kWidth);
      for (auto& x : u) x = static_cast<int32_t>(rng() % 2001) - 1000;
      for (size_t i = 0; i < u.size(); ++i) expect[i] += u[i];
      // Send every row with 30% loss, 30% duplication, shuffled; then CLOCK,
      // and re-send what the NACKs list until released or waiting.
      std::vector<uint32_t> order(kRows);
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
      for (uint32_t r : order) {
        if (rng() % 10 < 3) continue;
        h.Inc(w, c, r, Row(u, r, kWidth));
        if (rng() % 10 < 3) h.Inc(w, c, r, Row(u, r, kWidth));
      }
      for (int attempt = 0;; ++attempt) {
        ASSERT_LT(attempt, 10) << "NACK loop does not converge";
        dataplane::ProcessResult res;
        auto e = h.Clock(w, c, kRows, &res);
        auto nacks = OfOp(e, Op::kNack);
        if (nacks.empty()) break;
        const auto& v = nacks[0].values;
        ASSERT_GE(v.size(), 2u);
        for (size_t i = proto::nack::kFirstMissing; i < v.size(); ++i) {
          h.Inc(w, c, static_cast<uint32_t>(v[i]), Row(u, v[i], kWidth));
        }
        for (uint32_t r = static_cast<uint32_t>(v[proto::nack::kScanEnd]); r < kRows; ++r) {
          h.Inc(w, c, r, Row(u, r, kWidth));
        }
      }
    }
  }
  std::vector<int32_t> want(expect.begin(), expect.end());
  EXPECT_EQ(h.Model(), want);
  EXPECT_EQ(h.ReadAll(2, kClocks + 1), want);
}

TEST(AggregationTable, NackListsMissingRows) {
  Harness h;
  h.CreateJob(Job(1, BarrierParams::Sync(), 40, 4));  // 10 rows
  h.Join(0);
  h.Seed(std::vector<int32_t>(40, 0));
  for (uint32_t r : {0u, 2u, 3u, 5u, 6u, 7u, 9u}) h.Inc(0, 1, r, {1, 1, 1, 1});
  auto e = h.Clock(0, 1, 10);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].header.op, Op::kNack);
  EXPECT_EQ(e[0].header.row, 10u);
  EXPECT_EQ(e[0].values, (std::vector<int32_t>{7, 10, 1, 4, 8}));
  EXPECT_FALSE(h.Telemetry().workers[0].waiting);
  for (uint32_t r : {1u, 4u, 8u}) h.Inc(0, 1, r, {1, 1, 1, 1});
  EXPECT_EQ(ReleasedRanks(h.Clock(0, 1, 10)), std::vector<uint32_t>{0});
}

TEST(AggregationTable, NackListIsBoundedAndScanEndCoversTheRest) {
  Harness h;
  h.CreateJob(Job(1, BarrierParams::Sync(), 4 * 100, 4));  // 100 rows, list holds 14
  h.Join(0);
  h.Seed(std::vector<int32_t>(400, 0));
  auto e = h.Clock(0, 1, 100);
  ASSERT_EQ(e.size(), 1u);
  const auto& v = e[0].values;
  ASSERT_EQ(v.size(), 16u);
  EXPECT_EQ(v[0], 0);
  EXPECT_EQ(v[1], 14);  // rows 0..13 listed; 14 and later must be re-sent too
  for (int i = 0; i < 14; ++i) EXPECT_EQ(v[2 + i], i);
}

TEST(AggregationTable, SyncReadsAreExactWhileFasterRanksIncNextClock) {
  Harness h;
  h.CreateJob(Job(3, BarrierParams::Sync(), 8, 4));
  h.JoinAll(3);
  h.Seed(std::vector<int32_t>(8, 10));
  // Clock 1: everybody adds 1.
  for (uint16_t w = 0; w < 3; ++w) h.Step(w, 1, std::vector<int32_t>(8, 1));
  const std::vector<int32_t> after1(8, 13);
  // Ranks 0 and 1 race ahead into clock 2 and INC their updates (+100 each)...
  h.Step(0, 2, std::vector<int32_t>(8, 100));
  h.Step(1, 2, std::vector<int32_t>(8, 100));
  // ...while slow rank 2 reads at clock 2: it must see exactly the model after clock 1.
  auto r0 = h.Read(2, 2, 0);
  ASSERT_TRUE(r0.has_value());
  EXPECT_TRUE(r0->header.flags & proto::flags::kExact);
  EXPECT_EQ(h.ReadAll(2, 2), after1);
  // Its own INCs of clock 2 are not visible to itself either, until clock 2 completes.
  h.Inc(2, 2, 0, {5, 5, 5, 5});
  EXPECT_EQ(h.ReadAll(2, 2), after1);
  h.Inc(2, 2, 1, {5, 5, 5, 5});
  EXPECT_EQ(ReleasedRanks(h.Clock(2, 2, 2)), (std::vector<uint32_t>{0, 1, 2}));
  // Clock 3 reads see all of clock 2: 13 + 205.
  for (uint16_t w = 0; w < 3; ++w) EXPECT_EQ(h.ReadAll(w, 3), std::vector<int32_t>(8, 218));
}

TEST(AggregationTable, SspReadsSeeTheLiveTable) {
  Harness h;
  h.CreateJob(Job(2, BarrierParams::Ssp(4), 4, 4));
  h.JoinAll(2);
  h.Seed(std::vector<int32_t>(4, 0));
  h.Step(0, 1, std::vector<int32_t>(4, 3));
  auto r = h.Read(1, 1, 0);
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->header.flags & proto::flags::kExact);
  EXPECT_EQ(r->values, std::vector<int32_t>(4, 3));
}

TEST(AggregationTable, SaturationIsClampedCountedAndFlagged) {
  Harness h;
  h.CreateJob(Job(2, BarrierParams::Async(), 4, 4));
  h.JoinAll(2);
  h.Seed({INT32_MAX - 1, 0, INT32_MIN + 1, 5});
  h.Step(0, 1, {10, 0, -10, 0});
  auto r = h.Read(0, 2, 0);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->values, (std::vector<int32_t>{INT32_MAX, 0, INT32_MIN, 5}));
  EXPECT_TRUE(r->header.flags & proto::flags::kSaturated);
  auto t = h.Telemetry();
  EXPECT_TRUE(t.saturated);
  EXPECT_EQ(t.counters.saturations, 2u);
}

TEST(AggregationTable, SyncPendingSaturationIsFlaggedAtFold) {
  Harness h;
  h.CreateJob(Job(2, BarrierParams::Sync(), 4, 4));
  h.JoinAll(2);
  h.Seed({INT32_MAX, 0, 0, 0});
  h.Step(0, 1, {1, 0, 0, 0});
  EXPECT_FALSE(h.Telemetry().saturated);  // still pending
  h.Step(1, 1, {1, 0, 0, 0});
  auto r = h.Read(0, 2, 0);  // first access folds
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->values[0], INT32_MAX);
  EXPECT_TRUE(r->header.flags & proto::flags::kSaturated);
}

TEST(AggregationTable, JobsAreIsolated) {
  dataplane::Pipeline p;
  dataplane::Output out = dataplane::Output::ForBatch(1);
  JobConfig a = Job(1, BarrierParams::Sync(), 4, 4);
  a.key = 111;
  JobConfig b = Job(1, BarrierParams::Sync(), 4, 4);
  b.id = 2;
  b.key = 222;
  ASSERT_TRUE(p.CreateJob(a).ok());
  ASSERT_TRUE(p.CreateJob(b).ok());
  auto send = [&](const PacketBuilder& pb) {
    auto d = pb.Build();
    out.Clear();
    return p.Process(d, WorkerAddr(0), 1, &out);
  };
  // JOIN, answered with a COOKIE, then JOIN with the cookie.
  auto join = [&](uint16_t job, uint32_t key) {
    send(PacketBuilder(Op::kJoin, job, 0, key));
    auto c = Harness::Decoded(out).at(0).header;
    ASSERT_EQ(c.op, Op::kCookie);
    send(PacketBuilder(Op::kJoin, job, 0, key).Clock(c.clock).Row(c.row));
    ASSERT_EQ(Harness::Decoded(out).at(0).header.op, Op::kJoinAck);
  };
  join(1, 111);
  join(2, 222);
  send(PacketBuilder(Op::kInc, 1, 0, 111).Values({7, 7, 7, 7}));
  send(PacketBuilder(Op::kInc, 2, 0, 222).Values({9, 9, 9, 9}));
  // Job 1's key does not open job 2.
  EXPECT_EQ(send(PacketBuilder(Op::kInc, 2, 0, 111).Values({1, 1, 1, 1})).reason,
            DropReason::kBadKey);
  EXPECT_EQ(*p.Model(1), std::vector<int32_t>(4, 7));
  EXPECT_EQ(*p.Model(2), std::vector<int32_t>(4, 9));
  ASSERT_TRUE(p.DeleteJob(1).ok());
  EXPECT_EQ(send(PacketBuilder(Op::kInc, 1, 0, 111).Clock(0).Values({7, 7, 7, 7})).reason,
            DropReason::kUnknownJob);
  EXPECT_EQ(*p.Model(2), std::vector<int32_t>(4, 9));
}

TEST(AggregationTable, ThirtyMillionParameterModel) {
  constexpr uint64_t kElements = 30'000'000;
  Harness h;
  h.CreateJob(Job(2, BarrierParams::Sync(), kElements, 4096));
  h.JoinAll(2);
  const uint32_t rows = h.Telemetry().rows;
  EXPECT_EQ(rows, (kElements + 4095) / 4096);
  // Seed the last (short) row and a middle row; read them back at clock 1.
  const uint32_t last_len = kElements - uint64_t{rows - 1} * 4096;
  h.Inc(0, 0, rows - 1, std::vector<int32_t>(last_len, 42));
  h.Inc(0, 0, rows / 2, std::vector<int32_t>(4096, -3));
  h.Clock(0, 0, 2);
  EXPECT_EQ(ReleasedRanks(h.Clock(1, 0, 0)), (std::vector<uint32_t>{0, 1}));
  auto last = h.Read(1, 1, rows - 1);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->values, std::vector<int32_t>(last_len, 42));
  EXPECT_EQ(h.Read(0, 1, rows / 2)->values, std::vector<int32_t>(4096, -3));
}

}  // namespace
}  // namespace serene::testing
