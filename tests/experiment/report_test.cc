// The report's numbers from hand-made metrics, its text/CSV/JSON/Markdown
// forms, and reading metrics JSON back.
#include "experiment/report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "experiment/metrics_reader.h"

namespace serene::experiment {
namespace {

using train::RunMetrics;
using train::StopReason;

// Rank `rank` of `n`, stopped at `jct` seconds after `iterations` with
// `wait` seconds of waiting.
RunMetrics Rank(int rank, int n, double jct, int64_t iterations, double wait) {
  RunMetrics m;
  m.backend = "serene";
  m.rank = rank;
  m.world_size = n;
  m.model = "mlp";
  m.iterations = iterations;
  m.job_completion_s = jct;
  m.wait_s = wait;
  m.barrier_wait_s = wait / 2;
  m.compute_s = 1.0 + rank;
  m.straggler_sleep_s = 0.25;
  m.slowed_iterations = 3;
  m.stop_reason = StopReason::kFinishedByPeer;
  return m;
}

// A 4-rank run where rank 0 evaluated and reached the target at 9.5 s.
std::vector<RunMetrics> FourRanks(double scale) {
  std::vector<RunMetrics> ranks;
  for (int r = 0; r < 4; ++r) {
    ranks.push_back(Rank(r, 4, scale * (10.0 - 0.1 * r), 100 + 2 * r, scale * (1.0 + r)));
  }
  ranks[0].evaluates = true;
  ranks[0].stop_reason = StopReason::kTargetReached;
  ranks[0].target_reached_s = scale * 9.5;
  ranks[0].final_accuracy = 0.8412;
  ranks[0].timeline = {{0, 0.0, train::kNaN, 0.17, 2.3}, {50, scale * 9.5, 0.4, 0.8412, 0.45}};
  return ranks;
}

TEST(ReportTest, SummarizeReducesTheRanks) {
  auto r = Summarize({"SYNC", BackendKind::kSerene, "sync"}, FourRanks(1.0));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->status.ok());
  EXPECT_EQ(r->workers, 4);
  EXPECT_DOUBLE_EQ(r->jct_s, 10.0);            // max over ranks
  EXPECT_DOUBLE_EQ(r->target_reached_s, 9.5);  // the evaluating rank's
  EXPECT_DOUBLE_EQ(r->wait_total_s, 1 + 2 + 3 + 4);
  EXPECT_DOUBLE_EQ(r->wait_mean_s, 2.5);
  EXPECT_DOUBLE_EQ(r->barrier_wait_total_s, 5.0);
  EXPECT_DOUBLE_EQ(r->compute_mean_s, 2.5);
  EXPECT_DOUBLE_EQ(r->straggler_sleep_total_s, 1.0);
  EXPECT_EQ(r->slowed_iterations, 12);
  EXPECT_EQ(r->iterations_rank0, 100);
  EXPECT_DOUBLE_EQ(r->iterations_mean, 103.0);
  EXPECT_EQ(r->evaluating_rank, 0);
  EXPECT_DOUBLE_EQ(r->final_accuracy, 0.8412);
  EXPECT_EQ(r->stop_reason, "target_reached");
  EXPECT_EQ(r->timeline.size(), 2u);
  EXPECT_EQ(r->ranks.size(), 4u);
  // Per iteration, over the 412 iterations of all ranks: compute 10 s and
  // communication 10 s in all; a step is compute + 1 s of sleep + wait.
  EXPECT_DOUBLE_EQ(r->compute_per_iteration_s, 10.0 / 412);
  EXPECT_DOUBLE_EQ(r->comm_per_iteration_s, 10.0 / 412);
  EXPECT_DOUBLE_EQ(r->comm_share_pct, 100.0 * 10 / 21);
}

TEST(ReportTest, PerIterationNumbersNeedIterations) {
  auto ranks = FourRanks(1.0);
  for (RunMetrics& m : ranks) {
    m.iterations = 0;
    m.compute_s = m.wait_s = m.straggler_sleep_s = 0;
  }
  auto r = Summarize({"SYNC", BackendKind::kSerene, "sync"}, ranks);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(std::isnan(r->compute_per_iteration_s));
  EXPECT_TRUE(std::isnan(r->comm_per_iteration_s));
  EXPECT_TRUE(std::isnan(r->comm_share_pct));
}

TEST(ReportTest, GlooRunsNameTheirAlgorithm) {
  std::vector<RunSummary> runs;
  runs.push_back(*Summarize({"SYNC", BackendKind::kSerene, "sync"}, FourRanks(1.0)));
  runs.push_back(*Summarize({"Gloo", BackendKind::kGloo, ""}, FourRanks(1.2)));
  RunSpec hd{"Gloo(halving-doubling)", BackendKind::kGloo, ""};
  hd.gloo_algorithm = collective::GlooAlgorithm::kHalvingDoubling;
  runs.push_back(*Summarize(hd, FourRanks(0.8)));
  ComputeRatios(&runs);

  const std::string md = ReportMarkdown(DefaultScenario(), runs);
  EXPECT_NE(md.find("| | SYNC | Gloo | Gloo(halving-doubling) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| policy | sync | allreduce | halving-doubling allreduce |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| compute per iteration (ms) | 24.27 | 24.27 | 24.27 |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| communication per iteration (ms) | 24.27 | 29.13 | 19.42 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| &nbsp;&nbsp;% of a step | 47.6 |"), std::string::npos) << md;
  EXPECT_NE(FormatTable(runs).find("communication per iteration (ms)"), std::string::npos);

  const auto j = nlohmann::json::parse(ReportJson(DefaultScenario(), runs));
  EXPECT_TRUE(j["runs"][0]["gloo_algorithm"].is_null());
  EXPECT_EQ(j["runs"][1]["gloo_algorithm"], "default");
  EXPECT_EQ(j["runs"][2]["gloo_algorithm"], "halving-doubling");
  EXPECT_EQ(j["runs"][2]["policy"], "halving-doubling allreduce");
  EXPECT_DOUBLE_EQ(j["runs"][0]["comm_share_pct"].get<double>(), 100.0 * 10 / 21);
  EXPECT_DOUBLE_EQ(j["runs"][2]["comm_per_iteration_s"].get<double>(), 8.0 / 412);

  const std::string csv = ReportCsv(runs);
  EXPECT_NE(csv.find("compute_mean_s,compute_per_iteration_s,comm_per_iteration_s,comm_share_pct,"),
            std::string::npos)
      << csv;
  EXPECT_NE(csv.find("Gloo(halving-doubling),gloo,halving-doubling allreduce,true,"),
            std::string::npos)
      << csv;
}

TEST(ReportTest, TheEvaluatingRankNeedNotBeRankZero) {
  auto ranks = FourRanks(1.0);
  ranks[0].evaluates = false;
  ranks[2].evaluates = true;
  ranks[2].final_accuracy = 0.5;
  ranks[2].stop_reason = StopReason::kStepLimit;
  auto r = Summarize({"SYNC", BackendKind::kSerene, "sync"}, ranks);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->evaluating_rank, 2);
  EXPECT_DOUBLE_EQ(r->final_accuracy, 0.5);
  EXPECT_EQ(r->stop_reason, "step_limit");
  EXPECT_TRUE(std::isnan(r->target_reached_s));
}

