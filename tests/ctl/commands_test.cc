// serene-ctl's commands in process, against the real serene-switch: what
// they print, their exit codes, and how top and control stop on an
// interrupt (what Ctrl-C does in the binary).
#include "ctl/commands.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "testing/switch_process.h"

namespace serene::ctl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class CommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(switch_.ok()) << switch_.output();
    ASSERT_FALSE(switch_.control_address().empty()) << switch_.output();
    auto c = RuntimeClient::Create(switch_.control_address(), "");
    ASSERT_TRUE(c.ok()) << c.status().message();
    client_ = std::move(*c);
    dir_ = std::filesystem::temp_directory_path() /
           ("serene_ctl_commands_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Creates a job of `workers` ranks with the given id; returns its exit code.
  int Create(uint32_t id, uint32_t workers = 2) {
    JobCreateOptions o;
    o.id = id;
    o.workers = workers;
    o.elements = 100;
    return CreateJob(*client_, o, io());
  }

  std::string Write(const std::string& name, const std::string& source) {
    const auto path = dir_ / name;
    std::ofstream(path) << source;
    return path.string();
  }

  Io io() { return {out_, err_}; }

  testing::SwitchProcess switch_{{}};
  std::unique_ptr<RuntimeClient> client_;
  std::filesystem::path dir_;
  std::ostringstream out_, err_;
};

TEST_F(CommandsTest, JobsOnAnEmptySwitch) {
  EXPECT_EQ(ListJobs(*client_, {}, io()), kExitOk);
  EXPECT_EQ(out_.str(), "no jobs on " + switch_.control_address() + "\n");
  out_.str("");
  EXPECT_EQ(ListJobs(*client_, {.json = true}, io()), kExitOk);
  EXPECT_EQ(out_.str(), "{\"jobs\":[]}\n");
}

TEST_F(CommandsTest, CreateTakesTheLowestFreeId) {
  ASSERT_EQ(Create(2), kExitOk);
  JobCreateOptions o;
  o.workers = 3;
  o.elements = 1000;
  o.policy = "ssp:4";
  o.evict_after_ms = 0;
  out_.str("");
  ASSERT_EQ(CreateJob(*client_, o, io()), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("created job 1: workers=3 elements=1000 row=256 scale=2^24 "
                                    "policy=ssp:4 evict_after=never\n"));
  EXPECT_THAT(out_.str(), HasSubstr("key=0x"));
  EXPECT_THAT(out_.str(), HasSubstr("  --job 1 --key-file FILE   (FILE: mode 0600, holding 0x"));
  EXPECT_THAT(out_.str(), HasSubstr("  SERENE_JOB=1 SERENE_KEY=0x"));
  out_.str("");
  ASSERT_EQ(CreateJob(*client_, o, io()), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("created job 3:"));

  out_.str("");
  ASSERT_EQ(ListJobs(*client_, {}, io()), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("JOB  WORKERS  LIVE  ELEMENTS  ROW  LOW  HIGH  POLICY  EPOCH"));
  EXPECT_THAT(out_.str(), HasSubstr("  1        3     3      1000  256    -     -  ssp:4"));
}

TEST_F(CommandsTest, CreateRefusals) {
  ASSERT_EQ(Create(1), kExitOk);
  EXPECT_EQ(Create(1), kExitFailed) << "in use";
  EXPECT_THAT(err_.str(), HasSubstr("serene-ctl: "));
  JobCreateOptions o;
  o.workers = 2;
  o.elements = 10;
  o.policy = "ssp";
  EXPECT_EQ(CreateJob(*client_, o, io()), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("serene-ctl: --policy: bad policy 'ssp'"));
}

TEST_F(CommandsTest, PolicySetAndGet) {
  ASSERT_EQ(Create(1), kExitOk);
  out_.str("");
  PolicySetOptions set;
  set.job = 1;
  set.policy = "quorum:1:3";
  set.at = 5;
  ASSERT_EQ(SetPolicy(*client_, set, io()), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(),
            "job 1: policy quorum:1:3: epoch 1, effective from clock 5, 0 rank(s) released at "
            "once\n");
  out_.str("");
  ASSERT_EQ(GetPolicy(*client_, {.job = 1}, io()), kExitOk);
  EXPECT_EQ(out_.str(),
            "job 1\n"
            "  active        sync (epoch 0)\n"
            "  pending       quorum:1:3 from clock 5 (epoch 1)\n"
            "  max released  -\n");
  set.policy = "sync";
  EXPECT_EQ(SetPolicy(*client_, set, io()), kExitFailed) << "the change has not retired";
  EXPECT_THAT(err_.str(), HasSubstr("has not retired yet"));
}

