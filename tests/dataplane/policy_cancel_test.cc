// Withdrawing a pending policy change (CancelPolicyChange), and the horizon
// of its effective clock (policy_banks.h).
#include <gtest/gtest.h>

#include <string>

#include "dataplane/policy_banks.h"
#include "packet_builder.h"

namespace serene::testing {
namespace {

using dataplane::BarrierParams;
using dataplane::kSwapHorizon;
using dataplane::Output;

const std::vector<int32_t> kZeros(8, 0);

struct CancelTest : ::testing::Test {
  // A job of two ranks under `rule`, seeded: clock 0 is released.
  void Start(BarrierParams rule) {
    h.CreateJob(TestJob(2, rule, 8, 4));
    h.JoinAll(2);
    h.Seed(kZeros);
  }
  Result<dataplane::PolicyChange> Set(BarrierParams rule, std::optional<uint32_t> at) {
    return h.pipeline().SetPolicy(1, rule, at, h.now, &out);
  }
  Result<dataplane::PolicyChange> Cancel(std::optional<uint32_t> epoch = std::nullopt) {
    return h.pipeline().CancelPolicyChange(1, epoch, h.now, &out);
  }

  Harness h;
  Output out = Output::ForBatch(1);
};

TEST_F(CancelTest, AChangeBeyondTheHorizonIsRefused) {
  Start(BarrierParams::Sync());
  // Clock 0 was released: the earliest legal clock is 1.
  auto far = Set(BarrierParams::Ssp(10), 2147483647u);
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(far.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(far.status().message().find("effective clock 2147483647 is beyond the horizon"),
            std::string::npos)
      << far.status().message();
  EXPECT_NE(far.status().message().find("use 1..1000001"), std::string::npos)
      << far.status().message();
  EXPECT_FALSE(h.Telemetry().swap_pending);
  EXPECT_FALSE(Set(BarrierParams::Ssp(10), 2 + kSwapHorizon).ok());
  ASSERT_TRUE(Set(BarrierParams::Ssp(10), 1 + kSwapHorizon).ok());
}

TEST_F(CancelTest, APendingChangeIsWithdrawnAndTheOldRuleKeepsJudging) {
  Start(BarrierParams::Sync());
  ASSERT_TRUE(Set(BarrierParams::Async(), 1000u).ok());
  EXPECT_FALSE(Set(BarrierParams::Ssp(4), std::nullopt).ok()) << "one change at a time";
  auto cancelled = Cancel();
  ASSERT_TRUE(cancelled.ok()) << cancelled.status().message();
  EXPECT_EQ(cancelled->epoch, 1u);
  EXPECT_EQ(cancelled->effective_clock, 1000u);
  EXPECT_EQ(out.size(), 0u) << "nobody is released by a cancel";
  EXPECT_FALSE(h.Telemetry().swap_pending);
  EXPECT_EQ(h.Telemetry().active, BarrierParams::Sync());
  EXPECT_EQ(h.Telemetry().active_epoch, 0u);
  // Still SYNC: rank 0 alone is not released from clock 1.
  EXPECT_TRUE(ReleasedRanks(h.Step(0, 1, kZeros)).empty());
  EXPECT_EQ(ReleasedRanks(h.Step(1, 1, kZeros)), (std::vector<uint32_t>{0, 1}));
  // The next change is accepted, with a new epoch: 1 is never reused.
  auto next = Set(BarrierParams::Ssp(4), std::nullopt);
  ASSERT_TRUE(next.ok()) << next.status().message();
  EXPECT_EQ(next->epoch, 2u);
}

TEST_F(CancelTest, AChangeARankReachedIsNotCancelled) {
  Start(BarrierParams::Async());
  ASSERT_TRUE(Set(BarrierParams::Sync(), 2u).ok());
  h.Step(0, 1, kZeros);
  // Rank 0 completes clock 2: SYNC, the new rule, holds it. Cancelling now
  // would judge rank 1's clock 2 by ASYNC: refused.
  h.Step(0, 2, kZeros);
  auto refused = Cancel();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("has begun to take effect"), std::string::npos)
      << refused.status().message();
  EXPECT_TRUE(h.Telemetry().swap_pending);
  // It runs to its end: rank 1 completes clocks 1 and 2, both are released
  // from 2 by SYNC and the change retires.
  h.Step(1, 1, kZeros);
  EXPECT_EQ(ReleasedRanks(h.Step(1, 2, kZeros)), (std::vector<uint32_t>{0, 1}));
  EXPECT_FALSE(h.Telemetry().swap_pending);
  auto none = Cancel();
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no policy change is pending"), std::string::npos)
      << none.status().message();
}

TEST_F(CancelTest, OnlyTheNamedEpochIsCancelled) {
  Start(BarrierParams::Sync());
  ASSERT_TRUE(Set(BarrierParams::Async(), 50u).ok());
  auto wrong = Cancel(7u);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(wrong.status().message().find("epoch 7 is not pending"), std::string::npos)
      << wrong.status().message();
  EXPECT_TRUE(h.Telemetry().swap_pending);
  EXPECT_TRUE(Cancel(1u).ok());
}

TEST_F(CancelTest, AnEvictedRankThatReachedTheSwapClockStillCounts) {
  Start(BarrierParams::Async());
  ASSERT_TRUE(Set(BarrierParams::Sync(), 2u).ok());
  h.Step(0, 1, kZeros);
  h.Step(0, 2, kZeros);  // judged by SYNC, waits for rank 1
  ASSERT_TRUE(h.pipeline().Evict(1, 0, h.now, &out).ok());
  EXPECT_FALSE(Cancel().ok()) << "rank 0's clock 2 was judged by the new rule";
}

}  // namespace
}  // namespace serene::testing
