// PolicyScript: rules, params, rule:at, return values, error positions, the
// sandbox (what a script cannot reach), its limits (budget, time, memory) and
// log(). The shipped policies are in policies_test.cc.
#include "control/policy_script.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <lua.hpp>
#include <string>
#include <vector>

#include "tests/control/policy_test_telemetry.h"

namespace serene::control {
namespace {

using dataplane::BarrierParams;
using testing::Derive;
using ::testing::HasSubstr;
using testing::MakeTelemetry;
using ::testing::MatchesRegex;
using ::testing::StartsWith;

constexpr uint32_t kInf = BarrierParams::kUnbounded;
constexpr uint32_t kAll = BarrierParams::kAllWorkers;

Result<std::unique_ptr<PolicyScript>> Load(std::string_view source,
                                           const PolicyScript::Params& params = {},
                                           PolicyLimits limits = {}) {
  return PolicyScript::LoadString(source, "test.lua", params, limits);
}

// The error of loading `source`; fails the test if it loads.
Status LoadError(std::string_view source, PolicyLimits limits = {}) {
  auto script = Load(source, {}, limits);
  EXPECT_FALSE(script.ok()) << source;
  return script.ok() ? Status::Ok() : script.status();
}

std::unique_ptr<PolicyScript> MustLoad(std::string_view source,
                                       const PolicyScript::Params& params = {},
                                       PolicyLimits limits = {}) {
  auto script = Load(source, params, limits);
  EXPECT_TRUE(script.ok()) << script.status().message();
  return script.ok() ? std::move(*script) : nullptr;
}

v1::JobTelemetry Telemetry(int64_t high) {
  v1::JobTelemetry t = MakeTelemetry(4, high);
  Derive(&t);
  return t;
}

// ---------------------------------------------------------------- rules

struct StaticCase {
  const char* source;
  BarrierParams rule;
  const char* text;
};

TEST(PolicyScriptTest, StaticRules) {
  const StaticCase cases[] = {
      {"return sync()", BarrierParams::Sync(), "sync()"},
      {"return ssp(10)", BarrierParams::Ssp(10), "ssp(10)"},
      {"return ssp(10.0)", BarrierParams::Ssp(10), "ssp(10)"},
      {"return ssp(0)", BarrierParams::Sync(), "sync()"},
      {"return ssp(math.huge)", BarrierParams::Async(), "async()"},
      {"return ssp('inf')", BarrierParams::Async(), "async()"},
      {"return async()", BarrierParams::Async(), "async()"},
      {"return quorum(3, 1)", BarrierParams::Quorum(3, 1), "quorum(3, 1)"},
      {"return quorum(3, math.huge)", BarrierParams::Quorum(3, kInf), "quorum(3, math.huge)"},
      {"return quorum('all', 2)", {0, kAll, 2}, "hybrid{window=0, quorum=\"all\", lag=2}"},
      {"return hybrid{window=2, quorum=3, lag=8}", {2, 3, 8}, "hybrid{window=2, quorum=3, lag=8}"},
      {"return hybrid{}", BarrierParams::Sync(), "sync()"},
      {"return hybrid{window=4}", BarrierParams::Ssp(4), "ssp(4)"},
      {"return hybrid{window='inf', quorum='all'}", BarrierParams::Async(), "async()"},
      {"return hybrid{window=2, lag=math.huge}",
       {2, kAll, kInf},
       "hybrid{window=2, quorum=\"all\", lag=math.huge}"},
  };
  for (const StaticCase& c : cases) {
    SCOPED_TRACE(c.source);
    auto script = MustLoad(c.source);
    ASSERT_NE(script, nullptr);
    EXPECT_EQ(script->name(), "test.lua");
    EXPECT_FALSE(script->adaptive());
    ASSERT_TRUE(script->initial().has_value());
    EXPECT_EQ(script->initial()->rule, c.rule);
    EXPECT_FALSE(script->initial()->effective_clock.has_value());
    EXPECT_EQ(script->initial()->text, c.text);
    EXPECT_EQ(RuleScriptText(c.rule), c.text);
  }
}

TEST(PolicyScriptTest, RuleScriptTextReadsBackAsTheSameRule) {
  const BarrierParams rules[] = {BarrierParams::Sync(),
                                 BarrierParams::Ssp(7),
                                 BarrierParams::Async(),
                                 BarrierParams::Quorum(2, 5),
                                 BarrierParams::Quorum(2, kInf),
                                 {3, 2, 9},
                                 {kInf, 5, kInf},
                                 {1, kAll, 4}};
  for (const BarrierParams& rule : rules) {
    const std::string text = RuleScriptText(rule);
    SCOPED_TRACE(text);
    auto script = MustLoad("return " + text);
    ASSERT_NE(script, nullptr);
    EXPECT_EQ(script->initial()->rule, rule);
    EXPECT_EQ(script->initial()->text, text);
  }
}

TEST(PolicyScriptTest, RuleAtSetsTheEffectiveClock) {
  auto script = MustLoad("return ssp(10):at(200)");
  ASSERT_NE(script, nullptr);
  EXPECT_EQ(script->initial()->rule, BarrierParams::Ssp(10));
  EXPECT_EQ(script->initial()->effective_clock, 200u);
  EXPECT_EQ(script->initial()->text, "ssp(10) at 200");
}

TEST(PolicyScriptTest, RuleValuesHaveFieldsAndCompareByBarrierPoint) {
  auto script = MustLoad(R"lua(
    local r = ssp(10):at(200)
    assert(r.window == 10 and r.lag == 10 and r.quorum == math.huge)
    assert(r.clock == 200 and r.kind == "ssp" and r.text == "ssp(10) at 200")
    assert(tostring(r) == "ssp(10) at 200")
    assert(r == ssp(10), "== ignores the clock")
    assert(ssp(10).clock == nil)
    assert(ssp(10) ~= ssp(11) and sync() ~= async())
    assert(async().window == math.huge and async().kind == "async")
    assert(quorum(3, 1).kind == "quorum" and quorum(3, 1).quorum == 3)
    assert(hybrid{window=1, quorum=2, lag=3}.kind == "hybrid")
    assert(getmetatable(r) == "rule", "the metatable is protected")
    assert(ssp(1) ~= 1 and sync() ~= {})
    return sync()
  )lua");
  ASSERT_NE(script, nullptr);
}

TEST(PolicyScriptTest, BadRuleArgumentsNameTheFunctionAndTheValue) {
  const std::pair<const char*, const char*> cases[] = {
      {"return ssp(-1)",
       "test.lua:1: ssp: window must be an integer in 0..4294967294, math.huge or \"inf\", "
       "got -1"},
      {"return ssp(2.5)", "got 2.5"},
      {"return ssp('x')", "got \"x\""},
      {"return ssp()",
       "ssp: window must be an integer in 0..4294967294, math.huge or \"inf\", "
       "got nil"},
      {"return ssp(4294967295)", "got 4294967295"},
      {"return quorum(0, 1)",
       "test.lua:1: quorum: k must be an integer in 1..4294967294, \"all\" or math.huge, got 0"},
      {"return quorum(2)", "quorum: l (the lag bound) must be"},
      {"return quorum(2, -3)", "got -3"},
      {"return hybrid{windw=1}",
       "test.lua:1: hybrid: unknown field windw (the fields are window, quorum, lag)"},
      {"return hybrid(3)", "hybrid: expected a table like hybrid{window=2, quorum=3, lag=8}"},
      {"return hybrid{quorum=0}", "hybrid: quorum must be"},
      {"return hybrid{lag='x'}", "hybrid: lag must be"},
      {"return ssp(1):at(-1)", "test.lua:1: at: clock must be an integer in 0..4294967294, got -1"},
      {"return ssp(1):at(math.huge)", "at: clock must be"},
      {"return sync(1)", "test.lua:1: sync() takes no arguments"},
      {"local r = sync()\nr.window = 3\nreturn r", "test.lua:2: a rule is read-only"},
  };
  for (const auto& [source, message] : cases) {
    SCOPED_TRACE(source);
    Status s = LoadError(source);
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr(message));
    EXPECT_THAT(s.message(), StartsWith("test.lua:"));
  }
}

// ---------------------------------------------------------------- params

TEST(PolicyScriptTest, ParamsAreNumbersWhenTheyReadAsNumbers) {
  auto script = MustLoad(
      R"lua(
    assert(params.w == 12 and math.type(params.w) == "integer", "w")
    assert(params.f == 2.5, "f")
    assert(params.hex == 16, "hex")
    assert(params.name == "abc", "name")
    assert(params.inf == "inf", "inf stays a word")
    assert(params.empty == "", "empty")
    assert(params.missing == nil)
    return ssp(params.w)
  )lua",
      {{"w", "12"}, {"f", "2.5"}, {"hex", "0x10"}, {"name", "abc"}, {"inf", "inf"}, {"empty", ""}});
  ASSERT_NE(script, nullptr);
  EXPECT_EQ(script->initial()->rule, BarrierParams::Ssp(12));

