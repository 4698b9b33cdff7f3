// Hostile policy scripts: each one does its work where the instruction count
// never runs (inside C library functions, or in single VM instructions that
// compare long strings) and ran for minutes or for ever before the sandbox
// charged that work (docs/policies.md "The sandbox"). Each must now fail with
// the budget, time or memory error within twice the time limit, under the
// default limits that `serene-ctl policy set` and the controller use.
//
// Measured against the sandbox before these charges (2 s limit): the two
// sorts, the concat, the compares and the format ran past 30 s (killed);
// utf8.len stopped after 17 s, tonumber after 7.1 s.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "control/policy_script.h"
#include "tests/control/policy_test_telemetry.h"

namespace serene::control {
namespace {

using ::testing::MatchesRegex;

// The wall-clock limit that goes with the default budget (docs/policies.md).
constexpr std::chrono::seconds kDefaultTimeLimit{2};

struct HostileScript {
  const char* name;
  const char* source;
};

// Lines with many calls and no loop back fire no line event and few count
// events: the work between two hook events is as large as it gets.
const HostileScript kScripts[] = {
    // The case of issue 31: 400,000 references to one 4 MiB string, each
    // comparison a 4 MiB strcoll in C.
    {"SortReferencesToALongString",
     "local s = string.rep('x', 4 << 20)\n"
     "local t = {}\n"
     "for i = 1, 400000 do t[i] = s end\n"
     "table.sort(t)\n"},
    // Lua compares strings segment by segment between zero bytes: one
    // strcoll per byte.
    {"SortStringsOfZeroBytes",
     "local s = string.rep('\\0', 1 << 20)\n"
     "local t = {}\n"
     "for i = 1, 2000 do t[i] = s end\n"
     "table.sort(t)\n"},
    // Every t[i] calls table.concat(t, i), a C function, which returns "":
    // concat's loop never ends and never runs a Lua instruction.
    {"ConcatThroughACFunctionIndex",
     "local t = setmetatable({}, {__index = table.concat})\n"
     "return table.concat(t, '', 1, math.maxinteger)\n"},
    // One VM instruction, `a < a`, takes ~0.1 s on 8 MiB of zero bytes; a
    // line of them passes few count events.
    {"CompareLongStringsInOneLine",
     "local a = string.rep('\\0', 8 << 20)\n"
     "while true do local x = a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a "
     "or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a "
     "or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a "
     "or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a "
     "or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a "
     "or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a "
     "or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a "
     "or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a "
     "or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a or a<a end\n"},
    // C functions linear in a long string, many on one line.
    {"Utf8LenOfALongStringInOneLine",
     "local s, n = string.rep('a', 12 << 20), utf8.len\n"
     "while true do n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) "
     "n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) "
     "n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) "
     "n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) "
     "n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) n(s) end\n"},
    {"FormatQuotedZeroBytesInOneLine",
     "local s, f = string.rep('\\0', 3 << 20), string.format\n"
     "while true do f('%q', s) f('%q', s) f('%q', s) f('%q', s) f('%q', s) f('%q', s) "
     "f('%q', s) f('%q', s) f('%q', s) f('%q', s) f('%q', s) f('%q', s) f('%q', s) "
     "f('%q', s) f('%q', s) f('%q', s) f('%q', s) f('%q', s) f('%q', s) f('%q', s) "
     "f('%q', s) f('%q', s) f('%q', s) f('%q', s) f('%q', s) f('%q', s) f('%q', s) "
     "f('%q', s) f('%q', s) f('%q', s) f('%q', s) f('%q', s) f('%q', s) f('%q', s) "
     "f('%q', s) f('%q', s) f('%q', s) f('%q', s) f('%q', s) f('%q', s) f('%q', s) "
     "f('%q', s) f('%q', s) f('%q', s) f('%q', s) f('%q', s) f('%q', s) f('%q', s) end\n"},
    {"ToNumberOfALongNumeralInOneLine",
     "local s, n = string.rep('7', 12 << 20), tonumber\n"
     "while true do n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) "
     "n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) "
     "n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) "
     "n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) "
     "n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) n(s, 8) end\n"},
};

class HostileScriptTest : public ::testing::TestWithParam<HostileScript> {};

TEST_P(HostileScriptTest, IsStoppedWithinTwiceTheTimeLimit) {
  const auto start = std::chrono::steady_clock::now();
  auto script = PolicyScript::LoadString(GetParam().source, "hostile.lua", {});
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(script.ok()) << "the script returned";
  EXPECT_THAT(script.status().message(),
              MatchesRegex("hostile\\.lua:[0-9]+: (instruction budget of 10000000 exceeded|"
                           "the call ran longer than 2\\.0 s|memory limit of 32 MiB exceeded).*"));
  EXPECT_LT(elapsed, 2 * kDefaultTimeLimit)
      << "stopped after " << std::chrono::duration<double>(elapsed).count() << " s";
}

// The controller's path: the same work in on_telemetry, every period. Each
// call is stopped, and the next call runs again under a fresh limit.
TEST(HostileOnTelemetryTest, EachCallIsStoppedWithinTwiceTheTimeLimit) {
  auto script = PolicyScript::LoadString(
      "local s = string.rep('x', 4 << 20)\n"
      "function on_telemetry(t)\n"
      "  local refs = {}\n"
      "  for i = 1, 400000 do refs[i] = s end\n"
      "  table.sort(refs)\n"
      "end\n"
      "return sync()\n",
      "hostile.lua", {});
  ASSERT_TRUE(script.ok()) << script.status().message();
  const v1::JobTelemetry t = testing::MakeTelemetry(4);
  for (int call = 0; call < 2; ++call) {
    const auto start = std::chrono::steady_clock::now();
    auto decision = (*script)->OnTelemetry(t);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    ASSERT_FALSE(decision.ok());
    EXPECT_THAT(decision.status().message(),
                MatchesRegex("hostile\\.lua:5: (instruction budget of 10000000 exceeded|"
                             "the call ran longer than 2\\.0 s).*"));
    EXPECT_LT(elapsed, 2 * kDefaultTimeLimit);
  }
}

INSTANTIATE_TEST_SUITE_P(Sandbox, HostileScriptTest, ::testing::ValuesIn(kScripts),
                         [](const ::testing::TestParamInfo<HostileScript>& p) {
                           return std::string(p.param.name);
                         });

}  // namespace
}  // namespace serene::control
