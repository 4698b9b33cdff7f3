// Scenario: the embedded default, overrides, run lists, TOML files and the
// checks that refuse bad values with a message naming them.
#include "experiment/scenario.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace serene::experiment {
namespace {

// The error message of `s`, or "OK".
std::string Message(const Status& s) { return s.ok() ? "OK" : s.message(); }

TEST(ScenarioTest, DefaultIsTheDemo) {
  const Scenario s = DefaultScenario();
  EXPECT_EQ(s.workers, 4);
  EXPECT_EQ(s.model, train::ModelKind::kMlp);
  EXPECT_EQ(s.steps, 3000);
  EXPECT_DOUBLE_EQ(s.target_accuracy, 0.84);
  EXPECT_EQ(s.straggler, "slow_worker");
  EXPECT_EQ(s.straggler_ranks, "all");
  EXPECT_EQ(s.row, 4096u);
  EXPECT_EQ(s.threads, 1);
  EXPECT_DOUBLE_EQ(s.learning_rate, 0.04);
  EXPECT_EQ(s.batch, 256);
  EXPECT_EQ(s.control_period_ms, 250);
  ASSERT_EQ(s.runs.size(), 4u);
  EXPECT_EQ(s.runs[0].label, "SYNC");
  EXPECT_EQ(s.runs[0].policy, "sync");
  EXPECT_EQ(s.runs[1].label, "SSP(10)");
  EXPECT_EQ(s.runs[1].policy, "ssp:10");
  EXPECT_EQ(s.runs[2].label, "ADAPTIVE");
  EXPECT_EQ(s.runs[2].backend, BackendKind::kSerene);
  EXPECT_EQ(s.runs[2].policy, "policies/adaptive.lua");
  EXPECT_TRUE(s.runs[2].params.empty());
  EXPECT_EQ(s.runs[3].label, "Gloo");
  EXPECT_EQ(s.runs[3].backend, BackendKind::kGloo);
  // Validation loads policies/adaptive.lua: found from the test's working
  // directory (the build tree) through the source tree.
  EXPECT_TRUE(ValidateScenario(s).ok()) << Message(ValidateScenario(s));
}

TEST(ScenarioTest, QuickShrinksTheJobAndKeepsTheRuns) {
  Scenario s = DefaultScenario();
  ApplyQuick(&s);
  EXPECT_EQ(s.workers, 2);
  EXPECT_LE(s.steps, 50);
  EXPECT_EQ(s.target_accuracy, 0);
  EXPECT_EQ(s.runs.size(), 4u);
  EXPECT_EQ(s.runs[2].policy, "policies/adaptive.lua");
  EXPECT_TRUE(ValidateScenario(s).ok());
}

TEST(ScenarioTest, SetValueAcceptsGoodValues) {
  Scenario s = DefaultScenario();
  EXPECT_TRUE(SetScenarioValue("workers", "8", "--workers", &s).ok());
  EXPECT_TRUE(SetScenarioValue("model", "cnn", "--model", &s).ok());
  EXPECT_TRUE(SetScenarioValue("target_accuracy", "0.87", "--target", &s).ok());
  EXPECT_TRUE(SetScenarioValue("seed", "0x10", "--seed", &s).ok());
  EXPECT_TRUE(SetScenarioValue("straggler", "heterogeneous:3", "--straggler", &s).ok());
  EXPECT_TRUE(SetScenarioValue("straggler_ranks", "1,3", "--straggler-ranks", &s).ok());
  EXPECT_TRUE(SetScenarioValue("row", "256", "--row", &s).ok());
  EXPECT_TRUE(SetScenarioValue("timeout", "90.5", "--timeout", &s).ok());
  EXPECT_TRUE(SetScenarioValue("momentum", "0.9", "--momentum", &s).ok());
  EXPECT_TRUE(SetScenarioValue("compute_floor_ms", "20", "--compute-floor", &s).ok());
  EXPECT_EQ(s.workers, 8);
  EXPECT_DOUBLE_EQ(s.compute_floor_ms, 20);
  EXPECT_DOUBLE_EQ(s.momentum, 0.9);
  EXPECT_EQ(s.model, train::ModelKind::kCnn);
  EXPECT_DOUBLE_EQ(s.target_accuracy, 0.87);
  EXPECT_EQ(s.seed, 16u);
  EXPECT_EQ(s.row, 256u);
  EXPECT_DOUBLE_EQ(s.timeout_s, 90.5);
  EXPECT_TRUE(ValidateScenario(s).ok());
}

TEST(ScenarioTest, SetValueRefusesBadValuesNamingThem) {
  struct Case {
    const char* key;
    const char* value;
    const char* message;
  };
  const Case cases[] = {
      {"workers", "0", "--x '0': expected an integer 1..1024"},
      {"workers", "2000", "1..1024"},
      {"workers", "four", "--x 'four'"},
      {"model", "resnet", "mlp or cnn"},
      {"steps", "0", "--x '0'"},
      {"target_accuracy", "1.5", "[0, 1]"},
      {"target_accuracy", "nan", "[0, 1]"},
      {"lr", "-0.1", "positive learning rate"},
      {"momentum", "1", "a momentum in [0, 1)"},
      {"momentum", "-0.5", "a momentum in [0, 1)"},
      {"compute_floor_ms", "-1", "milliseconds in [0, 60000]"},
      {"compute_floor_ms", "nan", "milliseconds in [0, 60000]"},
      {"batch", "0", "1..60000"},
      {"eval_samples", "20000", "0..10000"},
      {"straggler", "slow_worker:2", "probability"},
      {"straggler", "lazy", "--x"},
      {"row", "20000", "1..16368"},
      {"threads", "0", "1..256"},
      {"timeout", "0", "positive number of seconds"},
      {"seed", "-1", "64-bit unsigned"},
      {"name", "!!", "letters or digits"},
      {"wrokers", "4", "unknown setting 'wrokers'"},
      {"control_period_ms", "5", "--x '5': expected an integer 10..60000"},
      {"control_period_ms", "60001", "10..60000"},
      {"switch_fault", "drop=2", "--x: bad fault spec 'drop=2': drop=2 is not a probability"},
      {"switch_fault", "loss=0.1", "unknown field 'loss'"},
      {"switch_fault", "delay=20ms..10ms", "MIN <= MAX"},
      {"switch_fault", "dir=up", "direction must be rx, tx or both"},
      {"group", "yes", "--x 'yes': expected on or off"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.key) + "=" + c.value);
    Scenario s = DefaultScenario();
    const Status st = SetScenarioValue(c.key, c.value, "--x", &s);
    EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
    EXPECT_NE(Message(st).find(c.message), std::string::npos) << Message(st);
  }
}

