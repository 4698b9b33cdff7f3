// Hot swap: per-clock consistency of policy changes, and of their
// cancellation, under traffic and loss.
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <random>
#include <set>

#include "packet_builder.h"

namespace serene::testing {
namespace {

using dataplane::BarrierParams;
using dataplane::JobConfig;
using dataplane::Output;
using proto::Op;

JobConfig Job(uint32_t workers, BarrierParams p, uint64_t elements = 8, uint32_t row = 4) {
  return TestJob(workers, p, elements, row);
}

TEST(HotSwap, SwitchingToAsyncReleasesRanksWaitingForAStraggler) {
  Harness h;
  h.CreateJob(Job(4, BarrierParams::Sync()));
  h.JoinAll(4);
  h.Seed(std::vector<int32_t>(8, 0));
  for (uint16_t w = 0; w < 3; ++w) {
    EXPECT_TRUE(ReleasedRanks(h.Step(w, 1, std::vector<int32_t>(8, 1))).empty());
  }
  // Rank 3 straggles. The controller swaps to ASYNC as soon as possible.
  Output out = Output::ForBatch(1);
  auto change = h.pipeline().SetPolicy(1, BarrierParams::Async(), std::nullopt, h.now, &out);
  ASSERT_TRUE(change.ok()) << change.status().message();
  EXPECT_EQ(change->epoch, 1u);
  EXPECT_EQ(change->effective_clock, 1u) << "clock 0 was the last released";
  ASSERT_EQ(out.size(), 3u);
  for (size_t i = 0; i < out.size(); ++i) {
    proto::PacketView v;
    ASSERT_EQ(proto::Decode(out.bytes(i).data(), out.bytes(i).size(), &v), proto::ParseError::kOk);
    EXPECT_EQ(v.header.op, Op::kRelease);
    EXPECT_EQ(v.header.clock, 1u);
    EXPECT_EQ(v.Value(proto::release::kEpoch), 1) << "judged by the new bank";
  }
  // The old bank retires once the straggler completes clock 1.
  EXPECT_TRUE(h.Telemetry().swap_pending);
  auto e = h.Step(3, 1, std::vector<int32_t>(8, 1));
  EXPECT_EQ(ReleasedRanks(e), std::vector<uint32_t>{3});
  EXPECT_FALSE(h.Telemetry().swap_pending);
  EXPECT_EQ(h.Telemetry().active_epoch, 1u);
  EXPECT_EQ(h.Model(), std::vector<int32_t>(8, 4));
}

TEST(HotSwap, FutureEffectiveClockKeepsOldBankUntilThen) {
  Harness h;
  h.CreateJob(Job(2, BarrierParams::Async()));
  h.JoinAll(2);
  h.Seed(std::vector<int32_t>(8, 0));
  Output out = Output::ForBatch(1);
  auto change = h.pipeline().SetPolicy(1, BarrierParams::Sync(), 3u, h.now, &out);
  ASSERT_TRUE(change.ok());
  // Clocks 1 and 2 are still ASYNC for rank 0; clock 3 is SYNC.
  EXPECT_EQ(ReleasedRanks(h.Step(0, 1, std::vector<int32_t>(8, 0))), std::vector<uint32_t>{0});
  auto e = h.Step(0, 2, std::vector<int32_t>(8, 0));
  ASSERT_EQ(ReleasedRanks(e), std::vector<uint32_t>{0});
  EXPECT_EQ(OfOp(e, Op::kRelease)[0].values[proto::release::kEpoch], 0);
  EXPECT_TRUE(ReleasedRanks(h.Step(0, 3, std::vector<int32_t>(8, 0))).empty());
}

TEST(HotSwap, SecondChangeWaitsForRetirementAndEarlyClockIsRefused) {
  Harness h;
  h.CreateJob(Job(2, BarrierParams::Sync()));
  h.JoinAll(2);
  h.Seed(std::vector<int32_t>(8, 0));
  Output out = Output::ForBatch(1);
  // Clock 0 was released: an effective clock of 0 is too early.
  auto early = h.pipeline().SetPolicy(1, BarrierParams::Ssp(2), 0u, h.now, &out);
  ASSERT_FALSE(early.ok());
  EXPECT_NE(early.status().message().find("too early"), std::string::npos)
      << early.status().message();
  ASSERT_TRUE(h.pipeline().SetPolicy(1, BarrierParams::Ssp(2), 2u, h.now, &out).ok());
  auto second = h.pipeline().SetPolicy(1, BarrierParams::Async(), std::nullopt, h.now, &out);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("has not retired"), std::string::npos);
  // Both ranks pass clock 2: the old bank retires, the next change is accepted.
  for (uint32_t c = 1; c <= 2; ++c) {
    for (uint16_t w = 0; w < 2; ++w) h.Step(w, c, std::vector<int32_t>(8, 0));
  }
  EXPECT_FALSE(h.Telemetry().swap_pending);
  EXPECT_EQ(h.Telemetry().active, BarrierParams::Ssp(2));
  ASSERT_TRUE(h.pipeline().SetPolicy(1, BarrierParams::Async(), std::nullopt, h.now, &out).ok());
}

// Random traffic with loss and duplication, random policy changes: checks the
// four hot-swap properties after every packet.
class HotSwapProperties : public ::testing::TestWithParam<uint32_t> {};

TEST_P(HotSwapProperties, ConsistentUnderTrafficAndLoss) {
  constexpr uint32_t kN = 4, kRows = 3, kWidth = 4, kElements = 10, kSteps = 4000;
  std::mt19937 rng(GetParam());
  Harness h;
  h.CreateJob(Job(kN, BarrierParams::Sync(), kElements, kWidth));
  h.JoinAll(kN);
  h.Seed(std::vector<int32_t>(kElements, 0));

  const std::vector<BarrierParams> choices = {
      BarrierParams::Sync(), BarrierParams::Ssp(1), BarrierParams::Ssp(3),
      BarrierParams::Async(), BarrierParams::Quorum(3, 2), BarrierParams::Quorum(2, 5)};
  std::map<uint32_t, BarrierParams> params_of_epoch = {{0, BarrierParams::Sync()}};
  std::map<uint32_t, uint32_t> epoch_of_clock;  // clock -> epoch that judged it
  std::vector<uint32_t> next(kN, 1);
  std::vector<bool> running(kN, true);
  std::vector<int64_t> expect(kElements, 0);
  uint32_t swaps = 0, cancels = 0;
  std::set<uint32_t> cancelled;  // epochs withdrawn by CancelPolicyChange

  auto check_releases = [&](const std::vector<Emitted>& emitted) {
    auto t = h.Telemetry();
    for (const auto& e : OfOp(emitted, Op::kRelease)) {
      const uint32_t c = e.header.clock;
      const uint32_t epoch = static_cast<uint32_t>(e.values[proto::release::kEpoch]);
      // A cancelled change never judged anything.
      ASSERT_EQ(cancelled.count(epoch), 0u) << "clock " << c << " judged by cancelled epoch";
      // No mixed decisions: every RELEASE of clock c carries the same epoch.
      auto [it, inserted] = epoch_of_clock.emplace(c, epoch);
      ASSERT_EQ(it->second, epoch) << "clock " << c << " judged by two banks";
      // Nobody released beyond the policy that judged it.
      const BarrierParams& p = params_of_epoch.at(epoch);
      std::vector<uint32_t> done;
      for (const auto& w : t.workers) done.push_back(w.done);
      std::sort(done.begin(), done.end(), std::greater<>());
      const uint32_t low_k = done[std::min<uint32_t>(p.quorum, kN) - 1];
      if (p.window != BarrierParams::kUnbounded) {
        ASSERT_LE(proto::ClockDiff(c, low_k), int64_t{p.window}) << p.ToString();
      }
      if (p.lag != BarrierParams::kUnbounded) {
        ASSERT_LE(proto::ClockDiff(c, t.low), int64_t{p.lag}) << p.ToString();
      }
      running[e.header.worker] = true;
    }
    // Liveness: the slowest rank is never left waiting.
    for (const auto& w : t.workers) {
      if (w.done == t.low) {
        ASSERT_FALSE(w.waiting) << "rank " << w.rank << " stranded";
      }
    }
  };

  for (uint32_t step = 0; step < kSteps; ++step) {
    h.now += 1000;
    if (rng() % 40 == 0) {
      // Withdraw the pending change if no rank has reached it yet.
      Output out = Output::ForBatch(1);
      auto withdrawn = h.pipeline().CancelPolicyChange(1, std::nullopt, h.now, &out);
      if (withdrawn.ok()) {
        cancelled.insert(withdrawn->epoch);
        ++cancels;
        ASSERT_EQ(out.size(), 0u);
      } else {
        ASSERT_EQ(withdrawn.status().code(), Status::Code::kFailedPrecondition);
      }
      continue;
    }
    if (rng() % 25 == 0) {
      Output out = Output::ForBatch(1);
      const BarrierParams p = choices[rng() % choices.size()];
      std::optional<uint32_t> at;
      if (rng() % 2) at = h.Telemetry().max_released + 1 + rng() % 8;
      auto change = h.pipeline().SetPolicy(1, p, at, h.now, &out);
      if (change.ok()) {
        params_of_epoch[change->epoch] = p;
        ++swaps;
        std::vector<Emitted> emitted;
        for (size_t i = 0; i < out.size(); ++i) {
          proto::PacketView v;
          ASSERT_EQ(proto::Decode(out.bytes(i).data(), out.bytes(i).size(), &v),
                    proto::ParseError::kOk);
          Emitted e{out.packet(i).dst, v.header, {}, out.packet(i).src};
          for (size_t k = 0; k < v.header.count; ++k) e.values.push_back(v.Value(k));
          emitted.push_back(e);
        }
        check_releases(emitted);
      } else {
        ASSERT_EQ(change.status().code(), Status::Code::kFailedPrecondition);
      }
      continue;
    }
    const uint16_t w = static_cast<uint16_t>(rng() % kN);
    // Rank 3 straggles: it runs a quarter as often.
    if (!running[w] || (w == 3 && rng() % 4 != 0)) continue;
    const uint32_t c = next[w];
    std::vector<int32_t> u(kElements);
    for (auto& x : u) x = static_cast<int32_t>(rng() % 201) - 100;
    for (uint32_t i = 0; i < kElements; ++i) expect[i] += u[i];
    auto row = [&](uint32_t r) {
      const uint32_t b = r * kWidth, e = std::min(kElements, b + kWidth);
      return std::vector<int32_t>(u.begin() + b, u.begin() + e);
    };
    // 20% loss, 20% duplication of INCs; NACK-driven retransmission.
    for (uint32_t r = 0; r < kRows; ++r) {
      if (rng() % 5 == 0) continue;
      h.Inc(w, c, r, row(r));
      if (rng() % 5 == 0) h.Inc(w, c, r, row(r));
    }
    for (;;) {
      auto emitted = h.Clock(w, c, kRows);
      auto nacks = OfOp(emitted, Op::kNack);
      if (nacks.empty()) {
        check_releases(emitted);
        break;
      }
      for (size_t i = proto::nack::kFirstMissing; i < nacks[0].values.size(); ++i) {
        h.Inc(w, c, static_cast<uint32_t>(nacks[0].values[i]), row(nacks[0].values[i]));
      }
    }
    running[w] = false;
    for (const auto& x : h.Telemetry().workers) {
      if (!x.waiting) running[x.rank] = true;
    }
    ++next[w];
  }
  EXPECT_GT(swaps, 5u);
  EXPECT_GT(cancels, 0u);
  EXPECT_GT(h.Telemetry().low, 50u);
  // No INC lost or applied twice across the swaps.
  EXPECT_EQ(h.Model(), std::vector<int32_t>(expect.begin(), expect.end()));
}

INSTANTIATE_TEST_SUITE_P(Seeds, HotSwapProperties, ::testing::Values(1u, 2u, 3u, 42u, 2026u));

}  // namespace
}  // namespace serene::testing

