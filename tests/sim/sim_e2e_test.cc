// serene-sim end to end: a CI-sized scenario reports every Serene run like
// serene-experiment, twice identically; bad flags are refused with exit 2.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "loadgen/child_process.h"
#include "testing/scratch_dir.h"

namespace serene {
namespace {

namespace fs = std::filesystem;

std::pair<int, std::string> RunSim(const std::vector<std::string>& args) {
  loadgen::ChildProcess child(SERENE_SIM_BIN, args);
  if (!child.started()) return {-1, "cannot start " SERENE_SIM_BIN};
  const auto code = child.Wait(std::chrono::seconds(150));
  return {code.value_or(-1), child.output()};
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(SimE2eTest, QuickScenarioReportsEverySereneRunReproducibly) {
  testing::ScratchDir dir("serene-sim-e2e");
  auto run = [&](const std::string& name) {
    const fs::path out = dir.path() / name;
    const auto [code, output] =
        RunSim({"--quick", "--compute-ms", "5", "--eval-samples", "500", "--straggler",
                "slow_worker:0.3:1:2", "--out", out.string()});
    EXPECT_EQ(code, 0) << output;
    return std::make_pair(out, output);
  };
  const auto [out, output] = run("a");
  // The demo's runs: SYNC, SSP(10), ADAPTIVE; the Gloo run is left out.
  const auto j = nlohmann::json::parse(Slurp(out / "results.json"));
  ASSERT_EQ(j["runs"].size(), 3u) << output;
  EXPECT_EQ(j["runs"][0]["label"], "SYNC");
  EXPECT_EQ(j["runs"][2]["label"], "ADAPTIVE");
  for (const auto& r : j["runs"]) {
    EXPECT_EQ(r["iterations_rank0"], 30) << r.dump();
    EXPECT_GT(r["final_accuracy"].get<double>(), 0.4) << r.dump();
  }
  EXPECT_TRUE(fs::exists(out / "results.md"));
  EXPECT_TRUE(fs::exists(out / "sim.txt"));
  // Virtual time: the second run's numbers are the first's.
  const auto [out2, output2] = run("b");
  const auto j2 = nlohmann::json::parse(Slurp(out2 / "results.json"));
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_GT(j["runs"][i]["job_completion_s"].get<double>(), 0) << i;
    EXPECT_EQ(j["runs"][i]["job_completion_s"], j2["runs"][i]["job_completion_s"]) << i;
    EXPECT_EQ(j["runs"][i]["wait_total_s"], j2["runs"][i]["wait_total_s"]) << i;
    EXPECT_EQ(j["runs"][i]["final_accuracy"], j2["runs"][i]["final_accuracy"]) << i;
  }
}

// The training math is pinned to the AVX2 kernels (sim/math_kernels.h), so the
// kernel this machine or the environment would pick changes nothing: Haswell's
// and Sandybridge's sgemm round differently (the test loss of a 30-step run
// differs in the last bits without the pin).
TEST(SimE2eTest, TrainingMathIsTheSameWhateverKernelTheEnvironmentNames) {
  testing::ScratchDir dir("serene-sim-kernels");
  auto run = [&](const std::string& kernel) {
    setenv("OPENBLAS_CORETYPE", kernel.c_str(), 1);
    const fs::path out = dir.path() / kernel;
    const auto [code, output] =
        RunSim({"--quick", "--compute-ms", "5", "--eval-samples", "500", "--runs", "serene:sync",
                "--out", out.string()});
    unsetenv("OPENBLAS_CORETYPE");
    EXPECT_EQ(code, 0) << output;
    EXPECT_NE(output.find("math kernels avx2"), std::string::npos) << output;
    return nlohmann::json::parse(Slurp(out / "results.json"))["runs"][0]["timeline"];
  };
  const auto haswell = run("Haswell"), sandybridge = run("Sandybridge");
  ASSERT_EQ(haswell.size(), sandybridge.size());
  ASSERT_GE(haswell.size(), 3u);
  for (size_t i = 0; i < haswell.size(); ++i) {
    EXPECT_EQ(haswell[i]["test_loss"], sandybridge[i]["test_loss"]) << "point " << i;
    EXPECT_EQ(haswell[i]["accuracy"], sandybridge[i]["accuracy"]) << "point " << i;
  }
}

TEST(SimE2eTest, SeedsAreSimulatedApartAndSummarized) {
  testing::ScratchDir dir("serene-sim-e2e");
  const fs::path out = dir.path() / "out";
  const auto [code, output] =
      RunSim({"--quick", "--timing-only", "--compute-ms", "5", "--seeds", "4,5", "--runs",
              "serene:sync,serene:async", "--out", out.string()});
  ASSERT_EQ(code, 0) << output;
  EXPECT_TRUE(fs::exists(out / "seed-4" / "results.json"));
  EXPECT_TRUE(fs::exists(out / "seed-5" / "results.json"));
  const auto j = nlohmann::json::parse(Slurp(out / "summary.json"));
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][0]["seeds"], 2);
  EXPECT_EQ(j["runs"][0]["jct_pct_of_baseline"]["mean"], 100.0);
  EXPECT_LT(j["runs"][1]["wait_pct_of_baseline"]["mean"].get<double>(), 100.0);
  // The output's scenario.toml repeats the run: it carries the [sim] settings.
  const std::string toml = Slurp(out / "scenario.toml");
  EXPECT_NE(toml.find("seeds = \"4,5\""), std::string::npos) << toml;
  EXPECT_NE(toml.find("timing_only = true"), std::string::npos) << toml;
}

