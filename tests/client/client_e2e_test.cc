// End to end: worker clients (one thread and one UDP socket each) against the
// real serene-switch process on loopback.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "e2e_job.h"
#include "serene/client.h"
#include "testing/switch_process.h"

namespace serene {
namespace {

using testing::ExpectedModels;
using testing::RankLog;
using testing::RunJob;
using testing::SwitchProcess;
using testing::Update;
using testing::UpdateVector;

constexpr uint32_t kKey = 0x5EED;

ClientOptions Options(const SwitchProcess& sw, uint32_t rank, uint32_t world) {
  ClientOptions o;
  o.switch_address = sw.address();
  o.job = 1;
  o.key = kKey;
  o.rank = rank;
  o.world_size = world;
  o.deadline = std::chrono::seconds(20);
  return o;
}

// The options of ranks 0..world-1.
std::vector<ClientOptions> Ranks(const SwitchProcess& sw, uint32_t world) {
  std::vector<ClientOptions> ranks;
  for (uint32_t r = 0; r < world; ++r) ranks.push_back(Options(sw, r, world));
  return ranks;
}

TEST(ClientE2E, SyncPullsAreExactSumsAndIdenticalOnEveryRank) {
  constexpr uint32_t kWorld = 4, kClocks = 25;
  constexpr size_t kElements = 10'000;  // 40 rows of 256, the last one short
  SwitchProcess sw({"--job", "id=1,workers=4,elements=10000,key=0x5EED,policy=sync"});
  ASSERT_TRUE(sw.ok()) << sw.output();
  auto logs = RunJob(Ranks(sw, kWorld), kElements, kClocks);
  const auto expected = ExpectedModels(kWorld, kElements, kClocks, 24);
  for (uint32_t r = 0; r < kWorld; ++r) {
    ASSERT_TRUE(logs[r].status.ok()) << "rank " << r << ": " << logs[r].status.message();
    ASSERT_EQ(logs[r].pulls.size(), kClocks + 1);
    for (uint32_t c = 0; c <= kClocks; ++c) {
      ASSERT_EQ(logs[r].pulls[c], expected[c]) << "rank " << r << " pull at clock " << c + 1;
    }
    for (const auto& rel : logs[r].releases) EXPECT_EQ(rel.low, rel.clock) << "SYNC";
  }
  // The float model is within the documented bound of the float sum.
  std::vector<float> model(kElements);
  Dequantize(logs[0].pulls.back(), 24, model);
  for (size_t i = 0; i < kElements; ++i) {
    double exact = Update(0, 0, i);
    for (uint32_t c = 1; c <= kClocks; ++c) {
      for (uint32_t w = 0; w < kWorld; ++w) exact += Update(w, c, i);
    }
    const double bound =
        (1 + kWorld * kClocks) * std::ldexp(1.0, -25) + std::abs(exact) * std::ldexp(1.0, -24);
    ASSERT_LE(std::abs(model[i] - exact), bound) << "element " << i;
  }
}

TEST(ClientE2E, FaultInjectionGivesBitIdenticalTables) {
  constexpr uint32_t kWorld = 4, kClocks = 15;
  constexpr size_t kElements = 5'000;
  const std::string job = "id=1,workers=4,elements=5000,key=0x5EED,policy=sync";
  std::vector<RankLog> clean, faulty;
  {
    SwitchProcess sw({"--job", job});
    ASSERT_TRUE(sw.ok()) << sw.output();
    clean = RunJob(Ranks(sw, kWorld), kElements, kClocks);
  }
  {
    SwitchProcess sw({"--job", job, "--fault", "drop=0.05,dup=0.05,reorder=0.05,seed=7,dir=both"});
    ASSERT_TRUE(sw.ok()) << sw.output();
    faulty = RunJob(Ranks(sw, kWorld), kElements, kClocks);
  }
  uint64_t recovered = 0;
  for (uint32_t r = 0; r < kWorld; ++r) {
    ASSERT_TRUE(clean[r].status.ok()) << clean[r].status.message();
    ASSERT_TRUE(faulty[r].status.ok()) << faulty[r].status.message();
    ASSERT_EQ(faulty[r].pulls.size(), clean[r].pulls.size());
    for (size_t c = 0; c < clean[r].pulls.size(); ++c) {
      ASSERT_EQ(faulty[r].pulls[c], clean[r].pulls[c]) << "rank " << r << " clock " << c + 1;
    }
    recovered += faulty[r].stats.read_retransmits + faulty[r].stats.nacks +
                 faulty[r].stats.clock_retransmits;
  }
  EXPECT_GT(recovered, 0u) << "the faults did not exercise any recovery";
}

TEST(ClientE2E, SspKeepsFastRanksWithinTheWindow) {
  constexpr uint32_t kWorld = 3, kClocks = 30, kW = 3;
  SwitchProcess sw({"--job", "id=1,workers=3,elements=2000,key=0x5EED,policy=ssp:3"});
  ASSERT_TRUE(sw.ok()) << sw.output();
  auto logs = RunJob(Ranks(sw, kWorld), 2000, kClocks, [](uint32_t rank, uint32_t) {
    if (rank == 2) std::this_thread::sleep_for(std::chrono::milliseconds(15));
  });
  int64_t max_lead = 0;
  for (uint32_t r = 0; r < kWorld; ++r) {
    ASSERT_TRUE(logs[r].status.ok()) << logs[r].status.message();
    for (const auto& rel : logs[r].releases) {
      const int64_t lead = static_cast<int32_t>(rel.clock - rel.low);
      ASSERT_LE(lead, int64_t{kW})
          << "rank " << r << " released at clock " << rel.clock << " with low " << rel.low;
      max_lead = std::max(max_lead, lead);
    }
  }
  EXPECT_EQ(max_lead, int64_t{kW}) << "the fast ranks never used the window";
}

TEST(ClientE2E, AsyncNeverBlocksOnAStoppedRank) {
  constexpr uint32_t kWorld = 3, kClocks = 20;
  SwitchProcess sw({"--job", "id=1,workers=3,elements=2000,key=0x5EED,policy=async"});
  ASSERT_TRUE(sw.ok()) << sw.output();
  // Rank 2 stops before its first step until ranks 0 and 1 finished all theirs.
  std::mutex mu;
  std::condition_variable cv;
  int fast_done = 0;
  std::vector<RankLog> logs =
      RunJob(Ranks(sw, kWorld), 2000, kClocks, [&](uint32_t rank, uint32_t clock) {
        std::unique_lock lock(mu);
        if (rank == 2 && clock == 1) {
          ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return fast_done == 2; }))
              << "ASYNC blocked the fast ranks";
        }
        if (rank != 2 && clock == kClocks) {
          ++fast_done;
          cv.notify_all();
        }
      });
  for (uint32_t r = 0; r < kWorld; ++r) {
    ASSERT_TRUE(logs[r].status.ok()) << logs[r].status.message();
  }
  // Ranks 0 and 1 completed clocks 1..C-1 while rank 2 was stopped at done = 0.
  for (uint32_t r = 0; r < 2; ++r) {
    ASSERT_EQ(logs[r].releases.size(), kClocks);
    EXPECT_EQ(logs[r].releases[kClocks - 2].clock, kClocks - 1);
    EXPECT_EQ(logs[r].releases[kClocks - 2].low, 0u) << "rank " << r;
  }
}

