// The command lines of a run's switch and ranks.
#include "experiment/commands.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace serene::experiment {
namespace {

// The value after `flag` in `args`, or "<absent>".
std::string After(const std::vector<std::string>& args, const std::string& flag) {
  auto it = std::find(args.begin(), args.end(), flag);
  return it == args.end() || it + 1 == args.end() ? "<absent>" : *(it + 1);
}

TEST(CommandsTest, SwitchJobHoldsTheModel) {
  Scenario s = DefaultScenario();
  EXPECT_EQ(SwitchJobSpec(s, s.runs[1], 1, "/k/job.key"),
            "id=1,workers=4,elements=79510,row=4096,key_file=/k/job.key,policy=ssp:10");
  s.model = train::ModelKind::kCnn;
  s.workers = 8;
  s.row = 256;
  EXPECT_EQ(SwitchJobSpec(s, s.runs[0], 7, "/k/job.key"),
            "id=7,workers=8,elements=61706,row=256,key_file=/k/job.key,policy=sync");
  const auto args = SwitchArgs(s, s.runs[0], 7, "/k/job.key");
  EXPECT_EQ(After(args, "--bind"), "127.0.0.1");
  EXPECT_EQ(After(args, "--port"), "0");
  EXPECT_EQ(After(args, "--log-level"), "info");  // "listening on" is an info line
  EXPECT_EQ(After(args, "--job"), SwitchJobSpec(s, s.runs[0], 7, "/k/job.key"));
  EXPECT_EQ(After(args, "--control"), "127.0.0.1:0");  // the runtime API, for controllers
  EXPECT_EQ(After(args, "--fault"), "<absent>");       // no fault injection by default
}

TEST(CommandsTest, AGroupPortGivesTheJobAReplyGroup) {
  Scenario s = DefaultScenario();
  EXPECT_EQ(SwitchJobSpec(s, s.runs[0], 1, "/k/job.key", 40123),
            "id=1,workers=4,elements=79510,row=4096,key_file=/k/job.key,group=239.83.0.1:40123,"
            "policy=sync");
  EXPECT_EQ(After(SwitchArgs(s, s.runs[0], 258, "/k/job.key", 40123), "--job"),
            "id=258,workers=4,elements=79510,row=4096,key_file=/k/job.key,group=239.83.1.2:40123,"
            "policy=sync");
  EXPECT_TRUE(s.group) << "on by default";
}

TEST(CommandsTest, SwitchFaultGoesToTheSwitch) {
  Scenario s = DefaultScenario();
  s.switch_fault = "drop=0.02,delay=0..20ms,seed=3,dir=both";
  for (const RunSpec& run : {s.runs[0], s.runs[2]}) {  // a fixed rule and a policy script
    const auto args = SwitchArgs(s, run, 1, "/k/job.key");
    EXPECT_EQ(After(args, "--fault"), "drop=0.02,delay=0..20ms,seed=3,dir=both");
    EXPECT_EQ(After(args, "--job"), SwitchJobSpec(s, run, 1, "/k/job.key"));
  }
  // The ranks' flags do not change: the faults are the switch's.
  RunContext ctx{"/out/1-sync", "127.0.0.1:4242", 1, "/k/job.key", ""};
  Scenario clean = DefaultScenario();
  EXPECT_EQ(TrainArgs(s, s.runs[0], 0, ctx), TrainArgs(clean, clean.runs[0], 0, ctx));
}

TEST(CommandsTest, APolicyScriptRunStartsUnderSync) {
  const Scenario s = DefaultScenario();
  ASSERT_EQ(s.runs[2].policy, "policies/adaptive.lua");
  EXPECT_EQ(SwitchJobSpec(s, s.runs[2], 1, "/k/job.key"),
            "id=1,workers=4,elements=79510,row=4096,key_file=/k/job.key,policy=sync");
}

TEST(CommandsTest, SereneRankFlags) {
  Scenario s = DefaultScenario();
  RunContext ctx{"/out/1-sync", "127.0.0.1:4242", 3, "/k/job.key", ""};
  const auto a = TrainArgs(s, s.runs[0], 2, ctx);
  EXPECT_EQ(After(a, "--backend"), "serene");
  EXPECT_EQ(After(a, "--rank"), "2");
  EXPECT_EQ(After(a, "--world-size"), "4");
  EXPECT_EQ(After(a, "--switch"), "127.0.0.1:4242");
  EXPECT_EQ(After(a, "--job"), "3");
  EXPECT_EQ(After(a, "--key-file"), "/k/job.key");
  EXPECT_EQ(After(a, "--rendezvous"), "<absent>");
  EXPECT_EQ(After(a, "--model"), "mlp");
  EXPECT_EQ(After(a, "--lr"), "0.04");
  EXPECT_EQ(After(a, "--batch"), "256");
  EXPECT_EQ(After(a, "--steps"), "3000");
  EXPECT_EQ(After(a, "--target-accuracy"), "0.84");
  EXPECT_EQ(After(a, "--eval-every"), "25");
  EXPECT_EQ(After(a, "--eval-samples"), "0");
  EXPECT_EQ(After(a, "--eval-ranks"), "0");
  EXPECT_EQ(After(a, "--straggler"), "slow_worker");
  EXPECT_EQ(After(a, "--straggler-ranks"), "all");
  EXPECT_EQ(After(a, "--seed"), "1");
  EXPECT_EQ(After(a, "--threads"), "1");
  EXPECT_EQ(After(a, "--metrics"), "/out/1-sync/rank2.json");
  EXPECT_EQ(After(a, "--control"), "<absent>") << "no controller, no reports";
  ctx.control_address = "127.0.0.1:4343";  // a policy script's run
  EXPECT_EQ(After(TrainArgs(s, s.runs[2], 0, ctx), "--control"), "127.0.0.1:4343");
  // Only the evaluating rank has pauses to report: the others hold no channel.
  EXPECT_EQ(After(TrainArgs(s, s.runs[2], 1, ctx), "--control"), "<absent>");
  EXPECT_EQ(After(TrainArgs(s, s.runs[2], 3, ctx), "--control"), "<absent>");
}

TEST(CommandsTest, GlooRankFlags) {
  Scenario s = DefaultScenario();
  RunContext ctx{"/out/4-gloo", "", 1, "", ""};
  const auto a = TrainArgs(s, s.runs[3], 0, ctx);
  EXPECT_EQ(After(a, "--backend"), "gloo");
  EXPECT_EQ(After(a, "--rendezvous"), "/out/4-gloo/rendezvous");
  EXPECT_EQ(After(a, "--switch"), "<absent>");
  EXPECT_EQ(After(a, "--metrics"), "/out/4-gloo/rank0.json");
  EXPECT_EQ(After(a, "--gloo-algorithm"), "default");
  RunSpec hd = s.runs[3];
  hd.gloo_algorithm = collective::GlooAlgorithm::kHalvingDoubling;
  EXPECT_EQ(After(TrainArgs(s, hd, 1, ctx), "--gloo-algorithm"), "halving-doubling");
  EXPECT_EQ(After(TrainArgs(s, s.runs[0], 1, ctx), "--gloo-algorithm"), "<absent>");
}

// No process of a run gets the job key on its command line, where every
// local user can read it (/proc/PID/cmdline): only the key file's path.
TEST(CommandsTest, NoKeyOnAnyCommandLine) {
  Scenario s = DefaultScenario();
  RunContext ctx{"/out/1-sync", "127.0.0.1:4242", 1, "/k/job.key", ""};
  std::vector<std::vector<std::string>> lines = {SwitchArgs(s, s.runs[0], 1, "/k/job.key"),
                                                 SwitchArgs(s, s.runs[2], 1, "/k/job.key", 40123)};
  for (int rank = 0; rank < s.workers; ++rank) lines.push_back(TrainArgs(s, s.runs[0], rank, ctx));
  for (const auto& line : lines) {
    for (const std::string& arg : line) {
      EXPECT_EQ(arg.find("key="), std::string::npos) << arg;
      EXPECT_NE(arg, "--key") << "a key on the command line";
    }
  }
}

}  // namespace
}  // namespace serene::experiment
