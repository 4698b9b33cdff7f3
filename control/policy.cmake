# serene_policy: policy scripts in Lua 5.4 (policy_script.h,
# docs/policies.md). One concept per file: the sandbox (state, limits,
# errors), the safe standard libraries, the rule values, the telemetry table,
# and PolicyScript on top.
add_library(serene_policy
  lua_rules.cc
  lua_charged_functions.cc
  lua_safe_libs.cc
  lua_sandbox.cc
  lua_watchdog.cc
  lua_telemetry.cc
  policy_script.cc)
target_link_libraries(serene_policy
  PUBLIC serene_control
  PRIVATE PkgConfig::LUA serene_warnings)