  // A word a rule accepts goes straight through.
  auto unbounded = MustLoad("return ssp(params.w)", {{"w", "inf"}});
  ASSERT_NE(unbounded, nullptr);
  EXPECT_EQ(unbounded->initial()->rule, BarrierParams::Async());
}

// ---------------------------------------------------------------- results

TEST(PolicyScriptTest, OnTelemetryReturnsARuleOrNil) {
  auto script = MustLoad(R"lua(
    function on_telemetry(t)
      if t.high >= 100 then return ssp(10):at(t.high + 5) end
      if t.high >= 50 then return async() end
    end
  )lua");
  ASSERT_NE(script, nullptr);
  EXPECT_TRUE(script->adaptive());
  EXPECT_FALSE(script->initial().has_value());

  auto none = script->OnTelemetry(Telemetry(10));
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_FALSE(none->has_value());

  auto some = script->OnTelemetry(Telemetry(60));
  ASSERT_TRUE(some.ok()) << some.status().message();
  ASSERT_TRUE(some->has_value());
  EXPECT_EQ((*some)->rule, BarrierParams::Async());
  EXPECT_EQ((*some)->text, "async()");

  auto at = script->OnTelemetry(Telemetry(100));
  ASSERT_TRUE(at.ok()) << at.status().message();
  ASSERT_TRUE(at->has_value());
  EXPECT_EQ((*at)->rule, BarrierParams::Ssp(10));
  EXPECT_EQ((*at)->effective_clock, 105u);
}

