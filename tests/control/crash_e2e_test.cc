// Crashes, end to end (kill -9 of a rank is in eviction_e2e_test.cc):
//   - the switch: the ranks notice, a switch restarted on the same address
//     has lost the job; the ranks rebuild it from their own updates and
//     every rank goes on, no rank dies (that nothing is lost is
//     tests/faults/switch_restart_test.cc's);
//   - the controller (serene-ctl control): the switch keeps its last policy
//     and the ranks go on.
#include <gtest/gtest.h>
#include <signal.h>

#include <memory>
#include <thread>

#include "control/runtime_client.h"
#include "loadgen/child_process.h"
#include "net/address.h"
#include "testing/switch_process.h"

namespace serene::control {
namespace {

using Clock = std::chrono::steady_clock;
using loadgen::ChildProcess;
using testing::SwitchProcess;

constexpr const char* kJob = "id=1,workers=3,elements=3000,row=256,key=153";

std::unique_ptr<ChildProcess> StartRank(const std::string& address, uint32_t rank,
                                        uint32_t steps, uint32_t step_ms) {
  return std::make_unique<ChildProcess>(
      SERENE_TEST_RANK_BINARY,
      std::vector<std::string>{"--switch", address, "--job", "1", "--key", "153", "--rank",
                               std::to_string(rank), "--steps", std::to_string(steps),
                               "--step-ms", std::to_string(step_ms), "--deadline-ms", "20000"});
}

template <typename Pred>
bool WaitFor(RuntimeClient& api, std::chrono::milliseconds limit, Pred pred) {
  const auto end = Clock::now() + limit;
  while (Clock::now() < end) {
    auto t = api.GetTelemetry(1);
    if (t.ok() && pred(*t)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

TEST(Crash, ASwitchKilledAndRestartedIsRebuiltAndTheRanksGoOn) {
  auto first = std::make_unique<SwitchProcess>(std::vector<std::string>{"--job", kJob});
  ASSERT_TRUE(first->ok()) << first->output();
  const std::string address = first->address();
  const std::string port = address.substr(address.rfind(':') + 1);
  auto api = RuntimeClient::Create(first->control_address(), "");
  ASSERT_TRUE(api.ok());
  constexpr uint32_t kSteps = 150;
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (uint32_t r = 0; r < 3; ++r) ranks.push_back(StartRank(address, r, kSteps, 5));
  ASSERT_TRUE(WaitFor(**api, std::chrono::seconds(30),
                      [](const v1::JobTelemetry& t) { return t.low() >= 20; }))
      << first->output();

  first->Kill();  // kill -9: the table and every rank's clock are gone
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  SwitchProcess second({"--job", kJob, "--port", port});
  ASSERT_TRUE(second.ok()) << second.output();
  ASSERT_EQ(second.address(), address);

  for (uint32_t r = 0; r < 3; ++r) {
    auto code = ranks[r]->Wait(std::chrono::seconds(60));
    EXPECT_EQ(code, 0) << "rank " << r << ":\n" << ranks[r]->output();
    EXPECT_NE(ranks[r]->output().find("restarts=1"), std::string::npos)
        << "rank " << r << " should have rebuilt the job once:\n" << ranks[r]->output();
  }
  // The new switch's job went on from clock 0 to the end.
  auto api2 = RuntimeClient::Create(second.control_address(), "");
  ASSERT_TRUE(api2.ok());
  auto t = (*api2)->GetTelemetry(1);
  ASSERT_TRUE(t.ok()) << t.status().message() << "\nthe restarted switch:\n" << second.output();
  EXPECT_GT(t->high(), 10);
  EXPECT_GT(t->counters().rx_by_op().at("INC"), 0u);
}

TEST(Crash, AKilledControllerLeavesTheSwitchWithItsLastPolicy) {
  SwitchProcess sw({"--job", kJob});
  ASSERT_TRUE(sw.ok()) << sw.output();
  auto api = RuntimeClient::Create(sw.control_address(), "");
  ASSERT_TRUE(api.ok());
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (uint32_t r = 0; r < 3; ++r) ranks.push_back(StartRank(sw.address(), r, 200, 5));
  ChildProcess controller(
      SERENE_CTL_BINARY,
      {"--control", sw.control_address(), "control", "1",
       std::string(SERENE_SOURCE_DIR) + "/policies/scheduled.lua", "--param", "sync_clocks=10",
       "--param", "w=4", "--period", "50ms"});
  ASSERT_TRUE(WaitFor(**api, std::chrono::seconds(30), [](const v1::JobTelemetry& t) {
    return t.policy().active().text() == "ssp:4";
  })) << controller.output();
  controller.Signal(SIGKILL);
  controller.Wait();
  for (uint32_t r = 0; r < 3; ++r) {
    auto code = ranks[r]->Wait(std::chrono::seconds(60));
    EXPECT_EQ(code, 0) << "rank " << r << ":\n" << ranks[r]->output();
  }
  auto p = (*api)->GetPolicy(1);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->active().text(), "ssp:4") << "the switch keeps the last policy it was given";
  EXPECT_FALSE(p->swap_pending());
}

}  // namespace
}  // namespace serene::control