TEST(ScenarioTest, SwitchFaultIsASwitchFaultSpec) {
  Scenario s = DefaultScenario();
  EXPECT_TRUE(s.switch_fault.empty());
  EXPECT_EQ(ScenarioValueText(s, "switch_fault"), "none");
  const std::string spec = "drop=0.02,dup=0.02,reorder=0.02,delay=0..20ms,seed=3,dir=both";
  ASSERT_TRUE(SetScenarioValue("switch_fault", spec, "--switch-fault", &s).ok());
  EXPECT_EQ(s.switch_fault, spec);  // as written
  EXPECT_EQ(ScenarioValueText(s, "switch_fault"), spec);
  EXPECT_TRUE(ValidateScenario(s).ok());
  // "none", "off", "" and a spec with nothing on turn it off.
  for (const char* off : {"none", "off", "", "seed=4,dir=both"}) {
    SCOPED_TRACE(off);
    ASSERT_TRUE(SetScenarioValue("switch_fault", off, "--switch-fault", &s).ok());
    EXPECT_TRUE(s.switch_fault.empty());
  }
  auto toml = ParseScenarioToml("switch_fault = \"drop=5%,dir=tx\"\n", "f.toml");
  ASSERT_TRUE(toml.ok()) << Message(toml.status());
  EXPECT_EQ(toml->switch_fault, "drop=5%,dir=tx");
  auto bad = ParseScenarioToml("switch_fault = \"drop=high\"\n", "f.toml");
  EXPECT_NE(Message(bad.status()).find("f.toml: switch_fault: bad fault spec 'drop=high'"),
            std::string::npos)
      << Message(bad.status());
}

TEST(ScenarioTest, RunListLabelsAndDefaults) {
  auto runs = ParseRunList("serene:sync,serene:ssp:10,gloo,async,serene:quorum:3:2,serene");
  ASSERT_TRUE(runs.ok()) << Message(runs.status());
  ASSERT_EQ(runs->size(), 6u);
  EXPECT_EQ((*runs)[0].label, "SYNC");
  EXPECT_EQ((*runs)[1].label, "SSP(10)");
  EXPECT_EQ((*runs)[1].policy, "ssp:10");
  EXPECT_EQ((*runs)[2].label, "Gloo");
  EXPECT_EQ((*runs)[2].backend, BackendKind::kGloo);
  EXPECT_EQ((*runs)[2].policy, "");
  EXPECT_EQ((*runs)[3].label, "ASYNC");
  EXPECT_EQ((*runs)[3].backend, BackendKind::kSerene);
  EXPECT_EQ((*runs)[4].label, "QUORUM(3,2)");
  EXPECT_EQ((*runs)[5].label, "SYNC #2");  // repeated runs stay apart
  EXPECT_EQ((*runs)[5].policy, "sync");
}