TEST(ReportTest, SummarizeRefusesIncompleteRuns) {
  EXPECT_FALSE(Summarize({"X", BackendKind::kSerene, "sync"}, {}).ok());
  auto ranks = FourRanks(1.0);
  ranks[3].rank = 2;
  auto r = Summarize({"X", BackendKind::kSerene, "sync"}, ranks);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("expected rank 3 of 4"), std::string::npos);
  ranks = FourRanks(1.0);
  ranks.pop_back();  // world_size 4, 3 files
  EXPECT_FALSE(Summarize({"X", BackendKind::kSerene, "sync"}, ranks).ok());
}

std::vector<RunSummary> ThreeRuns() {
  std::vector<RunSummary> runs;
  runs.push_back(*Summarize({"SYNC", BackendKind::kSerene, "sync"}, FourRanks(1.0)));
  runs.push_back(*Summarize({"SSP(10)", BackendKind::kSerene, "ssp:10"}, FourRanks(0.6)));
  runs.push_back(
      FailedRun({"Gloo", BackendKind::kGloo, ""},
                Status::Internal("rank 1 exited with code 1; the last lines:\n    boom")));
  ComputeRatios(&runs);
  return runs;
}

TEST(ReportTest, RatiosAreAgainstTheFirstRun) {
  const auto runs = ThreeRuns();
  EXPECT_DOUBLE_EQ(runs[0].jct_pct_of_baseline, 100.0);
  EXPECT_DOUBLE_EQ(runs[1].jct_pct_of_baseline, 60.0);
  EXPECT_DOUBLE_EQ(runs[1].wait_pct_of_baseline, 60.0);
  EXPECT_TRUE(std::isnan(runs[2].jct_pct_of_baseline));

  std::vector<RunSummary> failed_first = {runs[2], runs[0]};
  ComputeRatios(&failed_first);
  EXPECT_TRUE(std::isnan(failed_first[1].jct_pct_of_baseline));
}

