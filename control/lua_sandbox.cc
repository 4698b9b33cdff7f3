#include "control/lua_sandbox.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <lua.hpp>
#include <mutex>
#include <utility>

#include "control/lua_safe_libs.h"

// Lua is built as C: its errors are longjmps, which skip C++ destructors. So
// no function here that calls a raising Lua API function holds an object with
// a destructor at that moment; messages are formatted into char buffers.

namespace serene::control {
namespace {

using Clock = std::chrono::steady_clock;

// Instructions between two count-hook events: the budget's granularity, and
// how often a long loop of single-line work checks the clock.
constexpr int kHookPeriod = 1000;

// Line events between two looks at the clock (count events always look).
constexpr uint32_t kLinesPerClockCheck = 16;

// Charges between two looks at the clock, unless one charge is this large:
// small charges (one comparison of a sort) cost less than a clock read.
constexpr uint32_t kChargesPerClockCheck = 64;
constexpr uint64_t kUnitsForAClockCheck = 1024;

constexpr int kHookMask = LUA_MASKLINE | LUA_MASKCOUNT | LUA_MASKRET;

// The sandbox whose call runs on this thread (read by the signal handler).
thread_local LuaSandbox* running_sandbox = nullptr;

void InstallInterruptHandler(void (*handler)(int)) {
  static std::once_flag once;
  std::call_once(once, [handler] {
    struct sigaction action = {};
    action.sa_handler = handler;
    action.sa_flags = SA_RESTART;  // a late signal must not fail a system call
    sigemptyset(&action.sa_mask);
    sigaction(LuaSandbox::InterruptSignal(), &action, nullptr);
  });
}

// The wall-clock limit is the budget at this pessimistic cost per
// instruction (a VM instruction takes ~5-20 ns), but at least kMinTimeLimit:
// only work the instruction count does not see reaches it.
constexpr std::chrono::nanoseconds kTimePerInstruction{200};
constexpr std::chrono::nanoseconds kMinTimeLimit = std::chrono::seconds(1);

std::chrono::nanoseconds TimeLimit(uint64_t instructions) {
  const uint64_t max_count =
      static_cast<uint64_t>(std::chrono::nanoseconds::max().count() / kTimePerInstruction.count());
  const auto t = kTimePerInstruction * static_cast<int64_t>(std::min(instructions, max_count));
  return std::max(t, kMinTimeLimit);
}

// "32 MiB", "1.5 MiB", "900 KiB", "100 bytes".
void FormatBytes(size_t bytes, char* out, size_t size) {
  constexpr size_t kKiB = 1024, kMiB = 1024 * 1024;
  if (bytes >= kMiB && bytes % kMiB == 0) {
    std::snprintf(out, size, "%zu MiB", bytes / kMiB);
  } else if (bytes >= kMiB) {
    std::snprintf(out, size, "%.1f MiB", static_cast<double>(bytes) / kMiB);
  } else if (bytes >= kKiB) {
    std::snprintf(out, size, "%zu KiB", bytes / kKiB);
  } else {
    std::snprintf(out, size, "%zu bytes", bytes);
  }
}

}  // namespace

LuaSandbox::LuaSandbox(std::string name, const PolicyLimits& limits)
    : name_(std::move(name)),
      limits_(limits),
      time_limit_(TimeLimit(limits.instructions)),
      hook_period_(static_cast<int>(
          std::clamp<uint64_t>(limits.instructions, 1, static_cast<uint64_t>(kHookPeriod)))) {
  // Lua shows a "=name" chunk name truncated to LUA_IDSIZE - 1 characters;
  // keep the same so positions in Lua's messages and ours agree.
  if (name_.size() > LUA_IDSIZE - 1) name_.resize(LUA_IDSIZE - 1);
}

Result<std::unique_ptr<LuaSandbox>> LuaSandbox::Create(std::string name,
                                                       const PolicyLimits& limits) {
  std::unique_ptr<LuaSandbox> sandbox(new LuaSandbox(std::move(name), limits));
  char limit[32];
  FormatBytes(limits.memory_bytes, limit, sizeof(limit));
  lua_State* L = lua_newstate(&Allocate, sandbox.get());
  if (L == nullptr) {
    return Status::InvalidArgument(sandbox->name_ + ": a memory limit of " + limit +
                                   " is too small for a Lua state");
  }
  sandbox->state_ = L;
  InstallInterruptHandler(&LuaSandbox::OnInterruptSignal);
  *static_cast<LuaSandbox**>(lua_getextraspace(L)) = sandbox.get();
  lua_atpanic(L, &Panic);
  Status s = sandbox->Run(&OpenSafeLibs, nullptr);
  if (!s.ok()) {
    return Status::InvalidArgument(sandbox->name_ + ": cannot open the Lua libraries within " +
                                   "the limits (memory " + limit + "): " + s.message());
  }
  return sandbox;
}

LuaSandbox::~LuaSandbox() {
  // setmetatable refuses __gc, so closing runs no script code.
  if (state_ != nullptr) lua_close(state_);
}

LuaSandbox& LuaSandbox::Of(lua_State* L) {
  return **static_cast<LuaSandbox**>(lua_getextraspace(L));
}

Status LuaSandbox::Run(Body body, void* arg) {
  lua_State* L = state_;
  lua_settop(L, 0);
  spent_ = 0;
  refused_ = 0;
  fatal_[0] = '\0';
  line_ = 0;
  charges_ = 0;
  // Also undoes the watchdog's count of 1 if it fired in the last call.
  expired_.store(false, std::memory_order_relaxed);
  lua_sethook(L, &Hook, kHookMask, hook_period_);
  deadline_ = Clock::now() + time_limit_;
  run_thread_ = pthread_self();
  run_generation_.fetch_add(1);
  running_sandbox = this;
  watchdog_.Arm(deadline_);
  lua_pushcfunction(L, body);
  lua_pushlightuserdata(L, arg);
  const int rc = lua_pcall(L, 1, 0, 0);
  running_sandbox = nullptr;
  watchdog_.Disarm();
  Status status;
  if (rc != LUA_OK || fatal_[0] != '\0') status = Status::InvalidArgument(ErrorMessage(rc));
  lua_settop(L, 0);
  fatal_[0] = '\0';
  return status;
}

void LuaSandbox::LoadChunk(lua_State* L, const char* source, size_t size) {
  LuaSandbox& sandbox = Of(L);
  // "=name": Lua prints the name as it is, not as [string "..."].
  lua_pushfstring(L, "=%s", sandbox.name_.c_str());
  // Mode "t": a precompiled (bytecode) chunk is refused; the VM trusts
  // bytecode, and malformed bytecode can corrupt memory.
  const int rc = luaL_loadbufferx(L, source, size, lua_tostring(L, -1), "t");
  lua_remove(L, -2);
  if (rc == LUA_OK) return;
  if (rc == LUA_ERRMEM) {
    // lua_load reports it as a plain "not enough memory"; say what and where.
    char message[256];
    char limit[32], refused[32];
    FormatBytes(sandbox.limits_.memory_bytes, limit, sizeof(limit));
    FormatBytes(sandbox.refused_, refused, sizeof(refused));
    std::snprintf(message, sizeof(message),
                  "%s:1: memory limit of %s exceeded while compiling the script (refused "
                  "an allocation of %s)",
                  sandbox.name_.c_str(), limit, refused);
    lua_pushstring(L, message);
  }
  lua_error(L);
}

void LuaSandbox::Charge(lua_State* L, uint64_t units) {
  LuaSandbox& sandbox = Of(L);
  sandbox.spent_ = units > std::numeric_limits<uint64_t>::max() - sandbox.spent_
                       ? std::numeric_limits<uint64_t>::max()
                       : sandbox.spent_ + units;
  const bool read_clock =
      units >= kUnitsForAClockCheck || ++sandbox.charges_ % kChargesPerClockCheck == 0;
  sandbox.CheckLimits(L, read_clock);
}

int LuaSandbox::InterruptSignal() { return SIGRTMIN + 5; }

void LuaSandbox::Expire() {
  expired_.store(true, std::memory_order_relaxed);
  interrupt_generation_.store(run_generation_.load());
  pthread_kill(run_thread_, InterruptSignal());
}

void LuaSandbox::OnInterruptSignal(int /*signal*/) {
  LuaSandbox* sandbox = running_sandbox;
  if (sandbox != nullptr) sandbox->Interrupt();
}

void LuaSandbox::Interrupt() {
  if (interrupt_generation_.load() != run_generation_.load()) return;
  // Same thread as the state, between two of its instructions or inside a C
  // function: Lua allows lua_sethook there (lua.c's Ctrl-C does the same).
  lua_sethook(state_, &Hook, kHookMask, 1);
}

void* LuaSandbox::Allocate(void* ud, void* ptr, size_t osize, size_t nsize) {
  auto* sandbox = static_cast<LuaSandbox*>(ud);
  // With ptr == nullptr, osize encodes the kind of object, not a size.
  const size_t old = ptr == nullptr ? 0 : osize;
  if (nsize == 0) {
    std::free(ptr);
    sandbox->bytes_ -= old;
    return nullptr;
  }
  if (nsize > old) {
    const size_t cap = sandbox->limits_.memory_bytes;
    const size_t growth = nsize - old;
    if (sandbox->bytes_ > cap || growth > cap - sandbox->bytes_) {
      // Lua collects garbage and retries once, then raises a memory error.
      sandbox->refused_ = nsize;
      return nullptr;
    }
  }
  void* p = std::realloc(ptr, nsize);
  if (p == nullptr) return nullptr;
  sandbox->bytes_ = sandbox->bytes_ - old + nsize;
  return p;
}

void LuaSandbox::Hook(lua_State* L, lua_Debug* ar) {
  LuaSandbox& sandbox = Of(L);
  switch (ar->event) {
    case LUA_HOOKLINE:
      sandbox.line_ = ar->currentline;
      // The clock costs ~20 ns: read it every kLinesPerClockCheck lines, so
      // a tight one-line loop is not slowed, and one heavy line (a long
      // string compare) still overshoots the time limit by little.
      if (sandbox.fatal_[0] == '\0' && !sandbox.expired_.load(std::memory_order_relaxed) &&
          ++sandbox.lines_ % kLinesPerClockCheck != 0) {
        return;
      }
      break;
    case LUA_HOOKCOUNT:
      // After the watchdog fired, count events come every instruction.
      if (!sandbox.expired_.load(std::memory_order_relaxed)) {
        sandbox.spent_ += static_cast<uint64_t>(sandbox.hook_period_);
      }
      if (lua_getinfo(L, "l", ar) != 0 && ar->currentline > 0) sandbox.line_ = ar->currentline;
      break;
    case LUA_HOOKRET: {
      // Back in the middle of the caller's line, which fires no line event:
      // the running line is the innermost script function's (C functions,
      // such as a table.insert calling __len, have none).
      lua_Debug caller;
      for (int level = 1; lua_getstack(L, level, &caller) != 0; ++level) {
        if (lua_getinfo(L, "l", &caller) != 0 && caller.currentline > 0) {
          sandbox.line_ = caller.currentline;
          break;
        }
      }
      // A C function that calls other C functions in a loop (table.concat
      // through an __index that is a C function) runs no instruction: its
      // callees' returns are where it can be stopped.
      if (sandbox.expired_.load(std::memory_order_relaxed)) break;
      return;
    }
    default:
      return;
  }
  sandbox.CheckLimits(L);
}

void LuaSandbox::CheckLimits(lua_State* L, bool read_clock) {
  if (fatal_[0] == '\0') {
    const int line = line_ > 0 ? line_ : 1;
    if (spent_ > limits_.instructions) {
      std::snprintf(fatal_, sizeof(fatal_),
                    "%s:%d: instruction budget of %llu exceeded (an endless loop?)", name_.c_str(),
                    line, static_cast<unsigned long long>(limits_.instructions));
    } else if (expired_.load(std::memory_order_relaxed) ||
               (read_clock && Clock::now() > deadline_)) {
      std::snprintf(fatal_, sizeof(fatal_),
                    "%s:%d: the call ran longer than %.1f s, the time limit that goes with an "
                    "instruction budget of %llu (string or table work over much data?)",
                    name_.c_str(), line, std::chrono::duration<double>(time_limit_).count(),
                    static_cast<unsigned long long>(limits_.instructions));
    } else {
      return;
    }
  }
  lua_pushstring(L, fatal_);
  lua_error(L);
}

int LuaSandbox::Panic(lua_State* L) {
  // Only reachable through a bug here: every call into Lua is protected.
  const char* message = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "?";
  std::fprintf(stderr, "serene: unprotected error in the Lua policy sandbox: %s\n", message);
  std::abort();
}

bool LuaSandbox::HasPosition(const char* message) const {
  const size_t n = name_.size();
  if (std::strncmp(message, name_.c_str(), n) != 0 || message[n] != ':') return false;
  const char* p = message + n + 1;
  const char* digits = p;
  while (*p >= '0' && *p <= '9') ++p;
  return p > digits && *p == ':';
}

std::string LuaSandbox::ErrorMessage(int rc) const {
  lua_State* L = state_;
  const std::string where = name_ + ":" + std::to_string(line_ > 0 ? line_ : 1) + ": ";
  if (rc == LUA_ERRMEM) {
    char limit[32], refused[32], held[32];
    FormatBytes(limits_.memory_bytes, limit, sizeof(limit));
    FormatBytes(refused_, refused, sizeof(refused));
    FormatBytes(bytes_, held, sizeof(held));
    std::string message = where + "memory limit of " + limit + " exceeded";
    if (refused_ != 0) {
      message +=
          std::string(" (refused an allocation of ") + refused + "; the state holds " + held + ")";
    }
    return message;
  }
  if (fatal_[0] != '\0') return fatal_;
  std::string message;
  const int type = lua_type(L, -1);
  if (type == LUA_TSTRING) {
    size_t size = 0;
    const char* text = lua_tolstring(L, -1, &size);
    message.assign(text, size);
  } else if (type == LUA_TNUMBER) {
    // lua_tolstring would convert in place, which allocates: format it here.
    char text[64];
    if (lua_isinteger(L, -1)) {
      std::snprintf(text, sizeof(text), "%lld", static_cast<long long>(lua_tointeger(L, -1)));
    } else {
      std::snprintf(text, sizeof(text), "%.14g", lua_tonumber(L, -1));
    }
    message = text;
  } else {
    message = std::string("error object is a ") + lua_typename(L, type) + " value";
  }
  return HasPosition(message.c_str()) ? message : where + message;
}

}  // namespace serene::control