TEST(ScenarioTest, RunListChoosesTheGlooAlgorithm) {
  auto runs = ParseRunList("serene:sync,gloo,gloo:halving-doubling,gloo:default,gloo:ring-chunked");
  ASSERT_TRUE(runs.ok()) << Message(runs.status());
  ASSERT_EQ(runs->size(), 5u);
  EXPECT_EQ((*runs)[0].gloo_algorithm, collective::GlooAlgorithm::kDefault);
  EXPECT_EQ((*runs)[1].label, "Gloo");
  EXPECT_EQ((*runs)[1].gloo_algorithm, collective::GlooAlgorithm::kDefault);
  EXPECT_EQ((*runs)[2].label, "Gloo(halving-doubling)");
  EXPECT_EQ((*runs)[2].backend, BackendKind::kGloo);
  EXPECT_EQ((*runs)[2].policy, "");
  EXPECT_EQ((*runs)[2].gloo_algorithm, collective::GlooAlgorithm::kHalvingDoubling);
  EXPECT_EQ((*runs)[3].label, "Gloo #2");  // gloo:default is plain gloo
  EXPECT_EQ((*runs)[4].label, "Gloo(ring-chunked)");
  EXPECT_EQ(Slug((*runs)[2].label), "gloo-halving-doubling");
  Scenario s = DefaultScenario();
  s.runs = *runs;
  EXPECT_TRUE(ValidateScenario(s).ok()) << Message(ValidateScenario(s));

  auto bad = ParseRunList("gloo:tree");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--runs item 'gloo:tree': gloo is a synchronous "
                                        "allreduce, it takes no policy (gloo:ALGORITHM chooses "
                                        "its allreduce algorithm: unknown Gloo algorithm 'tree': "
                                        "expected one of default, halving-doubling, bcube, ring, "
                                        "ring-chunked)"),
            std::string::npos)
      << bad.status().message();
  auto ring = ParseRunList("sync,gloo:ring");
  ASSERT_FALSE(ring.ok());
  EXPECT_NE(ring.status().message().find("--runs item 'gloo:ring': gloo: the ring allreduce does "
                                         "not keep the ranks bit-identical"),
            std::string::npos)
      << ring.status().message();
}

TEST(ScenarioTest, TomlRunsChooseTheGlooAlgorithm) {
  auto s = ParseScenarioToml(R"(
[[run]]
policy = "sync"

[[run]]
backend = "gloo"

[[run]]
backend = "gloo"
algorithm = "halving-doubling"

[[run]]
label = "chunks"
backend = "gloo"
algorithm = "ring-chunked"
)",
                             "algo.toml");
  ASSERT_TRUE(s.ok()) << Message(s.status());
  ASSERT_EQ(s->runs.size(), 4u);
  EXPECT_EQ(s->runs[1].label, "Gloo");
  EXPECT_EQ(s->runs[1].gloo_algorithm, collective::GlooAlgorithm::kDefault);
  EXPECT_EQ(s->runs[2].label, "Gloo(halving-doubling)");
  EXPECT_EQ(s->runs[2].gloo_algorithm, collective::GlooAlgorithm::kHalvingDoubling);
  EXPECT_EQ(s->runs[3].label, "chunks");
  EXPECT_EQ(s->runs[3].gloo_algorithm, collective::GlooAlgorithm::kRingChunked);
  EXPECT_TRUE(ValidateScenario(*s).ok()) << Message(ValidateScenario(*s));

  // Written back only where it is not the default, and read back the same.
  const std::string toml = ScenarioToToml(*s);
  EXPECT_NE(toml.find("backend = \"gloo\"\nalgorithm = \"halving-doubling\"\n"), std::string::npos)
      << toml;
  auto back = ParseScenarioToml(toml, "round-trip");
  ASSERT_TRUE(back.ok()) << Message(back.status());
  EXPECT_EQ(ScenarioToToml(*back), toml);
  EXPECT_EQ(back->runs[2].gloo_algorithm, collective::GlooAlgorithm::kHalvingDoubling);
  EXPECT_EQ(back->runs[1].gloo_algorithm, collective::GlooAlgorithm::kDefault);

  const std::pair<const char*, const char*> cases[] = {
      {"[[run]]\nbackend = \"gloo\"\nalgorithm = \"tree\"\n",
       "f.toml: [[run]] #1: algorithm: unknown Gloo algorithm 'tree': expected one of default, "
       "halving-doubling"},
      {"[[run]]\npolicy = \"sync\"\nalgorithm = \"ring-chunked\"\n",
       "f.toml: [[run]] #1: algorithm 'ring-chunked' applies to a gloo run only"},
      {"[[run]]\nbackend = \"gloo\"\nalgorithm = \"bcube\"\n",
       "f.toml: [[run]] #1: algorithm: gloo: the bcube allreduce is not reliable"},
      {"[[run]]\nbackend = \"gloo\"\nalgorithm = 2\n",
       "f.toml: [[run]] #1: algorithm is an integer, expected a string"},
  };
  for (const auto& [text, message] : cases) {
    SCOPED_TRACE(text);
    auto r = ParseScenarioToml(text, "f.toml");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find(message), std::string::npos) << r.status().message();
  }
  Scenario serene = DefaultScenario();
  serene.runs[0].gloo_algorithm = collective::GlooAlgorithm::kRingChunked;
  EXPECT_NE(Message(ValidateScenario(serene))
                .find("run #1 'SYNC': Gloo algorithm 'ring-chunked' applies to a gloo run only"),
            std::string::npos)
      << Message(ValidateScenario(serene));
  Scenario ring = DefaultScenario();
  ring.runs[3].gloo_algorithm = collective::GlooAlgorithm::kRing;
  EXPECT_NE(Message(ValidateScenario(ring))
                .find("run #4 'Gloo': gloo: the ring allreduce does not keep the ranks "
                      "bit-identical"),
            std::string::npos)
      << Message(ValidateScenario(ring));
}

