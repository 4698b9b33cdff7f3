#include "sim/sim_settings.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "experiment/scenario.h"

namespace serene::sim {
namespace {

TEST(SimSettingsTest, DefaultsAndEveryKey) {
  auto s = SimSettingsFromTable({}, "t");
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->compute_s.has_value());  // auto: measured
  EXPECT_EQ(s->straggler_base, StragglerBase::kCompute);
  EXPECT_TRUE(s->seeds.empty());
  EXPECT_EQ(s->switch_service_s, 0);  // a hardware pipeline: no queue
  s = SimSettingsFromTable({{"link", "latency=1ms,gbps=1"},
                            {"switch_us", "12.5"},
                            {"compute_ms", "6.5"},
                            {"jitter", "0"},
                            {"eval_ms", "40"},
                            {"straggler_base", "iteration"},
                            {"timing_only", "true"},
                            {"seeds", "3,1,2"},
                            {"max_virtual_s", "60"}},
                           "t");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_DOUBLE_EQ(s->link.latency_s, 1e-3);
  EXPECT_DOUBLE_EQ(s->switch_service_s, 12.5e-6);
  EXPECT_DOUBLE_EQ(*s->compute_s, 0.0065);
  EXPECT_EQ(s->jitter, 0);
  EXPECT_DOUBLE_EQ(s->eval_s, 0.04);
  EXPECT_EQ(s->straggler_base, StragglerBase::kIteration);
  EXPECT_TRUE(s->timing_only);
  EXPECT_EQ(s->seeds, (std::vector<uint64_t>{3, 1, 2}));
  EXPECT_EQ(s->max_virtual_s, 60);
  SimSettings w;
  ASSERT_TRUE(SetSimSetting("straggler_base", "wall_iteration", "x", &w).ok());
  EXPECT_EQ(w.straggler_base, StragglerBase::kWallIteration);
  EXPECT_EQ(StragglerBaseName(w.straggler_base), "wall_iteration");
}

TEST(SimSettingsTest, BadValuesAreRefusedNamingWhereAndWhat) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"compute_ms", "0"},    {"compute_ms", "soon"}, {"jitter", "1"},   {"straggler_base", "wall"},
      {"timing_only", "yes"}, {"seeds", "1,,2"},      {"seeds", "2,2"},  {"max_virtual_s", "-1"},
      {"link", "gbps=0"},     {"speed", "1"},         {"eval_ms", "-1"}, {"eval_ms", "x"},
      {"switch_us", "-1"},    {"switch_us", "fast"}};
  for (const auto& [key, value] : bad) {
    SimSettings s;
    Status st = SetSimSetting(key, value, "f.toml: [sim] " + key, &s);
    ASSERT_FALSE(st.ok()) << key << "=" << value;
    EXPECT_NE(st.message().find("f.toml: [sim] " + key), std::string::npos) << st.message();
  }
  SimSettings s;
  EXPECT_NE(SetSimSetting("speed", "1", "x", &s).message().find("compute_ms"), std::string::npos);
}

// Every shipped scenario's [sim] table is one serene-sim takes, and it
// survives the TOML round trip.
TEST(SimSettingsTest, ShippedScenariosHaveValidSimTables) {
  const std::filesystem::path dir = std::filesystem::path(SERENE_SOURCE_DIR) / "experiments";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".toml") continue;
    SCOPED_TRACE(entry.path().string());
    auto scenario = experiment::LoadScenarioFile(entry.path().string());
    ASSERT_TRUE(scenario.ok()) << scenario.status().message();
    auto s = SimSettingsFromTable(scenario->sim, entry.path().string());
    EXPECT_TRUE(s.ok()) << s.status().message();
    auto again = experiment::ParseScenarioToml(experiment::ScenarioToToml(*scenario), "round trip");
    ASSERT_TRUE(again.ok()) << again.status().message();
    EXPECT_EQ(again->sim, scenario->sim);
  }
}

}  // namespace
}  // namespace serene::sim
