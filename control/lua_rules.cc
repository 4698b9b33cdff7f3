#include "control/lua_rules.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <lua.hpp>

// Lua errors are longjmps that skip C++ destructors: the functions that call
// raising Lua API functions hold no std::string; text goes through buffers.

namespace serene::control {
namespace {

using dataplane::BarrierParams;

constexpr char kRuleType[] = "serene.rule";
constexpr uint32_t kNoBound = BarrierParams::kUnbounded;  // also kAllWorkers
constexpr lua_Integer kMaxCount = 0xFFFFFFFE;
constexpr size_t kTextSize = 128;  // fits the longest rule text

// Which spellings of 0xFFFFFFFF an argument accepts.
enum class Unbounded {
  kNo,   // none: a plain count (a clock)
  kInf,  // math.huge or "inf": no bound (window, lag)
  kAll,  // math.huge or "all": every live rank (quorum)
};

const char* Kind(const BarrierParams& r) {
  if (r == BarrierParams::Sync()) return "sync";
  if (r == BarrierParams::Async()) return "async";
  if (r.quorum == BarrierParams::kAllWorkers && r.window == r.lag) return "ssp";
  if (r.window == 0 && r.quorum != BarrierParams::kAllWorkers) return "quorum";
  return "hybrid";
}

void FormatBound(uint32_t v, char* out, size_t size) {
  if (v == kNoBound) {
    std::snprintf(out, size, "math.huge");
  } else {
    std::snprintf(out, size, "%u", v);
  }
}

// The rule as a script writes it, then " at <clock>" if it has one.
void FormatRule(const BarrierParams& r, const uint32_t* clock, char* out, size_t size) {
  char w[16], k[16], l[16];
  FormatBound(r.window, w, sizeof(w));
  FormatBound(r.lag, l, sizeof(l));
  if (r.quorum == BarrierParams::kAllWorkers) {
    std::snprintf(k, sizeof(k), "\"all\"");
  } else {
    std::snprintf(k, sizeof(k), "%u", r.quorum);
  }
  const char* kind = Kind(r);
  int n = 0;
  if (std::strcmp(kind, "ssp") == 0) {
    n = std::snprintf(out, size, "ssp(%s)", w);
  } else if (std::strcmp(kind, "quorum") == 0) {
    n = std::snprintf(out, size, "quorum(%s, %s)", k, l);
  } else if (std::strcmp(kind, "hybrid") == 0) {
    n = std::snprintf(out, size, "hybrid{window=%s, quorum=%s, lag=%s}", w, k, l);
  } else {
    n = std::snprintf(out, size, "%s()", kind);
  }
  if (clock != nullptr && n >= 0 && static_cast<size_t>(n) < size) {
    std::snprintf(out + n, size - static_cast<size_t>(n), " at %u", *clock);
  }
}

void PushBound(lua_State* L, uint32_t v) {
  if (v == kNoBound) {
    lua_pushnumber(L, HUGE_VAL);
  } else {
    lua_pushinteger(L, static_cast<lua_Integer>(v));
  }
}

void PushRule(lua_State* L, const BarrierParams& params, const uint32_t* clock) {
  auto* rule = static_cast<LuaRule*>(lua_newuserdatauv(L, sizeof(LuaRule), 0));
  rule->params = params;
  rule->has_clock = clock != nullptr;
  rule->clock = clock != nullptr ? *clock : 0;
  luaL_setmetatable(L, kRuleType);
}

// The value at `arg` as a count in [min, 4294967294], or 0xFFFFFFFF for the
// spellings `unbounded` allows; otherwise raises "fn: what must be ..., got v".
uint32_t CheckCount(lua_State* L, int arg, const char* fn, const char* what, lua_Integer min,
                    Unbounded unbounded) {
  arg = lua_absindex(L, arg);
  const int type = lua_type(L, arg);
  if (type == LUA_TNUMBER) {
    int exact = 0;
    const lua_Integer v = lua_tointegerx(L, arg, &exact);
    if (exact != 0 && v >= min && v <= kMaxCount) return static_cast<uint32_t>(v);
    if (unbounded != Unbounded::kNo && lua_tonumber(L, arg) == HUGE_VAL) return kNoBound;
  } else if (type == LUA_TSTRING) {
    const char* word = unbounded == Unbounded::kInf   ? "inf"
                       : unbounded == Unbounded::kAll ? "all"
                                                      : nullptr;
    if (word != nullptr && std::strcmp(lua_tostring(L, arg), word) == 0) return kNoBound;
  }
  const char* expected =
      unbounded == Unbounded::kInf   ? "an integer in 0..4294967294, math.huge or \"inf\""
      : unbounded == Unbounded::kAll ? "an integer in 1..4294967294, \"all\" or math.huge"
                                     : "an integer in 0..4294967294";
  if (type == LUA_TSTRING) {
    lua_pushfstring(L, "\"%s\"", lua_tostring(L, arg));
  } else if (type == LUA_TNONE || type == LUA_TNIL) {
    lua_pushliteral(L, "nil");
  } else {
    luaL_tolstring(L, arg, nullptr);
  }
  luaL_error(L, "%s: %s must be %s, got %s", fn, what, expected, lua_tostring(L, -1));
  return 0;
}

void CheckNoArguments(lua_State* L, const char* fn) {
  if (lua_gettop(L) > 0) luaL_error(L, "%s() takes no arguments", fn);
}

int Sync(lua_State* L) {
  CheckNoArguments(L, "sync");
  PushRule(L, BarrierParams::Sync(), nullptr);
  return 1;
}

int Async(lua_State* L) {
  CheckNoArguments(L, "async");
  PushRule(L, BarrierParams::Async(), nullptr);
  return 1;
}

int Ssp(lua_State* L) {
  const uint32_t w = CheckCount(L, 1, "ssp", "window", 0, Unbounded::kInf);
  PushRule(L, BarrierParams::Ssp(w), nullptr);
  return 1;
}

int Quorum(lua_State* L) {
  const uint32_t k = CheckCount(L, 1, "quorum", "k", 1, Unbounded::kAll);
  const uint32_t l = CheckCount(L, 2, "quorum", "l (the lag bound)", 0, Unbounded::kInf);
  PushRule(L, BarrierParams::Quorum(k, l), nullptr);
  return 1;
}

// hybrid{window=, quorum=, lag=}: window 0, quorum every live rank and lag =
// window when left out.
int Hybrid(lua_State* L) {
  if (lua_type(L, 1) != LUA_TTABLE) {
    luaL_tolstring(L, 1, nullptr);
    return luaL_error(L, "hybrid: expected a table like hybrid{window=2, quorum=3, lag=8}, got %s",
                      lua_tostring(L, -1));
  }
  lua_pushnil(L);
  while (lua_next(L, 1) != 0) {
    const char* key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : nullptr;
    if (key == nullptr || (std::strcmp(key, "window") != 0 && std::strcmp(key, "quorum") != 0 &&
                           std::strcmp(key, "lag") != 0)) {
      luaL_tolstring(L, -2, nullptr);
      return luaL_error(L, "hybrid: unknown field %s (the fields are window, quorum, lag)",
                        lua_tostring(L, -1));
    }
    lua_pop(L, 1);
  }
  BarrierParams p;
  p.window = lua_getfield(L, 1, "window") == LUA_TNIL
                 ? 0
                 : CheckCount(L, -1, "hybrid", "window", 0, Unbounded::kInf);
  p.quorum = lua_getfield(L, 1, "quorum") == LUA_TNIL
                 ? BarrierParams::kAllWorkers
                 : CheckCount(L, -1, "hybrid", "quorum", 1, Unbounded::kAll);
  p.lag = lua_getfield(L, 1, "lag") == LUA_TNIL
              ? p.window
              : CheckCount(L, -1, "hybrid", "lag", 0, Unbounded::kInf);
  PushRule(L, p, nullptr);
  return 1;
}

// rule:at(clock)
int At(lua_State* L) {
  const auto* rule = static_cast<const LuaRule*>(luaL_checkudata(L, 1, kRuleType));
  const uint32_t clock = CheckCount(L, 2, "at", "clock", 0, Unbounded::kNo);
  PushRule(L, rule->params, &clock);
  return 1;
}

int Index(lua_State* L) {
  const auto* rule = static_cast<const LuaRule*>(luaL_checkudata(L, 1, kRuleType));
  const char* key = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "";
  if (std::strcmp(key, "window") == 0) {
    PushBound(L, rule->params.window);
  } else if (std::strcmp(key, "quorum") == 0) {
    PushBound(L, rule->params.quorum);
  } else if (std::strcmp(key, "lag") == 0) {
    PushBound(L, rule->params.lag);
  } else if (std::strcmp(key, "clock") == 0 && rule->has_clock) {
    lua_pushinteger(L, static_cast<lua_Integer>(rule->clock));
  } else if (std::strcmp(key, "kind") == 0) {
    lua_pushstring(L, Kind(rule->params));
  } else if (std::strcmp(key, "text") == 0) {
    char text[kTextSize];
    FormatRule(rule->params, rule->has_clock ? &rule->clock : nullptr, text, sizeof(text));
    lua_pushstring(L, text);
  } else if (std::strcmp(key, "at") == 0) {
    lua_pushcfunction(L, At);
  } else {
    lua_pushnil(L);
  }
  return 1;
}

int NewIndex(lua_State* L) {
  return luaL_error(L, "a rule is read-only; make a new one (e.g. ssp(12), rule:at(200))");
}

// The barrier point only: ssp(10):at(200) == ssp(10).
int Equal(lua_State* L) {
  const auto* a = static_cast<const LuaRule*>(luaL_testudata(L, 1, kRuleType));
  const auto* b = static_cast<const LuaRule*>(luaL_testudata(L, 2, kRuleType));
  lua_pushboolean(L, a != nullptr && b != nullptr && a->params == b->params);
  return 1;
}

int ToString(lua_State* L) {
  const auto* rule = static_cast<const LuaRule*>(luaL_checkudata(L, 1, kRuleType));
  char text[kTextSize];
  FormatRule(rule->params, rule->has_clock ? &rule->clock : nullptr, text, sizeof(text));
  lua_pushstring(L, text);
  return 1;
}

}  // namespace

void OpenRuleLib(lua_State* L) {
  static constexpr luaL_Reg kMeta[] = {{"__index", Index},
                                       {"__newindex", NewIndex},
                                       {"__eq", Equal},
                                       {"__tostring", ToString},
                                       {nullptr, nullptr}};
  luaL_newmetatable(L, kRuleType);
  luaL_setfuncs(L, kMeta, 0);
  // getmetatable(rule) answers "rule": the methods cannot be swapped.
  lua_pushliteral(L, "rule");
  lua_setfield(L, -2, "__metatable");
  lua_pop(L, 1);

  static constexpr luaL_Reg kConstructors[] = {
      {"sync", Sync}, {"ssp", Ssp}, {"async", Async}, {"quorum", Quorum}, {"hybrid", Hybrid}};
  for (const luaL_Reg& f : kConstructors) {
    lua_pushcfunction(L, f.func);
    lua_setglobal(L, f.name);
  }
}

void PushRule(lua_State* L, const BarrierParams& params) { PushRule(L, params, nullptr); }

const LuaRule* ToRule(lua_State* L, int index) {
  return static_cast<const LuaRule*>(luaL_testudata(L, index, kRuleType));
}

PolicyDecision ToDecision(const LuaRule& rule) {
  char text[kTextSize];
  FormatRule(rule.params, rule.has_clock ? &rule.clock : nullptr, text, sizeof(text));
  PolicyDecision d;
  d.rule = rule.params;
  if (rule.has_clock) d.effective_clock = rule.clock;
  d.text = text;
  return d;
}

std::string RuleScriptText(const BarrierParams& rule) {
  char text[kTextSize];
  FormatRule(rule, nullptr, text, sizeof(text));
  return text;
}

}  // namespace serene::control