TEST(ScenarioTest, RunListRefusesBadItems) {
  const std::pair<const char*, const char*> cases[] = {
      {"serene:ssp", "ssp needs a window"},
      {"gloo:ssp:3", "gloo is a synchronous allreduce"},
      {"serene:sync,,gloo", "empty item"},
      {"serene:window=0,quorum=2,lag=1", "named forms only"},
      {"mpi", "policy 'mpi'"},
  };
  for (const auto& [text, message] : cases) {
    SCOPED_TRACE(text);
    auto runs = ParseRunList(text);
    ASSERT_FALSE(runs.ok());
    EXPECT_NE(runs.status().message().find(message), std::string::npos) << runs.status().message();
  }
}

TEST(ScenarioTest, TomlOverridesDefaultsAndReplacesRuns) {
  auto s = ParseScenarioToml(R"(
name = "cnn-sweep"
workers = 8
model = "cnn"
steps = 8000
target_accuracy = 0.87
lr = 0.05
seed = "0x2a"
straggler = "slow_worker:0.2"
straggler_ranks = "1,3"
row = 256
timeout = 3600

[[run]]
policy = "sync"

[[run]]
label = "W=4"
policy = "ssp:4"

[[run]]
backend = "gloo"
)",
                             "sweep.toml");
  ASSERT_TRUE(s.ok()) << Message(s.status());
  EXPECT_EQ(s->name, "cnn-sweep");
  EXPECT_EQ(s->workers, 8);
  EXPECT_EQ(s->model, train::ModelKind::kCnn);
  EXPECT_EQ(s->steps, 8000);
  EXPECT_DOUBLE_EQ(s->learning_rate, 0.05);
  EXPECT_EQ(s->seed, 42u);
  EXPECT_EQ(s->straggler_ranks, "1,3");
  EXPECT_EQ(s->row, 256u);
  EXPECT_EQ(s->eval_every, 25);  // not in the file: the default
  ASSERT_EQ(s->runs.size(), 3u);
  EXPECT_EQ(s->runs[0].label, "SYNC");
  EXPECT_EQ(s->runs[1].label, "W=4");
  EXPECT_EQ(s->runs[1].policy, "ssp:4");
  EXPECT_EQ(s->runs[2].label, "Gloo");
  EXPECT_TRUE(ValidateScenario(*s).ok()) << Message(ValidateScenario(*s));
}

TEST(ScenarioTest, TomlErrorsNameTheFileAndSetting) {
  const std::pair<const char*, const char*> cases[] = {
      {"workers = 4\nwrokers = 2\n",
       "f.toml: unknown setting 'wrokers' (expected name, workers, "},
      {"wrokers = 2\n", "; a file also takes extends, [sim] and [[run]]"},
      {"workers = [4]\n", "f.toml: workers is an array"},
      {"workers = true\n", "f.toml: workers is a boolean"},
      {"workers = 0\n", "f.toml: workers '0': expected an integer 1..1024"},
      {"target_accuracy = 1.2\n", "f.toml: target_accuracy '1.2'"},
      {"workers = \n", "f.toml:1:"},
      {"[[run]]\npolicy = \"ssp\"\n", "f.toml: [[run]] #1: policy 'ssp'"},
      {"[[run]]\nbackend = \"mpi\"\n",
       "f.toml: [[run]] #1: backend 'mpi': expected serene or gloo"},
      {"[[run]]\nwindow = 3\n", "f.toml: [[run]] #1: unknown key 'window'"},
      {"[[run]]\npolicy = 3\n", "f.toml: [[run]] #1: policy is an integer, expected a string"},
      {"run = 3\n", "f.toml: run: expected [[run]] tables"},
  };
  for (const auto& [text, message] : cases) {
    SCOPED_TRACE(text);
    auto s = ParseScenarioToml(text, "f.toml");
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find(message), std::string::npos) << s.status().message();
  }
  auto missing = LoadScenarioFile("/nonexistent/scenario.toml");
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/scenario.toml"), std::string::npos);
}

