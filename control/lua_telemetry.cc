#include "control/lua_telemetry.h"

#include <cstdint>
#include <limits>
#include <lua.hpp>

#include "control/lua_rules.h"
#include "dataplane/barrier_params.h"

namespace serene::control {
namespace {

// Each setter sets a field of the table on top of the stack.

void SetInteger(lua_State* L, const char* key, int64_t v) {
  lua_pushinteger(L, static_cast<lua_Integer>(v));
  lua_setfield(L, -2, key);
}

// Counters are uint64; none gets near 2^63, but clamp rather than wrap.
void SetCount(lua_State* L, const char* key, uint64_t v) {
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  SetInteger(L, key, static_cast<int64_t>(v > kMax ? kMax : v));
}

void SetSeconds(lua_State* L, const char* key, uint64_t ns) {
  lua_pushnumber(L, static_cast<lua_Number>(ns) / 1e9);
  lua_setfield(L, -2, key);
}

void SetBoolean(lua_State* L, const char* key, bool v) {
  lua_pushboolean(L, v ? 1 : 0);
  lua_setfield(L, -2, key);
}

void SetString(lua_State* L, const char* key, const std::string& v) {
  lua_pushlstring(L, v.data(), v.size());
  lua_setfield(L, -2, key);
}

void SetRule(lua_State* L, const char* key, const v1::Rule& rule) {
  dataplane::BarrierParams p;
  p.window = rule.window();
  p.quorum = rule.quorum() == 0 ? dataplane::BarrierParams::kAllWorkers : rule.quorum();
  p.lag = rule.lag();
  PushRule(L, p);
  lua_setfield(L, -2, key);
}

void SetCountMap(lua_State* L, const char* key,
                 const google::protobuf::Map<std::string, uint64_t>& map) {
  lua_createtable(L, 0, static_cast<int>(map.size()));
  for (const auto& entry : map) SetCount(L, entry.first.c_str(), entry.second);
  lua_setfield(L, -2, key);
}

void PushJob(lua_State* L, const v1::Job& job) {
  lua_createtable(L, 0, 6);
  SetInteger(L, "id", job.id());
  SetInteger(L, "workers", job.workers());
  SetCount(L, "elements", job.elements());
  SetInteger(L, "row_width", job.row_width());
  SetInteger(L, "scale_log2", job.scale_log2());
  if (job.has_evict_after_ms()) SetSeconds(L, "evict_after", job.evict_after_ms() * 1'000'000ull);
}

void PushCounters(lua_State* L, const v1::JobCounters& c) {
  lua_createtable(L, 0, 8);
  SetCount(L, "releases", c.releases());
  SetCount(L, "nacks", c.nacks());
  SetCount(L, "errors", c.errors());
  SetCount(L, "swaps", c.swaps());
  SetCount(L, "saturations", c.saturations());
  SetCount(L, "folds", c.folds());
  SetCount(L, "completed_rows", c.completed_rows());
  SetCountMap(L, "rx", c.rx_by_op());
  SetCountMap(L, "drops", c.drops());
}

void PushRank(lua_State* L, const v1::RankTelemetry& r) {
  lua_createtable(L, 0, 26);
  SetInteger(L, "rank", r.rank());
  SetInteger(L, "done", r.done());
  SetInteger(L, "lag", r.lag());
  SetBoolean(L, "joined", r.joined());
  SetBoolean(L, "live", r.live());
  SetBoolean(L, "waiting", r.waiting());
  SetSeconds(L, "wait_now", r.wait_now_ns());
  SetSeconds(L, "wait_total", r.wait_total_ns());
  if (r.silent_ns() < 0) {
    SetInteger(L, "silent", -1);
  } else {
    SetSeconds(L, "silent", static_cast<uint64_t>(r.silent_ns()));
  }
  SetSeconds(L, "iter_time", r.iter_ns());
  SetSeconds(L, "work_time", r.work_ns());
  SetSeconds(L, "last_work_time", r.last_work_ns());
  SetInteger(L, "rows_this_clock", r.rows_this_clock());
  SetString(L, "address", r.address());
  SetSeconds(L, "paused", r.paused_ns());
  SetCount(L, "pauses", r.pauses());
  const v1::RankCounters& c = r.counters();
  SetCount(L, "joins", c.joins());
  SetCount(L, "reads", c.reads());
  SetCount(L, "incs_applied", c.incs_applied());
  SetCount(L, "incs_duplicate", c.incs_duplicate());
  SetCount(L, "clocks", c.clocks());
  SetCount(L, "clock_retransmits", c.clock_retransmits());
  SetCount(L, "nacks", c.nacks());
  SetCount(L, "releases", c.releases());
  SetCount(L, "errors", c.errors());
  SetCount(L, "evictions", c.evictions());
}

}  // namespace

void PushTelemetry(lua_State* L, const v1::JobTelemetry& t) {
  lua_createtable(L, 0, 24);
  PushJob(L, t.job());
  lua_setfield(L, -2, "job");
  SetSeconds(L, "now", t.now_ns());
  lua_pushnumber(L, static_cast<lua_Number>(t.unix_ms()) / 1e3);
  lua_setfield(L, -2, "unix_time");
  SetInteger(L, "rows", t.rows());
  SetInteger(L, "live_workers", t.live_workers());
  SetInteger(L, "low", t.low());
  SetInteger(L, "high", t.high());

  const v1::PolicyState& policy = t.policy();
  SetRule(L, "rule", policy.active());
  SetInteger(L, "epoch", policy.active_epoch());
  SetBoolean(L, "swap_pending", policy.swap_pending());
  if (policy.swap_pending()) {
    SetRule(L, "next_rule", policy.next());
    SetInteger(L, "next_epoch", policy.next_epoch());
    SetInteger(L, "swap_clock", policy.swap_clock());
  }
  SetInteger(L, "max_released", policy.max_released());

  SetBoolean(L, "saturated", t.saturated());
  SetBoolean(L, "finished", t.finished());
  PushCounters(L, t.counters());
  lua_setfield(L, -2, "counters");

  lua_createtable(L, t.ranks_size(), 0);
  for (int i = 0; i < t.ranks_size(); ++i) {
    PushRank(L, t.ranks(i));
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "ranks");
}

}  // namespace serene::control
