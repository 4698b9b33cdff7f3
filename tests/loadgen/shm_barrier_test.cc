// ShmBarrier: the barrier serene-bench comm's forked workers meet at around
// every timed phase. Real processes (RunChildren forks them).
#include "loadgen/shm_barrier.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "loadgen/process_group.h"

namespace serene::loadgen {
namespace {

using std::chrono::milliseconds;

// Each round every process adds one to a shared count before the barrier;
// after it, the count must already hold every process's addition for the
// round (nobody passed early), and no one may have added the next round's.
TEST(ShmBarrier, NoProcessPassesBeforeAllArriveRoundAfterRound) {
  constexpr uint32_t kProcs = 4, kRounds = 200;
  auto barrier = ShmBarrier::Create(kProcs);
  ASSERT_TRUE(barrier.ok()) << barrier.status().message();
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  auto* count = new (page) std::atomic<uint32_t>(0);

  auto results = RunChildren(kProcs, [&](size_t rank) -> std::string {
    for (uint32_t round = 1; round <= kRounds; ++round) {
      count->fetch_add(1);
      // Stagger the arrivals: rank r is late by r * 50 us every tenth round.
      if (round % 10 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50 * rank));
      Status s = (*barrier)->Wait(milliseconds(10'000));
      if (!s.ok()) return "rank " + std::to_string(rank) + ": " + s.message();
      const uint32_t seen = count->load();
      if (seen < round * kProcs) {
        return "rank " + std::to_string(rank) + " passed round " + std::to_string(round) +
               " with " + std::to_string(seen) + " arrivals";
      }
      // The second barrier keeps round + 1's additions out of the check.
      s = (*barrier)->Wait(milliseconds(10'000));
      if (!s.ok()) return "rank " + std::to_string(rank) + ": " + s.message();
    }
    return "ok";
  });
  ASSERT_TRUE(results.ok()) << results.status().message();
  for (const auto& r : *results) EXPECT_EQ(r.line, "ok");
  EXPECT_EQ(count->load(), kProcs * kRounds);
  munmap(page, 4096);
}

// A party that never comes: the others give up at their timeout, saying how
// many arrived.
TEST(ShmBarrier, AMissingPartyEndsTheWaitAtItsTimeout) {
  auto barrier = ShmBarrier::Create(3);
  ASSERT_TRUE(barrier.ok());
  auto results = RunChildren(2, [&](size_t) -> std::string {
    const auto start = std::chrono::steady_clock::now();
    Status s = (*barrier)->Wait(milliseconds(300));
    const auto took = std::chrono::steady_clock::now() - start;
    if (s.ok()) return "passed without the third party";
    if (took < milliseconds(300)) return "gave up early";
    return s.message();
  });
  ASSERT_TRUE(results.ok()) << results.status().message();
  for (const auto& r : *results) {
    EXPECT_NE(r.line.find("barrier of 3 processes: only 2 arrived"), std::string::npos)
        << r.line;
  }
}

TEST(ShmBarrier, RefusesNoParties) {
  auto barrier = ShmBarrier::Create(0);
  ASSERT_FALSE(barrier.ok());
  EXPECT_NE(barrier.status().message().find("at least one"), std::string::npos);
}

}  // namespace
}  // namespace serene::loadgen