TEST(ScenarioTest, ValidateRefusesInconsistentScenarios) {
  auto with = [](auto change) {
    Scenario s = DefaultScenario();
    change(&s);
    return Message(ValidateScenario(s));
  };
  EXPECT_NE(with([](Scenario* s) { s->runs.clear(); }).find("no runs"), std::string::npos);
  EXPECT_NE(with([](Scenario* s) { s->runs[1].label = "SYNC"; }).find("already used by run #1"),
            std::string::npos);
  EXPECT_NE(with([](Scenario* s) { s->runs[3].policy = "ssp:3"; }).find("synchronous allreduce"),
            std::string::npos);
  const std::string misplaced = with([](Scenario* s) { s->runs[1].params = {{"w", "3"}}; });
  EXPECT_NE(misplaced.find("run #2 'SSP(10)': params apply to a policy script (a policy ending "
                           "in .lua) only, not to policy 'ssp:10'"),
            std::string::npos)
      << misplaced;
  EXPECT_NE(with([](Scenario* s) {
              s->runs[3].params = {{"w", "3"}};
            }).find("not to a gloo run"),
            std::string::npos);
  EXPECT_NE(with([](Scenario* s) { s->runs[0].policy = "quorum:5:1"; }).find("quorum 5"),
            std::string::npos);
  EXPECT_NE(with([](Scenario* s) { s->straggler_ranks = "4"; }).find("straggler_ranks '4'"),
            std::string::npos);
  EXPECT_NE(with([](Scenario* s) { s->batch = 20000; }).find("larger than a rank's shard"),
            std::string::npos);
}

TEST(ScenarioTest, TomlRoundTrip) {
  Scenario s = DefaultScenario();
  s.name = "round \"trip\"";
  s.seed = 0xFFFFFFFFFFFFFFFFull;  // beyond TOML's integers: written as a string
  s.learning_rate = 0.1 + 0.2;
  s.control_period_ms = 100;
  s.switch_fault = "drop=0.02,dup=2%,reorder=0.02,delay=0..20ms,hold=5ms,seed=3,dir=both";
  s.runs.push_back({"QUORUM(3,1)", BackendKind::kSerene, "quorum:3:1"});
  s.runs.push_back({"EARLY SSP",
                    BackendKind::kSerene,
                    "policies/scheduled.lua",
                    {{"sync_clocks", "5"}, {"w", "4.5"}, {"note", "a \"b\""}, {"odd key", "1e3"}}});
  auto back = ParseScenarioToml(ScenarioToToml(s), "round-trip");
  ASSERT_TRUE(back.ok()) << Message(back.status()) << "\n" << ScenarioToToml(s);
  EXPECT_EQ(ScenarioToToml(*back), ScenarioToToml(s));
  EXPECT_EQ(back->seed, s.seed);
  EXPECT_EQ(back->learning_rate, s.learning_rate);
  EXPECT_EQ(back->control_period_ms, 100);
  EXPECT_EQ(back->switch_fault, s.switch_fault);
  ASSERT_EQ(back->runs.size(), 6u);
  EXPECT_EQ(back->runs[2].policy, "policies/adaptive.lua");
  EXPECT_EQ(back->runs[4].policy, "quorum:3:1");
  EXPECT_EQ(back->runs[5].label, "EARLY SSP");
  EXPECT_EQ(back->runs[5].policy, "policies/scheduled.lua");
  EXPECT_EQ(back->runs[5].params, s.runs[5].params);
  // Numbers are written as TOML numbers, other text as strings.
  EXPECT_NE(ScenarioToToml(s).find("params = { note = \"a \\\"b\\\"\", \"odd key\" = \"1e3\", "
                                   "sync_clocks = 5, w = 4.5 }"),
            std::string::npos)
      << ScenarioToToml(s);
  EXPECT_NE(ScenarioToToml(s).find("control_period_ms = 100\n"), std::string::npos);
  EXPECT_NE(ScenarioToToml(s).find("switch_fault = \"drop=0.02,dup=2%,"), std::string::npos);
  // No fault injection reads back as none.
  s.switch_fault.clear();
  EXPECT_NE(ScenarioToToml(s).find("switch_fault = \"none\"\n"), std::string::npos);
  auto clean = ParseScenarioToml(ScenarioToToml(s), "round-trip");
  ASSERT_TRUE(clean.ok()) << Message(clean.status());
  EXPECT_TRUE(clean->switch_fault.empty());
}

