// serene-ctl's output formats: tables, clocks, durations, rates, JSON, and
// the error line.
#include "ctl/format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ctl/exit_code.h"

namespace serene::ctl {
namespace {

using ::testing::HasSubstr;

TEST(TableTest, AlignsColumnsLeftOrRightWithoutTrailingSpaces) {
  Table t({{"RANK", true}, {"STATE"}, {"WAIT", true}});
  t.AddRow({"0", "waiting", "1.5s"});
  t.AddRow({"12", "ok", "-"});
  EXPECT_EQ(t.rows(), 2u);
  EXPECT_EQ(t.Render(),
            "RANK  STATE    WAIT\n"
            "   0  waiting  1.5s\n"
            "  12  ok          -\n");
}

TEST(TableTest, TheLastLeftColumnIsNotPadded) {
  Table t({{"N", true}, {"ADDRESS"}});
  t.AddRow({"1", "127.0.0.1:5000"});
  t.AddRow({"2", "-"});
  EXPECT_EQ(t.Render(),
            "N  ADDRESS\n"
            "1  127.0.0.1:5000\n"
            "2  -\n");
}

TEST(TableTest, HeaderOnly) {
  Table t({{"A"}, {"B", true}});
  EXPECT_EQ(t.Render(), "A  B\n");
}

TEST(FormatTest, ClocksShowNoneAsADash) {
  EXPECT_EQ(FormatClock(-1), "-");
  EXPECT_EQ(FormatClock(0), "0");
  EXPECT_EQ(FormatClock(4294967295), "4294967295");
}

TEST(FormatTest, DurationsForPeople) {
  EXPECT_EQ(HumanDuration(0), "0");
  EXPECT_EQ(HumanDuration(850), "850ns");
  EXPECT_EQ(HumanDuration(1'000), "1us");
  EXPECT_EQ(HumanDuration(12'000), "12us");
  EXPECT_EQ(HumanDuration(1'500'000), "1.5ms");
  EXPECT_EQ(HumanDuration(12'000'000), "12ms");
  EXPECT_EQ(HumanDuration(12'400'000), "12ms");
  EXPECT_EQ(HumanDuration(150'000'000), "150ms");
  EXPECT_EQ(HumanDuration(1'500'000'000), "1.5s");
  EXPECT_EQ(HumanDuration(2'000'000'000), "2s");
  EXPECT_EQ(HumanDuration(12'000'000'000), "12s");
  EXPECT_EQ(HumanDuration(123'000'000'000), "2m03s");
  EXPECT_EQ(HumanDuration(3'723'000'000'000), "1h02m");
}

TEST(FormatTest, DurationsRoundUpIntoTheNextUnit) {
  EXPECT_EQ(HumanDuration(999'999), "1ms");
  EXPECT_EQ(HumanDuration(999'999'999), "1s");
  EXPECT_EQ(HumanDuration(59'999'000'000), "1m00s");
  EXPECT_EQ(HumanDuration(9'960'000), "10ms");
}

TEST(FormatTest, NegativeDurationIsNever) {
  EXPECT_EQ(HumanDurationOrDash(-1), "-");
  EXPECT_EQ(HumanDurationOrDash(12'000'000), "12ms");
}

TEST(FormatTest, Rates) {
  EXPECT_EQ(FormatRate(0), "0");
  EXPECT_EQ(FormatRate(-3), "0");
  EXPECT_EQ(FormatRate(0.25), "0.25");
  EXPECT_EQ(FormatRate(9.5), "9.5");
  EXPECT_EQ(FormatRate(5), "5");
  EXPECT_EQ(FormatRate(42.25), "42.2");
  EXPECT_EQ(FormatRate(120.4), "120");
}

TEST(FormatTest, KeysAreHex) {
  EXPECT_EQ(HexKey(0x1a2b3c4d), "0x1a2b3c4d");
  EXPECT_EQ(HexKey(5), "0x00000005");
}

TEST(FormatTest, RuleTextFallsBackToTheFields) {
  v1::Rule r;
  r.set_text("ssp:10");
  EXPECT_EQ(RuleText(r), "ssp:10");
  r.clear_text();
  r.set_window(2);
  r.set_quorum(0);
  r.set_lag(0xFFFFFFFFu);
  EXPECT_EQ(RuleText(r), "window=2,quorum=all,lag=inf");
  EXPECT_EQ(YesNo(true), "yes");
  EXPECT_EQ(YesNo(false), "no");
}

TEST(FormatTest, JsonKeepsTheProtoFieldNamesAndDefaults) {
  v1::JobTelemetry t;
  t.mutable_job()->set_id(3);
  t.set_live_workers(2);
  t.set_low(-1);
  v1::RankTelemetry* r = t.add_ranks();
  r->set_rank(1);
  r->set_wait_total_ns(1500);
  const std::string json = ToJson(t);
  EXPECT_EQ(json.find('\n'), std::string::npos) << "one line";
  const auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["job"]["id"], 3);
  EXPECT_EQ(j["live_workers"], 2);
  EXPECT_EQ(j["low"], "-1") << "64-bit integers are strings in proto3 JSON";
  EXPECT_EQ(j["ranks"][0]["wait_total_ns"], "1500");
  EXPECT_EQ(j["finished"], false) << "defaults are printed";
  EXPECT_TRUE(j["ranks"][0].contains("silent_ns"));
}

TEST(ExitCodeTest, ErrorLines) {
  std::ostringstream out, err;
  Io io{out, err};
  EXPECT_EQ(Failed(Status::NotFound("job 4 does not exist"), io), kExitFailed);
  EXPECT_EQ(UsageError("bad policy 'x'", io), kExitUsage);
  EXPECT_EQ(err.str(), "serene-ctl: job 4 does not exist\nserene-ctl: bad policy 'x'\n");
  EXPECT_EQ(out.str(), "");
}

TEST(ExitCodeTest, AWrongTokenSaysWhatToDo) {
  const std::string wrong = ErrorMessage(Status::Unauthenticated("wrong token"));
  EXPECT_THAT(wrong, HasSubstr("unauthenticated: wrong token"));
  EXPECT_THAT(wrong, HasSubstr("--token-file"));
  const std::string missing = ErrorMessage(
      Status::Unauthenticated("this switch requires a token (serene-ctl --token-file FILE)"));
  EXPECT_EQ(missing,
            "unauthenticated: this switch requires a token (serene-ctl --token-file FILE)");
}

}  // namespace
}  // namespace serene::ctl
