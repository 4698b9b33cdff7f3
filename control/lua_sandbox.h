// LuaSandbox: one Lua 5.4 state locked down to run policy scripts
// (policy_script.h, docs/policies.md "The sandbox").
//
// Reach: the safe standard libraries only (lua_safe_libs.h): no files,
// processes, environment, modules, bytecode or debug interface.
//
// Cost: every Run() gets a fresh instruction budget, counted by a count hook;
// C functions whose work the VM does not count (lua_safe_libs.h: sort,
// concat, unpack, string and utf8 functions by the bytes they read and
// write, ...) charge the same budget with Charge(). A wall-clock limit
// derived from the budget catches what neither sees (one VM instruction
// comparing two long strings): it is checked when work is charged, at hook
// events, and, so that a long instruction between two hook events does not
// delay it, by a watchdog thread (lua_watchdog.h) that signals the running
// thread with InterruptSignal(), whose handler (installed once per process)
// makes the next instruction fire the hook. A call is therefore stopped at
// most one VM instruction or one charged step of C work after its time
// limit. The whole state may hold at most PolicyLimits::memory_bytes: a
// counting allocator refuses beyond, which Lua turns into a memory error.
// Exceeding a limit fails the call, never the process, and the state stays
// usable for the next Run(). A script cannot catch its way past the budget:
// once exceeded, every hook event raises the error again until the call ends.
//
// Errors: Run() turns every failure into InvalidArgument "name:line: message",
// `name` being the chunk name and `line` the script line that was running:
// the line and return hooks keep it, so even a memory error, which Lua
// reports without a position, says where.
//
// Not thread-safe: one sandbox per thread.
#pragma once

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "control/lua_watchdog.h"
#include "control/policy_script.h"

struct lua_State;
struct lua_Debug;

namespace serene::control {

class LuaSandbox {
 public:
  // The signal the watchdog interrupts a call with; its handler touches only
  // the sandbox running on the signalled thread, if any.
  static int InterruptSignal();

  // A protected body for Run(): it finds its argument as a light userdata at
  // stack index 1 and may raise Lua errors.
  using Body = int (*)(lua_State* L);

  // Creates the state and opens the safe libraries. `name` names the chunk in
  // messages (truncated to Lua's 59 characters). InvalidArgument if the
  // limits leave no room to open the libraries.
  static Result<std::unique_ptr<LuaSandbox>> Create(std::string name, const PolicyLimits& limits);

  ~LuaSandbox();
  LuaSandbox(const LuaSandbox&) = delete;
  LuaSandbox& operator=(const LuaSandbox&) = delete;

  const std::string& name() const { return name_; }
  lua_State* state() const { return state_; }
  // Bytes the state holds now.
  size_t memory_used() const { return bytes_; }

  // Runs body(L) in protected mode with `arg` as its only argument, under a
  // fresh instruction budget and time limit. Leaves the stack empty.
  // Returns InvalidArgument "name:line: message" if the body raised an error
  // or ran out of budget, time or memory (even if the script caught it).
  Status Run(Body body, void* arg);

  // Compiles `source` as a text chunk (never bytecode) named after the
  // sandbox and pushes it as a function. REQUIRES: inside a Run() body.
  // Raises the syntax error ("name:line: ... near ...") on failure.
  static void LoadChunk(lua_State* L, const char* source, size_t size);

  // The sandbox that owns L.
  static LuaSandbox& Of(lua_State* L);

  // Charges `units` instructions' worth of work to the running call and
  // raises the budget error if that exhausts it. For C functions whose work
  // grows with their arguments and that execute no Lua instructions.
  static void Charge(lua_State* L, uint64_t units);

  // The line errors raised from C are reported at, until the script runs a
  // line of its own (e.g. the line a function is defined on, while its
  // arguments are built).
  void set_line(int line) { line_ = line; }

 private:
  LuaSandbox(std::string name, const PolicyLimits& limits);

  static void* Allocate(void* ud, void* ptr, size_t osize, size_t nsize);
  static void Hook(lua_State* L, lua_Debug* ar);
  static int Panic(lua_State* L);
  // Raises the budget or time error if the running call is over a limit;
  // reads the clock only if `read_clock` (the watchdog's flag always counts).
  void CheckLimits(lua_State* L, bool read_clock = true);
  // On the watchdog's thread: the running call is past its deadline.
  void Expire();
  // In the signal handler, on the thread running the call: if the signal
  // is for this call, make the next instruction fire the count hook.
  void Interrupt();
  static void OnInterruptSignal(int signal);
  // The error message of a failed call, with the position added if missing.
  std::string ErrorMessage(int rc) const;
  bool HasPosition(const char* message) const;

  std::string name_;
  const PolicyLimits limits_;
  const std::chrono::nanoseconds time_limit_;
  const int hook_period_;  // instructions between count-hook events
  lua_State* state_ = nullptr;

  // Memory: bytes held by the state; the size of the last refused request
  // in the running call (0: none).
  size_t bytes_ = 0;
  size_t refused_ = 0;

  // The running call.
  uint64_t spent_ = 0;  // instructions executed and units charged
  std::chrono::steady_clock::time_point deadline_{};
  int line_ = 0;          // the script line running (or last run)
  uint32_t lines_ = 0;    // line events, to pace the clock checks
  uint32_t charges_ = 0;  // Charge() calls, to pace the clock checks
  // Set by the watchdog once the running call is past its deadline.
  std::atomic<bool> expired_{false};
  // The thread running calls, the running call's number, and the number of
  // the call the watchdog signalled (a late signal must not touch the next).
  pthread_t run_thread_{};
  std::atomic<uint64_t> run_generation_{0};
  std::atomic<uint64_t> interrupt_generation_{0};
  // The budget or time error once raised, re-raised by every later hook
  // event of the call; "" while within limits.
  char fatal_[256] = "";

  // Last: its thread calls Expire(), which uses the members above.
  LuaWatchdog watchdog_{[this] { Expire(); }};
};

}  // namespace serene::control