// A file in a fresh directory, removed with it.
class ScriptDir {
 public:
  ScriptDir()
      : path_(std::filesystem::temp_directory_path() /
              ("serene-scenario-test-" + std::to_string(getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~ScriptDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string Write(const std::string& name, const std::string& text) const {
    const auto file = path_ / name;
    std::ofstream(file) << text;
    return file.string();
  }

 private:
  std::filesystem::path path_;
};

TEST(ScenarioTest, RunListTakesPolicyScripts) {
  auto runs = ParseRunList(
      "sync,ssp:10,policies/adaptive.lua,gloo,serene:policies/scheduled.lua,policies/adaptive.lua");
  ASSERT_TRUE(runs.ok()) << Message(runs.status());
  ASSERT_EQ(runs->size(), 6u);
  EXPECT_EQ((*runs)[2].label, "ADAPTIVE");
  EXPECT_EQ((*runs)[2].backend, BackendKind::kSerene);
  EXPECT_EQ((*runs)[2].policy, "policies/adaptive.lua");
  EXPECT_TRUE((*runs)[2].params.empty());
  EXPECT_EQ((*runs)[3].label, "Gloo");
  EXPECT_EQ((*runs)[4].label, "SCHEDULED");
  EXPECT_EQ((*runs)[4].policy, "policies/scheduled.lua");
  EXPECT_EQ((*runs)[5].label, "ADAPTIVE #2");
  EXPECT_TRUE(IsPolicyScript("x.lua"));
  EXPECT_FALSE(IsPolicyScript(".lua"));
  EXPECT_FALSE(IsPolicyScript("ssp:10"));
  EXPECT_EQ(DefaultLabel(BackendKind::kSerene, "/abs/dir/my-policy.lua"), "MY-POLICY");

  Scenario s = DefaultScenario();
  s.runs = *runs;
  EXPECT_TRUE(ValidateScenario(s).ok()) << Message(ValidateScenario(s));
  auto gloo = ParseRunList("gloo:policies/adaptive.lua");
  ASSERT_FALSE(gloo.ok());
  EXPECT_NE(gloo.status().message().find("takes no policy"), std::string::npos);
}

TEST(ScenarioTest, ResolvesScriptsThroughTheSourceTree) {
  ScriptDir dir;
  const std::string absolute = dir.Write("mine.lua", "return ssp(3)\n");
  EXPECT_EQ(ResolvePolicyScript(absolute).value(), absolute);
  // From a directory without policies/, the source tree's is found.
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(std::filesystem::path(absolute).parent_path());
  auto path = ResolvePolicyScript("policies/adaptive.lua");
  auto own = ResolvePolicyScript("mine.lua");  // the current directory comes first
  std::filesystem::current_path(cwd);
  ASSERT_TRUE(path.ok()) << Message(path.status());
  EXPECT_TRUE(std::filesystem::path(*path).is_absolute()) << *path;
  EXPECT_TRUE(std::filesystem::is_regular_file(*path)) << *path;
  EXPECT_NE(path->find("/policies/adaptive.lua"), std::string::npos);
  EXPECT_EQ(own.value(), "mine.lua");
}

TEST(ScenarioTest, TomlRunWithAPolicyScriptAndParams) {
  auto s = ParseScenarioToml(R"(
control_period_ms = 500

[[run]]
policy = "policies/scheduled.lua"
params = { sync_clocks = 5, w = 4 }

[[run]]
label = "ADAPT 32"
policy = "policies/adaptive.lua"
[run.params]
max_w = 32
slow = 1.5
)",
                             "dyn.toml");
  ASSERT_TRUE(s.ok()) << Message(s.status());
  EXPECT_EQ(s->control_period_ms, 500);
  ASSERT_EQ(s->runs.size(), 2u);
  EXPECT_EQ(s->runs[0].label, "SCHEDULED");
  EXPECT_EQ(s->runs[0].policy, "policies/scheduled.lua");
  const std::map<std::string, std::string> scheduled = {{"sync_clocks", "5"}, {"w", "4"}};
  EXPECT_EQ(s->runs[0].params, scheduled);
  EXPECT_EQ(s->runs[1].label, "ADAPT 32");
  const std::map<std::string, std::string> adaptive = {{"max_w", "32"}, {"slow", "1.5"}};
  EXPECT_EQ(s->runs[1].params, adaptive);
  EXPECT_TRUE(ValidateScenario(*s).ok()) << Message(ValidateScenario(*s));

  const std::pair<const char*, const char*> bad[] = {
      {"[[run]]\npolicy = \"ssp:4\"\nparams = { w = 4 }\n",
       "f.toml: [[run]] #1: params apply to a policy script"},
      {"[[run]]\nbackend = \"gloo\"\nparams = { w = 4 }\n",
       "params apply to a policy script (a policy ending in .lua) only, not to a gloo run"},
      {"[[run]]\npolicy = \"a.lua\"\nparams = 4\n",
       "f.toml: [[run]] #1: params is an integer, expected a table"},
      {"[[run]]\npolicy = \"a.lua\"\nparams = { on = true }\n",
       "f.toml: [[run]] #1: params.on is a boolean, expected a number or a string"},
      {"control_period_ms = 1\n", "f.toml: control_period_ms '1': expected an integer 10..60000"},
  };
  for (const auto& [text, message] : bad) {
    SCOPED_TRACE(text);
    auto r = ParseScenarioToml(text, "f.toml");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find(message), std::string::npos) << r.status().message();
  }
}

TEST(ScenarioTest, ValidateLoadsEachScriptOnce) {
  ScriptDir dir;
  Scenario s = DefaultScenario();
  // A syntax error on line 3: refused with the script's file:line.
  s.runs = {{"BAD", BackendKind::kSerene,
             dir.Write("bad.lua", "-- a policy\nfunction on_telemetry(t)\n  return ssp(\nend\n")}};
  Status st = ValidateScenario(s);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(Message(st).find("run #1 'BAD': policy script "), std::string::npos) << Message(st);
  EXPECT_NE(Message(st).find("bad.lua:4:"), std::string::npos) << Message(st);

  // A runtime error in the main chunk, with the params it was given.
  s.runs = {{"NEEDS", BackendKind::kSerene,
             dir.Write("needs.lua", "assert(params.w, 'needs w')\nreturn ssp(params.w)\n")}};
  EXPECT_NE(Message(ValidateScenario(s)).find("needs.lua:1:"), std::string::npos)
      << Message(ValidateScenario(s));
  s.runs[0].params = {{"w", "3"}};
  EXPECT_TRUE(ValidateScenario(s).ok()) << Message(ValidateScenario(s));

  // A static quorum larger than the job.
  s.runs = {{"Q", BackendKind::kSerene, dir.Write("q.lua", "return quorum(9, 1)\n")}};
  EXPECT_NE(Message(ValidateScenario(s)).find("quorum 9 is more than the 4 workers"),
            std::string::npos)
      << Message(ValidateScenario(s));

  // A missing file: every place looked in is named.
  s.runs = {{"GONE", BackendKind::kSerene, "policies/no-such-policy.lua"}};
  st = ValidateScenario(s);
  EXPECT_EQ(st.code(), Status::Code::kNotFound);
  EXPECT_NE(
      Message(st).find("run #1 'GONE': policy script 'policies/no-such-policy.lua' not found"),
      std::string::npos)
      << Message(st);
}

TEST(ScenarioTest, Slugs) {
  EXPECT_EQ(Slug("SSP(10)"), "ssp-10");
  EXPECT_EQ(Slug("SYNC #2"), "sync-2");
  EXPECT_EQ(Slug("QUORUM(3,1)"), "quorum-3-1");
  EXPECT_EQ(Slug("  Gloo  "), "gloo");
  EXPECT_EQ(Slug("()"), "");
}

// The [sim] table is kept as written for serene-sim (booleans and lists of
// integers as text) and written back; anything else in it is refused.
TEST(ScenarioTest, SimTableIsKeptForTheSimulator) {
  auto s = ParseScenarioToml(
      "[sim]\ncompute_ms = 6\nseeds = [1, 2, 3]\ntiming_only = true\nlink = \"gbps=1\"\n", "t.toml");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->sim, (std::map<std::string, std::string>{
                        {"compute_ms", "6"}, {"seeds", "1,2,3"}, {"timing_only", "true"},
                        {"link", "gbps=1"}}));
  auto again = ParseScenarioToml(ScenarioToToml(*s), "again");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->sim, s->sim);
  // The embedded demo fixes its compute model; a file is its own [sim] table.
  EXPECT_EQ(DefaultScenario().sim, (std::map<std::string, std::string>{{"compute_ms", "6.2"}}));
  auto no_sim = ParseScenarioToml("workers = 2\n", "t.toml");
  ASSERT_TRUE(no_sim.ok());
  EXPECT_TRUE(no_sim->sim.empty());
  auto bad = ParseScenarioToml("[sim]\nlink = { gbps = 1 }\n", "t.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("t.toml: sim.link"), std::string::npos)
      << bad.status().message();
  EXPECT_FALSE(ParseScenarioToml("sim = 3\n", "t.toml").ok());
}

