// The standard libraries a policy script gets (docs/policies.md "The
// sandbox"), opened by LuaSandbox:
//
//   base    without dofile, loadfile and load (a policy loads no code, and
//           load would take bytecode, which the VM trusts), require, print and
//           warn (log() replaces them); collectgarbage answers "count" only (a
//           full collection is one instruction but unbounded work);
//           setmetatable refuses a metatable with __gc (Lua runs finalizers
//           with hooks off, outside any budget).
//   string  without dump (bytecode) and the pattern functions match, gmatch
//           and gsub: Lua's matcher backtracks in C, where the instruction
//           count never runs, and a pattern like "(.-)(.-)(.-)x" takes hours
//           on a long subject. find searches plain text only (a pattern with
//           no magic characters, or plain = true); rep charges the budget.
//   table   insert, remove and move take plain tables and charge the budget
//           per element they shift (a length of 2^62 costs no memory).
//   math, utf8 as they are.
//
// Not opened: io, os, package, debug, coroutine.
#pragma once

struct lua_State;

namespace serene::control {

// A LuaSandbox::Body: opens the libraries above into L's globals.
int OpenSafeLibs(lua_State* L);

}  // namespace serene::control
