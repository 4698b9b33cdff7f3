#include "control/lua_charged_functions.h"

#include <climits>
#include <cstdint>
#include <lua.hpp>

#include "control/lua_sandbox.h"

// Like the rest of the sandbox, nothing here holds an object with a
// destructor across a call that may raise (Lua errors are longjmps).

namespace serene::control {
namespace {

constexpr uint64_t kBytesPerUnit = 64;
constexpr uint64_t kValuesPerUnit = 16;
// Lua's string comparison may call strcoll once per byte (zero bytes).
constexpr uint64_t kComparedBytesPerUnit = 16;

// ------------------------------------------------------------ byte-charged

// Units for the values at stack indices first..last: 1 per kValuesPerUnit
// values and 1 per kBytesPerUnit bytes of strings.
uint64_t UnitsFor(lua_State* L, int first, int last) {
  uint64_t bytes = 0;
  for (int i = first; i <= last; ++i) {
    if (lua_type(L, i) == LUA_TSTRING) bytes += lua_rawlen(L, i);
  }
  const auto values = static_cast<uint64_t>(last >= first ? last - first + 1 : 0);
  return values / kValuesPerUnit + bytes / kBytesPerUnit;
}

// Calls the C function in upvalue 1 in this same call frame (so its argument
// errors name it as before), charged for its arguments before and its
// results after.
int ChargedByBytes(lua_State* L) {
  const lua_CFunction original = lua_tocfunction(L, lua_upvalueindex(1));
  LuaSandbox::Charge(L, 1 + UnitsFor(L, 1, lua_gettop(L)));
  const int results = original(L);
  const int top = lua_gettop(L);
  LuaSandbox::Charge(L, UnitsFor(L, top - results + 1, top));
  return results;
}

// Replaces the function at stack index `index` by a charged closure over it.
void WrapInPlace(lua_State* L, int index) {
  index = lua_absindex(L, index);
  lua_pushvalue(L, index);
  lua_pushcclosure(L, &ChargedByBytes, 1);
  lua_replace(L, index);
}

// utf8.codes: charged, and so is the iterator it returns (one step may skip
// every continuation byte of the string).
int Utf8Codes(lua_State* L) {
  const int results = ChargedByBytes(L);
  WrapInPlace(L, -results);
  return results;
}

// ------------------------------------------------------------------ sort

struct SortState {
  bool has_comparator;  // the comparator is at stack index 2
};

// t[a] < t[b] for the values at absolute stack indices a and b, charged.
bool Less(lua_State* L, const SortState& sort, int a, int b) {
  uint64_t units = 1;
  if (lua_type(L, a) == LUA_TSTRING && lua_type(L, b) == LUA_TSTRING) {
    const size_t la = lua_rawlen(L, a), lb = lua_rawlen(L, b);
    units += (la < lb ? la : lb) / kComparedBytesPerUnit;
  }
  LuaSandbox::Charge(L, units);
  if (!sort.has_comparator) return lua_compare(L, a, b, LUA_OPLT) != 0;
  lua_pushvalue(L, 2);
  lua_pushvalue(L, a);
  lua_pushvalue(L, b);
  lua_call(L, 2, 1);
  const bool less = lua_toboolean(L, -1) != 0;
  lua_pop(L, 1);
  return less;
}

// Moves t[root] down the max-heap t[1..end].
void SiftDown(lua_State* L, const SortState& sort, lua_Integer root, lua_Integer end) {
  lua_geti(L, 1, root);
  const int value = lua_gettop(L);
  for (;;) {
    lua_Integer child = 2 * root;
    if (child > end) break;
    lua_geti(L, 1, child);
    if (child < end) {
      lua_geti(L, 1, child + 1);
      const int top = lua_gettop(L);
      if (Less(L, sort, top - 1, top)) {
        lua_remove(L, -2);
        ++child;
      } else {
        lua_pop(L, 1);
      }
    }
    if (!Less(L, sort, value, lua_gettop(L))) {
      lua_pop(L, 1);
      break;
    }
    lua_seti(L, 1, root);  // the larger child moves up
    root = child;
  }
  lua_seti(L, 1, root);
}

// table.sort(list [, comp]).
int Sort(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  const lua_Integer n = luaL_len(L, 1);
  if (n <= 1) return 0;
  luaL_argcheck(L, n < INT_MAX, 1, "array too big");
  SortState sort{!lua_isnoneornil(L, 2)};
  if (sort.has_comparator) luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_settop(L, 2);
  luaL_checkstack(L, 8, "table.sort");
  for (lua_Integer root = n / 2; root >= 1; --root) SiftDown(L, sort, root, n);
  for (lua_Integer end = n; end > 1; --end) {
    // Swap the largest, t[1], with t[end], then restore the heap.
    lua_geti(L, 1, 1);
    lua_geti(L, 1, end);
    lua_seti(L, 1, 1);
    lua_seti(L, 1, end);
    SiftDown(L, sort, 1, end - 1);
  }
  return 0;
}

// --------------------------------------------------------- concat, unpack

// table.concat(list [, sep [, i [, j]]]).
int Concat(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  size_t sep_size = 0;
  const char* sep = luaL_optlstring(L, 2, "", &sep_size);
  lua_Integer i = luaL_optinteger(L, 3, 1);
  const lua_Integer last = luaL_opt(L, luaL_checkinteger, 4, luaL_len(L, 1));
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (; i <= last; ++i) {
    lua_geti(L, 1, i);
    if (!lua_isstring(L, -1)) {
      return luaL_error(L, "invalid value (at index %I) in table for 'concat'",
                        static_cast<LUAI_UACINT>(i));
    }
    LuaSandbox::Charge(L, 1 + (lua_rawlen(L, -1) + sep_size) / kBytesPerUnit);
    luaL_addvalue(&b);
    if (i == last) break;  // also keeps i from overflowing at maxinteger
    luaL_addlstring(&b, sep, sep_size);
  }
  luaL_pushresult(&b);
  return 1;
}

// table.unpack(list [, i [, j]]).
int Unpack(lua_State* L) {
  lua_Integer i = luaL_optinteger(L, 2, 1);
  const lua_Integer last = luaL_opt(L, luaL_checkinteger, 3, luaL_len(L, 1));
  if (i > last) return 0;
  const lua_Unsigned n = static_cast<lua_Unsigned>(last) - static_cast<lua_Unsigned>(i);
  if (n >= static_cast<lua_Unsigned>(INT_MAX) || !lua_checkstack(L, static_cast<int>(n + 1))) {
    return luaL_error(L, "too many results to unpack");
  }
  LuaSandbox::Charge(L, 1 + n);
  for (; i < last; ++i) lua_geti(L, 1, i);
  lua_geti(L, 1, last);
  return static_cast<int>(n + 1);
}

}  // namespace

void ReplaceTableFunctions(lua_State* L) {
  static constexpr luaL_Reg kFunctions[] = {{"sort", Sort}, {"concat", Concat}, {"unpack", Unpack}};
  for (const luaL_Reg& f : kFunctions) {
    lua_pushcfunction(L, f.func);
    lua_setfield(L, -2, f.name);
  }
}

void ChargeByBytes(lua_State* L, const char* const* names) {
  for (; *names != nullptr; ++names) {
    lua_getfield(L, -1, *names);
    WrapInPlace(L, -1);
    lua_setfield(L, -2, *names);
  }
}

void ChargeUtf8CodesIterator(lua_State* L) {
  lua_getfield(L, -1, "codes");
  lua_pushcclosure(L, &Utf8Codes, 1);
  lua_setfield(L, -2, "codes");
}

}  // namespace serene::control
