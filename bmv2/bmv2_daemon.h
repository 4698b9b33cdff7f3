// serene-switch --target bmv2: the same daemon, with p4/serene.p4 in BMv2's
// simple_switch as the data plane (docs/p4.md "Running the P4 target").
// AddBmv2Flags declares the target's flags; RunBmv2Daemon starts
// simple_switch on the interface, creates the static jobs, serves the runtime
// API over a Bmv2Target, evicts silent ranks, and on SIGINT/SIGTERM prints
// the switch's counters and stops simple_switch.
#pragma once

#include <signal.h>

#include <string>

#include "switch/switch_config.h"

namespace CLI {
class App;
}  // namespace CLI

namespace serene::bmv2 {

struct Bmv2Flags {
  std::string target = "software";  // software | bmv2
  std::string interface;            // the workers' interface (simple_switch port 0)
  std::string address;              // IP[:PORT] the switch answers (default port 7000)
  std::string prefix = "/opt/p4";   // the P4 toolchain
  std::string p4_source;            // default: the source tree's p4/serene.p4
  std::string p4_json;              // a compiled program instead of compiling
  int thrift_port = 9090;
};

void AddBmv2Flags(CLI::App* app, Bmv2Flags* flags);

// Checks the flags that only one target takes: the software target refuses
// --interface/--address, the bmv2 target the software switch's socket flags.
Status CheckTargetFlags(const Bmv2Flags& flags, const switchd::SwitchFlags& switch_flags);

// Runs until one of `stop_signals` (already blocked) arrives. Returns the exit code.
int RunBmv2Daemon(const Bmv2Flags& flags, const switchd::SwitchConfig& config,
                  const std::string& token, const sigset_t& stop_signals);

}  // namespace serene::bmv2