TEST(SimE2eTest, BadFlagsAreRefusedWithTheValue) {
  // {flag, value, what the message must say}
  const std::vector<std::array<std::string, 3>> cases = {
      {"--link", "gbps=-1", "gbps=-1"},     {"--compute-ms", "fast", "fast"},
      {"--straggler-base", "wall", "wall"}, {"--workers", "0", "--workers"},
      {"--runs", "gloo", "no Serene run"},  {"--run-filter", "some", "some"}};
  for (const auto& [flag, value, says] : cases) {
    const auto [code, output] = RunSim({flag, value});
    EXPECT_EQ(code, 2) << flag << " " << value << ": " << output;
    EXPECT_NE(output.find(says), std::string::npos) << flag << " " << value << ": " << output;
  }
}

// --run-filter re-runs part of a scenario: a policy script's runs apart from
// the fixed ones (scripts/reproduce.sh --policy-only). Each kept run gives the
// numbers it gives beside the others, so its record can replace theirs.
TEST(SimE2eTest, ARunFilterKeepsThoseRunsWithTheNumbersTheyHaveBesideTheOthers) {
  testing::ScratchDir dir("serene-sim-filter");
  auto run = [&](const std::string& filter) {
    const fs::path out = dir.path() / filter;
    const auto [code, output] =
        RunSim({"--quick", "--timing-only", "--compute-ms", "5", "--straggler",
                "slow_worker:0.3:1:2", "--run-filter", filter, "--out", out.string()});
    EXPECT_EQ(code, 0) << output;
    const auto j = nlohmann::json::parse(Slurp(out / "results.json"));
    std::map<std::string, nlohmann::json> runs;
    for (const auto& r : j["runs"]) runs[r["label"].get<std::string>()] = r;
    return runs;
  };
  const auto all = run("all"), fixed = run("fixed"), scripts = run("scripts");
  ASSERT_EQ(all.size(), 3u);  // the demo's SYNC, SSP(10), ADAPTIVE
  ASSERT_EQ(fixed.size(), 2u);
  ASSERT_EQ(scripts.size(), 1u);
  EXPECT_TRUE(fixed.contains("SYNC") && fixed.contains("SSP(10)"));
  ASSERT_TRUE(scripts.contains("ADAPTIVE"));
  for (const auto* part : {&fixed, &scripts}) {
    for (const auto& [label, r] : *part) {
      EXPECT_EQ(r["job_completion_s"], all.at(label)["job_completion_s"]) << label;
      EXPECT_EQ(r["wait_total_s"], all.at(label)["wait_total_s"]) << label;
      EXPECT_EQ(r["policy_changes"], all.at(label)["policy_changes"]) << label;
    }
  }
  // A filter that leaves nothing is refused, naming the runs there are.
  const auto [code, output] = RunSim({"--runs", "serene:sync", "--run-filter", "scripts"});
  EXPECT_EQ(code, 2) << output;
  EXPECT_NE(output.find("leaves no run of the scenario (its runs: SYNC)"), std::string::npos)
      << output;
}

}  // namespace
}  // namespace serene
