// The gnuplot script of the accuracy plot (pure) and the PATH lookup.
#include "experiment/plot.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace serene::experiment {
namespace {

RunSummary WithTimeline(const std::string& label, BackendKind backend) {
  RunSummary r;
  r.spec = {label, backend, backend == BackendKind::kGloo ? "" : "sync"};
  r.timeline = {{0, 0.0, train::kNaN, 0.17, 2.3}, {25, 1.5, 0.9, 0.71, 0.8}};
  return r;
}

TEST(PlotTest, ScriptPlotsEveryRunWithATimelineAndTheTarget) {
  std::vector<RunSummary> runs = {
      WithTimeline("SYNC", BackendKind::kSerene),
      FailedRun({"SSP(10)", BackendKind::kSerene, "ssp:10"}, Status::Internal("boom")),
      WithTimeline("Gloo", BackendKind::kGloo)};
  runs.push_back(WithTimeline("no accuracy", BackendKind::kSerene));
  for (auto& p : runs.back().timeline) p.accuracy = train::kNaN;  // a non-evaluating rank
  const std::string script = GnuplotScript(DefaultScenario(), runs, "accuracy.png");
  EXPECT_NE(script.find("set output 'accuracy.png'"), std::string::npos) << script;
  EXPECT_NE(script.find("'plot/1-sync.dat' using 1:2"), std::string::npos) << script;
  EXPECT_NE(script.find("title 'SYNC'"), std::string::npos);
  EXPECT_EQ(script.find("ssp-10"), std::string::npos);  // failed: not plotted
  EXPECT_NE(script.find("'plot/3-gloo.dat'"), std::string::npos);
  EXPECT_EQ(script.find("no-accuracy"), std::string::npos);
  EXPECT_NE(script.find("0.84 with lines"), std::string::npos);  // the target line
}

TEST(PlotTest, DynamicRunsHaveTheirPolicyChangesMarked) {
  std::vector<RunSummary> runs = {WithTimeline("SYNC", BackendKind::kSerene),
                                  WithTimeline("ADAPTIVE", BackendKind::kSerene)};
  runs[1].spec.policy = "policies/adaptive.lua";
  runs[1].policy_changes = {{-0.3, 0, 0, 5, "ssp:10", 1}, {1.25, 0, 84, 85, "ssp:6", 2}};
  const std::string script = GnuplotScript(DefaultScenario(), runs, "accuracy.png");
  // The second curve is linetype 2; its marks share that colour.
  EXPECT_NE(script.find("'plot/2-adaptive.dat' using 1:2 with linespoints linetype 2"),
            std::string::npos)
      << script;
  // A change before training started is drawn at 0.
  EXPECT_NE(
      script.find(
          "set arrow from 0, graph 0 to 0, graph 1 nohead linetype 2 linewidth 1.5 dashtype 3"),
      std::string::npos)
      << script;
  EXPECT_NE(script.find("set label 'ssp:10 from clock 5' at 0, graph"), std::string::npos);
  EXPECT_NE(script.find("set arrow from 1.25, graph 0 to 1.25, graph 1"), std::string::npos);
  EXPECT_NE(script.find("set label 'ssp:6 from clock 85' at 1.25, graph"), std::string::npos);
  EXPECT_NE(script.find("textcolor lt 2"), std::string::npos);
  EXPECT_NE(script.find("keyentry with lines linetype 2 linewidth 1.5 dashtype 3 title 'ADAPTIVE: "
                        "policy changes'"),
            std::string::npos)
      << script;
  // The marks are set before the plot command.
  EXPECT_LT(script.find("set arrow"), script.find("plot '"));
  EXPECT_EQ(GnuplotScript(DefaultScenario(), {runs[0]}, "a.png").find("set arrow"),
            std::string::npos);
}

TEST(PlotTest, FindOnPath) {
  EXPECT_TRUE(FindOnPath("sh").has_value());
  EXPECT_FALSE(FindOnPath("surely-not-a-command-serene").has_value());
}

}  // namespace
}  // namespace serene::experiment
