# serene-ctl, the operator's CLI (docs/serene-ctl.md). Its logic lives in
# ctl/ as the library serene_ctl (one concept per file: output formats, the
# views, the commands, the command line); apps/serene_ctl.cc only wires it.
# Included by apps/CMakeLists.txt; ctl/ has no CMakeLists.txt of its own.
set(ctl_dir ${PROJECT_SOURCE_DIR}/ctl)
add_library(serene_ctl
  ${ctl_dir}/cli.cc
  ${ctl_dir}/control_command.cc
  ${ctl_dir}/event_format.cc
  ${ctl_dir}/exit_code.cc
  ${ctl_dir}/format.cc
  ${ctl_dir}/interrupt.cc
  ${ctl_dir}/job_commands.cc
  ${ctl_dir}/policy_commands.cc
  ${ctl_dir}/policy_source.cc
  ${ctl_dir}/telemetry_commands.cc
  ${ctl_dir}/telemetry_view.cc
  ${ctl_dir}/top_view.cc)
target_include_directories(serene_ctl PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(serene_ctl
  PUBLIC serene_controller serene_control CLI11::CLI11
  PRIVATE fmt::fmt nlohmann_json::nlohmann_json Threads::Threads serene_warnings)

serene_add_app(ctl LIBS serene_ctl)
