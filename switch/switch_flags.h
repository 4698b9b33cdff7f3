// The command-line flags of serene-switch, declared on a CLI11 app so that
// the daemon's main only parses and wires, and tests can parse argv in-process.
// Values land in a SwitchFlags as typed; BuildConfig() checks them.
//
// Not thread-safe (CLI11 apps are not).
#pragma once

#include "switch/switch_config.h"

namespace CLI {
class App;
}  // namespace CLI

namespace serene::switchd {

// Declares --config, --bind, --port, --threads, --batch, --nice, --sched, --recv-buffer,
// --send-buffer, --offload, --log-level, --fault, --control, --token-file, --metrics and
// --job on `app`, writing into *flags
// (which must outlive the parse).
void AddSwitchFlags(CLI::App* app, SwitchFlags* flags);

}  // namespace serene::switchd
