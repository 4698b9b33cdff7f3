// The job's reply group end to end: worker clients (one thread and one UDP
// socket each) against the real serene-switch process, the group an IPv4
// multicast address on the loopback.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "loadgen/switch_launch.h"
#include "serene/client.h"
#include "testing/switch_process.h"

namespace serene {
namespace {

using testing::SwitchProcess;

constexpr uint32_t kKey = 0x5EED;

std::vector<float> UpdateVector(uint32_t w, uint32_t c, size_t n) {
  std::vector<float> u(n);
  for (size_t i = 0; i < n; ++i) {
    const double x = c == 0 ? std::sin(0.001 * static_cast<double>(i))
                            : 0.01 * std::sin(7.0 * w + 13.0 * c + 0.01 * static_cast<double>(i));
    u[i] = static_cast<float>(x);
  }
  return u;
}

// The exact fixed-point model at clocks 1..C+1 of `world` ranks.
std::vector<std::vector<int32_t>> ExpectedModels(uint32_t world, size_t elements, uint32_t clocks) {
  std::vector<std::vector<int32_t>> models;
  std::vector<int32_t> acc(elements), q(elements);
  EXPECT_TRUE(Quantize(UpdateVector(0, 0, elements), 24, acc).ok());
  models.push_back(acc);
  for (uint32_t c = 1; c <= clocks; ++c) {
    for (uint32_t w = 0; w < world; ++w) {
      EXPECT_TRUE(Quantize(UpdateVector(w, c, elements), 24, q).ok());
      for (size_t i = 0; i < elements; ++i) acc[i] += q[i];
    }
    models.push_back(acc);
  }
  return models;
}

struct RankLog {
  Status status;
  JobInfo info;
  std::vector<std::vector<int32_t>> pulls;  // clocks 1..C+1
  ClientStats stats;
};

// `world` ranks for `clocks` clocks; rank r subscribes to the group iff
// group_on[r].
std::vector<RankLog> RunJob(const SwitchProcess& sw, uint32_t world, size_t elements,
                            uint32_t clocks, const std::vector<bool>& group_on) {
  std::vector<RankLog> logs(world);
  std::vector<std::thread> threads;
  for (uint32_t rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      RankLog& log = logs[rank];
      ClientOptions o;
      o.switch_address = sw.address();
      o.key = kKey;
      o.rank = rank;
      o.world_size = world;
      o.deadline = std::chrono::seconds(20);
      o.group = group_on[rank];
      auto connected = Client::Connect(o);
      if (!connected.ok()) {
        log.status = connected.status();
        return;
      }
      Client& c = **connected;
      auto info = c.Join();
      if (!info.ok()) {
        log.status = info.status();
        return;
      }
      log.info = *info;
      std::vector<float> model = UpdateVector(0, 0, elements);
      log.status = c.Initialize(model);
      std::vector<int32_t> fixed(elements);
      for (uint32_t clock = 1; clock <= clocks + 1 && log.status.ok(); ++clock) {
        log.status = c.PullFixed(fixed);
        if (!log.status.ok()) break;
        log.pulls.push_back(fixed);
        if (clock > clocks) break;
        log.status = c.Push(UpdateVector(rank, clock, elements));
        if (log.status.ok()) log.status = c.Clock().status();
      }
      log.stats = c.stats();
    });
  }
  for (auto& t : threads) t.join();
  return logs;
}

std::string GroupSpec() {
  Result<uint16_t> port = loadgen::FreeUdpPort();
  EXPECT_TRUE(port.ok()) << port.status().message();
  return "group=239.83.0.1:" + std::to_string(port.ok() ? *port : 1);
}

void ExpectExact(const std::vector<RankLog>& logs, size_t elements, uint32_t clocks) {
  const auto expected = ExpectedModels(static_cast<uint32_t>(logs.size()), elements, clocks);
  for (size_t r = 0; r < logs.size(); ++r) {
    ASSERT_TRUE(logs[r].status.ok()) << "rank " << r << ": " << logs[r].status.message();
    ASSERT_EQ(logs[r].pulls.size(), clocks + 1);
    for (uint32_t c = 0; c <= clocks; ++c) {
      ASSERT_EQ(logs[r].pulls[c], expected[c]) << "rank " << r << " pull at clock " << c + 1;
    }
  }
}

