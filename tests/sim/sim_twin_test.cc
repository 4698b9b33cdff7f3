// The simulator's twin of a real run (docs/simulator.md "Validation against
// real runs"): serene-experiment trains with the real switch and serene-train
// ranks, serene-sim runs the same scenario with this CPU's own math kernels
// (SERENE_MATH_KERNELS=native, as scripts/sim_validation.sh runs it). Under
// SYNC every rank reads the same model at every clock in both, so the two
// train the same model: every evaluation's losses and accuracy are equal,
// bit for bit. (With serene-sim's pinned AVX2 kernels they are not, on a CPU
// whose own kernels round differently.)
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loadgen/child_process.h"
#include "testing/scratch_dir.h"

namespace serene {
namespace {

namespace fs = std::filesystem;

std::pair<int, std::string> RunBinary(const char* binary, const std::vector<std::string>& args) {
  loadgen::ChildProcess child(binary, args);
  if (!child.started()) return {-1, std::string("cannot start ") + binary};
  const auto code = child.Wait(std::chrono::seconds(150));
  return {code.value_or(-1), child.output()};
}

TEST(SimTwinTest, ASyncTwinWithThisCpusKernelsTrainsTheRealRunsModelBitForBit) {
  testing::ScratchDir dir("serene-sim-twin");
  const std::vector<std::string> scenario = {"--workers",    "2",  "--steps",        "30",
                                             "--eval-every", "10", "--eval-samples", "1000",
                                             "--target",     "0",  "--runs",         "serene:sync"};
  auto with = [&](std::vector<std::string> extra, const fs::path& out) {
    std::vector<std::string> args = scenario;
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--out", out.string()});
    return args;
  };
  const auto [real_code, real_output] =
      RunBinary(SERENE_EXPERIMENT_BIN, with({"--timeout", "120"}, dir.path() / "real"));
  ASSERT_EQ(real_code, 0) << real_output;
  setenv("SERENE_MATH_KERNELS", "native", 1);
  const auto [sim_code, sim_output] =
      RunBinary(SERENE_SIM_BIN, with({"--compute-ms", "5"}, dir.path() / "sim"));
  unsetenv("SERENE_MATH_KERNELS");
  ASSERT_EQ(sim_code, 0) << sim_output;
  EXPECT_NE(sim_output.find("math kernels native"), std::string::npos) << sim_output;

  auto timeline = [](const fs::path& out) {
    return nlohmann::json::parse(testing::Slurp(out / "results.json"))["runs"][0]["timeline"];
  };
  const auto real = timeline(dir.path() / "real"), sim = timeline(dir.path() / "sim");
  ASSERT_EQ(real.size(), 4u) << real.dump();  // steps 0, 10, 20, 30
  ASSERT_EQ(sim.size(), real.size()) << sim.dump();
  for (size_t i = 0; i < real.size(); ++i) {
    SCOPED_TRACE("evaluation at step " + real[i]["step"].dump());
    EXPECT_EQ(sim[i]["step"], real[i]["step"]);
    EXPECT_EQ(sim[i]["test_loss"], real[i]["test_loss"]);
    EXPECT_EQ(sim[i]["accuracy"], real[i]["accuracy"]);
    if (i > 0) {
      EXPECT_EQ(sim[i]["train_loss"], real[i]["train_loss"]);
    }
  }
}

}  // namespace
}  // namespace serene
