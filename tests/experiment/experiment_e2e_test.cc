// End to end: the serene-experiment binary runs a short scenario with the
// real serene-switch and serene-train processes (2 MLP ranks, 20 steps, SYNC
// through the switch and the Gloo baseline) and writes its report.
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

namespace serene::experiment {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ScratchDir {
 public:
  ScratchDir()
      : path_(fs::temp_directory_path() / ("serene-exp-test-" + std::to_string(getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Runs serene-experiment with `args`; returns {exit code, output}.
std::pair<int, std::string> RunBinary(const std::vector<std::string>& args,
                                      std::chrono::seconds guard) {
  loadgen::ChildProcess child(SERENE_EXPERIMENT_BIN, args);
  if (!child.started()) return {-1, "cannot start " SERENE_EXPERIMENT_BIN};
  const auto code = child.Wait(guard);
  return {code.value_or(-1), child.output()};
}

TEST(ExperimentE2eTest, SereneSyncAndGlooProduceAReport) {
  ScratchDir dir;
  const fs::path out = dir.path() / "out";
  const auto [code, output] = RunBinary(
      {"--workers", "2", "--steps", "20", "--eval-every", "10", "--eval-samples", "1000",
       "--target", "0", "--runs", "serene:sync,gloo", "--out", out.string(), "--timeout", "120"},
      std::chrono::seconds(150));
  ASSERT_EQ(code, 0) << output;
  // The side-by-side table.
  EXPECT_NE(output.find("job completion time (s)"), std::string::npos) << output;
  EXPECT_NE(output.find("% of SYNC"), std::string::npos) << output;

  const std::string text = Slurp(out / "results.json");
  ASSERT_FALSE(text.empty()) << output;
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["scenario"]["workers"], 2);
  ASSERT_EQ(j["runs"].size(), 2u);
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
  }
  EXPECT_EQ(j["runs"][0]["label"], "SYNC");
  EXPECT_EQ(j["runs"][0]["backend"], "serene");
  EXPECT_EQ(j["runs"][1]["label"], "Gloo");
  EXPECT_DOUBLE_EQ(j["runs"][0]["jct_pct_of_baseline"].get<double>(), 100.0);
  // SYNC through the switch and the allreduce train the same model (the
  // switch's fixed point differs from float sums by rounding only).
  EXPECT_NEAR(j["runs"][0]["final_accuracy"].get<double>(),
              j["runs"][1]["final_accuracy"].get<double>(), 0.02);

  EXPECT_NE(Slurp(out / "results.csv").find("SYNC,serene,sync,true,"), std::string::npos);
  EXPECT_NE(Slurp(out / "results.md").find("| | SYNC | Gloo |"), std::string::npos);
  EXPECT_NE(Slurp(out / "scenario.toml").find("workers = 2"), std::string::npos);
  EXPECT_NE(Slurp(out / "1-sync" / "switch.log").find("serene-switch counters"), std::string::npos);
  EXPECT_NE(Slurp(out / "2-gloo" / "rank1.log").find("[gloo rank 1/2]"), std::string::npos);
  if (FindOnPath("gnuplot")) {
    EXPECT_TRUE(fs::exists(out / "accuracy.png")) << output;
  }
}

TEST(ExperimentE2eTest, BadFlagsFailBeforeAnythingStarts) {
  ScratchDir dir;
  const auto [code, output] = RunBinary(
      {"--runs", "serene:ssp", "--out", (dir.path() / "out").string()}, std::chrono::seconds(30));
  EXPECT_EQ(code, 2);
  EXPECT_NE(output.find("ssp needs a window"), std::string::npos) << output;
  EXPECT_FALSE(fs::exists(dir.path() / "out"));
}

}  // namespace
}  // namespace serene::experiment
