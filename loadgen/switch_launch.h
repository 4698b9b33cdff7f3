// Helpers for tools and tests that start serene-switch as a child process:
// where the sibling binaries are, and the address a switch started on
// `--port 0` ended up listening on (read from its "listening on ADDR" log line).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "loadgen/child_process.h"

namespace serene::loadgen {

// The directory of the running executable ("." if it cannot be read): the
// build puts every serene-* binary side by side in build/bin.
std::string OwnBinaryDir();

// Waits until `sw` logs "listening on ADDR" and returns ADDR ("127.0.0.1:PORT",
// "[::1]:PORT"); nullopt if it did not start or exited first.
std::optional<std::string> WaitForListening(ChildProcess& sw,
                                            std::chrono::milliseconds guard = std::chrono::seconds(10));

// Waits until `sw` logs "runtime API at ADDR" (its gRPC control address,
// e.g. after --control 127.0.0.1:0) and returns ADDR; nullopt if it did not.
std::optional<std::string> WaitForControl(ChildProcess& sw,
                                          std::chrono::milliseconds guard = std::chrono::seconds(10));

// A UDP port no socket of this host holds right now (the kernel's pick for
// an ephemeral bind), e.g. for a job's reply group.
Result<uint16_t> FreeUdpPort();

// The reply group the tools give job `job` on the loopback:
// "239.83.<job / 256>.<job % 256>:<port>" (a job spec's group= value).
std::string LoopbackGroup(uint16_t job, uint16_t port);
// The same on a FreeUdpPort().
Result<std::string> LoopbackGroup(uint16_t job);

// A serene-switch the tools start for themselves: on a loopback port, with
// the runtime API off, serving one job.
struct LoopbackSwitch {
  std::unique_ptr<ChildProcess> process;
  std::string address;  // where it listens, "127.0.0.1:PORT"
};

// Starts build/bin's serene-switch with `--job job_spec` (plus
// `,group=LoopbackGroup(job)` when `group`) and `extra_args`, and waits
// until it listens. Errors name what failed: no free port for the group,
// or the binary and its log when it did not start.
Result<LoopbackSwitch> StartLoopbackSwitch(uint16_t job, const std::string& job_spec, bool group,
                                           const std::vector<std::string>& extra_args);

}  // namespace serene::loadgen