// `extends` starts from another file: scalars and [sim] keys override it one
// by one, [[run]] tables replace its runs; a cycle, a missing file and a
// non-string are refused with the chain in the message.
TEST(ScenarioTest, ExtendsStartsFromAnotherFile) {
  ScriptDir dir;
  dir.Write("base.toml", R"toml(
name = "base"
workers = 8
steps = 100
[sim]
compute_ms = 6
jitter = 0.05
[[run]]
label = "SYNC"
policy = "sync"
[[run]]
label = "SSP(2)"
policy = "ssp:2"
)toml");
  const std::string child = dir.Write("child.toml", R"toml(
name = "child"
extends = "base.toml"
steps = 200
[sim]
compute_ms = 40
)toml");
  auto s = LoadScenarioFile(child);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->name, "child");
  EXPECT_EQ(s->workers, 8);
  EXPECT_EQ(s->steps, 200);
  EXPECT_EQ(s->sim, (std::map<std::string, std::string>{{"compute_ms", "40"}, {"jitter", "0.05"}}));
  ASSERT_EQ(s->runs.size(), 2u);
  EXPECT_EQ(s->runs[1].policy, "ssp:2");
  // The written scenario is the merged one, with no extends left in it.
  auto back = ParseScenarioToml(ScenarioToToml(*s), "round-trip");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(ScenarioToToml(*back), ScenarioToToml(*s));

  // Relative to the extending file's directory, through two levels; runs replaced.
  std::filesystem::create_directories(std::filesystem::path(child).parent_path() / "sub");
  const std::string grandchild = dir.Write("sub/grandchild.toml", R"toml(
extends = "../child.toml"
[[run]]
label = "ASYNC"
policy = "async"
)toml");
  auto g = LoadScenarioFile(grandchild);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->name, "child");
  EXPECT_EQ(g->steps, 200);
  EXPECT_EQ(g->sim.at("compute_ms"), "40");
  ASSERT_EQ(g->runs.size(), 1u);
  EXPECT_EQ(g->runs[0].label, "ASYNC");

  const std::string self = dir.Write("self.toml", "extends = \"self.toml\"\n");
  dir.Write("a.toml", "extends = \"b.toml\"\n");
  const std::string b = dir.Write("b.toml", "extends = \"a.toml\"\n");
  const std::string missing = dir.Write("missing.toml", "extends = \"nowhere.toml\"\n");
  const std::string number = dir.Write("number.toml", "extends = 3\n");
  const std::string bad_base = dir.Write("bad-base.toml", "workers = 0\n");
  const std::string on_bad = dir.Write("on-bad.toml", "extends = \"bad-base.toml\"\n");
  const std::pair<std::string, std::string> cases[] = {
      {self, "self.toml: extends = 'self.toml': '"},
      {b, "b.toml: extends = 'a.toml': " + (std::filesystem::path(b).parent_path() / "a.toml").string() +
              ": extends = 'b.toml': '"},
      {missing, "missing.toml: extends = 'nowhere.toml': cannot read scenario file"},
      {number, "number.toml: extends is an integer, expected the path of a scenario file"},
      {on_bad, "on-bad.toml: extends = 'bad-base.toml': "},
  };
  for (const auto& [file, message] : cases) {
    SCOPED_TRACE(file);
    auto r = LoadScenarioFile(file);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find(message), std::string::npos) << r.status().message();
  }
  EXPECT_NE(LoadScenarioFile(self).status().message().find("a cycle of extends"), std::string::npos);
  EXPECT_NE(LoadScenarioFile(b).status().message().find("a cycle of extends"), std::string::npos);
  EXPECT_EQ(LoadScenarioFile(missing).status().code(), Status::Code::kNotFound);
  EXPECT_NE(LoadScenarioFile(on_bad).status().message().find("workers '0'"), std::string::npos)
      << LoadScenarioFile(on_bad).status().message();

  // A chain of 8 files loads; one of 9 is refused.
  for (int i = 1; i < 9; ++i) {
    dir.Write("chain" + std::to_string(i) + ".toml",
              "extends = \"chain" + std::to_string(i + 1) + ".toml\"\n");
  }
  dir.Write("chain9.toml", "steps = 9\n");
  auto eight = LoadScenarioFile(dir.Write("chain2.toml", "extends = \"chain3.toml\"\n"));
  ASSERT_TRUE(eight.ok()) << eight.status().message();
  EXPECT_EQ(eight->steps, 9);
  auto nine = LoadScenarioFile(dir.Write("chain1.toml", "extends = \"chain2.toml\"\n"));
  ASSERT_FALSE(nine.ok());
  EXPECT_NE(nine.status().message().find("more than 8 files in one chain of extends"),
            std::string::npos)
      << nine.status().message();
}

// The scenario files shipped in experiments/ load and pass every check
// (their policy scripts included); demo.toml is the embedded default.
TEST(ScenarioTest, ShippedScenarioFilesLoadAndValidate) {
  const std::filesystem::path dir = std::filesystem::path(SERENE_SOURCE_DIR) / "experiments";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".toml") continue;
    ++files;
    SCOPED_TRACE(entry.path().string());
    auto s = LoadScenarioFile(entry.path().string());
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_TRUE(ValidateScenario(*s).ok()) << ValidateScenario(*s).message();
    if (entry.path().filename() == "demo.toml") {
      EXPECT_EQ(ScenarioToToml(*s), ScenarioToToml(DefaultScenario()));
    }
  }
  EXPECT_GE(files, 1);
}

}  // namespace
}  // namespace serene::experiment