namespace serene::testing {
namespace {

// Issue 7's defect: after a swap from SYNC to a non-exact rule effective at
// clock t, a rank released from t by the new rule INCs t+1 straight into the
// visible table; a rank still in t must not be told EXACT for that row.
TEST(HotSwap, ReadIsNotExactOnceAPeerWasReleasedFromTheSwapClock) {
  Harness h;
  h.CreateJob(TestJob(2, dataplane::BarrierParams::Sync(), 4, 4));
  h.JoinAll(2);
  h.Seed({10, 10, 10, 10});
  dataplane::Output out = dataplane::Output::ForBatch(1);
  ASSERT_TRUE(h.pipeline().SetPolicy(1, dataplane::BarrierParams::Ssp(3), 1u, h.now, &out).ok());

  // Both ranks are in clock 1 (released from clock 0 by SYNC): reads are exact.
  auto before = h.Read(1, 1, 0);
  ASSERT_TRUE(before.has_value());
  EXPECT_TRUE(before->header.flags & proto::flags::kExact);
  EXPECT_EQ(before->values, (std::vector<int32_t>{10, 10, 10, 10}));

  // Rank 0 completes clock 1 and is released by SSP(3), then INCs clock 2.
  EXPECT_EQ(ReleasedRanks(h.Step(0, 1, {1, 1, 1, 1})), std::vector<uint32_t>{0});
  ASSERT_EQ(h.Inc(0, 2, 0, {100, 100, 100, 100}).verdict, dataplane::Verdict::kApplied);

  // Rank 1, still in clock 1, reads: the row holds rank 0's clock-2 update,
  // so the reply must not claim to be the model after clock 0.
  auto after = h.Read(1, 1, 0);
  ASSERT_TRUE(after.has_value());
  EXPECT_FALSE(after->header.flags & proto::flags::kExact) << "values " << after->values[0];
  EXPECT_TRUE(h.Telemetry().swap_pending) << "rank 1 has not completed the swap clock";
  EXPECT_EQ(ReleasedRanks(h.Step(1, 1, {1, 1, 1, 1})), std::vector<uint32_t>{1});
  EXPECT_EQ(h.Model(), (std::vector<int32_t>{112, 112, 112, 112}));
}

TEST(HotSwap, ExactReadsInSteadySyncAreFlaggedExact) {
  Harness h;
  h.CreateJob(TestJob(2, dataplane::BarrierParams::Sync(), 4, 4));
  h.JoinAll(2);
  h.Seed({1, 2, 3, 4});
  // Rank 0 runs ahead into clock 1's INCs and CLOCK; rank 1 reads clock 1.
  EXPECT_TRUE(ReleasedRanks(h.Step(0, 1, {5, 5, 5, 5})).empty());
  auto r = h.Read(1, 1, 0);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->header.flags & proto::flags::kExact);
  EXPECT_EQ(r->values, (std::vector<int32_t>{1, 2, 3, 4})) << "rank 0's clock-1 INCs held back";
}

}  // namespace
}  // namespace serene::testing

