// A switch killed (SIGKILL) and restarted on the same port with the same job
// while serene-bench runs against it: the ranks rebuild the lost job from
// their own updates (docs/protocol.md, Recovery) and serene-bench stays
// exact — every pull holds every update the barrier requires, none it
// forbids, none twice — under SYNC, SSP and ASYNC (docs/reliability.md,
// guarantee 6).
//
// Each trial is small (4 ranks, 2,000 values in rows of 64, 200 clocks; rank
// 3 sleeps 2 ms before each step, so the slowest rank's clock advances at
// most every 2 ms and faster ones run ahead under SSP and ASYNC) and kills
// the switch at a random moment: once the slowest rank completed a random
// clock of the first half (the other half, at least 200 ms, is the margin
// for the kill to land before the run ends), after a random delay of up to 3
// ms (mid-pull, mid-push or at the barrier), and restarts it after another
// random pause of up to 150 ms. 20 trials per policy, seeded, so a failure
// can be replayed.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <random>
#include <regex>
#include <string>
#include <thread>

#include "bench_report.h"
#include "control/runtime_client.h"
#include "loadgen/switch_launch.h"
#include "testing/switch_process.h"

namespace serene::faults {
namespace {

using SteadyClock = std::chrono::steady_clock;
using testing::SwitchProcess;

constexpr uint32_t kWorkers = 4;
constexpr uint32_t kClocks = 200;
constexpr int kTrials = 20;
constexpr auto kGuard = std::chrono::seconds(60);

// The job, with a reply group on the loopback as serene-bench gives the
// switches it starts (so completed rows and group READs cross the restart).
std::string JobSpec(const std::string& policy, const std::string& group) {
  return "id=1,workers=" + std::to_string(kWorkers) +
         ",elements=2000,row=64,key=0x5E4E,policy=" + policy + ",group=" + group;
}

// The slowest rank's completed clock on `sw`, or -1 while unknown.
int64_t Low(control::RuntimeClient& api) {
  auto t = api.GetTelemetry(1);
  return t.ok() ? t->low() : -1;
}

// Times each rank saw the switch lose the job, from serene-bench's line
// "switch restarts seen per rank: 1 1 1 1" (absent: none).
std::vector<uint64_t> RestartsPerRank(const std::string& output) {
  static const std::regex kLine(R"(switch restarts seen per rank:((?: \d+)+))");
  std::smatch m;
  std::vector<uint64_t> out;
  if (!std::regex_search(output, m, kLine)) return out;
  std::string rest = m[1];
  for (size_t at = 0; at < rest.size();) {
    size_t next = rest.find(' ', at + 1);
    out.push_back(std::stoull(rest.substr(at, next - at)));
    at = next == std::string::npos ? rest.size() : next;
  }
  return out;
}

class SwitchRestartTest : public ::testing::TestWithParam<const char*> {};

TEST_P(SwitchRestartTest, EveryPullStaysExactAcrossKillAndRestart) {
  const std::string policy = GetParam();
  for (int trial = 0; trial < kTrials; ++trial) {
    SCOPED_TRACE("policy " + policy + ", trial " + std::to_string(trial));
    std::mt19937 rng(1000 + trial);
    const uint32_t kill_after_clock = std::uniform_int_distribution<uint32_t>(1, kClocks / 2)(rng);
    const auto kill_delay =
        std::chrono::microseconds(std::uniform_int_distribution<int>(0, 3000)(rng));
    const auto restart_pause =
        std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 150)(rng));

    auto group = loadgen::LoopbackGroup(1);
    ASSERT_TRUE(group.ok()) << group.status().message();
    const std::string job = JobSpec(policy, *group);
    auto first = std::make_unique<SwitchProcess>(std::vector<std::string>{"--job", job});
    ASSERT_TRUE(first->ok()) << first->output();
    const std::string address = first->address();
    const std::string port = address.substr(address.rfind(':') + 1);
    auto api = control::RuntimeClient::Create(first->control_address(), "");
    ASSERT_TRUE(api.ok()) << api.status().message();

    BenchProcess bench(SERENE_BENCH_BIN,
                       {"--switch", address, "--workers", std::to_string(kWorkers), "--elements",
                        "2000", "--row", "64", "--clocks", std::to_string(kClocks), "--key",
                        "0x5E4E", "--policy", policy, "--straggler", "3", "--straggle-ms", "2"});
    ASSERT_TRUE(bench.started());

    // Kill once the slowest rank completed `kill_after_clock`.
    const auto give_up = SteadyClock::now() + std::chrono::seconds(20);
    while (Low(**api) < static_cast<int64_t>(kill_after_clock) && SteadyClock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    ASSERT_GE(Low(**api), static_cast<int64_t>(kill_after_clock)) << first->output();
    std::this_thread::sleep_for(kill_delay);
    first->Kill();
    std::this_thread::sleep_for(restart_pause);
    SwitchProcess second({"--job", job, "--port", port});
    ASSERT_TRUE(second.ok()) << second.output();

    const BenchReport r = bench.Finish(kGuard);
    ASSERT_TRUE(r.exit_code.has_value()) << "serene-bench outlived its guard:\n" << r.output;
    EXPECT_EQ(*r.exit_code, 0) << r.output;
    ASSERT_EQ(r.ranks.size(), kWorkers) << r.output;
    for (const BenchRank& rank : r.ranks) {
      EXPECT_TRUE(rank.ok) << "rank " << rank.rank << ": " << rank.error;
      EXPECT_EQ(rank.clocks, kClocks) << "rank " << rank.rank;
      // Every pull (clocks 1..kClocks and the final model) was checked.
      EXPECT_EQ(rank.checked, kClocks + 1) << "rank " << rank.rank;
    }
    // The kill fell inside the run: every rank rebuilt the job.
    const std::vector<uint64_t> restarts = RestartsPerRank(r.output);
    ASSERT_EQ(restarts.size(), kWorkers) << r.output;
    for (uint64_t n : restarts) EXPECT_GE(n, 1u) << r.output;
    if (::testing::Test::HasFailure()) return;  // one trial's output is enough
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, SwitchRestartTest, ::testing::Values("sync", "ssp:2", "async"),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           for (char& ch : name) {
                             if (ch == ':') ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace serene::faults
