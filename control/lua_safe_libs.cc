#include "control/lua_safe_libs.h"

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <lua.hpp>
#include <string_view>

#include "control/lua_charged_functions.h"
#include "control/lua_sandbox.h"

// The replacements below keep the semantics of Lua 5.4's lbaselib.c,
// lstrlib.c and ltablib.c, minus what the header says.

namespace serene::control {
namespace {

using Unsigned = lua_Unsigned;

int CollectGarbage(lua_State* L) {
  const char* option = luaL_optstring(L, 1, "collect");
  if (std::strcmp(option, "count") != 0) {
    return luaL_error(L,
                      "collectgarbage: only \"count\" is allowed in a policy, not \"%s\" (the "
                      "sandbox collects garbage itself)",
                      option);
  }
  const int kib = lua_gc(L, LUA_GCCOUNT);
  const int rest = lua_gc(L, LUA_GCCOUNTB);
  lua_pushnumber(L, static_cast<lua_Number>(kib) + static_cast<lua_Number>(rest) / 1024);
  return 1;
}

int SetMetatable(lua_State* L) {
  const int type = lua_type(L, 2);
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_argexpected(L, type == LUA_TNIL || type == LUA_TTABLE, 2, "nil or table");
  if (type == LUA_TTABLE) {
    // Raw, as the collector looks it up.
    lua_pushliteral(L, "__gc");
    const bool has_gc = lua_rawget(L, 2) != LUA_TNIL;
    lua_pop(L, 1);
    if (has_gc) {
      return luaL_error(L,
                        "setmetatable: __gc is not allowed in a policy (finalizers run outside "
                        "the instruction budget)");
    }
  }
  if (luaL_getmetafield(L, 1, "__metatable") != LUA_TNIL) {
    return luaL_error(L, "cannot change a protected metatable");
  }
  lua_settop(L, 2);
  lua_setmetatable(L, 1);
  return 1;
}

bool HasPatternSpecials(const char* p, size_t size) {
  static constexpr char kSpecials[] = "^$*+?.([%-";
  for (size_t i = 0; i < size; ++i) {
    if (p[i] != '\0' && std::strchr(kSpecials, p[i]) != nullptr) return true;
  }
  return false;
}

// string.find(s, text [, init [, plain]]), plain text only.
int Find(lua_State* L) {
  size_t size = 0, text_size = 0;
  const char* s = luaL_checklstring(L, 1, &size);
  const char* text = luaL_checklstring(L, 2, &text_size);
  const lua_Integer init_arg = luaL_optinteger(L, 3, 1);
  if (!lua_toboolean(L, 4) && HasPatternSpecials(text, text_size)) {
    return luaL_error(L,
                      "string.find: Lua patterns are disabled in a policy (they backtrack "
                      "outside the instruction budget); search plain text with "
                      "s:find(text, 1, true)");
  }
  // The 0-based start, as lstrlib's posrelatI(init) - 1.
  size_t init = 0;
  if (init_arg > 0) {
    init = static_cast<size_t>(init_arg) - 1;
  } else if (init_arg < 0 && init_arg >= -static_cast<lua_Integer>(size)) {
    init = size - static_cast<size_t>(-init_arg);
  }
  if (init > size) {
    luaL_pushfail(L);
    return 1;
  }
  // Worst case a comparison of `text` at every position.
  const uint64_t span = size - init;
  LuaSandbox::Charge(L, 1 + span * text_size / 1024);
  const size_t at = std::string_view(s + init, span).find(std::string_view(text, text_size));
  if (at == std::string_view::npos) {
    luaL_pushfail(L);
    return 1;
  }
  lua_pushinteger(L, static_cast<lua_Integer>(init + at + 1));
  lua_pushinteger(L, static_cast<lua_Integer>(init + at + text_size));
  return 2;
}

// string.rep(s, n [, sep]). lstrlib's loop runs n times even when the result
// is empty, so string.rep("", 2^62) would never return.
int Rep(lua_State* L) {
  size_t size = 0, sep_size = 0;
  const char* s = luaL_checklstring(L, 1, &size);
  const lua_Integer n = luaL_checkinteger(L, 2);
  const char* sep = luaL_optlstring(L, 3, "", &sep_size);
  if (n <= 0 || size + sep_size == 0) {
    lua_pushliteral(L, "");
    return 1;
  }
  const auto count = static_cast<uint64_t>(n);
  if (size + sep_size < size || size + sep_size > SIZE_MAX / count) {
    return luaL_error(L, "resulting string too large");
  }
  const size_t total = count * size + (count - 1) * sep_size;
  luaL_Buffer b;
  // Allocate first: a result beyond the memory limit fails as a memory error.
  char* p = luaL_buffinitsize(L, &b, total);
  LuaSandbox::Charge(L, 1 + count / 16 + total / 64);
  for (uint64_t i = 1; i < count; ++i) {
    std::memcpy(p, s, size);
    p += size;
    if (sep_size > 0) {
      std::memcpy(p, sep, sep_size);
      p += sep_size;
    }
  }
  std::memcpy(p, s, size);
  luaL_pushresultsize(&b, total);
  return 1;
}

// table.insert(t, [pos,] value).
int Insert(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  // The first empty slot.
  const auto end = static_cast<lua_Integer>(static_cast<Unsigned>(luaL_len(L, 1)) + 1u);
  lua_Integer pos = end;
  switch (lua_gettop(L)) {
    case 2:
      break;
    case 3: {
      pos = luaL_checkinteger(L, 2);
      luaL_argcheck(L, static_cast<Unsigned>(pos) - 1u < static_cast<Unsigned>(end), 2,
                    "position out of bounds");
      LuaSandbox::Charge(L, static_cast<Unsigned>(end - pos));
      for (lua_Integer i = end; i > pos; --i) {
        lua_geti(L, 1, i - 1);
        lua_seti(L, 1, i);
      }
      break;
    }
    default:
      return luaL_error(L, "wrong number of arguments to 'insert'");
  }
  lua_seti(L, 1, pos);
  return 0;
}

// table.remove(t [, pos]).
int Remove(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  const lua_Integer size = luaL_len(L, 1);
  lua_Integer pos = luaL_optinteger(L, 2, size);
  if (pos != size) {
    luaL_argcheck(L, static_cast<Unsigned>(pos) - 1u <= static_cast<Unsigned>(size), 2,
                  "position out of bounds");
  }
  if (pos < size) LuaSandbox::Charge(L, static_cast<Unsigned>(size - pos));
  lua_geti(L, 1, pos);
  for (; pos < size; ++pos) {
    lua_geti(L, 1, pos + 1);
    lua_seti(L, 1, pos);
  }
  lua_pushnil(L);
  lua_seti(L, 1, pos);
  return 1;
}

// table.move(a1, f, e, t [, a2]).
int Move(lua_State* L) {
  const lua_Integer f = luaL_checkinteger(L, 2);
  const lua_Integer e = luaL_checkinteger(L, 3);
  const lua_Integer t = luaL_checkinteger(L, 4);
  const int dest = lua_isnoneornil(L, 5) ? 1 : 5;
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, dest, LUA_TTABLE);
  if (e >= f) {
    luaL_argcheck(L, f > 0 || e < LUA_MAXINTEGER + f, 3, "too many elements to move");
    const lua_Integer n = e - f + 1;
    luaL_argcheck(L, t <= LUA_MAXINTEGER - n + 1, 4, "destination wrap around");
    LuaSandbox::Charge(L, static_cast<Unsigned>(n));
    if (t > e || t <= f || (dest != 1 && !lua_compare(L, 1, dest, LUA_OPEQ))) {
      for (lua_Integer i = 0; i < n; ++i) {
        lua_geti(L, 1, f + i);
        lua_seti(L, dest, t + i);
      }
    } else {
      for (lua_Integer i = n - 1; i >= 0; --i) {
        lua_geti(L, 1, f + i);
        lua_seti(L, dest, t + i);
      }
    }
  }
  lua_pushvalue(L, dest);
  return 1;
}

// Sets the fields of the table on top: each name to its function, or to nil.
void Replace(lua_State* L, std::initializer_list<luaL_Reg> functions) {
  for (const luaL_Reg& f : functions) {
    if (f.func == nullptr) {
      lua_pushnil(L);
    } else {
      lua_pushcfunction(L, f.func);
    }
    lua_setfield(L, -2, f.name);
  }
}

}  // namespace