namespace serene::testing {
namespace {

// Found by the pipeline fuzzer (fuzz/regressions/pipeline/live-read-...):
// a live READ whose visible + pending sum leaves the int32 range must say
// SATURATED, in the reply and the job.
TEST(HotSwap, ALiveReadThatClampsIsFlaggedSaturated) {
  Harness h;
  h.CreateJob(TestJob(3, dataplane::BarrierParams::Sync(), 4, 4));
  h.JoinAll(3);
  h.Seed({0, 0, 0, 0});
  const int32_t big = std::numeric_limits<int32_t>::max();
  ASSERT_EQ(h.Inc(0, 1, 0, {big, big, big, big}).verdict, dataplane::Verdict::kApplied);
  dataplane::Output out = dataplane::Output::ForBatch(1);
  ASSERT_TRUE(h.pipeline().SetPolicy(1, dataplane::BarrierParams::Async(), std::nullopt, h.now,
                                     &out).ok());
  EXPECT_EQ(ReleasedRanks(h.Clock(0, 1, 1)), std::vector<uint32_t>{0});
  ASSERT_EQ(h.Inc(0, 2, 0, {big, big, big, big}).verdict, dataplane::Verdict::kApplied);
  auto r = h.Read(0, 2, 0);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->values, (std::vector<int32_t>{big, big, big, big}));
  EXPECT_TRUE(r->header.flags & proto::flags::kSaturated);
  EXPECT_TRUE(h.Telemetry().saturated);
}

// Found by the pipeline fuzzer's oracle (epoch-split-after-all-evicted):
// with every rank evicted nobody has passed the swap clock, so the old bank
// must not retire — a rank that rejoins still waiting for an earlier clock
// is judged by it, like its peers were.
TEST(HotSwap, APendingChangeDoesNotRetireWhenEveryRankIsEvicted) {
  Harness h;
  h.CreateJob(TestJob(3, dataplane::BarrierParams::Sync(), 6, 3));
  h.JoinAll(3);
  h.Seed(std::vector<int32_t>(6, 0));
  dataplane::Output out = dataplane::Output::ForBatch(1);
  ASSERT_TRUE(h.pipeline().SetPolicy(1, dataplane::BarrierParams::Async(), 5u, h.now, &out).ok());
  h.Step(0, 1, std::vector<int32_t>(6, 1));
  h.Step(1, 1, std::vector<int32_t>(6, 1));
  out.Clear();
  ASSERT_TRUE(h.pipeline().Evict(1, 1, h.now, &out).ok());
  auto e = h.Step(2, 1, std::vector<int32_t>(6, 1));
  auto released = OfOp(e, proto::Op::kRelease);
  ASSERT_EQ(released.size(), 2u) << "ranks 0 and 2";
  for (const auto& rel : released) EXPECT_EQ(rel.values[proto::release::kEpoch], 0);
  out.Clear();
  ASSERT_TRUE(h.pipeline().Evict(1, 0, h.now, &out).ok());
  ASSERT_TRUE(h.pipeline().Evict(1, 2, h.now, &out).ok());
  EXPECT_TRUE(h.Telemetry().swap_pending) << "nobody live has passed clock 5";
  auto back = OfOp(h.Join(1), proto::Op::kRelease);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].header.clock, 1u);
  EXPECT_EQ(back[0].values[proto::release::kEpoch], 0) << "clock 1 is judged by one bank";
}

