// Barrier semantics: SYNC, SSP(W), ASYNC, QUORUM(k, L), the seeding clock,
// idempotent CLOCK retransmission, eviction and finish.
#include <gtest/gtest.h>

#include <algorithm>

#include "packet_builder.h"

namespace serene::testing {
namespace {

using dataplane::BarrierParams;
using dataplane::JobConfig;
using proto::Op;

JobConfig Job(uint32_t workers, BarrierParams p, uint64_t elements = 10, uint32_t row = 4) {
  return TestJob(workers, p, elements, row);
}

// Harness with a job, every rank joined and clock 0 seeded and released.
class BarrierTest : public ::testing::Test {
 protected:
  void Start(uint32_t workers, BarrierParams p) {
    n_ = workers;
    h_.CreateJob(Job(workers, p));
    h_.JoinAll(workers);
    auto e = h_.Seed(std::vector<int32_t>(10, 0));
    ASSERT_EQ(ReleasedRanks(e).size(), workers) << "clock 0 must release every rank";
  }
  // Rank w completes clock c with an all-zero update; returns released ranks.
  std::vector<uint32_t> Complete(uint16_t w, uint32_t c) {
    return ReleasedRanks(h_.Step(w, c, std::vector<int32_t>(10, 0)));
  }
  Harness h_;
  uint32_t n_ = 0;
};

TEST_F(BarrierTest, SeedingClockWaitsForEveryRank) {
  h_.CreateJob(Job(3, BarrierParams::Async()));
  h_.JoinAll(3);
  // Even ASYNC does not release clock 0 until all ranks completed it.
  EXPECT_TRUE(ReleasedRanks(h_.Step(0, 0, std::vector<int32_t>(10, 7))).empty());
  EXPECT_TRUE(ReleasedRanks(h_.Clock(1, 0, 0)).empty());
  auto e = h_.Clock(2, 0, 0);
  EXPECT_EQ(ReleasedRanks(e), (std::vector<uint32_t>{0, 1, 2}));
  // Every rank reads the seeded model at clock 1.
  for (uint16_t w = 0; w < 3; ++w) EXPECT_EQ(h_.ReadAll(w, 1), std::vector<int32_t>(10, 7));
}

TEST_F(BarrierTest, SyncReleasesNobodyUntilAllClocked) {
  Start(4, BarrierParams::Sync());
  for (uint32_t c = 1; c <= 5; ++c) {
    for (uint16_t w = 0; w < 3; ++w) EXPECT_TRUE(Complete(w, c).empty()) << "clock " << c;
    EXPECT_EQ(Complete(3, c), (std::vector<uint32_t>{0, 1, 2, 3})) << "clock " << c;
  }
  auto t = h_.Telemetry();
  EXPECT_EQ(t.low, 5u);
  EXPECT_EQ(t.high, 5u);
}

TEST_F(BarrierTest, SspLetsFastestRunExactlyWAhead) {
  constexpr uint32_t kW = 3;
  Start(3, BarrierParams::Ssp(kW));
  // Rank 0 runs alone; ranks 1 and 2 stay at done = 0.
  uint32_t c = 1;
  for (; c <= kW; ++c) {
    EXPECT_EQ(Complete(0, c), (std::vector<uint32_t>{0})) << "clock " << c << " is within W";
  }
  // Completing clock W+1 means c - low = W+1 > W: rank 0 must wait.
  EXPECT_TRUE(Complete(0, c).empty());
  EXPECT_TRUE(h_.Telemetry().workers[0].waiting);
  // Rank 1 catching up is not enough; rank 2 (the slowest) is.
  EXPECT_TRUE(Complete(1, 1) == std::vector<uint32_t>{1});
  auto e = h_.Step(2, 1, std::vector<int32_t>(10, 0));
  EXPECT_EQ(ReleasedRanks(e), (std::vector<uint32_t>{0, 2}));
  // The RELEASE of rank 0 reports low = 1, high = W+1.
  for (const auto& r : OfOp(e, Op::kRelease)) {
    if (r.header.worker != 0) continue;
    EXPECT_EQ(r.header.clock, kW + 1);
    EXPECT_EQ(r.values[proto::release::kLow], 1);
    EXPECT_EQ(r.values[proto::release::kHigh], static_cast<int32_t>(kW + 1));
  }
}

TEST_F(BarrierTest, SspNeverReleasesBeyondWindowUnderRandomSchedule) {
  constexpr uint32_t kW = 2;
  Start(4, BarrierParams::Ssp(kW));
  std::vector<uint32_t> next(4, 1);      // next clock each rank works on
  std::vector<bool> released(4, true);
  uint64_t seed = 12345;
  for (int step = 0; step < 2000; ++step) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    const uint16_t w = static_cast<uint16_t>((seed >> 33) % 4);
    if (!released[w]) continue;
    // Skew: rank 3 is picked rarely.
    if (w == 3 && (seed >> 20) % 5 != 0) continue;
    h_.now += 1000;
    auto e = h_.Step(w, next[w], std::vector<int32_t>(10, 0));
    released[w] = false;
    ++next[w];
    auto t = h_.Telemetry();
    for (uint32_t r : ReleasedRanks(e)) {
      released[r] = true;
      const int64_t lead = proto::ClockDiff(t.workers[r].done, t.low);
      ASSERT_LE(lead, int64_t{kW}) << "rank " << r << " released beyond W";
    }
    // Liveness: the slowest rank is never left waiting.
    for (uint32_t r = 0; r < 4; ++r) {
      if (t.workers[r].done == t.low) {
        ASSERT_FALSE(t.workers[r].waiting) << "the slowest rank waits";
      }
    }
  }
  // The schedule made progress and the window actually held fast ranks back.
  auto t = h_.Telemetry();
  EXPECT_GT(t.low, 20u);
  EXPECT_GT(t.workers[0].counters.wait_ns + t.workers[1].counters.wait_ns, 0u);
}

TEST_F(BarrierTest, AsyncNeverWaits) {
  Start(3, BarrierParams::Async());
  for (uint32_t c = 1; c <= 50; ++c) {
    EXPECT_EQ(Complete(0, c), (std::vector<uint32_t>{0})) << "clock " << c;
  }
  EXPECT_EQ(h_.Telemetry().high, 50u);
  EXPECT_EQ(h_.Telemetry().low, 0u);
}

TEST_F(BarrierTest, QuorumReleasesWhenKRanksDoneAndBoundsLag) {
  // k = 2 of 3, lag bound L = 2.
  Start(3, BarrierParams::Quorum(2, 2));
  // Rank 0 alone: low_2 is still 0, so completing clock 1 waits.
  EXPECT_TRUE(Complete(0, 1).empty());
  // Rank 1 completes 1: two ranks did, both released; rank 2 (backup) not needed.
  EXPECT_EQ(Complete(1, 1), (std::vector<uint32_t>{0, 1}));
  EXPECT_TRUE(Complete(0, 2).empty());
  EXPECT_EQ(Complete(1, 2), (std::vector<uint32_t>{0, 1}));
  // Now clock 3: c - low_all = 3 - 0 > L = 2, so the quorum alone is not enough.
  EXPECT_TRUE(Complete(0, 3).empty());
  EXPECT_TRUE(Complete(1, 3).empty());
  // The straggler completes clock 1: low_all = 1, 3 - 1 = 2 <= L: both go.
  EXPECT_EQ(Complete(2, 1), (std::vector<uint32_t>{0, 1, 2}));
}

TEST_F(BarrierTest, RetransmittedClockIsIdempotent) {
  Start(2, BarrierParams::Sync());
  EXPECT_TRUE(Complete(0, 1).empty());
  // Waiting: a retransmitted CLOCK(1) gets nothing and does not queue rank 0 twice.
  dataplane::ProcessResult r;
  EXPECT_TRUE(h_.Clock(0, 1, 3, &r).empty());
  EXPECT_EQ(r.verdict, dataplane::Verdict::kDropped);
  EXPECT_EQ(r.reason, dataplane::DropReason::kClockWaiting);
  EXPECT_TRUE(h_.Clock(0, 1, 3).empty());
  // Rank 1 completes: rank 0 released exactly once.
  auto e = h_.Step(1, 1, std::vector<int32_t>(10, 0));
  EXPECT_EQ(ReleasedRanks(e), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(h_.Telemetry().workers[0].counters.releases, 2u);  // clock 0 and 1
  // Released: CLOCK(1) again gets RELEASE again, same epoch, no new release counted.
  auto again = h_.Clock(0, 1, 3);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].header.op, Op::kRelease);
  EXPECT_EQ(again[0].header.clock, 1u);
  EXPECT_EQ(h_.Telemetry().workers[0].counters.releases, 2u);
}