TEST(PolicyScriptTest, AStaticAndAdaptiveScriptHasBoth) {
  auto script = MustLoad("function on_telemetry(t) end\nreturn sync()");
  ASSERT_NE(script, nullptr);
  EXPECT_TRUE(script->adaptive());
  ASSERT_TRUE(script->initial().has_value());
  EXPECT_EQ(script->initial()->rule, BarrierParams::Sync());
}

TEST(PolicyScriptTest, StaticScriptRefusesOnTelemetry) {
  auto script = MustLoad("return sync()");
  ASSERT_NE(script, nullptr);
  auto r = script->OnTelemetry(Telemetry(1));
  EXPECT_EQ(r.status().code(), Status::Code::kFailedPrecondition);
}

TEST(PolicyScriptTest, BadReturnValuesAreErrorsAtTheReturn) {
  EXPECT_EQ(LoadError("return 5").message(),
            "test.lua:1: the main chunk returned a number, expected a rule (ssp(10), sync(), "
            "...) or nil");
  EXPECT_THAT(LoadError("local x = {}\nreturn x").message(),
              StartsWith("test.lua:2: the main chunk returned a table, expected a rule"));
  EXPECT_EQ(LoadError("local x = 1").message(),
            "test.lua:1: the script neither returns a rule (return ssp(10)) nor defines "
            "on_telemetry(t)");
  EXPECT_EQ(LoadError("on_telemetry = 5\nreturn sync()").message(),
            "test.lua:2: on_telemetry is a number, expected a function");

  auto script = MustLoad(R"lua(function on_telemetry(t)
  local x = 1
  if t.high == 1 then return "fast" end
  if t.high == 2 then return 10 end
  if t.high == 3 then return ssp end
  return nil
end)lua");
  ASSERT_NE(script, nullptr);
  auto r = script->OnTelemetry(Telemetry(1));
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "test.lua:3: on_telemetry returned a string, expected a rule (ssp(10), sync(), ...) "
            "or nil");
  EXPECT_THAT(script->OnTelemetry(Telemetry(2)).status().message(),
              StartsWith("test.lua:4: on_telemetry returned a number"));
  EXPECT_THAT(script->OnTelemetry(Telemetry(3)).status().message(),
              StartsWith("test.lua:5: on_telemetry returned a function"));
  EXPECT_TRUE(script->OnTelemetry(Telemetry(4)).ok());
}

// ---------------------------------------------------------------- errors

TEST(PolicyScriptTest, SyntaxErrorHasFileAndLine) {
  Status s = LoadError("local a = 1\nreturn ssp(\n");
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(s.message(), MatchesRegex("test\\.lua:3: .*near <eof>"));
  EXPECT_THAT(LoadError("x = = 1").message(), StartsWith("test.lua:1: unexpected symbol"));
}

TEST(PolicyScriptTest, LoadFileNamesTheFileByItsBaseName) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("policy_script_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path path = dir / "my_policy.lua";
  { std::ofstream(path) << "-- a comment\nlocal x = nil\nreturn x.y\n"; }
  auto script = PolicyScript::LoadFile(path.string(), {});
  ASSERT_FALSE(script.ok());
  EXPECT_EQ(script.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(script.status().message(),
              StartsWith("my_policy.lua:3: attempt to index a nil value (local 'x')"));

  { std::ofstream(path) << "return ssp(params.w)\n"; }
  auto good = PolicyScript::LoadFile(path.string(), {{"w", "3"}});
  ASSERT_TRUE(good.ok()) << good.status().message();
  EXPECT_EQ((*good)->name(), "my_policy.lua");
  EXPECT_EQ((*good)->initial()->rule, BarrierParams::Ssp(3));

  auto missing = PolicyScript::LoadFile((dir / "nope.lua").string(), {});
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("nope.lua"));
  std::filesystem::remove_all(dir);
}

