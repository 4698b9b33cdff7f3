#include "train/metrics.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/train/test_data.h"

namespace serene::train {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

RunMetrics Sample() {
  RunMetrics m;
  m.backend = "gloo";
  m.rank = 1;
  m.world_size = 4;
  m.model = "mlp";
  m.parameters = 79510;
  m.stop_reason = StopReason::kTargetReached;
  m.iterations = 120;
  m.job_completion_s = 12.5;
  m.pull_s = 1;
  m.push_s = 2;
  m.wait_s = 3;
  m.timeline.push_back({0, 0.0, kNaN, 0.1, 2.3});
  m.timeline.push_back({50, 5.0, 0.9, kNaN, kNaN});
  m.iteration_log.push_back({1, 0.0, 0.001, 0.02, 0.0, 0.003, 2.2});
  return m;
}

TEST(MetricsTest, JsonHasTheDocumentedFieldsAndNullsForNaN) {
  const nlohmann::json j = nlohmann::json::parse(MetricsToJson(Sample()));
  EXPECT_EQ(j["backend"], "gloo");
  EXPECT_EQ(j["rank"], 1);
  EXPECT_EQ(j["parameters"], 79510);
  EXPECT_EQ(j["stop_reason"], "target_reached");
  EXPECT_EQ(j["iterations"], 120);
  EXPECT_DOUBLE_EQ(j["job_completion_s"].get<double>(), 12.5);
  EXPECT_DOUBLE_EQ(j["wait_s"].get<double>(), 3.0);
  EXPECT_TRUE(j["target_reached_s"].is_null());
  EXPECT_TRUE(j["final_accuracy"].is_null());
  for (const char* key :
       {"compute_s", "barrier_wait_s", "straggler_sleep_s", "slowed_iterations", "eval_s", "init_s",
        "epochs", "straggler", "seed", "learning_rate", "batch_size", "target_accuracy",
        "evaluates", "eval_samples", "max_steps", "time_limit_s", "eval_every"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  ASSERT_EQ(j["timeline"].size(), 2u);
  EXPECT_TRUE(j["timeline"][0]["train_loss"].is_null());
  EXPECT_DOUBLE_EQ(j["timeline"][0]["accuracy"].get<double>(), 0.1);
  EXPECT_EQ(j["timeline"][1]["step"], 50);
  EXPECT_TRUE(j["timeline"][1]["accuracy"].is_null());
}

TEST(MetricsTest, WritesFilesAndCreatesDirectories) {
  testing::ScratchDir dir;
  const RunMetrics m = Sample();
  ASSERT_TRUE(WriteMetricsJson(m, dir.Sub("a/b/m.json")).ok());
  EXPECT_EQ(nlohmann::json::parse(Slurp(dir.Sub("a/b/m.json")))["iterations"], 120);
  ASSERT_TRUE(WriteTimelineCsv(m, dir.Sub("t.csv")).ok());
  EXPECT_EQ(Slurp(dir.Sub("t.csv")),
            "step,time_s,train_loss,accuracy,test_loss\n0,0,,0.1,2.3\n50,5,0.9,,\n");
  ASSERT_TRUE(WriteIterationsCsv(m, dir.Sub("i.csv")).ok());
  EXPECT_EQ(Slurp(dir.Sub("i.csv")),
            "step,start_s,pull_s,compute_s,sleep_s,push_s,loss\n1,0,0.001,0.02,0,0.003,2.2\n");
  Status s = WriteMetricsJson(m, "/proc/no/such/file.json");
  EXPECT_EQ(s.code(), Status::Code::kIoError);
  EXPECT_NE(s.message().find("/proc/no/such/file.json"), std::string::npos);
}

TEST(MetricsTest, ExpandsRankPatterns) {
  EXPECT_EQ(ExpandRankPattern("out/{rank}/m-{rank}.json", 3), "out/3/m-3.json");
  EXPECT_EQ(ExpandRankPattern("plain.json", 3), "plain.json");
}

}  // namespace
}  // namespace serene::train