TEST_F(BarrierTest, ClockForNextClockWhileWaitingIsEarly) {
  Start(2, BarrierParams::Sync());
  EXPECT_TRUE(Complete(0, 1).empty());
  dataplane::ProcessResult r;
  h_.Clock(0, 2, 0, &r);
  EXPECT_EQ(r.reason, dataplane::DropReason::kClockEarly);
  EXPECT_EQ(h_.Inc(0, 2, 0, {1, 1, 1, 1}).reason, dataplane::DropReason::kIncEarly);
  EXPECT_EQ(h_.Telemetry().workers[0].done, 1u);
}

TEST_F(BarrierTest, ClockForUnrelatedClockIsRefused) {
  Start(2, BarrierParams::Sync());
  dataplane::ProcessResult r;
  auto e = h_.Clock(0, 7, 0, &r);
  EXPECT_EQ(r.verdict, dataplane::Verdict::kRefused);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].header.op, Op::kError);
  EXPECT_EQ(e[0].values[0], static_cast<int32_t>(proto::ErrorCode::kBadClock));
}

TEST_F(BarrierTest, EvictionReleasesWaitersAndRejoinResumes) {
  Start(3, BarrierParams::Sync());
  EXPECT_TRUE(Complete(0, 1).empty());
  EXPECT_TRUE(Complete(1, 1).empty());
  // Rank 2 crashed: the controller evicts it and the others go on.
  dataplane::Output out = dataplane::Output::ForBatch(1);
  ASSERT_TRUE(h_.pipeline().Evict(1, 2, h_.now, &out).ok());
  EXPECT_EQ(out.size(), 2u);
  EXPECT_FALSE(h_.Telemetry().workers[2].live);
  // Its packets are refused with EVICTED until it joins again.
  dataplane::ProcessResult r;
  auto e = h_.Clock(2, 1, 3, &r);
  EXPECT_EQ(r.reason, dataplane::DropReason::kEvicted);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_TRUE(e[0].header.flags & proto::flags::kEvicted);
  EXPECT_TRUE(Complete(0, 2).empty());
  EXPECT_EQ(Complete(1, 2), (std::vector<uint32_t>{0, 1}));
  // Rejoin: resumes at the slowest live rank's clock (2), in clock 3.
  auto ack = h_.Join(2);
  ASSERT_EQ(OfOp(ack, Op::kJoinAck).size(), 1u);
  EXPECT_EQ(OfOp(ack, Op::kJoinAck)[0].values[proto::join_ack::kDone], 2);
  EXPECT_TRUE(Complete(0, 3).empty());
  EXPECT_TRUE(Complete(1, 3).empty());
  EXPECT_EQ(Complete(2, 3), (std::vector<uint32_t>{0, 1, 2}));
}