TEST(PolicyScriptTest, RuntimeErrorsHaveFileAndLineAndTheStateStaysUsable) {
  auto script = MustLoad(R"lua(function on_telemetry(t)
  if t.high == 1 then
    local x = nil
    return x.y
  end
  if t.high == 2 then error("boom", 0) end
  if t.high == 3 then error({code = 1}) end
  if t.high == 4 then error("plain") end
  if t.high == 5 then error(42) end
  if t.high == 6 then local function f() return 1 + f() end return f() end
  return ssp(t.high)
end)lua");
  ASSERT_NE(script, nullptr);
  const std::pair<int64_t, const char*> cases[] = {
      {1, "test.lua:4: attempt to index a nil value (local 'x')"},
      {2, "test.lua:6: boom"},
      {3, "test.lua:7: error object is a table value"},
      {4, "test.lua:8: plain"},
      {5, "test.lua:9: 42"},
  };
  for (const auto& [high, message] : cases) {
    auto r = script->OnTelemetry(Telemetry(high));
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(r.status().message(), message);
  }
  // Endless recursion: a stack overflow or the memory limit, never a crash.
  // The line is the caller's even after a function ran on it.
  EXPECT_EQ(LoadError("local function helper()\n  return 'msg'\nend\nerror(helper(), 0)").message(),
            "test.lua:4: msg");
  auto deep = script->OnTelemetry(Telemetry(6));
  EXPECT_EQ(deep.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(deep.status().message(), StartsWith("test.lua:10: "));

  for (int i = 0; i < 100; ++i) ASSERT_FALSE(script->OnTelemetry(Telemetry(1)).ok());
  auto r = script->OnTelemetry(Telemetry(7));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)->rule, BarrierParams::Ssp(7));
}

// ---------------------------------------------------------------- sandbox

TEST(PolicyScriptTest, OnlyTheSafeGlobalsExist) {
  auto script = MustLoad(R"lua(
    local function keys(t)
      local names = {}
      for k in pairs(t) do names[#names + 1] = k end
      table.sort(names)
      return table.concat(names, " ")
    end
    log(keys(_G))
    log(keys(string))
    log(keys(table))
    return sync()
  )lua");
  ASSERT_NE(script, nullptr);
  const std::vector<std::string> log = script->TakeLog();
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0],
            "_G _VERSION assert async collectgarbage error getmetatable hybrid ipairs log math "
            "next pairs params pcall print quorum rawequal rawget rawlen rawset select "
            "setmetatable ssp string sync table tonumber tostring type utf8 xpcall");
  EXPECT_EQ(log[1], "byte char find format len lower pack packsize rep reverse sub unpack upper");
  EXPECT_EQ(log[2], "concat insert move pack remove sort unpack");
}

TEST(PolicyScriptTest, EscapeAttemptsFail) {
  const std::pair<const char*, const char*> cases[] = {
      {"io.open('/etc/passwd')", "attempt to index a nil value (global 'io')"},
      {"os.execute('true')", "attempt to index a nil value (global 'os')"},
      {"require('os')", "attempt to call a nil value (global 'require')"},
      {"dofile('/etc/passwd')", "attempt to call a nil value (global 'dofile')"},
      {"loadfile('/etc/passwd')", "attempt to call a nil value (global 'loadfile')"},
      {"load('return 1')", "attempt to call a nil value (global 'load')"},
      {"string.dump(sync)", "attempt to call a nil value (field 'dump')"},
      {"('x'):dump()", "attempt to call a nil value (method 'dump')"},
      {"debug.getinfo(1)", "attempt to index a nil value (global 'debug')"},
      {"package.loadlib('libc.so.6', 'system')", "attempt to index a nil value (global 'package')"},
      {"coroutine.create(print)", "attempt to index a nil value (global 'coroutine')"},
      {"collectgarbage()", "collectgarbage: only \"count\" is allowed in a policy"},
      {"collectgarbage('stop')", "not \"stop\""},
      {"setmetatable({}, {__gc = function() while true do end end})",
       "setmetatable: __gc is not allowed in a policy"},
      {"local mt = {}\nrawset(mt, '__gc', true)\nsetmetatable({}, mt)", "__gc is not allowed"},
      {"setmetatable(_G, {__index = function(_, k) return k end})\nreturn io.open('/etc/passwd')",
       "attempt to call a nil value (field 'open')"},
      {"rawset(_G, 'io', rawget(_G, 'io') or {})\nreturn io.open('/etc/passwd')",
       "attempt to call a nil value (field 'open')"},
      {"getmetatable('').__index.dump(sync)", "attempt to call a nil value (field 'dump')"},
      {"setmetatable(sync(), {})", "bad argument #1 to 'setmetatable' (table expected"},
      {"('abc'):match('b')", "attempt to call a nil value (method 'match')"},
      {"string.gsub('abc', 'b', 'c')", "attempt to call a nil value (field 'gsub')"},
      {"string.find('aaa', 'a+')", "string.find: Lua patterns are disabled in a policy"},
  };
  for (const auto& [source, message] : cases) {
    SCOPED_TRACE(source);
    Status s = LoadError(source);
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr(message));
    EXPECT_THAT(s.message(), MatchesRegex("test\\.lua:[0-9]+: .*"));
  }
}

