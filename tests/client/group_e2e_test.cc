// The job's reply group end to end: worker clients (one thread and one UDP
// socket each) against the real serene-switch process, the group an IPv4
// multicast address on the loopback.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "e2e_job.h"
#include "loadgen/switch_launch.h"
#include "serene/client.h"
#include "testing/switch_process.h"

namespace serene {
namespace {

using testing::ExpectedModels;
using testing::RankLog;
using testing::RunJob;
using testing::SwitchProcess;

constexpr uint32_t kKey = 0x5EED;

// Ranks 0..world-1, all subscribed to the group but `unsubscribed`.
std::vector<ClientOptions> Ranks(const SwitchProcess& sw, uint32_t world,
                                 std::optional<uint32_t> unsubscribed = std::nullopt) {
  std::vector<ClientOptions> ranks;
  for (uint32_t rank = 0; rank < world; ++rank) {
    ClientOptions o;
    o.switch_address = sw.address();
    o.key = kKey;
    o.rank = rank;
    o.world_size = world;
    o.deadline = std::chrono::seconds(20);
    o.group = rank != unsubscribed;
    ranks.push_back(o);
  }
  return ranks;
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
  auto logs = RunJob(Ranks(sw, kWorld), kElements, kClocks);
  ExpectExact(logs, kElements, kClocks);
  uint64_t group_rows = 0, reads = 0;
  for (const auto& log : logs) {
    EXPECT_EQ("group=" + log.info.group, group);
    group_rows += log.stats.group_rows;
    reads += log.stats.reads;
  }
  // Every rank pulls 40 rows at 21 clocks. At clock 1 (after the seeding
  // clock) each rank READs its share (10 rows) and takes the others' rows
  // from the group unless a peer was late; from clock 2 on, the INC that
  // completes a row sends it to the group before the RELEASE, so a rank
  // READs a row only if it did not come.
  EXPECT_GT(group_rows, 0u) << "no row came through the group";
  EXPECT_GE(reads, 40u) << "clock 1's rows are READ";
  EXPECT_LT(reads, 40u * 21 / 2) << "completed rows did not spare the READs of later clocks";
}

// Exchange: the completed rows that arrive while the barrier waits land in
// the caller's model (fixed point) or the client's landing area (floats).
TEST(GroupE2E, ExchangeTakesCompletedRowsStraightIntoTheModel) {
  constexpr uint32_t kWorld = 4, kClocks = 20;
  constexpr size_t kElements = 10'000;  // 40 rows of 256
  for (testing::Steps steps : {testing::Steps::kExchangeFixed, testing::Steps::kExchange}) {
    SCOPED_TRACE(steps == testing::Steps::kExchange ? "floats" : "fixed point");
    SwitchProcess sw(
        {"--job", "id=1,workers=4,elements=10000,key=0x5EED,policy=sync," + GroupSpec()});
    ASSERT_TRUE(sw.ok()) << sw.output();
    auto logs = RunJob(Ranks(sw, kWorld), kElements, kClocks, nullptr, steps);
    if (steps == testing::Steps::kExchangeFixed) {
      ExpectExact(logs, kElements, kClocks);
    } else {
      const auto expected = ExpectedModels(kWorld, kElements, kClocks);
      std::vector<float> want(kElements);
      for (size_t r = 0; r < logs.size(); ++r) {
        ASSERT_TRUE(logs[r].status.ok()) << "rank " << r << ": " << logs[r].status.message();
        ASSERT_EQ(logs[r].float_pulls.size(), kClocks + 1);
        for (uint32_t c = 0; c <= kClocks; ++c) {
          Dequantize(expected[c], 24, want);
          ASSERT_EQ(logs[r].float_pulls[c], want) << "rank " << r << " pull at clock " << c + 1;
        }
      }
    }
    uint64_t reads = 0, group_rows = 0;
    for (const auto& log : logs) {
      reads += log.stats.reads;
      group_rows += log.stats.group_rows;
    }
    EXPECT_GE(reads, 40u) << "clock 1's rows are READ";
    EXPECT_LT(reads, 40u * 21 / 2) << "completed rows did not spare the READs of later clocks";
    EXPECT_GT(group_rows, 40u * 20) << "most rows of clocks 2.. came through the group";
  }
}

TEST(GroupE2E, ExchangeUnderLossDuplicationAndReorderingGivesBitIdenticalModels) {
  constexpr uint32_t kWorld = 4, kClocks = 12;
  constexpr size_t kElements = 5'000;
  for (const char* fault : {"drop=0.1,seed=5,dir=tx", "drop=0.05,dup=0.1,reorder=0.1,seed=9,dir=both"}) {
    SCOPED_TRACE(fault);
    SwitchProcess sw({"--job", "id=1,workers=4,elements=5000,key=0x5EED,policy=sync," + GroupSpec(),
                      "--fault", fault});
    ASSERT_TRUE(sw.ok()) << sw.output();
    auto logs = RunJob(Ranks(sw, kWorld), kElements, kClocks, nullptr,
                       testing::Steps::kExchangeFixed);
    ExpectExact(logs, kElements, kClocks);
    // INCs the switch did not get are re-sent from the caller's update,
    // which ExchangeFixed does not copy.
    uint64_t rows_resent = 0;
    for (const auto& log : logs) rows_resent += log.stats.rows_resent;
    if (std::string(fault).find("dir=both") != std::string::npos) {
      EXPECT_GT(rows_resent, 0u) << "no INC was re-sent";
    }
  }
}

// data_arrival(): rank 1 sleeps 150 ms between its RELEASE and its pull.
// Subscribed, the next clock's rows came through the group before the
// RELEASE, so its data arrived before the sleep; unsubscribed, it READs them
// after the sleep and they arrive then. Either way never after the pull.
TEST(GroupE2E, DataArrivalIsWhenThePulledRowsReachedTheHost) {
  using SteadyClock = std::chrono::steady_clock;
  constexpr uint32_t kWorld = 2, kClocks = 4;
  constexpr size_t kElements = 1'000;
  for (bool subscribed : {true, false}) {
    SCOPED_TRACE(subscribed ? "rows through the group" : "rows READ");
    SwitchProcess sw(
        {"--job", "id=1,workers=2,elements=1000,key=0x5EED,policy=sync," + GroupSpec()});
    ASSERT_TRUE(sw.ok()) << sw.output();
    auto ranks = Ranks(sw, kWorld, subscribed ? std::nullopt : std::optional<uint32_t>(1));
    std::vector<Status> status(kWorld);
    std::vector<std::pair<SteadyClock::time_point, SteadyClock::time_point>> released_and_arrival;
    auto run = [&](uint32_t rank) {
      auto client = Client::Connect(ranks[rank]);
      if (!client.ok()) return void(status[rank] = client.status());
      Client& c = **client;
      std::vector<float> model(kElements, 0.0f), update(kElements, 1.0f / 1024);
      if (auto info = c.Join(); !info.ok()) return void(status[rank] = info.status());
      if (Status s = c.Initialize(model); !s.ok()) return void(status[rank] = s);
      for (uint32_t clock = 1; clock <= kClocks; ++clock) {
        if (Status s = c.Push(update); !s.ok()) return void(status[rank] = s);
        auto r = c.Clock();
        if (!r.ok()) return void(status[rank] = r.status());
        const auto released = SteadyClock::now();
        if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(150));
        if (Status s = c.Pull(model); !s.ok()) return void(status[rank] = s);
        EXPECT_LE(c.data_arrival(), SteadyClock::now());
        if (rank == 1 && clock >= 2) released_and_arrival.emplace_back(released, c.data_arrival());
      }
    };
    std::thread peer(run, 0);
    run(1);
    peer.join();
    for (uint32_t r = 0; r < kWorld; ++r)
      ASSERT_TRUE(status[r].ok()) << r << ": " << status[r].message();
    ASSERT_EQ(released_and_arrival.size(), kClocks - 1);
    for (const auto& [released, arrival] : released_and_arrival) {
      if (subscribed) {
        EXPECT_LE(arrival, released) << "the rows came with the RELEASE";
      } else {
        EXPECT_GE(arrival, released + std::chrono::milliseconds(150)) << "READ after the sleep";
      }
    }
  }
}

TEST(GroupE2E, ARankThatDoesNotSubscribeStillPullsEveryRow) {
  constexpr uint32_t kWorld = 3, kClocks = 10;
  constexpr size_t kElements = 3'000;
  SwitchProcess sw({"--job", "id=1,workers=3,elements=3000,key=0x5EED,policy=sync," + GroupSpec()});
  ASSERT_TRUE(sw.ok()) << sw.output();
  auto logs = RunJob(Ranks(sw, kWorld, 0), kElements, kClocks);
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
    auto logs = RunJob(Ranks(sw, kWorld), kElements, kClocks);
    SCOPED_TRACE(fault);
    ExpectExact(logs, kElements, kClocks);
    // A lost completed row is READ by the rank that missed it: READs beyond
    // clock 1's (one per row) are recoveries too.
    constexpr uint64_t kRows = (kElements + 255) / 256;
    uint64_t recovered = 0, reads = 0;
    for (const auto& log : logs) {
      recovered += log.stats.read_retransmits + log.stats.nacks;
      reads += log.stats.reads;
    }
    ASSERT_GE(reads, kRows);
    EXPECT_GT(recovered + (reads - kRows), 0u) << "the faults did not exercise any recovery";
  }
}

TEST(GroupE2E, RowsThatAreNotExactAreAnsweredToTheRankAlone) {
  // SSP: a READ is served from the live table, which differs per rank's
  // clock, so nothing goes to the group and nobody waits for it.
  constexpr uint32_t kWorld = 3, kClocks = 10;
  SwitchProcess sw(
      {"--job", "id=1,workers=3,elements=2000,key=0x5EED,policy=ssp:2," + GroupSpec()});
  ASSERT_TRUE(sw.ok()) << sw.output();
  auto logs = RunJob(Ranks(sw, kWorld), 2000, kClocks);
  for (size_t r = 0; r < logs.size(); ++r) {
    ASSERT_TRUE(logs[r].status.ok()) << "rank " << r << ": " << logs[r].status.message();
    EXPECT_EQ(logs[r].pulls.size(), kClocks + 1);
  }
}

}  // namespace
}  // namespace serene