int OpenSafeLibs(lua_State* L) {
  lua_settop(L, 0);
  static constexpr luaL_Reg kLibs[] = {{LUA_GNAME, luaopen_base},
                                       {LUA_STRLIBNAME, luaopen_string},
                                       {LUA_TABLIBNAME, luaopen_table},
                                       {LUA_MATHLIBNAME, luaopen_math},
                                       {LUA_UTF8LIBNAME, luaopen_utf8}};
  for (const luaL_Reg& lib : kLibs) {
    luaL_requiref(L, lib.name, lib.func, 1);
    lua_pop(L, 1);
  }

  lua_pushglobaltable(L);
  static constexpr const char* kChargedBase[] = {"tonumber", nullptr};
  ChargeByBytes(L, kChargedBase);
  Replace(L, {{"dofile", nullptr},
              {"loadfile", nullptr},
              {"load", nullptr},
              {"require", nullptr},
              {"print", nullptr},
              {"warn", nullptr},
              {"collectgarbage", CollectGarbage},
              {"setmetatable", SetMetatable}});
  lua_pop(L, 1);

  // The string metatable's __index is this same table, so s:dump() is gone too.
  lua_getglobal(L, LUA_STRLIBNAME);
  Replace(L, {{"dump", nullptr},
              {"match", nullptr},
              {"gmatch", nullptr},
              {"gsub", nullptr},
              {"find", Find},
              {"rep", Rep}});
  static constexpr const char* kChargedString[] = {"byte",   "char",     "format", "lower",
                                                   "upper",  "reverse",  "sub",    "pack",
                                                   "unpack", "packsize", nullptr};
  ChargeByBytes(L, kChargedString);
  lua_pop(L, 1);

  lua_getglobal(L, LUA_TABLIBNAME);
  Replace(L, {{"insert", Insert}, {"remove", Remove}, {"move", Move}});
  ReplaceTableFunctions(L);
  static constexpr const char* kChargedTable[] = {"pack", nullptr};
  ChargeByBytes(L, kChargedTable);
  lua_pop(L, 1);

  lua_getglobal(L, LUA_UTF8LIBNAME);
  static constexpr const char* kChargedUtf8[] = {"char", "codepoint", "len", "offset", nullptr};
  ChargeByBytes(L, kChargedUtf8);
  ChargeUtf8CodesIterator(L);
  lua_pop(L, 1);
  return 0;
}

}  // namespace serene::control