TEST(PolicyScriptTest, WhatStaysWorksAsInLua) {
  auto script = MustLoad(R"lua(
    assert(collectgarbage("count") > 0)
    assert(string.find("a.b", ".", 1, true) == 2)
    local s, e = string.find("hello world", "wor")
    assert(s == 7 and e == 9)
    assert(("abc"):find("c", -1) == 3 and ("abc"):find("a", 2) == nil)
    assert(("abc"):find("", 10) == nil and ("abc"):find("", 4) == 4)
    assert(string.rep("ab", 3, ",") == "ab,ab,ab" and string.rep("x", 0) == "")
    assert(string.rep("", 1 << 62) == "", "an empty result costs nothing")
    local t = {1, 2, 3}
    table.insert(t, 1, 0)
    table.insert(t, 4)
    assert(table.concat(t, ",") == "0,1,2,3,4")
    assert(table.remove(t, 1) == 0 and table.remove(t) == 4)
    assert(table.concat(table.move({1, 2, 3}, 1, 3, 2), ",") == "1,1,2,3")
    assert(string.format("%.1f", 2.25) == "2.2" or string.format("%.1f", 2.25) == "2.3")
    assert(math.max(1, 2) == 2 and utf8.len("é") == 1)
    local ok, err = pcall(error, "caught")
    assert(not ok and err == "caught")
    return sync()
  )lua");
  ASSERT_NE(script, nullptr);
}

TEST(PolicyScriptTest, ChargedLibraryFunctionsWorkAsInLua) {
  // table.sort, concat and unpack are the sandbox's own; the string and utf8
  // functions are wrapped. Same results, same argument errors.
  auto script = MustLoad(R"lua(
    local t = {5, 3, 9, 1, 7, 3, 8, 2, 6, 4, 0}
    table.sort(t)
    assert(table.concat(t, " ") == "0 1 2 3 3 4 5 6 7 8 9")
    table.sort(t, function(a, b) return a > b end)
    assert(table.concat(t, "", 2, 4) == "876")
    local words = {"pear", "apple", "fig", "apple"}
    table.sort(words)
    assert(table.concat(words, ",") == "apple,apple,fig,pear")
    local one, empty = {1}, {}
    table.sort(one); table.sort(empty)
    local r = {}
    for i = 1, 500 do r[i] = (i * 7919) % 1009 end
    table.sort(r)
    for i = 2, #r do assert(r[i - 1] <= r[i]) end
    assert(table.concat({}, ",") == "" and table.concat({1, 2.5, "x"}) == "12.5x")
    assert(select("#", table.unpack({1, 2, 3})) == 3 and select(2, table.unpack({1, 2, 3}, 2)) == 3)
    assert(select("#", table.unpack({}, 3, 2)) == 0 and table.pack(1, 2).n == 2)
    assert(("abc"):upper() == "ABC" and ("ABC"):lower() == "abc" and ("abc"):reverse() == "cba")
    assert(("hello"):sub(2, 3) == "el" and ("A"):byte() == 65 and string.char(72, 105) == "Hi")
    assert(string.format("%d-%s", 4, "x") == "4-x" and string.format("%q", "a\0") == '"a\\0"')
    assert(not pcall(string.format, "%0100d", 1), "widths have at most 2 digits")
    assert(string.unpack("<i4", string.pack("<i4", 7)) == 7 and string.packsize("i4") == 4)
    assert(utf8.char(233) == "é" and utf8.codepoint("é") == 233 and utf8.offset("aé", 2) == 2)
    local n = 0
    for _, c in utf8.codes("aé") do n = n + c end
    assert(n == 97 + 233 and tonumber("ff", 16) == 255 and tonumber("12") == 12)
    return sync()
  )lua");
  ASSERT_NE(script, nullptr);
  EXPECT_THAT(LoadError("table.sort({3, 'x', 1})").message(), HasSubstr("attempt to compare"));
  EXPECT_THAT(LoadError("table.concat({1, {}, 3})").message(),
              HasSubstr("invalid value (at index 2) in table for 'concat'"));
  EXPECT_THAT(LoadError("string.upper()").message(),
              HasSubstr("bad argument #1 to 'upper' (string expected, got no value)"));
  EXPECT_THAT(LoadError("table.sort({2, 1}, 3)").message(),
              HasSubstr("bad argument #2 to 'sort' (function expected, got number)"));
}

