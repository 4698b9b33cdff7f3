// Eviction of silent ranks, end to end: the real serene-switch, ranks as
// real processes (serene-test-rank), kill -9 and SIGSTOP, the barrier watched
// through the runtime API.
#include <gtest/gtest.h>
#include <signal.h>

#include <memory>
#include <thread>

#include "control/runtime_client.h"
#include "loadgen/child_process.h"
#include "testing/switch_process.h"

namespace serene::control {
namespace {

using Clock = std::chrono::steady_clock;
using loadgen::ChildProcess;
using testing::SwitchProcess;

std::unique_ptr<ChildProcess> StartRank(const SwitchProcess& sw, uint32_t rank, uint32_t clocks,
                                        uint32_t step_ms, uint32_t deadline_ms = 20000) {
  return std::make_unique<ChildProcess>(
      SERENE_TEST_RANK_BINARY,
      std::vector<std::string>{"--switch", sw.address(), "--job", "1", "--key", "153", "--rank",
                               std::to_string(rank), "--clocks", std::to_string(clocks),
                               "--step-ms", std::to_string(step_ms), "--deadline-ms",
                               std::to_string(deadline_ms)});
}

// Polls the job's telemetry until `pred` holds or `limit` passes.
template <typename Pred>
bool WaitFor(RuntimeClient& api, std::chrono::milliseconds limit, Pred pred,
             v1::JobTelemetry* last = nullptr) {
  const auto end = Clock::now() + limit;
  while (Clock::now() < end) {
    auto t = api.GetTelemetry(1);
    if (t.ok()) {
      if (last != nullptr) *last = *t;
      if (pred(*t)) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

TEST(Eviction, KilledRankIsEvictedPeersGoOnAndTheRestartedRankRejoins) {
  SwitchProcess sw({"--job", "id=1,workers=4,elements=2000,row=256,key=153,evict_after=1s"});
  ASSERT_TRUE(sw.ok()) << sw.output();
  auto api = RuntimeClient::Create(sw.control_address(), "");
  ASSERT_TRUE(api.ok());
  constexpr uint32_t kClocks = 120;
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (uint32_t r = 0; r < 4; ++r) ranks.push_back(StartRank(sw, r, kClocks, 10));

  v1::JobTelemetry t;
  ASSERT_TRUE(WaitFor(**api, std::chrono::seconds(30),
                      [](const v1::JobTelemetry& x) { return x.ranks(2).done() >= 10; }, &t))
      << sw.output();
  ranks[2]->Signal(SIGKILL);
  ranks[2]->Wait();
  const auto killed_at = Clock::now();
  ASSERT_TRUE(WaitFor(**api, std::chrono::seconds(5),
                      [](const v1::JobTelemetry& x) { return !x.ranks(2).live(); }, &t))
      << "rank 2 was not evicted\n" << sw.output();
  const int64_t held_at = t.ranks(2).done();
  // The peers were released and go on without it, within evict_after + slack.
  ASSERT_TRUE(WaitFor(**api, std::chrono::seconds(5), [&](const v1::JobTelemetry& x) {
    return x.low() >= held_at + 5;
  }, &t)) << "the others did not go on\n" << sw.output();
  EXPECT_LT(Clock::now() - killed_at, std::chrono::milliseconds(1000 + 4000));
  EXPECT_EQ(t.ranks(2).counters().evictions(), 1u);
  EXPECT_NE(sw.output().find("evicted rank 2"), std::string::npos) << sw.output();

  // The restarted rank joins again and resumes at the live ranks' clock.
  ranks[2] = StartRank(sw, 2, kClocks, 10);
  ASSERT_TRUE(WaitFor(**api, std::chrono::seconds(10), [](const v1::JobTelemetry& x) {
    return x.ranks(2).live() && x.ranks(2).counters().joins() >= 2;
  }, &t)) << sw.output();
  EXPECT_GE(t.ranks(2).done(), held_at) << "the rank's clock never moves back";

  for (uint32_t r = 0; r < 4; ++r) {
    auto code = ranks[r]->Wait(std::chrono::seconds(60));
    ASSERT_TRUE(code.has_value()) << "rank " << r << " hung\n" << ranks[r]->output();
    EXPECT_EQ(*code, 0) << "rank " << r << ":\n" << ranks[r]->output();
    EXPECT_NE(ranks[r]->output().find("done clock=" + std::to_string(kClocks)), std::string::npos)
        << "rank " << r << ":\n" << ranks[r]->output();
  }
  auto end = (*api)->GetTelemetry(1);
  ASSERT_TRUE(end.ok());
  for (const auto& r : end->ranks()) EXPECT_GE(r.done(), kClocks) << "rank " << r.rank();
}

TEST(Eviction, ARankEvictedWhileStalledJoinsAgainOnItsOwn) {
  // The same rank process survives: stopped (SIGSTOP) past evict_after, then
  // continued. Its next packet is refused as evicted; it joins again and
  // finishes with its peers.
  SwitchProcess sw({"--job", "id=1,workers=3,elements=1000,row=256,key=153,evict_after=500ms"});
  ASSERT_TRUE(sw.ok()) << sw.output();
  auto api = RuntimeClient::Create(sw.control_address(), "");
  ASSERT_TRUE(api.ok());
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (uint32_t r = 0; r < 3; ++r) ranks.push_back(StartRank(sw, r, 80, 10));
  ASSERT_TRUE(WaitFor(**api, std::chrono::seconds(30),
                      [](const v1::JobTelemetry& x) { return x.ranks(1).done() >= 5; }))
      << sw.output();
  ranks[1]->Signal(SIGSTOP);
  ASSERT_TRUE(WaitFor(**api, std::chrono::seconds(5),
                      [](const v1::JobTelemetry& x) { return !x.ranks(1).live(); }))
      << sw.output();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ranks[1]->Signal(SIGCONT);
  for (uint32_t r = 0; r < 3; ++r) {
    auto code = ranks[r]->Wait(std::chrono::seconds(60));
    ASSERT_TRUE(code.has_value()) << "rank " << r << " hung\n" << ranks[r]->output();
    EXPECT_EQ(*code, 0) << "rank " << r << ":\n" << ranks[r]->output();
  }
  EXPECT_EQ(ranks[1]->output().find("client_rejoins=0"), std::string::npos)
      << "rank 1 should have joined again:\n" << ranks[1]->output();
}

TEST(Eviction, WithEvictionOffAWaiterEndsWithAClearErrorWithinItsDeadline) {
  SwitchProcess sw({"--job", "id=1,workers=2,elements=1000,row=256,key=153,evict_after=0"});
  ASSERT_TRUE(sw.ok()) << sw.output();
  auto api = RuntimeClient::Create(sw.control_address(), "");
  ASSERT_TRUE(api.ok());
  auto r0 = StartRank(sw, 0, 1000, 5, /*deadline_ms=*/2000);
  auto r1 = StartRank(sw, 1, 1000, 5, /*deadline_ms=*/2000);
  ASSERT_TRUE(WaitFor(**api, std::chrono::seconds(30),
                      [](const v1::JobTelemetry& x) { return x.ranks(1).done() >= 5; }))
      << sw.output();
  r1->Signal(SIGSTOP);  // alive but stuck: never evicted with evict_after=0
  const auto stopped_at = Clock::now();
  auto code = r0->Wait(std::chrono::seconds(20));
  ASSERT_TRUE(code.has_value()) << "rank 0 hung at the barrier\n" << r0->output();
  EXPECT_EQ(*code, 1);
  EXPECT_NE(r0->output().find("without progress"), std::string::npos) << r0->output();
  EXPECT_LT(Clock::now() - stopped_at, std::chrono::seconds(2 + 5));
  r1->Signal(SIGKILL);
  r1->Wait();
}

}  // namespace
}  // namespace serene::control
