// A dynamic run's controller: its log and policy_changes.json from events,
// the changes on the ranks' run clock, and the errors that stop a run before
// its ranks start. (A real controller against a real switch runs in
// experiment_e2e_test.)
#include "experiment/run_controller.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace serene::experiment {
namespace {

using control::ControllerEvent;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

ControllerEvent Event(ControllerEvent::Kind kind, std::string message, double seconds) {
  ControllerEvent e;
  e.kind = kind;
  e.message = std::move(message);
  e.seconds = seconds;
  return e;
}

// A controller's events: start, a script log line, one applied change at
// 1.5 s of the controller's clock, a script error, the end.
std::vector<TimedEvent> Events(Clock::time_point start) {
  ControllerEvent applied =
      Event(ControllerEvent::Kind::kApplied, "job 1: ssp(10) -> epoch 1 from clock 5", 1.5);
  applied.unix_ms = 1700000001500;
  applied.high = 3;
  applied.rule_text = "ssp:10";
  applied.epoch = 1;
  applied.effective_clock = 5;
  return {
      {start, Event(ControllerEvent::Kind::kInfo, "controlling job 1 with scheduled.lua", 0)},
      {start + milliseconds(1000), Event(ControllerEvent::Kind::kScriptLog, "warming up", 1.0)},
      {start + milliseconds(1500), applied},
      {start + milliseconds(2000),
       Event(ControllerEvent::Kind::kScriptError, "x.lua:7: attempt to index nil\nstack", 2.0)},
      {start + milliseconds(3000), Event(ControllerEvent::Kind::kInfo, "job 1: stopped", 3.0)},
  };
}

TEST(RunControllerTest, ChangesAreOnTheRanksRunClock) {
  const Clock::time_point start = Clock::now();
  const auto events = Events(start);
  // The ranks' clock started 1 s after the controller.
  const auto changes = ToPolicyChanges(events, start + milliseconds(1000));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_NEAR(changes[0].seconds, 0.5, 1e-9);
  EXPECT_EQ(changes[0].effective_clock, 5u);
  EXPECT_EQ(changes[0].high, 3);
  EXPECT_EQ(changes[0].rule, "ssp:10");
  EXPECT_EQ(changes[0].epoch, 1u);
  EXPECT_EQ(changes[0].unix_ms, 1700000001500u);
  EXPECT_TRUE(std::isnan(ToPolicyChanges(events, std::nullopt)[0].seconds));
}

TEST(RunControllerTest, LogHasOneLinePerEvent) {
  const std::string log = ControllerLog(Events(Clock::now()));
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 5) << log;
  EXPECT_NE(log.find("    0.000 info         controlling job 1 with scheduled.lua\n"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("    1.500 applied      job 1: ssp(10) -> epoch 1 from clock 5\n"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("script_error x.lua:7: attempt to index nil | stack\n"), std::string::npos)
      << log;
}

TEST(RunControllerTest, PolicyChangesJsonHoldsTheAppliedEvents) {
  const Clock::time_point start = Clock::now();
  const RunSpec run{
      "EARLY", BackendKind::kSerene, "policies/scheduled.lua", {{"sync_clocks", "5"}}};
  const auto j = nlohmann::json::parse(PolicyChangesJson(run, "/src/policies/scheduled.lua", 1,
                                                         milliseconds(250), Events(start), start));
  EXPECT_EQ(j["script"], "policies/scheduled.lua");
  EXPECT_EQ(j["path"], "/src/policies/scheduled.lua");
  EXPECT_EQ(j["params"]["sync_clocks"], "5");
  EXPECT_EQ(j["job"], 1);
  EXPECT_EQ(j["period_ms"], 250);
  ASSERT_EQ(j["changes"].size(), 1u);
  EXPECT_NEAR(j["changes"][0]["seconds"].get<double>(), 1.5, 1e-9);
  EXPECT_DOUBLE_EQ(j["changes"][0]["controller_s"].get<double>(), 1.5);
  EXPECT_EQ(j["changes"][0]["rule"], "ssp:10");
  EXPECT_EQ(j["changes"][0]["effective_clock"], 5);
  EXPECT_EQ(j["changes"][0]["epoch"], 1);
  const auto unaligned = nlohmann::json::parse(PolicyChangesJson(
      run, "/src/policies/scheduled.lua", 1, milliseconds(250), Events(start), std::nullopt));
  EXPECT_TRUE(unaligned["changes"][0]["seconds"].is_null());
}

TEST(RunControllerTest, StartRefusesABadScriptBeforeConnecting) {
  RunController::Options o;
  o.control_address = "127.0.0.1:1";
  o.script_path = "/nonexistent/policy.lua";
  auto rc = RunController::Start(o);
  ASSERT_FALSE(rc.ok());
  EXPECT_EQ(rc.status().code(), Status::Code::kNotFound) << rc.status().message();
}

TEST(RunControllerTest, StartFailsWithoutASwitch) {
  RunController::Options o;
  o.control_address = "127.0.0.1:1";  // nobody listens there
  o.script_path = std::string(SERENE_SOURCE_DIR) + "/policies/adaptive.lua";
  auto rc = RunController::Start(o);
  ASSERT_FALSE(rc.ok());
  EXPECT_EQ(rc.status().code(), Status::Code::kUnavailable) << rc.status().message();
  EXPECT_NE(rc.status().message().find("127.0.0.1:1"), std::string::npos) << rc.status().message();
}

}  // namespace
}  // namespace serene::experiment
