// End-to-end tests of the serene-train binary: real processes, real Gloo over
// TCP on loopback, real data.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/train/test_data.h"

extern char** environ;

namespace serene::train {
namespace {

using testing::ScratchDir;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Starts serene-train with `args`, stdout+stderr to `log`. Returns the pid.
pid_t Spawn(const std::vector<std::string>& args, const std::string& log) {
  std::vector<char*> argv;
  std::string bin = SERENE_TRAIN_BIN;
  argv.push_back(bin.data());
  std::vector<std::string> copy = args;
  for (std::string& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, bin.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  EXPECT_EQ(rc, 0) << "cannot start " << bin;
  return rc == 0 ? pid : -1;
}

// Waits for `pid`; returns its exit code (128 + signal if killed), and its
// resource usage in `usage` if given.
int Wait(pid_t pid, rusage* usage = nullptr) {
  int status = 0;
  if (pid < 0 || wait4(pid, &status, 0, usage) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int RunApp(const std::vector<std::string>& args, const std::string& log) {
  return Wait(Spawn(args, log));
}

// Runs serene-train to its end; returns the page faults it took (-1 if it
// failed).
long PageFaultsOfARun(const std::vector<std::string>& args, const std::string& log) {
  rusage usage{};
  if (Wait(Spawn(args, log), &usage) != 0) return -1;
  return usage.ru_minflt + usage.ru_majflt;
}

TEST(SereneTrainAppTest, TwoProcessesTrainWithGloo) {
  ScratchDir dir;
  std::vector<pid_t> pids;
  for (int rank = 0; rank < 2; ++rank) {
    pids.push_back(Spawn({"--backend",
                          "gloo",
                          "--rank",
                          std::to_string(rank),
                          "--world-size",
                          "2",
                          "--rendezvous",
                          dir.Sub("rdv"),
                          "--steps",
                          "20",
                          "--eval-every",
                          "10",
                          "--eval-samples",
                          "1000",
                          "--eval-ranks",
                          "all",
                          "--straggler",
                          "slow_worker:0.5:0.5:2",
                          "--straggler-ranks",
                          "1",
                          "--metrics",
                          dir.Sub("rank{rank}.json"),
                          "--timeline-csv",
                          dir.Sub("t{rank}.csv"),
                          "--iterations-csv",
                          dir.Sub("i{rank}.csv")},
                         dir.Sub("log" + std::to_string(rank))));
  }
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(Wait(pids[rank]), 0) << Slurp(dir.Sub("log" + std::to_string(rank)));
  }
  std::vector<nlohmann::json> m;
  for (int rank = 0; rank < 2; ++rank) {
    const std::string text = Slurp(dir.Sub("rank" + std::to_string(rank) + ".json"));
    ASSERT_FALSE(text.empty()) << "no metrics for rank " << rank;
    m.push_back(nlohmann::json::parse(text));
    EXPECT_EQ(m[rank]["rank"], rank);
    EXPECT_EQ(m[rank]["backend"], "gloo");
    EXPECT_EQ(m[rank]["iterations"], 20);
    EXPECT_EQ(m[rank]["stop_reason"], "step_limit");
    EXPECT_EQ(m[rank]["timeline"].size(), 3u);
    const auto& t = m[rank]["timeline"];
    EXPECT_LT(t[2]["test_loss"].get<double>(), t[0]["test_loss"].get<double>());
    EXPECT_NE(Slurp(dir.Sub("t" + std::to_string(rank) + ".csv")).find("step,time_s"),
              std::string::npos);
    std::istringstream lines(Slurp(dir.Sub("i" + std::to_string(rank) + ".csv")));
    int n = 0;
    for (std::string line; std::getline(lines, line);) ++n;
    EXPECT_EQ(n, 21);  // header + 20 iterations
  }
  EXPECT_EQ(m[0]["straggler"], "none");
  EXPECT_EQ(m[1]["straggler"], "slow_worker:0.5:0.5:2");
  EXPECT_GT(m[1]["slowed_iterations"].get<int>(), 0);
  // Same model on both ranks: same accuracy.
  EXPECT_EQ(m[0]["final_accuracy"], m[1]["final_accuracy"]);
  EXPECT_NE(Slurp(dir.Sub("log0")).find("[gloo rank 0/2] step 10"), std::string::npos)
      << Slurp(dir.Sub("log0"));
}

// Three processes (not a power of two) with --gloo-algorithm
// halving-doubling: every rank evaluates, and equal models give the same test
// loss and accuracy to the last bit on every rank.
TEST(SereneTrainAppTest, ThreeProcessesTrainBitIdenticallyWithHalvingDoubling) {
  constexpr int kWorld = 3;
  ScratchDir dir;
  std::vector<pid_t> pids;
  for (int rank = 0; rank < kWorld; ++rank) {
    std::vector<std::string> args = {"--backend", "gloo", "--gloo-algorithm", "halving-doubling"};
    args.insert(args.end(),
                {"--rank", std::to_string(rank), "--world-size", std::to_string(kWorld)});
    args.insert(args.end(), {"--rendezvous", dir.Sub("rdv"), "--steps", "20"});
    args.insert(args.end(),
                {"--eval-every", "10", "--eval-samples", "1000", "--eval-ranks", "all"});
    args.insert(args.end(), {"--straggler", "heterogeneous:1.5", "--straggler-ranks", "1"});
    args.insert(args.end(), {"--metrics", dir.Sub("rank{rank}.json")});
    pids.push_back(Spawn(args, dir.Sub("log" + std::to_string(rank))));
  }
  for (int rank = 0; rank < kWorld; ++rank) {
    EXPECT_EQ(Wait(pids[rank]), 0) << Slurp(dir.Sub("log" + std::to_string(rank)));
  }
  std::vector<nlohmann::json> m;
  for (int rank = 0; rank < kWorld; ++rank) {
    const std::string text = Slurp(dir.Sub("rank" + std::to_string(rank) + ".json"));
    ASSERT_FALSE(text.empty()) << "no metrics for rank " << rank;
    m.push_back(nlohmann::json::parse(text));
    EXPECT_EQ(m[rank]["iterations"], 20);
    ASSERT_EQ(m[rank]["timeline"].size(), 3u);
    // Every evaluation point, not just the last, saw the same model.
    for (size_t p = 0; p < 3; ++p) {
      EXPECT_EQ(m[rank]["timeline"][p]["test_loss"].get<double>(),
                m[0]["timeline"][p]["test_loss"].get<double>())
          << "rank " << rank << " point " << p;
    }
    EXPECT_EQ(m[rank]["final_accuracy"], m[0]["final_accuracy"]);
    const std::string log = Slurp(dir.Sub("log" + std::to_string(rank)));
    EXPECT_NE(log.find("allreduce algorithm: halving-doubling"), std::string::npos) << log;
  }
  EXPECT_LT(m[0]["timeline"][2]["test_loss"].get<double>(),
            m[0]["timeline"][0]["test_loss"].get<double>());
}

TEST(SereneTrainAppTest, BadFlagsFailWithAClearMessage) {
  ScratchDir dir;
  const std::string log = dir.Sub("log");
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const std::vector<Case> cases = {
      {{"--rank", "0", "--world-size", "1", "--model", "resnet"}, "--model"},
      {{"--rank", "0", "--world-size", "1", "--lr", "-1"}, "--lr"},
      {{"--rank", "0", "--world-size", "1", "--no-such-flag"}, "no-such-flag"},
      {{"--world-size", "1"}, "--rank"},
      {{"--rank", "2", "--world-size", "2", "--rendezvous", dir.Sub("r")}, "--rank 2"},
      {{"--rank", "0", "--world-size", "1", "--rendezvous", dir.Sub("r"), "--straggler",
        "slow_worker:2"},
       "probability"},
      {{"--rank", "0", "--world-size", "2", "--rendezvous", dir.Sub("r"), "--straggler-ranks", "5"},
       "rank 5"},
      {{"--rank", "0", "--world-size", "1"}, "--rendezvous"},
      {{"--rank", "0", "--world-size", "1", "--rendezvous", dir.Sub("r"), "--gloo-algorithm",
        "tree"},
       "--gloo-algorithm: unknown Gloo algorithm 'tree': expected one of default, "
       "halving-doubling"},
      {{"--rank", "0", "--world-size", "1", "--rendezvous", dir.Sub("r"), "--gloo-algorithm",
        "ring"},
       "--gloo-algorithm: gloo: the ring allreduce does not keep the ranks bit-identical"},
      {{"--rank", "0", "--world-size", "1", "--backend", "serene", "--key", "banana"},
       "--key 'banana': expected a 32-bit decimal or 0x-hex number"},
      {{"--rank", "0", "--world-size", "1", "--rendezvous", dir.Sub("r"), "--data-dir",
        dir.Sub("none")},
       "dataset-fashion-mnist"},
      {{"--rank", "0", "--world-size", "1", "--rendezvous", dir.Sub("r"), "--control",
        "127.0.0.1:7001"},
       "--control and --control-token-file are for --backend serene"},
      {{"--rank", "0", "--world-size", "1", "--backend", "serene", "--key", "5",
        "--control-token-file", dir.Sub("token")},
       "--control-token-file needs --control HOST:PORT"},
  };
  for (const Case& c : cases) {
    std::string joined;
    for (const std::string& a : c.args) joined += a + " ";
    SCOPED_TRACE(joined);
    EXPECT_NE(RunApp(c.args, log), 0);
    EXPECT_NE(Slurp(log).find(c.message), std::string::npos) << Slurp(log);
  }
}

// A step reuses the memory the step before it freed (train/retained_memory.h):
// in steady state a step takes no page fault for its tensors, so it makes no
// memory system call (which made the multi-threaded ranks of dynamic runs
// compute slower). Without it glibc hands the freed memory back and a step
// faults it in again: tens of faults per MLP step. Measured as the difference
// between a short and a long run, after a run that warms the page cache (a
// cold library's pages fault in differently). The MLP: a CNN run's heap also
// grows by a fresh ~5 MiB block once or twice at random steps
// (fragmentation), which would blur a count over a few hundred steps.
TEST(SereneTrainAppTest, AStepInSteadyStateTakesNoPageFault) {
  constexpr int kShort = 20, kLong = 220;
  ScratchDir dir;
  int run = 0;
  auto faults = [&](int steps) {
    const std::string name = "run" + std::to_string(run++);
    const long f = PageFaultsOfARun(
        {"--backend", "gloo", "--rank", "0", "--world-size", "1", "--rendezvous", dir.Sub(name),
         "--model", "mlp", "--steps", std::to_string(steps), "--eval-ranks", "none",
         "--log-level", "warn"},
        dir.Sub(name + ".log"));
    EXPECT_GT(f, 0) << Slurp(dir.Sub(name + ".log"));
    return f;
  };
  faults(kShort);  // warms the page cache
  const long short_run = faults(kShort);
  const long long_run = faults(kLong);
  const double per_step = double(long_run - short_run) / (kLong - kShort);
  // Growth that stays (the metrics' per-step records) is under one fault a
  // step; memory handed back and faulted in again is tens.
  EXPECT_LT(per_step, 3.0) << short_run << " faults in " << kShort << " steps, " << long_run
                           << " in " << kLong;
}

TEST(SereneTrainAppTest, HelpExitsZero) {
  ScratchDir dir;
  EXPECT_EQ(RunApp({"--help"}, dir.Sub("log")), 0);
  EXPECT_NE(Slurp(dir.Sub("log")).find("--straggler"), std::string::npos);
}

}  // namespace
}  // namespace serene::train
