#include "control/policy_script.h"

#include <filesystem>
#include <fstream>
#include <lua.hpp>
#include <sstream>
#include <system_error>
#include <utility>

#include "control/lua_rules.h"
#include "control/lua_sandbox.h"
#include "control/lua_telemetry.h"

// The Lua side of each step runs as a LuaSandbox::Body (protected mode).
// Lua errors are longjmps that skip C++ destructors, so a body holds no
// object with a destructor while it calls a raising Lua function; results go
// to the caller's structs, which live outside the protected call.

namespace serene::control {
namespace {

// log(...) limits: a script cannot flood the controller's memory or log.
constexpr size_t kMaxLogLinesPerCall = 100;
constexpr size_t kMaxLogLineBytes = 1000;
constexpr size_t kMaxPendingLogLines = 1000;

constexpr char kOnTelemetry[] = "on_telemetry";

class LuaPolicyScript final : public PolicyScript {
 public:
  explicit LuaPolicyScript(std::unique_ptr<LuaSandbox> sandbox) : sandbox_(std::move(sandbox)) {}

  // Defines the globals and runs the main chunk.
  Status Load(std::string_view source, const Params& params);

  const std::string& name() const override { return sandbox_->name(); }
  const std::optional<PolicyDecision>& initial() const override { return initial_; }
  bool adaptive() const override { return adaptive_; }
  Result<std::optional<PolicyDecision>> OnTelemetry(const v1::JobTelemetry& t) override;
  std::vector<std::string> TakeLog() override { return std::exchange(log_, {}); }

 private:
  struct LoadArgs {
    LuaPolicyScript* self;
    std::string_view source;
    const Params* params;
  };
  struct CallArgs {
    LuaPolicyScript* self;
    const v1::JobTelemetry* telemetry;
    std::optional<PolicyDecision> decision;
  };

  static int LoadBody(lua_State* L);
  static int CallBody(lua_State* L);
  static int Log(lua_State* L);
  // Converts the value on top (what the script returned) into a decision;
  // raises "<what> returned a number, expected ...".
  static void TakeResult(lua_State* L, const char* what, std::optional<PolicyDecision>* out);
  // Runs a body, then reports dropped log lines.
  Status Run(LuaSandbox::Body body, void* args);

