// End to end: the serene-experiment binary runs short scenarios with the
// real serene-switch and serene-train processes (2 MLP ranks: SYNC through
// the switch and the Gloo baseline; a policy script that changes the rule
// while the ranks train) and writes its report.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "experiment/plot.h"
#include "loadgen/child_process.h"
#include "testing/pause_log.h"
#include "testing/scratch_dir.h"

namespace serene::experiment {
namespace {

namespace fs = std::filesystem;

using testing::ScratchDir;
using testing::Slurp;

// Runs serene-experiment with `args`; returns {exit code, output}.
std::pair<int, std::string> RunBinary(const std::vector<std::string>& args,
                                      std::chrono::seconds guard) {
  loadgen::ChildProcess child(SERENE_EXPERIMENT_BIN, args);
  if (!child.started()) return {-1, "cannot start " SERENE_EXPERIMENT_BIN};
  const auto code = child.Wait(guard);
  return {code.value_or(-1), child.output()};
}

TEST(ExperimentE2eTest, SereneSyncAndGlooProduceAReport) {
  ScratchDir dir("serene-exp-test");
  const fs::path out = dir.path() / "out";
  const auto [code, output] =
      RunBinary({"--workers", "2", "--steps", "20", "--eval-every", "10", "--eval-samples", "1000",
                 "--target", "0", "--runs", "serene:sync,gloo,gloo:halving-doubling", "--out",
                 out.string(), "--timeout", "120"},
                std::chrono::seconds(150));
  ASSERT_EQ(code, 0) << output;
  // The side-by-side table.
  EXPECT_NE(output.find("job completion time (s)"), std::string::npos) << output;
  EXPECT_NE(output.find("% of SYNC"), std::string::npos) << output;

  const std::string text = Slurp(out / "results.json");
  ASSERT_FALSE(text.empty()) << output;
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["scenario"]["workers"], 2);
  ASSERT_EQ(j["runs"].size(), 3u);
  for (const auto& run : j["runs"]) {
    SCOPED_TRACE(run["label"].get<std::string>());
    EXPECT_EQ(run["ok"], true) << run["error"];
    EXPECT_EQ(run["workers"], 2);
    EXPECT_EQ(run["iterations_rank0"], 20);
    EXPECT_DOUBLE_EQ(run["iterations_mean"].get<double>(), 20.0);
    EXPECT_EQ(run["stop_reason"], "step_limit");
    EXPECT_GT(run["job_completion_s"].get<double>(), 0.0);
    EXPECT_LT(run["job_completion_s"].get<double>(), 120.0);
    EXPECT_GE(run["wait_total_s"].get<double>(), 0.0);
    EXPECT_LE(run["wait_mean_s"].get<double>(), run["job_completion_s"].get<double>());
    // 20 steps of the MLP on Fashion-MNIST: well above chance (0.1).
    EXPECT_GT(run["final_accuracy"].get<double>(), 0.4);
    EXPECT_LE(run["final_accuracy"].get<double>(), 1.0);
    EXPECT_EQ(run["ranks"].size(), 2u);
    EXPECT_EQ(run["timeline"].size(), 3u);  // steps 0, 10, 20
    EXPECT_GT(run["compute_per_iteration_s"].get<double>(), 0.0);
    EXPECT_GT(run["comm_per_iteration_s"].get<double>(), 0.0);
    EXPECT_GT(run["comm_share_pct"].get<double>(), 0.0);
    EXPECT_LT(run["comm_share_pct"].get<double>(), 100.0);
  }
  EXPECT_EQ(j["runs"][0]["label"], "SYNC");
  EXPECT_EQ(j["runs"][0]["backend"], "serene");
  EXPECT_EQ(j["runs"][1]["label"], "Gloo");
  EXPECT_EQ(j["runs"][1]["gloo_algorithm"], "default");
  EXPECT_EQ(j["runs"][2]["label"], "Gloo(halving-doubling)");
  EXPECT_EQ(j["runs"][2]["gloo_algorithm"], "halving-doubling");
  EXPECT_DOUBLE_EQ(j["runs"][0]["jct_pct_of_baseline"].get<double>(), 100.0);
  // SYNC through the switch and the allreduce train the same model (the
  // switch's fixed point differs from float sums by rounding only).
  EXPECT_NEAR(j["runs"][0]["final_accuracy"].get<double>(),
              j["runs"][1]["final_accuracy"].get<double>(), 0.02);
  EXPECT_NEAR(j["runs"][1]["final_accuracy"].get<double>(),
              j["runs"][2]["final_accuracy"].get<double>(), 0.02);