TEST(ReportTest, TableIsAlignedWithRunsSideBySide) {
  const std::string table = FormatTable(ThreeRuns());
  std::istringstream lines(table);
  std::string header, line;
  std::getline(lines, header);
  EXPECT_NE(header.find("SYNC"), std::string::npos);
  EXPECT_LT(header.find("SYNC"), header.find("SSP(10)"));
  EXPECT_LT(header.find("SSP(10)"), header.find("Gloo"));
  int rows = 0;
  while (std::getline(lines, line) && !line.empty()) {
    EXPECT_EQ(line.size(), header.size()) << "misaligned: '" << line << "'";
    ++rows;
  }
  EXPECT_GE(rows, 12);
  EXPECT_NE(table.find("job completion time (s)"), std::string::npos);
  EXPECT_NE(table.find("10.00"), std::string::npos);  // SYNC's JCT
  EXPECT_NE(table.find("60.0"), std::string::npos);   // SSP's % of SYNC
  EXPECT_NE(table.find("% of SYNC"), std::string::npos);
  EXPECT_NE(table.find("0.8412"), std::string::npos);
  EXPECT_NE(table.find("100 / 103.0"), std::string::npos);
  EXPECT_NE(table.find("FAILED"), std::string::npos);
  EXPECT_NE(table.find("Gloo FAILED: rank 1 exited with code 1"), std::string::npos);
}