TEST_F(BarrierTest, LeaveWithFinishReleasesEveryone) {
  Start(3, BarrierParams::Sync());
  EXPECT_TRUE(Complete(0, 1).empty());
  auto e = h_.Send(h_.Req(Op::kLeave, 1).Clock(1).Flags(proto::flags::kFinished), 1);
  auto released = OfOp(e, Op::kRelease);
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0].header.worker, 0u);
  EXPECT_TRUE(released[0].header.flags & proto::flags::kFinished);
  ASSERT_EQ(OfOp(e, Op::kLeave).size(), 1u);
  // Later CLOCKs are released at once, flagged finished.
  auto later = h_.Step(2, 1, std::vector<int32_t>(10, 0));
  ASSERT_EQ(ReleasedRanks(later), (std::vector<uint32_t>{2}));
  EXPECT_TRUE(OfOp(later, Op::kRelease)[0].header.flags & proto::flags::kFinished);
}

TEST_F(BarrierTest, SixtyFourWorkersSync) {
  constexpr uint32_t kN = 64;
  h_.CreateJob(Job(kN, BarrierParams::Sync(), 8, 8));
  h_.JoinAll(kN);
  for (uint16_t w = 0; w < kN; ++w) {
    auto e = w == 0 ? h_.Step(0, 0, std::vector<int32_t>(8, 1)) : h_.Clock(w, 0, 0);
    EXPECT_EQ(ReleasedRanks(e).size(), w == kN - 1 ? kN : 0u);
  }
  for (uint32_t c = 1; c <= 3; ++c) {
    for (uint16_t w = 0; w < kN; ++w) {
      auto e = h_.Step(w, c, std::vector<int32_t>(8, 1));
      ASSERT_EQ(ReleasedRanks(e).size(), w == kN - 1 ? kN : 0u) << "clock " << c;
    }
  }
  EXPECT_EQ(h_.Model(), std::vector<int32_t>(8, 1 + 3 * kN));
}

}  // namespace
}  // namespace serene::testing
