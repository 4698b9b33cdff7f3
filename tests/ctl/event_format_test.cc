// Controller events as serene-ctl control prints them.
#include "ctl/event_format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace serene::ctl {
namespace {

using ::testing::EndsWith;
using ::testing::MatchesRegex;
using Kind = control::ControllerEvent::Kind;

control::ControllerEvent Applied() {
  control::ControllerEvent e;
  e.kind = Kind::kApplied;
  e.message = "job 1: ssp(10) -> epoch 2 from clock 57";
  e.seconds = 1.25;
  e.unix_ms = 1'700'000'000'123;
  e.high = 56;
  e.rule_text = "ssp:10";
  e.epoch = 2;
  e.effective_clock = 57;
  return e;
}

TEST(EventFormatTest, TextLineHasTimeKindAndMessage) {
  const std::string line = EventLine(Applied());
  EXPECT_THAT(line,
              MatchesRegex("[0-9][0-9]:[0-9][0-9]:[0-9][0-9]\\.123  applied       job 1: .*"));
  EXPECT_THAT(line, EndsWith("epoch 2 from clock 57"));
}

TEST(EventFormatTest, JsonLineOfAnAppliedRule) {
  const std::string line = EventJson(Applied());
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["kind"], "applied");
  EXPECT_EQ(j["unix_ms"], 1'700'000'000'123u);
  EXPECT_DOUBLE_EQ(j["seconds"].get<double>(), 1.25);
  EXPECT_EQ(j["high"], 56);
  EXPECT_EQ(j["rule"], "ssp:10");
  EXPECT_EQ(j["epoch"], 2);
  EXPECT_EQ(j["effective_clock"], 57);
}

TEST(EventFormatTest, OtherKindsHaveNoRuleFields) {
  control::ControllerEvent e;
  e.kind = Kind::kScriptError;
  e.message = "adaptive.lua:3: attempt to index a nil value";
  const auto j = nlohmann::json::parse(EventJson(e));
  EXPECT_EQ(j["kind"], "script_error");
  EXPECT_EQ(j["high"], -1);
  EXPECT_FALSE(j.contains("rule"));
}

TEST(EventFormatTest, InvalidUtf8FromAScriptDoesNotThrow) {
  control::ControllerEvent e;
  e.kind = Kind::kScriptLog;
  e.message = "bad \xff byte";
  const auto j = nlohmann::json::parse(EventJson(e));
  EXPECT_EQ(j["kind"], "log");
}

}  // namespace
}  // namespace serene::ctl