TEST_F(CommandsTest, PolicySetFromAScript) {
  ASSERT_EQ(Create(1), kExitOk);
  out_.str("");
  PolicySetOptions set;
  set.job = 1;
  set.policy = Write("w.lua", "return ssp(params.w):at(9)\n");
  set.params = {"w=6"};
  set.json = true;
  ASSERT_EQ(SetPolicy(*client_, set, io()), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "{\"epoch\":1,\"effective_clock\":9,\"released\":0}\n");
}

TEST_F(CommandsTest, PolicyCancelWithdrawsAFarChangeAndTheHorizonRefusesAFarther) {
  ASSERT_EQ(Create(1), kExitOk);
  PolicySetOptions set;
  set.job = 1;
  // Issue 31's script: refused, nothing pending.
  set.policy = Write("far.lua", "return ssp(10):at(2147483647)\n");
  EXPECT_EQ(SetPolicy(*client_, set, io()), kExitFailed);
  EXPECT_THAT(err_.str(), HasSubstr("effective clock 2147483647 is beyond the horizon"));
  set.policy = Write("near.lua", "return ssp(10):at(900000)\n");
  ASSERT_EQ(SetPolicy(*client_, set, io()), kExitOk) << err_.str();
  out_.str("");
  err_.str("");
  EXPECT_EQ(CancelPolicy(*client_, {.job = 1, .epoch = 2}, io()), kExitFailed);
  EXPECT_THAT(err_.str(), HasSubstr("epoch 2 is not pending"));
  ASSERT_EQ(CancelPolicy(*client_, {.job = 1, .epoch = 1}, io()), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(),
            "job 1: cancelled ssp:10 from clock 900000 (epoch 1); the rule in force stays\n");
  out_.str("");
  EXPECT_EQ(CancelPolicy(*client_, {.job = 1, .epoch = std::nullopt, .json = true}, io()),
            kExitFailed);
  EXPECT_THAT(err_.str(), HasSubstr("no policy change is pending"));
  set.policy = "async";
  ASSERT_EQ(SetPolicy(*client_, set, io()), kExitOk) << "nothing blocks the next change";
  out_.str("");
  ASSERT_EQ(CancelPolicy(*client_, {.job = 1, .epoch = std::nullopt, .json = true}, io()), kExitOk)
      << err_.str();
  EXPECT_EQ(out_.str(),
            "{\"epoch\":2,\"effective_clock\":0,\"rule\":{\"window\":4294967295,\"quorum\":0,"
            "\"lag\":4294967295,\"text\":\"async\"}}\n");
}

TEST_F(CommandsTest, UnknownJob) {
  EXPECT_EQ(GetPolicy(*client_, {.job = 42}, io()), kExitFailed);
  EXPECT_EQ(Telemetry(*client_, {.job = 42}, io()), kExitFailed);
  EXPECT_EQ(FinishJob(*client_, {.job = 42}, io()), kExitFailed);
  EXPECT_EQ(DeleteJob(*client_, {.job = 42}, io()), kExitFailed);
  EXPECT_EQ(EvictRank(*client_, {.job = 42, .rank = 0}, io()), kExitFailed);
  EXPECT_THAT(err_.str(), HasSubstr("serene-ctl: job 42"));
  EXPECT_EQ(out_.str(), "");
}

TEST_F(CommandsTest, EvictFinishDelete) {
  ASSERT_EQ(Create(1), kExitOk);
  out_.str("");
  ASSERT_EQ(EvictRank(*client_, {.job = 1, .rank = 1}, io()), kExitOk);
  ASSERT_EQ(EvictRank(*client_, {.job = 1, .rank = 1}, io()), kExitOk);
  ASSERT_EQ(FinishJob(*client_, {.job = 1}, io()), kExitOk);
  ASSERT_EQ(DeleteJob(*client_, {.job = 1}, io()), kExitOk);
  EXPECT_EQ(out_.str(),
            "job 1: evicted rank 1; 0 rank(s) released\n"
            "job 1: rank 1 was not in the barrier (evicted or not joined)\n"
            "finished job 1: 0 waiting rank(s) released\n"
            "deleted job 1\n");
}