  std::unique_ptr<LuaSandbox> sandbox_;
  std::optional<PolicyDecision> initial_;
  bool adaptive_ = false;
  std::vector<std::string> log_;
  size_t logged_this_call_ = 0;
  size_t dropped_this_call_ = 0;
};

Status LuaPolicyScript::Load(std::string_view source, const Params& params) {
  LoadArgs args{this, source, &params};
  return Run(&LoadBody, &args);
}

Result<std::optional<PolicyDecision>> LuaPolicyScript::OnTelemetry(const v1::JobTelemetry& t) {
  if (!adaptive_) {
    return Status::FailedPrecondition(name() + " defines no on_telemetry(t): a static policy");
  }
  CallArgs args{this, &t, std::nullopt};
  Status s = Run(&CallBody, &args);
  if (!s.ok()) return s;
  return std::move(args.decision);
}

Status LuaPolicyScript::Run(LuaSandbox::Body body, void* args) {
  logged_this_call_ = 0;
  dropped_this_call_ = 0;
  Status s = sandbox_->Run(body, args);
  if (dropped_this_call_ > 0 && log_.size() < kMaxPendingLogLines + 1) {
    log_.push_back(name() + ": " + std::to_string(dropped_this_call_) +
                   " more log lines dropped (at most " + std::to_string(kMaxLogLinesPerCall) +
                   " per call)");
  }
  return s;
}

int LuaPolicyScript::LoadBody(lua_State* L) {
  auto* args = static_cast<LoadArgs*>(lua_touserdata(L, 1));
  LuaPolicyScript* self = args->self;
  lua_settop(L, 0);

  OpenRuleLib(L);

  lua_createtable(L, 0, static_cast<int>(args->params->size()));
  for (const auto& [key, value] : *args->params) {
    lua_pushlstring(L, key.data(), key.size());
    // lua_stringtonumber counts the terminating zero: a value with an inner
    // zero only looks like a number up to it, and stays a string.
    const size_t parsed = lua_stringtonumber(L, value.c_str());
    if (parsed != value.size() + 1) {
      if (parsed != 0) lua_pop(L, 1);
      lua_pushlstring(L, value.data(), value.size());
    }
    lua_rawset(L, -3);
  }
  lua_setglobal(L, "params");

  lua_pushlightuserdata(L, self);
  lua_pushcclosure(L, &Log, 1);
  lua_pushvalue(L, -1);
  lua_setglobal(L, "log");
  lua_setglobal(L, "print");

  LuaSandbox::LoadChunk(L, args->source.data(), args->source.size());
  lua_call(L, 0, 1);
  TakeResult(L, "the main chunk", &self->initial_);

  const int type = lua_getglobal(L, kOnTelemetry);
  if (type != LUA_TNIL && type != LUA_TFUNCTION) {
    return luaL_error(L, "%s is a %s, expected a function", kOnTelemetry, lua_typename(L, type));
  }
  self->adaptive_ = type == LUA_TFUNCTION;
  if (!self->initial_.has_value() && !self->adaptive_) {
    return luaL_error(L,
                      "the script neither returns a rule (return ssp(10)) nor defines "
                      "on_telemetry(t)");
  }
  return 0;
}

int LuaPolicyScript::CallBody(lua_State* L) {
  auto* args = static_cast<CallArgs*>(lua_touserdata(L, 1));
  lua_settop(L, 0);
  const int type = lua_getglobal(L, kOnTelemetry);
  if (type != LUA_TFUNCTION) {
    return luaL_error(L, "%s is a %s now, expected a function", kOnTelemetry,
                      lua_typename(L, type));
  }
  // Until the function runs its first line, errors (e.g. no memory for the
  // telemetry table) are reported where it is defined.
  lua_Debug ar;
  lua_pushvalue(L, -1);
  if (lua_getinfo(L, ">S", &ar) != 0) LuaSandbox::Of(L).set_line(ar.linedefined);
  PushTelemetry(L, *args->telemetry);
  lua_call(L, 1, 1);
  TakeResult(L, "on_telemetry", &args->decision);
  return 0;
}

void LuaPolicyScript::TakeResult(lua_State* L, const char* what,
                                 std::optional<PolicyDecision>* out) {
  if (lua_isnil(L, -1)) {
    *out = std::nullopt;
  } else if (const LuaRule* rule = ToRule(L, -1); rule != nullptr) {
    *out = ToDecision(*rule);
  } else {
    luaL_error(L, "%s returned a %s, expected a rule (ssp(10), sync(), ...) or nil", what,
               luaL_typename(L, -1));
  }
  lua_pop(L, 1);
}

// log(...): one line, the arguments tostring'd and joined by spaces.
int LuaPolicyScript::Log(lua_State* L) {
  auto* self = static_cast<LuaPolicyScript*>(lua_touserdata(L, lua_upvalueindex(1)));
  if (self->logged_this_call_ >= kMaxLogLinesPerCall || self->log_.size() >= kMaxPendingLogLines) {
    ++self->dropped_this_call_;
    return 0;
  }
  const int n = lua_gettop(L);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int i = 1; i <= n; ++i) {
    if (i > 1) luaL_addchar(&b, ' ');
    luaL_tolstring(L, i, nullptr);
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  size_t size = 0;
  const char* line = lua_tolstring(L, -1, &size);
  // Joining long strings is work in C, like string.format's (per 64 bytes).
  LuaSandbox::Charge(L, 1 + size / 64);
  if (size > kMaxLogLineBytes) {
    self->log_.emplace_back(line, kMaxLogLineBytes);
    self->log_.back() += "...";
  } else {
    self->log_.emplace_back(line, size);
  }
  ++self->logged_this_call_;
  return 0;
}

Result<std::unique_ptr<PolicyScript>> Make(std::string_view source, std::string name,
                                           const PolicyScript::Params& params,
                                           const PolicyLimits& limits) {
  if (name.empty()) name = "policy";
  auto sandbox = LuaSandbox::Create(std::move(name), limits);
  if (!sandbox.ok()) return sandbox.status();
  auto script = std::make_unique<LuaPolicyScript>(std::move(*sandbox));
  Status s = script->Load(source, params);
  if (!s.ok()) return s;
  return std::unique_ptr<PolicyScript>(std::move(script));
}

}  // namespace

PolicyScript::~PolicyScript() = default;

Result<std::unique_ptr<PolicyScript>> PolicyScript::LoadFile(const std::string& path,
                                                             const Params& params,
                                                             PolicyLimits limits) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Status::NotFound(
        "policy script " + path + ": " +
        (std::filesystem::exists(path, ec) ? "not a regular file" : "no such file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("policy script " + path + ": cannot open it for reading");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::IoError("policy script " + path + ": read failed");
  return Make(text.str(), std::filesystem::path(path).filename().string(), params, limits);
}

Result<std::unique_ptr<PolicyScript>> PolicyScript::LoadString(std::string_view source,
                                                               std::string_view chunk_name,
                                                               const Params& params,
                                                               PolicyLimits limits) {
  return Make(source, std::string(chunk_name), params, limits);
}

}  // namespace serene::control