TEST(ReportTest, JsonCsvAndMarkdown) {
  const auto runs = ThreeRuns();
  const auto j = nlohmann::json::parse(ReportJson(DefaultScenario(), runs));
  EXPECT_EQ(j["baseline"], "SYNC");
  EXPECT_EQ(j["scenario"]["workers"], 4);
  EXPECT_EQ(j["scenario"]["parameters"], 79510);
  ASSERT_EQ(j["runs"].size(), 3u);
  EXPECT_EQ(j["runs"][0]["label"], "SYNC");
  EXPECT_EQ(j["runs"][0]["ok"], true);
  EXPECT_DOUBLE_EQ(j["runs"][0]["job_completion_s"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(j["runs"][1]["jct_pct_of_baseline"].get<double>(), 60.0);
  EXPECT_EQ(j["runs"][0]["ranks"].size(), 4u);
  EXPECT_EQ(j["runs"][0]["timeline"].size(), 2u);
  EXPECT_TRUE(j["runs"][0]["timeline"][0]["train_loss"].is_null());  // NaN
  EXPECT_EQ(j["runs"][2]["ok"], false);
  EXPECT_TRUE(j["runs"][2]["job_completion_s"].is_null());
  EXPECT_NE(j["runs"][2]["error"].get<std::string>().find("boom"), std::string::npos);

  std::istringstream csv(ReportCsv(runs));
  std::string header, row;
  std::getline(csv, header);
  EXPECT_EQ(header.rfind("label,backend,policy,ok,job_completion_s,", 0), 0u);
  const auto commas = [](const std::string& s) { return std::count(s.begin(), s.end(), ','); };
  int rows = 0;
  while (std::getline(csv, row)) {
    if (row.find('"') == std::string::npos) {
      EXPECT_EQ(commas(row), commas(header)) << row;
    }
    ++rows;
  }
  EXPECT_EQ(rows, 3);  // the failed run's message is one quoted cell, newlines flattened

  const std::string md = ReportMarkdown(DefaultScenario(), runs);
  EXPECT_NE(md.find("| | SYNC | SSP(10) | Gloo |"), std::string::npos) << md;
  EXPECT_NE(md.find("| job completion time (s) | 10.00 | 6.00 | FAILED |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("slow_worker"), std::string::npos);
}

// SYNC, then a dynamic run (policies/adaptive.lua) that changed its rule twice.
std::vector<RunSummary> WithADynamicRun() {
  std::vector<RunSummary> runs;
  runs.push_back(*Summarize({"SYNC", BackendKind::kSerene, "sync"}, FourRanks(1.0)));
  runs.push_back(
      *Summarize({"ADAPTIVE", BackendKind::kSerene, "policies/adaptive.lua", {{"max_w", "32"}}},
                 FourRanks(0.7)));
  runs[1].policy_changes = {{2.1, 1700000000000, 84, 85, "ssp:6", 1},
                            {9.8, 1700000007700, 398, 400, "ssp:3", 2}};
  ComputeRatios(&runs);
  return runs;
}

TEST(ReportTest, DynamicRunsListTheirPolicyChanges) {
  const auto runs = WithADynamicRun();
  EXPECT_FALSE(IsDynamic(runs[0]));
  EXPECT_TRUE(IsDynamic(runs[1]));
  EXPECT_EQ(PolicyChangesText(runs[1]), "2.1 s clock 85 → ssp:6; 9.8 s clock 400 → ssp:3");
  RunSummary early = runs[1];
  early.policy_changes[0].seconds = -0.4;  // installed before the ranks' clock started
  early.policy_changes.pop_back();
  EXPECT_EQ(PolicyChangesText(early), "before training, clock 85 → ssp:6");
  early.policy_changes.clear();
  EXPECT_EQ(PolicyChangesText(early), "none (sync throughout)");

  const std::string table = FormatTable(runs);
  std::istringstream lines(table);
  std::string header, line;
  std::getline(lines, header);
  bool has_row = false;
  while (std::getline(lines, line) && !line.empty()) {
    EXPECT_EQ(line.size(), header.size()) << "misaligned: '" << line << "'";
    if (line.rfind("policy changes", 0) == 0) {
      has_row = true;
      EXPECT_EQ(line.back(), '2') << line;                     // ADAPTIVE's count
      EXPECT_NE(line.find(" - "), std::string::npos) << line;  // SYNC: not dynamic
    }
    if (line.rfind("policy ", 0) == 0 && line.rfind("policy changes", 0) != 0) {
      EXPECT_NE(line.find("adaptive.lua"), std::string::npos) << line;
    }
  }
  EXPECT_TRUE(has_row) << table;
  EXPECT_NE(table.find("  ADAPTIVE: 2.1 s clock 85 → ssp:6; 9.8 s clock 400 → ssp:3\n"),
            std::string::npos)
      << table;

  const std::string md = ReportMarkdown(DefaultScenario(), runs);
  EXPECT_NE(md.find("thread(s) per rank. Policy scripts' controllers read the job's telemetry "
                    "every 250 ms.\n\n| |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| policy changes | - | 2 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| policy | sync | adaptive.lua |"), std::string::npos) << md;
  EXPECT_NE(md.find("- ADAPTIVE: 2.1 s clock 85 → ssp:6; 9.8 s clock 400 → ssp:3\n"),
            std::string::npos)
      << md;

  const auto j = nlohmann::json::parse(ReportJson(DefaultScenario(), runs));
  EXPECT_EQ(j["scenario"]["control_period_ms"], 250);
  EXPECT_EQ(j["runs"][0]["dynamic"], false);
  EXPECT_TRUE(j["runs"][0]["policy_changes"].empty());
  const auto& dynamic = j["runs"][1];
  EXPECT_EQ(dynamic["dynamic"], true);
  EXPECT_EQ(dynamic["policy"], "policies/adaptive.lua");
  EXPECT_EQ(dynamic["params"]["max_w"], "32");
  ASSERT_EQ(dynamic["policy_changes"].size(), 2u);
  EXPECT_DOUBLE_EQ(dynamic["policy_changes"][0]["seconds"].get<double>(), 2.1);
  EXPECT_EQ(dynamic["policy_changes"][0]["effective_clock"], 85);
  EXPECT_EQ(dynamic["policy_changes"][0]["high"], 84);
  EXPECT_EQ(dynamic["policy_changes"][0]["rule"], "ssp:6");
  EXPECT_EQ(dynamic["policy_changes"][0]["epoch"], 1);
  EXPECT_EQ(dynamic["policy_changes"][1]["unix_ms"], 1700000007700u);

  std::istringstream csv(ReportCsv(runs));
  std::string csv_header, row;
  std::getline(csv, csv_header);
  EXPECT_NE(csv_header.find(",stop_reason,policy_changes,wall_s,"), std::string::npos);
  std::getline(csv, row);
  std::getline(csv, row);
  EXPECT_NE(row.find(",2,"), std::string::npos) << row;
}

TEST(MetricsReaderTest, ReadsWhatTheTrainerWrites) {
  RunMetrics m = FourRanks(1.0)[0];
  m.seed = 7;
  m.straggler = "slow_worker:0.15:0.5:2";
  auto back = ParseMetricsJson(train::MetricsToJson(m), "rank0.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->rank, 0);
  EXPECT_EQ(back->world_size, 4);
  EXPECT_EQ(back->seed, 7u);
  EXPECT_EQ(back->straggler, m.straggler);
  EXPECT_TRUE(back->evaluates);
  EXPECT_EQ(back->stop_reason, StopReason::kTargetReached);
  EXPECT_EQ(back->iterations, m.iterations);
  EXPECT_DOUBLE_EQ(back->job_completion_s, m.job_completion_s);
  EXPECT_DOUBLE_EQ(back->target_reached_s, 9.5);
  EXPECT_DOUBLE_EQ(back->wait_s, m.wait_s);
  EXPECT_DOUBLE_EQ(back->final_accuracy, 0.8412);
  ASSERT_EQ(back->timeline.size(), 2u);
  EXPECT_TRUE(std::isnan(back->timeline[0].train_loss));
  EXPECT_DOUBLE_EQ(back->timeline[1].accuracy, 0.8412);

  RunMetrics other = FourRanks(1.0)[1];  // not evaluating: nulls
  auto b2 = ParseMetricsJson(train::MetricsToJson(other), "rank1.json");
  ASSERT_TRUE(b2.ok());
  EXPECT_TRUE(std::isnan(b2->final_accuracy));
  EXPECT_TRUE(std::isnan(b2->target_reached_s));
}

TEST(MetricsReaderTest, RefusesMalformedDocuments) {
  const std::pair<const char*, const char*> cases[] = {
      {"{", "r.json: not valid JSON"},
      {"[]", "not a JSON object"},
      {R"({"backend":"gloo","rank":0,"world_size":1,"iterations":1,"job_completion_s":1,
           "wait_s":0})",
       "missing field 'stop_reason'"},
      {R"({"backend":"gloo","rank":"zero","world_size":1,"stop_reason":"step_limit",
           "iterations":1,"job_completion_s":1,"wait_s":0})",
       "field 'rank' is not an integer"},
      {R"({"backend":"gloo","rank":0,"world_size":1,"stop_reason":"bored","iterations":1,
           "job_completion_s":1,"wait_s":0})",
       "unknown stop reason 'bored'"},
      {R"({"backend":"gloo","rank":0,"world_size":1,"stop_reason":"step_limit","iterations":1,
           "job_completion_s":1,"wait_s":0,"timeline":[{"step":1}]})",
       "timeline[0]: missing field 'time_s'"},
  };
  for (const auto& [text, message] : cases) {
    SCOPED_TRACE(text);
    auto m = ParseMetricsJson(text, "r.json");
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find(message), std::string::npos) << m.status().message();
  }
  EXPECT_EQ(ReadMetricsFile("/nonexistent/rank0.json").status().code(), Status::Code::kNotFound);
}

}  // namespace
}  // namespace serene::experiment
