// serene-bench comm: the real binary (its own switch, worker processes, Gloo
// over TCP) checks every result of both systems; and the summary arithmetic.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "loadgen/child_process.h"
#include "loadgen/comm_bench.h"

namespace serene::loadgen {
namespace {

using namespace std::chrono_literals;

struct CommRun {
  std::optional<int> exit_code;
  std::string output;
  nlohmann::json last;  // the last line, parsed (null if it is not JSON)
};

CommRun RunComm(const std::vector<std::string>& args) {
  ChildProcess p(SERENE_BENCH_BIN, args);
  CommRun r;
  r.exit_code = p.Wait(90s);
  r.output = p.output();
  std::istringstream lines(r.output);
  std::string line, last;
  while (std::getline(lines, line)) {
    if (!line.empty()) last = line;
  }
  r.last = nlohmann::json::parse(last, nullptr, /*allow_exceptions=*/false);
  return r;
}

TEST(CommBenchTest, ComparesBothSystemsAndEndsWithTheJsonLine) {
  // A short last row (10,000 = 39 x 256 + 16), MTU-sized rows, GSO trains.
  CommRun r = RunComm({"comm", "--workers", "3", "--elements", "10000", "--row", "256", "--iters", "4",
                   "--warmup", "1", "--gloo", "default,halving-doubling"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(r.last.is_object()) << r.output;
  EXPECT_EQ(r.last.at("workers"), 3);
  EXPECT_EQ(r.last.at("elements"), 10000);
  EXPECT_EQ(r.last.at("row"), 256);
  EXPECT_GT(r.last.at("serene_ms").get<double>(), 0.0);
  EXPECT_GT(r.last.at("gloo_ms").get<double>(), 0.0);
  EXPECT_NEAR(r.last.at("serene_over_gloo").get<double>(),
              r.last.at("serene_ms").get<double>() / r.last.at("gloo_ms").get<double>(), 1e-3);
  // CPU per iteration: Serene's is its ranks' and the switch's.
  EXPECT_GT(r.last.at("switch_cpu_ms").get<double>(), 0.0);
  EXPECT_GT(r.last.at("serene_ranks_cpu_ms").get<double>(), 0.0);
  EXPECT_NEAR(r.last.at("serene_cpu_ms").get<double>(),
              r.last.at("serene_ranks_cpu_ms").get<double>() +
                  r.last.at("switch_cpu_ms").get<double>(),
              1e-3);
  EXPECT_GT(r.last.at("gloo_cpu_ms").get<double>(), 0.0);
  EXPECT_NE(r.output.find("CPU ms"), std::string::npos) << r.output;
  // 3 ranks x (the seeded model + 5 Serene models after a clock + 5 x 2 Gloo sums).
  EXPECT_NE(r.output.find("48 results checked, all exact"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("gloo halving-doubling"), std::string::npos);
}

TEST(CommBenchTest, WorksWithoutOffloadAndWithSerenesDefaultRow) {
  CommRun r = RunComm({"comm", "--workers", "2", "--elements", "5000", "--iters", "3", "--warmup",
                   "0", "--offload", "off", "--gloo", "ring-chunked"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.last.at("row"), 4096);
  EXPECT_EQ(r.last.at("gloo_algorithm"), "ring-chunked");
}

TEST(CommBenchTest, TheSwitchRunsAtTheAskedNicenessAndScheduling) {
  // The started switch's log confirms what its loop threads run at; raising
  // the niceness needs no privilege, nor does SCHED_BATCH (the default).
  CommRun given = RunComm({"comm", "--workers", "2", "--elements", "3000", "--iters", "2",
                           "--warmup", "0", "--gloo", "none", "--switch-nice", "4",
                           "--switch-log"});
  ASSERT_EQ(given.exit_code, 0) << given.output;
  EXPECT_EQ(given.last.at("switch_nice"), 4);
  EXPECT_EQ(given.last.at("switch_sched"), "batch");
  EXPECT_NE(given.output.find("niceness 4, sched batch)"), std::string::npos) << given.output;
  EXPECT_NE(given.output.find("thread(s), batch 32, nice 4, sched batch)"), std::string::npos)
      << given.output;
  EXPECT_GT(given.last.at("serene_ranks_cpu_ms").get<double>(), 0.0);

  CommRun none = RunComm({"comm", "--workers", "2", "--elements", "3000", "--iters", "2",
                          "--warmup", "0", "--gloo", "none", "--switch-nice", "none",
                          "--switch-sched", "normal", "--switch-log"});
  ASSERT_EQ(none.exit_code, 0) << none.output;
  EXPECT_TRUE(none.last.at("switch_nice").is_null());
  EXPECT_EQ(none.last.at("switch_sched"), "normal");
  EXPECT_NE(none.output.find("niceness as started, sched normal)"), std::string::npos)
      << none.output;
  EXPECT_NE(none.output.find("thread(s), batch 32)"), std::string::npos) << none.output;

  // auto: -15 when the bench may lower it (root), else left alone.
  CommRun automatic = RunComm({"comm", "--workers", "2", "--elements", "3000", "--iters", "2",
                               "--warmup", "0", "--gloo", "none"});
  ASSERT_EQ(automatic.exit_code, 0) << automatic.output;
  if (geteuid() == 0) {
    EXPECT_EQ(automatic.last.at("switch_nice"), -15);
  } else {
    EXPECT_TRUE(automatic.last.at("switch_nice").is_null());
  }

  CommRun bad_sched = RunComm({"comm", "--switch-sched", "fifo"});
  EXPECT_EQ(bad_sched.exit_code, 2);
  EXPECT_NE(bad_sched.output.find("--switch-sched"), std::string::npos) << bad_sched.output;

  CommRun bad = RunComm({"comm", "--switch-nice", "25"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("--switch-nice '25': expected a niceness -20..19, none or auto"),
            std::string::npos)
      << bad.output;
}

TEST(CommBenchTest, RefusesAnUnknownAlgorithmNamingTheChoices) {
  CommRun r = RunComm({"comm", "--gloo", "default,fastest"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown Gloo algorithm 'fastest': expected one of default, "
                          "halving-doubling, bcube, ring, ring-chunked"),
            std::string::npos)
      << r.output;
}

TEST(CommBenchTest, LeavesOutGloosBrokenBcubeAndRefusesItWhenAsked) {
  // Gloo's bcube reads past its buffers and returns wrong sums for 3 workers.
  CommRun all = RunComm({"comm", "--workers", "3", "--elements", "3000", "--iters", "2",
                         "--warmup", "0", "--gloo", "all"});
  ASSERT_EQ(all.exit_code, 0) << all.output;
  EXPECT_FALSE(all.last.at("gloo_each_ms").contains("bcube"));
  EXPECT_TRUE(all.last.at("gloo_each_ms").contains("ring-chunked"));
  CommRun asked = RunComm({"comm", "--workers", "4", "--gloo", "default,bcube"});
  EXPECT_EQ(asked.exit_code, 2);
  EXPECT_NE(asked.output.find("bcube reads past the end"), std::string::npos) << asked.output;
}

TEST(CommSummaryTest, AnIterationTakesItsSlowestRanksTimeAndTheReportGivesMedians) {
  CommPlan plan;
  plan.algorithms = {collective::GlooAlgorithm::kDefault};
  CommRankReport a, b;
  a.serene_s = {0.001, 0.005, 0.003};
  b.serene_s = {0.002, 0.001, 0.004};  // slowest per iteration: 2, 5, 4 ms
  a.gloo_s = {{0.010, 0.010, 0.030}};
  b.gloo_s = {{0.020, 0.010, 0.010}};  // slowest: 20, 10, 30 ms
  // CPU: an iteration costs the sum over ranks (3, 9, 1 ms for Serene).
  a.serene_cpu_s = {0.001, 0.004, 0.0005};
  b.serene_cpu_s = {0.002, 0.005, 0.0005};
  a.gloo_cpu_s = {{0.010, 0.002, 0.004}};
  b.gloo_cpu_s = {{0.010, 0.002, 0.004}};  // 20, 4, 8 ms
  auto s = SummarizeComm(plan, {a, b});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].name, "serene");
  EXPECT_DOUBLE_EQ(s[0].median_ms, 4.0);
  EXPECT_DOUBLE_EQ(s[0].p10_ms, 2.0);
  EXPECT_DOUBLE_EQ(s[0].p90_ms, 5.0);
  EXPECT_DOUBLE_EQ(s[0].cpu_ms, 3.0);
  EXPECT_EQ(s[1].name, "gloo default");
  EXPECT_DOUBLE_EQ(s[1].median_ms, 20.0);
  EXPECT_DOUBLE_EQ(s[1].cpu_ms, 8.0);
}

}  // namespace
}  // namespace serene::loadgen