TEST(PolicyScriptTest, BytecodeIsRefused) {
  // Real bytecode, from a plain Lua state.
  lua_State* L = luaL_newstate();
  ASSERT_EQ(luaL_loadstring(L, "return sync()"), LUA_OK);
  std::string bytecode;
  lua_dump(
      L,
      [](lua_State*, const void* p, size_t size, void* out) {
        static_cast<std::string*>(out)->append(static_cast<const char*>(p), size);
        return 0;
      },
      &bytecode, 0);
  lua_close(L);
  ASSERT_FALSE(bytecode.empty());
  Status s = LoadError(bytecode);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "test.lua:1: attempt to load a binary chunk (mode is 't')");
}

// ---------------------------------------------------------------- limits

TEST(PolicyScriptTest, EndlessLoopStopsAtTheBudgetAndTheNextCallWorks) {
  PolicyLimits limits;
  limits.instructions = 1'000'000;
  auto script = MustLoad(R"lua(function on_telemetry(t)
  if t.high == 1 then
    while true do end
  end
  if t.high == 2 then
    -- Catching the budget error does not help: it is raised again.
    while true do pcall(function() while true do end end) end
  end
  if t.high == 3 then
    pcall(function() while true do end end)
    return sync()
  end
  return ssp(t.high)
end)lua",
                         {}, limits);
  ASSERT_NE(script, nullptr);
  auto r = script->OnTelemetry(Telemetry(1));
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "test.lua:3: instruction budget of 1000000 exceeded (an endless loop?)");
  EXPECT_THAT(script->OnTelemetry(Telemetry(2)).status().message(),
              MatchesRegex("test\\.lua:7: instruction budget of 1000000 exceeded.*"));
  EXPECT_THAT(script->OnTelemetry(Telemetry(3)).status().message(),
              MatchesRegex("test\\.lua:10: instruction budget of 1000000 exceeded.*"));

  // Each call has the whole budget again.
  for (int i = 0; i < 3; ++i) {
    auto ok = script->OnTelemetry(Telemetry(4));
    ASSERT_TRUE(ok.ok()) << ok.status().message();
    EXPECT_EQ((*ok)->rule, BarrierParams::Ssp(4));
  }
}

TEST(PolicyScriptTest, MainChunkHasABudgetToo) {
  PolicyLimits limits;
  limits.instructions = 100'000;
  EXPECT_EQ(LoadError("local i = 0\nwhile true do i = i + 1 end", limits).message(),
            "test.lua:2: instruction budget of 100000 exceeded (an endless loop?)");
}

TEST(PolicyScriptTest, CFunctionWorkIsChargedToTheBudget) {
  // Each would loop for ages in C, where the instruction count never runs.
  const char* cases[] = {
      "local t = {}\ntable.move(t, 1, math.maxinteger - 1, 2)",
      "local t = setmetatable({}, {__len = function() return 1 << 62 end})\n"
      "table.insert(t, 1, 'x')",
      "local t = setmetatable({}, {__len = function() return 1 << 62 end})\n"
      "table.remove(t, 1)",
      "local s = string.rep('a', 1 << 20)\n"
      "return s:find(string.rep('a', 1 << 19) .. 'b', 1, true)",
      "local t = {}\n"
      "for i = 1, 2 do t[i] = i end while true do table.unpack(t, 1, 100000) end",
  };
  for (const char* source : cases) {
    SCOPED_TRACE(source);
    const auto start = std::chrono::steady_clock::now();
    Status s = LoadError(source);
    EXPECT_EQ(s.message(),
              "test.lua:2: instruction budget of 10000000 exceeded (an endless loop?)");
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  }
}

TEST(PolicyScriptTest, ConcatIsChargedByTheBytesItAppends) {
  // Without the charge, the loop runs few instructions and ends at the time
  // limit instead.
  PolicyLimits limits;
  limits.instructions = 1'000'000;
  EXPECT_EQ(LoadError("local t, sep = {'a', 'b'}, string.rep('x', 1 << 20)\n"
                      "while true do table.concat(t, sep) end",
                      limits)
                .message(),
            "test.lua:2: instruction budget of 1000000 exceeded (an endless loop?)");
}

