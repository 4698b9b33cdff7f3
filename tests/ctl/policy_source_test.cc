// What `policy set` and `control` take as a policy: a SPEC or a script.
#include "ctl/policy_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace serene::ctl {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class PolicySourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("serene_ctl_policy_source_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& source) {
    const auto path = dir_ / name;
    std::ofstream(path) << source;
    return path.string();
  }

  std::filesystem::path dir_;
};

TEST_F(PolicySourceTest, Params) {
  auto p = ParseParams({"w=4", "name=a=b", "empty="});
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->at("w"), "4");
  EXPECT_EQ(p->at("name"), "a=b");
  EXPECT_EQ(p->at("empty"), "");
  EXPECT_THAT(ParseParams({"w"}).status().message(), HasSubstr("expected KEY=VALUE"));
  EXPECT_THAT(ParseParams({"=4"}).status().message(), HasSubstr("expected KEY=VALUE"));
  EXPECT_THAT(ParseParams({"w=1", "w=2"}).status().message(), HasSubstr("w is given twice"));
}

TEST_F(PolicySourceTest, Spec) {
  EXPECT_FALSE(IsScriptPath("ssp:10"));
  EXPECT_TRUE(IsScriptPath("policies/ssp.lua"));
  auto p = ResolveStaticPolicy("ssp:10", {});
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->rule.window(), 10u);
  EXPECT_EQ(p->rule.quorum(), 0u) << "every live rank";
  EXPECT_EQ(p->rule.lag(), 10u);
  EXPECT_EQ(p->rule.text(), "ssp:10");
  EXPECT_EQ(p->source, "ssp:10");
  EXPECT_FALSE(p->effective_clock);
}

TEST_F(PolicySourceTest, BadSpecCarriesTheParsersMessage) {
  auto p = ResolveStaticPolicy("ssp", {});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(p.status().message(), StartsWith("bad policy 'ssp': ssp needs a window"));
  EXPECT_THAT(ResolveStaticPolicy("sync", {"w=1"}).status().message(),
              HasSubstr("--param is for a policy script"));
}

TEST_F(PolicySourceTest, StaticScript) {
  const std::string path =
      Write("static.lua", "log('w is ' .. params.w)\nreturn ssp(params.w):at(12)\n");
  auto p = ResolveStaticPolicy(path, {"w=4"});
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->rule.text(), "ssp:4");
  EXPECT_EQ(p->effective_clock, 12u);
  EXPECT_THAT(p->source, HasSubstr("ssp(4) at 12 from static.lua"));
  EXPECT_EQ(p->log, std::vector<std::string>{"w is 4"});
}

TEST_F(PolicySourceTest, AdaptiveScriptNeedsTheController) {
  const std::string path =
      Write("adaptive.lua", "function on_telemetry(t) return async() end\nreturn sync()\n");
  auto p = ResolveStaticPolicy(path, {});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("serene-ctl control JOB " + path));
  EXPECT_TRUE(LoadScript(path, {}).ok()) << "the controller takes it";
}

TEST_F(PolicySourceTest, ScriptErrorsAreTheOperatorsInput) {
  const std::string bad = Write("bad.lua", "return ssp(\n");
  auto p = ResolveStaticPolicy(bad, {});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(p.status().message(), StartsWith("bad.lua:"));
  auto missing = LoadScript((dir_ / "missing.lua").string(), {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(LoadScript(bad, {"oops"}).status().code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace serene::ctl