  EXPECT_NE(Slurp(out / "results.csv").find("SYNC,serene,sync,true,"), std::string::npos);
  EXPECT_NE(Slurp(out / "results.md").find("| | SYNC | Gloo | Gloo(halving-doubling) |"),
            std::string::npos);
  EXPECT_NE(output.find("communication per iteration (ms)"), std::string::npos) << output;
  EXPECT_NE(Slurp(out / "scenario.toml").find("workers = 2"), std::string::npos);
  EXPECT_NE(Slurp(out / "1-sync" / "switch.log").find("serene-switch counters"), std::string::npos);
  EXPECT_NE(Slurp(out / "2-gloo" / "rank1.log").find("[gloo rank 1/2]"), std::string::npos);
  EXPECT_NE(Slurp(out / "3-gloo-halving-doubling" / "rank1.log")
                .find("[gloo rank 1/2] allreduce algorithm: halving-doubling"),
            std::string::npos);
  if (FindOnPath("gnuplot")) {
    EXPECT_TRUE(fs::exists(out / "accuracy.png")) << output;
  }
}

// A dynamic run: policies/scheduled.lua (SYNC for 5 clocks, then SSP(10)),
// named relative to the source tree, driven by the runner's own controller
// through the switch's runtime API.
TEST(ExperimentE2eTest, APolicyScriptChangesTheRuleWhileTheRanksTrain) {
  ScratchDir dir("serene-exp-test");
  const fs::path out = dir.path() / "out";
  const fs::path scenario = dir.path() / "dynamic.toml";
  std::ofstream(scenario) << "name = \"dynamic\"\ncontrol_period_ms = 100\n\n"
                             "[[run]]\npolicy = \"policies/scheduled.lua\"\n"
                             "params = { sync_clocks = 5 }\n";
  const auto [code, output] =
      RunBinary({"-c", scenario.string(), "--quick", "--out", out.string(), "--timeout", "120"},
                std::chrono::seconds(150));
  ASSERT_EQ(code, 0) << output;
  // The progress line of the change and the table's row.
  EXPECT_NE(output.find("[SCHEDULED]"), std::string::npos) << output;
  EXPECT_NE(output.find("clock 5: ssp:10 (epoch 1)"), std::string::npos) << output;
  EXPECT_NE(output.find("policy changes"), std::string::npos) << output;
  EXPECT_NE(output.find("SCHEDULED: "), std::string::npos) << output;

  const fs::path run_dir = out / "1-scheduled";
  const auto changes = nlohmann::json::parse(Slurp(run_dir / "policy_changes.json"));
  EXPECT_EQ(changes["script"], "policies/scheduled.lua");
  EXPECT_EQ(changes["params"]["sync_clocks"], "5");
  ASSERT_GE(changes["changes"].size(), 1u) << changes.dump(2);
  EXPECT_EQ(changes["changes"][0]["rule"], "ssp:10");
  EXPECT_EQ(changes["changes"][0]["effective_clock"], 5);
  EXPECT_TRUE(changes["changes"][0]["seconds"].is_number());
  EXPECT_NE(Slurp(run_dir / "controller.log").find(" applied "), std::string::npos);

  const auto j = nlohmann::json::parse(Slurp(out / "results.json"));
  ASSERT_EQ(j["runs"].size(), 1u);
  const auto& run = j["runs"][0];
  EXPECT_EQ(run["ok"], true) << run["error"];
  EXPECT_EQ(run["label"], "SCHEDULED");
  EXPECT_EQ(run["dynamic"], true);
  EXPECT_EQ(run["iterations_rank0"], 30);
  ASSERT_GE(run["policy_changes"].size(), 1u);
  EXPECT_EQ(run["policy_changes"][0]["rule"], "ssp:10");
  EXPECT_EQ(run["policy_changes"][0]["effective_clock"], 5);
  // Installed at most a few seconds before training started (the ranks load
  // their data first), and before the run ended.
  const double at = run["policy_changes"][0]["seconds"].get<double>();
  EXPECT_GT(at, -30.0);
  EXPECT_LT(at, run["job_completion_s"].get<double>());
  // The switch started the job under SYNC and took the change.
  EXPECT_NE(Slurp(run_dir / "switch.log").find("policy=sync"), std::string::npos);
  EXPECT_NE(Slurp(out / "results.md").find("- SCHEDULED: "), std::string::npos);
  if (FindOnPath("gnuplot")) {
    EXPECT_NE(Slurp(out / "plot" / "accuracy.gp").find("set label 'ssp:10 from clock 5'"),
              std::string::npos);
    EXPECT_NE(output.find("plot: " + (out / "accuracy.png").string()), std::string::npos)
        << output;  // gnuplot took the marks
  }
}

// In a dynamic run the ranks report their evaluations to the switch's runtime
// API, and the policy sees them: rank 0's `pauses` grow, the others' stay 0.
TEST(ExperimentE2eTest, APolicySeesRankZerosEvaluationsAsPauses) {
  ScratchDir dir("serene-exp-test");
  const fs::path out = dir.path() / "out";
  const fs::path script = dir.path() / "pauses.lua";
  testing::WritePauseLoggingPolicy(script.string());
  const fs::path scenario = dir.path() / "pauses.toml";
  std::ofstream(scenario) << "name = \"pauses\"\ncontrol_period_ms = 50\n\n"
                             "[[run]]\npolicy = \"" << script.string() << "\"\n";
  const auto [code, output] =
      RunBinary({"-c", scenario.string(), "--quick", "--out", out.string(), "--timeout", "120"},
                std::chrono::seconds(150));
  ASSERT_EQ(code, 0) << output;
  fs::path run_dir;
  for (const auto& e : fs::directory_iterator(out)) {
    if (e.is_directory() && fs::exists(e.path() / "controller.log")) run_dir = e.path();
  }
  ASSERT_FALSE(run_dir.empty()) << output;
  const std::string log = Slurp(run_dir / "controller.log");
  const auto last = testing::LastPauseLine(log);  // rank 0 evaluates, rank 1 does not
  ASSERT_TRUE(last.has_value()) << log;
  EXPECT_GE(last->rank0_pauses, 1) << log;
  EXPECT_EQ(last->rank1_pauses, 0) << log;
  EXPECT_GT(last->rank0_paused_s, 0) << log;
}

// A switch that never reports its runtime API: the dynamic run fails before
// any rank starts, saying why; the experiment goes on and exits 1.
TEST(ExperimentE2eTest, ADynamicRunWithoutARuntimeApiFails) {
  ScratchDir dir("serene-exp-test");
  const fs::path bin = dir.path() / "bin";
  fs::create_directories(bin);
  std::ofstream(bin / "serene-switch") << "#!/bin/sh\necho 'listening on 127.0.0.1:9'\n";
  std::ofstream(bin / "serene-train") << "#!/bin/sh\nexit 3\n";
  for (const char* name : {"serene-switch", "serene-train"}) {
    fs::permissions(bin / name, fs::perms::owner_all);
  }
  const fs::path out = dir.path() / "out";
  const auto [code, output] = RunBinary({"--quick", "--runs", "policies/scheduled.lua", "--bin-dir",
                                         bin.string(), "--out", out.string()},
                                        std::chrono::seconds(60));
  EXPECT_EQ(code, 1) << output;
  EXPECT_NE(output.find("SCHEDULED FAILED: serene-switch did not report its runtime API address"),
            std::string::npos)
      << output;
  EXPECT_EQ(output.find("ranks started"), std::string::npos) << output;
  const auto j = nlohmann::json::parse(Slurp(out / "results.json"));
  EXPECT_EQ(j["runs"][0]["ok"], false);
}

TEST(ExperimentE2eTest, BadFlagsFailBeforeAnythingStarts) {
  ScratchDir dir("serene-exp-test");
  const auto [code, output] = RunBinary(
      {"--runs", "serene:ssp", "--out", (dir.path() / "out").string()}, std::chrono::seconds(30));
  EXPECT_EQ(code, 2);
  EXPECT_NE(output.find("ssp needs a window"), std::string::npos) << output;
  EXPECT_FALSE(fs::exists(dir.path() / "out"));

  // A policy script with a syntax error is refused with its file:line.
  const fs::path bad = dir.path() / "broken.lua";
  std::ofstream(bad) << "function on_telemetry(t)\n  return ssp(\nend\n";
  const auto [bad_code, bad_output] =
      RunBinary({"--runs", "sync," + bad.string(), "--out", (dir.path() / "out").string()},
                std::chrono::seconds(30));
  EXPECT_EQ(bad_code, 2);
  EXPECT_NE(bad_output.find("run #2 'BROKEN': policy script"), std::string::npos) << bad_output;
  EXPECT_NE(bad_output.find("broken.lua:3:"), std::string::npos) << bad_output;
  EXPECT_FALSE(fs::exists(dir.path() / "out"));
}

}  // namespace
}  // namespace serene::experiment