TEST(ClientE2E, FinishEndsTheJobForEveryRank) {
  SwitchProcess sw({"--job", "id=1,workers=2,elements=100,key=0x5EED,policy=sync"});
  ASSERT_TRUE(sw.ok()) << sw.output();
  auto a = Client::Connect(Options(sw, 0, 2));
  auto b = Client::Connect(Options(sw, 1, 2));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*a)->Join().ok());
  ASSERT_TRUE((*b)->Join().ok());
  std::vector<float> m0(100, 0.5f), m1(100);
  std::thread t([&] { ASSERT_TRUE((*a)->Initialize(m0).ok()); });
  ASSERT_TRUE((*b)->Initialize(m1).ok());
  t.join();
  EXPECT_EQ(m1, m0);
  // Rank 1 waits at the barrier; rank 0 reaches the target and ends the job.
  ASSERT_TRUE((*b)->Push(std::vector<float>(100, 0.0f)).ok());
  std::thread waiter([&] {
    auto r = (*b)->Clock();
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_TRUE(r->finished);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE((*a)->Leave(/*finish_job=*/true).ok());
  waiter.join();
  EXPECT_TRUE((*b)->finished());
}

TEST(ClientE2E, GoneSwitchGivesAClearTimeoutWithinTheDeadline) {
  SwitchProcess sw({"--job", "id=1,workers=2,elements=100,key=0x5EED,policy=sync"});
  ASSERT_TRUE(sw.ok()) << sw.output();
  ClientOptions o = Options(sw, 1, 2);
  o.deadline = std::chrono::seconds(2);
  auto c = Client::Connect(o);
  ASSERT_TRUE(c.ok());
  // The deadline counts from the last reply heard (the JOIN_ACK), so the
  // stopwatch starts before JOIN: started after sw.Kill(), which takes time
  // too (tens of ms under TSan), it could see less than the deadline.
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE((*c)->Join().ok());
  sw.Kill();
  auto r = (*c)->Clock();  // CLOCK(0): waits for rank 0, then notices the switch is gone
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kDeadlineExceeded);
  EXPECT_NE(r.status().message().find("switch " + sw.address() + " did not answer CLOCK 0"),
            std::string::npos)
      << r.status().message();
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_GE(took, std::chrono::seconds(2));
  EXPECT_GT((*c)->stats().probes, 0u);

  // Nobody there from the start: JOIN fails the same way.
  auto lone = Client::Connect(o);
  ASSERT_TRUE(lone.ok());
  auto j = (*lone)->Join();
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("did not answer JOIN"), std::string::npos);
}

TEST(ClientE2E, WrongWorldSizeAndBadRankAreReported) {
  SwitchProcess sw({"--job", "id=1,workers=2,elements=100,key=0x5EED"});
  ASSERT_TRUE(sw.ok()) << sw.output();
  auto c = Client::Connect(Options(sw, 0, 3));
  ASSERT_TRUE(c.ok());
  auto j = (*c)->Join();
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("which has 2 ranks"), std::string::npos);
  auto bad = Client::Connect(Options(sw, 5, 0));
  ASSERT_TRUE(bad.ok());
  auto jb = (*bad)->Join();
  ASSERT_FALSE(jb.ok());
  EXPECT_NE(jb.status().message().find("bad_rank"), std::string::npos) << jb.status().message();
}

}  // namespace
}  // namespace serene