TEST(PolicyScriptTest, LongWorkTheCountDoesNotSeeHitsTheTimeLimit) {
  // Comparing two distinct 4 MiB strings is one VM instruction.
  PolicyLimits limits;
  limits.instructions = 1'000'000;
  const auto start = std::chrono::steady_clock::now();
  Status s = LoadError(R"lua(local a, b = "a", "a"
for i = 1, 22 do a = a .. a; b = b .. b end
local n = 0
while true do if a == b then n = n + 1 end end)lua",
                       limits);
  EXPECT_THAT(s.message(), MatchesRegex("test\\.lua:4: the call ran longer than 1\\.0 s.*"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(PolicyScriptTest, HugeAllocationsFailWithAMemoryErrorAndTheNextCallWorks) {
  PolicyLimits limits;
  limits.instructions = 100'000'000;  // so that memory, not the budget, stops the table
  auto script = MustLoad(R"lua(function on_telemetry(t)
  if t.high == 1 then
    local s = string.rep("x", 1 << 30)
  end
  if t.high == 2 then
    local t, i = {}, 0
    while true do i = i + 1; t[i] = i end
  end
  if t.high == 3 then
    local s = "x"
    while true do s = s .. s end
  end
  if t.high == 4 then
    local ok = pcall(string.rep, "x", 1 << 30)
    assert(not ok)
  end
  return ssp(t.high)
end)lua",
                         {}, limits);
  ASSERT_NE(script, nullptr);
  auto rep = script->OnTelemetry(Telemetry(1));
  EXPECT_EQ(rep.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(rep.status().message(),
              StartsWith("test.lua:3: memory limit of 32 MiB exceeded (refused an allocation of "
                         "1024 MiB; the state holds "));
  EXPECT_THAT(script->OnTelemetry(Telemetry(2)).status().message(),
              StartsWith("test.lua:7: memory limit of 32 MiB exceeded"));
  EXPECT_THAT(script->OnTelemetry(Telemetry(3)).status().message(),
              StartsWith("test.lua:11: memory limit of 32 MiB exceeded"));
  // A script may catch a memory error (its allocation never happened).
  for (int64_t high : {4, 5}) {
    auto ok = script->OnTelemetry(Telemetry(high));
    ASSERT_TRUE(ok.ok()) << ok.status().message();
    EXPECT_EQ((*ok)->rule, BarrierParams::Ssp(static_cast<uint32_t>(high)));
  }
}

TEST(PolicyScriptTest, MemoryErrorInTheMainChunkSaysWhere) {
  EXPECT_THAT(LoadError("local a = 1\nlocal s = string.rep('x', 1 << 30)\nreturn sync()").message(),
              StartsWith("test.lua:2: memory limit of 32 MiB exceeded"));
}

TEST(PolicyScriptTest, TooSmallAMemoryLimitIsAnError) {
  PolicyLimits limits;
  limits.memory_bytes = 1000;
  auto script = Load("return sync()", {}, limits);
  EXPECT_EQ(script.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(script.status().message(), HasSubstr("test.lua: "));
}

// ---------------------------------------------------------------- log

TEST(PolicyScriptTest, LogJoinsItsArgumentsAndTakeLogDrains) {
  auto script = MustLoad(R"lua(
    log("loaded", 1, 2.5, nil, true, ssp(3))
    print("print", "too")
    function on_telemetry(t)
      log("high", t.high)
      if t.high == 2 then for i = 1, 1000 do log("line", i) end end
      if t.high == 3 then log(string.rep("y", 5000)) end
      if t.high == 4 then log("before") error("after") end
    end
  )lua");
  ASSERT_NE(script, nullptr);
  EXPECT_EQ(script->TakeLog(),
            (std::vector<std::string>{"loaded 1 2.5 nil true ssp(3)", "print too"}));
  EXPECT_TRUE(script->TakeLog().empty());

  ASSERT_TRUE(script->OnTelemetry(Telemetry(1)).ok());
  EXPECT_EQ(script->TakeLog(), std::vector<std::string>{"high 1"});

  // At most 100 lines a call, and one that says how many were dropped.
  ASSERT_TRUE(script->OnTelemetry(Telemetry(2)).ok());
  std::vector<std::string> many = script->TakeLog();
  ASSERT_EQ(many.size(), 101u);
  EXPECT_EQ(many[99], "line 99");
  EXPECT_EQ(many[100], "test.lua: 901 more log lines dropped (at most 100 per call)");

  ASSERT_TRUE(script->OnTelemetry(Telemetry(3)).ok());
  std::vector<std::string> long_line = script->TakeLog();
  ASSERT_EQ(long_line.size(), 2u);
  EXPECT_EQ(long_line[1], std::string(1000, 'y') + "...");

  // Lines logged before an error are kept.
  EXPECT_FALSE(script->OnTelemetry(Telemetry(4)).ok());
  EXPECT_EQ(script->TakeLog(), (std::vector<std::string>{"high 4", "before"}));
}

// ---------------------------------------------------------------- telemetry

TEST(PolicyScriptTest, TelemetryTableHasEveryField) {
  v1::JobTelemetry t = MakeTelemetry(3, 20, 0.1, BarrierParams::Ssp(4));
  t.set_now_ns(12'500'000'000);
  t.set_unix_ms(1'700'000'000'250);
  t.set_rows(9);
  t.set_saturated(true);
  v1::PolicyState* p = t.mutable_policy();
  p->set_active_epoch(3);
  p->set_swap_pending(true);
  *p->mutable_next() = RuleToProto(BarrierParams::Quorum(2, 5));
  p->set_next_epoch(4);
  p->set_swap_clock(30);
  p->set_max_released(21);
  v1::JobCounters* c = t.mutable_counters();
  c->set_releases(100);
  c->set_nacks(2);
  c->set_errors(1);
  c->set_swaps(3);
  c->set_saturations(7);
  c->set_folds(55);
  (*c->mutable_rx_by_op())["INC"] = 400;
  (*c->mutable_drops())["stale_clock"] = 6;
  v1::RankTelemetry* r = t.mutable_ranks(1);
  r->set_done(18);
  r->set_waiting(true);
  r->set_wait_now_ns(250'000'000);
  r->set_wait_total_ns(1'500'000'000);
  r->set_silent_ns(-1);
  r->set_iter_ns(300'000'000);
  r->set_work_ns(200'000'000);
  r->set_last_work_ns(400'000'000);
  r->set_rows_this_clock(3);
  r->set_paused_ns(120'000'000);
  r->set_pauses(3);
  v1::RankCounters* rc = r->mutable_counters();
  rc->set_joins(1);
  rc->set_reads(2);
  rc->set_incs_applied(3);
  rc->set_incs_duplicate(4);
  rc->set_clocks(5);
  rc->set_clock_retransmits(6);
  rc->set_nacks(7);
  rc->set_releases(8);
  rc->set_errors(9);
  rc->set_evictions(10);
  t.mutable_ranks(2)->set_live(false);
  Derive(&t);

  auto script = MustLoad(R"lua(
    local function check(cond, what) if not cond then error("field " .. what, 2) end end
    function on_telemetry(t)
      check(t.job.id == 1 and t.job.workers == 3 and t.job.elements == 1000, "job")
      check(t.job.row_width == 256 and t.job.scale_log2 == 24 and t.job.evict_after == 10, "job2")
      check(t.job.key == nil, "job.key")
      check(t.now == 12.5 and t.unix_time == 1700000000.25, "now")
      check(t.rows == 9 and t.live_workers == 2, "rows")
      check(t.low == 18 and t.high == 20, "low/high")
      check(t.rule == ssp(4) and t.rule.window == 4 and t.rule.text == "ssp(4)", "rule")
      check(t.epoch == 3 and t.swap_pending == true, "epoch")
      check(t.next_rule == quorum(2, 5) and t.next_epoch == 4 and t.swap_clock == 30, "next")
      check(t.max_released == 21, "max_released")
      check(t.saturated == true and t.finished == false, "flags")
      local c = t.counters
      check(c.releases == 100 and c.nacks == 2 and c.errors == 1 and c.swaps == 3, "counters")
      check(c.saturations == 7 and c.folds == 55, "counters2")
      check(c.rx.INC == 400 and c.drops.stale_clock == 6, "counter maps")
      check(#t.ranks == 3, "#ranks")
      local r = t.ranks[2]
      check(r.rank == 1 and r.done == 18 and r.lag == 2, "rank")
      check(r.joined and r.live and r.waiting, "rank flags")
      check(r.wait_now == 0.25 and r.wait_total == 1.5 and r.silent == -1, "wait")
      check(r.iter_time == 0.3 and r.work_time == 0.2 and r.last_work_time == 0.4, "times")
      check(r.rows_this_clock == 3 and r.address == "127.0.0.1:5001", "rows/address")
      check(r.paused == 0.12 and r.pauses == 3, "pauses")
      check(t.ranks[1].paused == 0 and t.ranks[1].pauses == 0, "no pauses")
      check(r.joins == 1 and r.reads == 2 and r.incs_applied == 3 and r.incs_duplicate == 4,
            "rank counters")
      check(r.clocks == 5 and r.clock_retransmits == 6 and r.nacks == 7 and r.releases == 8,
            "rank counters2")
      check(r.errors == 9 and r.evictions == 10, "rank counters3")
      check(t.ranks[1].silent == 0.05 and t.ranks[1].lag == 0, "rank 0")
      check(t.ranks[3].live == false, "rank 2")
      return sync()
    end
  )lua");
  ASSERT_NE(script, nullptr);
  auto result = script->OnTelemetry(t);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_TRUE(result->has_value());

  // No pending swap: no next rule.
  t.mutable_policy()->set_swap_pending(false);
  auto quiet = MustLoad(R"lua(
    function on_telemetry(t)
      assert(t.next_rule == nil and t.swap_clock == nil and t.next_epoch == nil)
    end
  )lua");
  ASSERT_NE(quiet, nullptr);
  auto r2 = quiet->OnTelemetry(t);
  EXPECT_TRUE(r2.ok()) << r2.status().message();
}

TEST(PolicyScriptTest, GlobalsPersistBetweenCalls) {
  auto script = MustLoad(R"lua(
    calls = 0
    function on_telemetry(t)
      calls = calls + 1
      return ssp(calls)
    end
  )lua");
  ASSERT_NE(script, nullptr);
  for (uint32_t i = 1; i <= 3; ++i) {
    auto r = script->OnTelemetry(Telemetry(1));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ((*r)->rule, BarrierParams::Ssp(i));
  }
}

}  // namespace
}  // namespace serene::control
