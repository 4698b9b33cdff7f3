# Lua policy scripts: the engine (sandbox, rules, telemetry, errors) and the
# shipped policies in policies/, found through SERENE_SOURCE_DIR. The engine
# test makes real bytecode with the Lua library to show it is refused.
serene_add_test(policy_script_test
  SOURCES policy_script_test.cc
  LIBS serene_policy GTest::gmock PkgConfig::LUA)

serene_add_test(policies_test
  SOURCES policies_test.cc
  LIBS serene_policy GTest::gmock)
target_compile_definitions(policies_test PRIVATE SERENE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

# Scripts that do their work where the instruction count does not run; each
# must be stopped within twice the time limit.
serene_add_test(hostile_scripts_test
  SOURCES hostile_scripts_test.cc
  LIBS serene_policy GTest::gmock TIMEOUT 120)
