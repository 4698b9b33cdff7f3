// Training under faults: two quick SYNC trainings through the real
// serene-experiment (its serene-switch and two serene-train ranks), one on a
// clean network and one with the switch losing, duplicating, reordering and
// delaying datagrams in both directions (switch_fault). Under SYNC every read
// is exact and the switch adds integers, so the ranks must train the very
// same model sequence whatever the network does: every evaluation's loss and
// accuracy must be bit-identical, not merely close.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "loadgen/child_process.h"
#include "same_training.h"
#include "testing/scratch_dir.h"

namespace serene::faults {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFault = "drop=0.02,dup=0.02,reorder=0.02,delay=0..20ms,seed=3,dir=both";

using testing::ScratchDir;
using testing::Slurp;

// Runs serene-experiment --quick (2 ranks, 30 steps, an evaluation every 10)
// with one SYNC run into `out`, plus `extra` flags; returns its output.
std::string RunQuickSync(const fs::path& out, std::vector<std::string> extra, int* code) {
  std::vector<std::string> args = {"--quick", "--runs", "serene:sync", "--out", out.string(),
                                   "--timeout", "90"};
  args.insert(args.end(), extra.begin(), extra.end());
  loadgen::ChildProcess child(SERENE_EXPERIMENT_BIN, args);
  if (!child.started()) {
    *code = -1;
    return "cannot start " SERENE_EXPERIMENT_BIN;
  }
  *code = child.Wait(std::chrono::seconds(110)).value_or(-1);
  return child.output();
}

TEST(TrainingFaultsTest, SyncTrainsBitIdenticalModelsUnderFaults) {
  ScratchDir dir("serene-fault-train");
  int clean_code = 0, faulty_code = 0;
  const std::string clean_out = RunQuickSync(dir.path() / "clean", {}, &clean_code);
  ASSERT_EQ(clean_code, 0) << clean_out;
  const std::string faulty_out =
      RunQuickSync(dir.path() / "faulty", {"--switch-fault", kFault}, &faulty_code);
  ASSERT_EQ(faulty_code, 0) << faulty_out;

  // The faults were there: the switch injected them and the ranks had to
  // recover from them.
  const std::string faulty_switch = Slurp(dir.path() / "faulty" / "1-sync" / "switch.log");
  // (The switch logs the spec in its normal form, hold included.)
  EXPECT_NE(faulty_switch.find("fault injection on: drop=0.02,dup=0.02,reorder=0.02,delay=0..20ms,"),
            std::string::npos)
      << faulty_switch;
  for (const char* d : {"rx", "tx"}) {
    std::smatch m;
    const std::regex line(std::string("faults ") + d +
                          R"(: offered=(\d+) delivered=(\d+) dropped=(\d+) duplicated=(\d+) )"
                          R"(reordered=(\d+) held_expired=\d+ delayed=(\d+))");
    ASSERT_TRUE(std::regex_search(faulty_switch, m, line)) << d << "\n" << faulty_switch;
    EXPECT_GT(std::stoull(m[3]), 0u) << d << " dropped nothing";
    EXPECT_GT(std::stoull(m[4]), 0u) << d << " duplicated nothing";
    EXPECT_GT(std::stoull(m[5]), 0u) << d << " reordered nothing";
    EXPECT_GT(std::stoull(m[6]), 0u) << d << " delayed nothing";
    EXPECT_EQ(std::stoull(m[1]) + std::stoull(m[4]), std::stoull(m[2]) + std::stoull(m[3])) << d;
  }
  EXPECT_EQ(Slurp(dir.path() / "clean" / "1-sync" / "switch.log").find("faults "),
            std::string::npos);
  EXPECT_NE(Slurp(dir.path() / "faulty" / "scenario.toml").find(
                std::string("switch_fault = \"") + kFault + "\""),
            std::string::npos);

  // Every rank's metrics: the same iterations, and every evaluation and
  // training loss equal to the last bit.
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const std::string file = "rank" + std::to_string(rank) + ".json";
    const auto a = nlohmann::json::parse(Slurp(dir.path() / "clean" / "1-sync" / file));
    const auto b = nlohmann::json::parse(Slurp(dir.path() / "faulty" / "1-sync" / file));
    EXPECT_EQ(a["iterations"], 30);
    if (rank == 0) {
      EXPECT_EQ(a["timeline"].size(), 4u);  // steps 0, 10, 20, 30
    }
    ExpectSameTraining(a, b);
    // Every rank lost packets and had to send them again.
    EXPECT_GT(b["retransmissions"].get<uint64_t>(), 0u) << "loss injected, no retransmission";
    if (rank == 0) {
      std::printf("[training-faults] rank 0 final accuracy %s test loss %s (clean and faulty)\n",
                  a["final_accuracy"].dump().c_str(), a["final_test_loss"].dump().c_str());
    }
  }
  // The report agrees (rank 0's timeline and the final accuracy).
  const auto ra = nlohmann::json::parse(Slurp(dir.path() / "clean" / "results.json"));
  const auto rb = nlohmann::json::parse(Slurp(dir.path() / "faulty" / "results.json"));
  EXPECT_EQ(rb["runs"][0]["final_accuracy"], ra["runs"][0]["final_accuracy"]);
  ASSERT_EQ(rb["runs"][0]["timeline"].size(), ra["runs"][0]["timeline"].size());
  for (size_t i = 0; i < ra["runs"][0]["timeline"].size(); ++i) {
    EXPECT_EQ(rb["runs"][0]["timeline"][i]["accuracy"], ra["runs"][0]["timeline"][i]["accuracy"]);
    EXPECT_EQ(rb["runs"][0]["timeline"][i]["test_loss"],
              ra["runs"][0]["timeline"][i]["test_loss"]);
  }
}

}  // namespace
}  // namespace serene::faults