TEST_F(CommandsTest, TopDrawsFramesOneAfterAnotherWithoutATerminal) {
  ASSERT_EQ(Create(3, 4), kExitOk);
  out_.str("");
  TopOptions o;
  o.period = std::chrono::milliseconds(20);
  o.iterations = 2;
  o.ansi = false;
  ASSERT_EQ(Top(*client_, o, io()), kExitOk) << err_.str();
  const std::string text = out_.str();
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << "no terminal control";
  size_t frames = 0;
  for (size_t at = 0; (at = text.find("serene-ctl top: job 3", at)) != std::string::npos; ++at) {
    ++frames;
  }
  EXPECT_EQ(frames, 2u) << "the only job is the default";
  EXPECT_THAT(text, HasSubstr("   3  yes       -"));
}

TEST_F(CommandsTest, TopRedrawsInPlaceOnATerminalAndRestoresTheCursor) {
  ASSERT_EQ(Create(1), kExitOk);
  out_.str("");
  TopOptions o;
  o.job = 1;
  o.period = std::chrono::milliseconds(20);
  o.iterations = 1;
  o.ansi = true;
  ASSERT_EQ(Top(*client_, o, io()), kExitOk);
  const std::string text = out_.str();
  EXPECT_TRUE(text.starts_with("\x1b[?25l\x1b[2J\x1b[H")) << "hide the cursor, clear, home";
  EXPECT_TRUE(text.ends_with("\x1b[J\x1b[?25h")) << "the cursor comes back";
}

TEST_F(CommandsTest, TopStopsOnAnInterrupt) {
  ASSERT_EQ(Create(1), kExitOk);
  Interrupt interrupt;
  TopOptions o;
  o.period = std::chrono::milliseconds(20);
  o.ansi = false;
  o.interrupt = &interrupt;
  int code = -1;
  std::thread top([&] { code = Top(*client_, o, io()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  interrupt.Trigger();
  top.join();
  EXPECT_EQ(code, kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("RANK"));
}

TEST_F(CommandsTest, TopWithoutJobs) {
  EXPECT_EQ(Top(*client_, {}, io()), kExitFailed);
  EXPECT_THAT(err_.str(), HasSubstr("no jobs on the switch"));
}

TEST_F(CommandsTest, ControlAppliesARuleAndStopsOnAnInterrupt) {
  ASSERT_EQ(Create(1), kExitOk);
  Interrupt interrupt;
  ControlOptions o;
  o.job = 1;
  o.script = Write("later.lua",
                   "log('starting')\n"
                   "function on_telemetry(t) return ssp(10):at(100) end\n"
                   "return sync()\n");
  o.period = std::chrono::milliseconds(20);
  o.interrupt = &interrupt;
  int code = -1;
  out_.str("");
  std::thread control([&] { code = Control(*client_, o, io()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  interrupt.Trigger();
  control.join();
  EXPECT_EQ(code, kExitOk) << err_.str();
  const std::string text = out_.str();
  EXPECT_THAT(text, HasSubstr("  log           starting\n"));
  EXPECT_THAT(text, HasSubstr("  info          controlling job 1 with later.lua"));
  EXPECT_THAT(text, HasSubstr("  applied       job 1: ssp(10) at 100 -> epoch 1 from clock 100"));
  EXPECT_THAT(text, HasSubstr("  info          job 1: stopped\n"));
}

TEST_F(CommandsTest, ControlRefusesABadScriptAndAnUnknownJob) {
  ControlOptions o;
  o.job = 1;
  o.script = Write("bad.lua", "return ssp(\n");
  EXPECT_EQ(Control(*client_, o, io()), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("serene-ctl: bad.lua:"));
  o.script = Write("ok.lua", "return sync()\n");
  EXPECT_EQ(Control(*client_, o, io()), kExitFailed);
  EXPECT_THAT(err_.str(), HasSubstr("serene-ctl: job 1"));
  EXPECT_THAT(out_.str(), Not(HasSubstr("applied")));
}

}  // namespace
}  // namespace serene::ctl
