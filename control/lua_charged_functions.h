// Library functions that charge the instruction budget for the work they do
// in C (docs/policies.md "The sandbox"), installed by OpenSafeLibs.
//
// Each replaces or wraps a Lua 5.4 standard function with the same
// semantics, and calls LuaSandbox::Charge before or while it works, so that
// the budget covers it and the time limit is checked at every step of work
// that could take long:
//
//   table.sort    a heap sort (O(n log n) comparisons in the worst case),
//                 charged per comparison: 1, plus 1 per 16 bytes when two
//                 strings are compared (Lua compares strings with strcoll
//                 segment by segment between zero bytes: a byte can cost a
//                 strcoll call). Plain tables only.
//   table.concat  charged per element and per 64 bytes it appends.
//   table.unpack  charged per value it pushes.
//   byte-charged  any other function whose work grows with the strings it
//                 reads or writes (string.byte, char, format, lower, upper,
//                 reverse, sub, pack, unpack, packsize; utf8.char, codepoint,
//                 len, offset, codes and its iterator; tonumber; table.pack):
//                 1, plus 1 per 16 values and 1 per 64 bytes of arguments
//                 before the call, and the same for its results after.
#pragma once

struct lua_State;

namespace serene::control {

// Replaces sort, concat and unpack in the table on top of the stack.
void ReplaceTableFunctions(lua_State* L);

// Wraps each named function of the table on top of the stack (which must
// be a C function) so that it is charged by bytes, as above. `names` ends
// with nullptr.
void ChargeByBytes(lua_State* L, const char* const* names);

// Replaces utf8.codes in the table on top of the stack by a byte-charged
// version whose iterator is byte-charged too.
void ChargeUtf8CodesIterator(lua_State* L);

}  // namespace serene::control