// Found by the pipeline fuzzer's oracle (epoch-split-late-join): ranks 1
// and 2 evicted before they joined, rank 0 ran clocks 0-2 alone across a
// change effective at clock 2, which retired the old bank; then rank 0 was
// evicted too. A rank that never joined used to start
// at clock 0 with nobody live and be released from it by the new bank,
// while rank 0 had been released from clock 0 by the old one. It resumes at
// the highest completed clock instead (protocol.md, JOIN).
TEST(HotSwap, ARankJoiningWhenNoneIsLiveDoesNotRunAClockOthersWereReleasedFrom) {
  Harness h;
  h.CreateJob(TestJob(3, dataplane::BarrierParams::Sync(), 6, 3));
  h.Join(0);
  dataplane::Output out = dataplane::Output::ForBatch(1);
  ASSERT_TRUE(h.pipeline().Evict(1, 1, h.now, &out).ok());
  ASSERT_TRUE(h.pipeline().Evict(1, 2, h.now, &out).ok());
  ASSERT_TRUE(h.pipeline().SetPolicy(1, dataplane::BarrierParams::Async(), 2u, h.now, &out).ok());
  for (uint32_t c = 0; c <= 2; ++c) {
    auto rel = OfOp(h.Step(0, c, std::vector<int32_t>(6, 1)), proto::Op::kRelease);
    ASSERT_EQ(rel.size(), 1u) << "clock " << c;
    EXPECT_EQ(rel[0].values[proto::release::kEpoch], c < 2 ? 0 : 1) << "clock " << c;
  }
  EXPECT_FALSE(h.Telemetry().swap_pending) << "rank 0, the only live rank, passed clock 2";
  out.Clear();
  ASSERT_TRUE(h.pipeline().Evict(1, 0, h.now, &out).ok());

  auto acks = OfOp(h.Join(1), proto::Op::kJoinAck);
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].header.clock, 2u) << "rank 1 resumes at the highest completed clock";
  EXPECT_EQ(acks[0].values[proto::join_ack::kDone], 2);
  EXPECT_FALSE(acks[0].header.flags & proto::flags::kWaiting);
  EXPECT_EQ(acks[0].values[proto::join_ack::kEpoch], 1) << "clock 3 is the new bank's";
  auto rel = OfOp(h.Step(1, 3, std::vector<int32_t>(6, 1)), proto::Op::kRelease);
  ASSERT_EQ(rel.size(), 1u);
  EXPECT_EQ(rel[0].header.clock, 3u);
  EXPECT_EQ(OfOp(h.Clock(1, 0, 0), proto::Op::kError).size(), 1u)
      << "clock 0 is not this rank's any more: refused";
  EXPECT_EQ(h.Telemetry().workers[1].done, 3u);
}

}  // namespace
}  // namespace serene::testing