TEST(GroupE2E, JoinAckAdvertisesTheGroupAndSyncPullsComeThroughIt) {
  constexpr uint32_t kWorld = 4, kClocks = 20;
  constexpr size_t kElements = 10'000;  // 40 rows of 256
  const std::string group = GroupSpec();
  SwitchProcess sw({"--job", "id=1,workers=4,elements=10000,key=0x5EED,policy=sync," + group});
  ASSERT_TRUE(sw.ok()) << sw.output();
  auto logs = RunJob(sw, kWorld, kElements, kClocks, {true, true, true, true});
  ExpectExact(logs, kElements, kClocks);
  uint64_t group_rows = 0;
  for (const auto& log : logs) {
    EXPECT_EQ("group=" + log.info.group, group);
    group_rows += log.stats.group_rows;
  }
  // Every rank pulls 40 rows at 21 clocks; each rank READs its share (10
  // rows) and takes the others' rows from the group unless a peer was late.
  EXPECT_GT(group_rows, 0u) << "no row came through the group";
}

TEST(GroupE2E, ARankThatDoesNotSubscribeStillPullsEveryRow) {
  constexpr uint32_t kWorld = 3, kClocks = 10;
  constexpr size_t kElements = 3'000;
  SwitchProcess sw({"--job", "id=1,workers=3,elements=3000,key=0x5EED,policy=sync," + GroupSpec()});
  ASSERT_TRUE(sw.ok()) << sw.output();
  auto logs = RunJob(sw, kWorld, kElements, kClocks, {false, true, true});
  ExpectExact(logs, kElements, kClocks);
  EXPECT_EQ(logs[0].stats.group_rows, 0u) << "rank 0 did not subscribe";
}

TEST(GroupE2E, LossDuplicationAndReorderingOfGroupRepliesGiveBitIdenticalPulls) {
  constexpr uint32_t kWorld = 4, kClocks = 12;
  constexpr size_t kElements = 5'000;
  for (const char* fault :
       {"drop=0.1,seed=3,dir=tx", "drop=0.05,dup=0.05,reorder=0.05,seed=7,dir=both"}) {
    SwitchProcess sw({"--job", "id=1,workers=4,elements=5000,key=0x5EED,policy=sync," + GroupSpec(),
                      "--fault", fault});
    ASSERT_TRUE(sw.ok()) << sw.output();
    auto logs = RunJob(sw, kWorld, kElements, kClocks, {true, true, true, true});
    SCOPED_TRACE(fault);
    ExpectExact(logs, kElements, kClocks);
    uint64_t recovered = 0;
    for (const auto& log : logs) recovered += log.stats.read_retransmits + log.stats.nacks;
    EXPECT_GT(recovered, 0u) << "the faults did not exercise any recovery";
  }
}

TEST(GroupE2E, RowsThatAreNotExactAreAnsweredToTheRankAlone) {
  // SSP: a READ is served from the live table, which differs per rank's
  // clock, so nothing goes to the group and nobody waits for it.
  constexpr uint32_t kWorld = 3, kClocks = 10;
  SwitchProcess sw(
      {"--job", "id=1,workers=3,elements=2000,key=0x5EED,policy=ssp:2," + GroupSpec()});
  ASSERT_TRUE(sw.ok()) << sw.output();
  auto logs = RunJob(sw, kWorld, 2000, kClocks, {true, true, true});
  for (size_t r = 0; r < logs.size(); ++r) {
    ASSERT_TRUE(logs[r].status.ok()) << "rank " << r << ": " << logs[r].status.message();
    EXPECT_EQ(logs[r].pulls.size(), kClocks + 1);
  }
}

}  // namespace
}  // namespace serene
