// The daemon's silence evictor over a real Pipeline with a manual clock.
#include "switch/silence_evictor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tests/dataplane/packet_builder.h"

namespace serene::switchd {
namespace {

using dataplane::BarrierParams;
using serene::testing::Harness;

constexpr uint64_t kMs = 1'000'000;

struct Fixture {
  Harness h;
  std::atomic<dataplane::Timestamp> now{0};
  std::vector<size_t> sent;  // packets per Send
  SilenceEvictor evictor{&h.pipeline(),
                         [this](const dataplane::Output& o) {
                           sent.push_back(o.size());
                           return Status::Ok();
                         },
                         [this] { return now.load(); }};

  explicit Fixture(uint32_t evict_after_ms) {
    auto c = serene::testing::TestJob(3, BarrierParams::Sync(), 6, 3);
    c.evict_after_ms = evict_after_ms;
    h.CreateJob(c);
  }
};

TEST(SilenceEvictor, EvictsJoinedRanksSilentLongerThanEvictAfterAndSendsTheReleases) {
  Fixture f(100);
  f.h.now = 1000 * kMs;
  f.h.JoinAll(3);
  f.h.Seed(std::vector<int32_t>(6, 0));
  f.h.Step(0, 1, std::vector<int32_t>(6, 1));
  f.h.Step(1, 1, std::vector<int32_t>(6, 1));  // ranks 0 and 1 wait for rank 2

  f.now = f.h.now + 50 * kMs;
  EXPECT_EQ(f.evictor.Sweep(), 0u) << "nobody silent for 100 ms yet";
  // Waiting ranks keep speaking (CLOCK retransmissions); rank 2 does not.
  f.h.now += 140 * kMs;
  f.h.Clock(0, 1, 2);
  f.h.Clock(1, 1, 2);
  f.now = f.h.now + 10 * kMs;
  EXPECT_EQ(f.evictor.Sweep(), 1u);
  EXPECT_EQ(f.evictor.evictions(), 1u);
  ASSERT_EQ(f.sent.size(), 1u);
  EXPECT_EQ(f.sent[0], 2u) << "ranks 0 and 1, held by rank 2, released";
  auto t = f.h.Telemetry();
  EXPECT_FALSE(t.workers[2].live);
  EXPECT_FALSE(t.workers[0].waiting);
  EXPECT_EQ(t.low, 1u);
  EXPECT_EQ(f.evictor.Sweep(), 0u) << "evicted ranks are not evicted again";
}

TEST(SilenceEvictor, ARankThatSpokeRecentlyStaysAndNeverJoinedRanksAreLeftAlone) {
  Fixture f(100);
  f.h.now = 1000 * kMs;
  f.h.Join(0);  // ranks 1 and 2 never join: absent, not silent
  f.now = f.h.now + 90 * kMs;
  f.h.now = f.now;
  f.h.Join(0);  // speaks again
  f.now = f.h.now + 99 * kMs;
  EXPECT_EQ(f.evictor.Sweep(), 0u);
  f.now = f.h.now + 101 * kMs;
  EXPECT_EQ(f.evictor.Sweep(), 1u);
  auto t = f.h.Telemetry();
  EXPECT_FALSE(t.workers[0].live);
  EXPECT_TRUE(t.workers[1].live);
  EXPECT_TRUE(t.workers[2].live);
}

TEST(SilenceEvictor, ZeroMeansNeverAndFinishedJobsAreLeftAlone) {
  Fixture off(0);
  off.h.now = 1 * kMs;
  off.h.JoinAll(3);
  off.now = 3600'000 * kMs;
  EXPECT_EQ(off.evictor.Sweep(), 0u);

  Fixture done(10);
  done.h.now = 1 * kMs;
  done.h.JoinAll(3);
  dataplane::Output out = dataplane::Output::ForBatch(1);
  ASSERT_TRUE(done.h.pipeline().Finish(1, done.h.now, &out).ok());
  done.now = 1000 * kMs;
  EXPECT_EQ(done.evictor.Sweep(), 0u);
}

TEST(SilenceEvictor, ThreadSweepsUntilStopped) {
  Fixture f(10);
  f.h.now = 1 * kMs;
  f.h.JoinAll(3);
  f.now = 1000 * kMs;
  f.evictor.Start(std::chrono::milliseconds(5));
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (f.evictor.evictions() < 3 && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  f.evictor.Stop();
  f.evictor.Stop();
  EXPECT_EQ(f.evictor.evictions(), 3u);
}

}  // namespace
}  // namespace serene::switchd
