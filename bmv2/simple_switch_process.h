// SimpleSwitchProcess: BMv2's simple_switch running p4/serene.p4 for
// serene-switch --target bmv2. Start() compiles the program with p4c-bm2-ss
// (unless a compiled JSON is given) and starts simple_switch in a network
// namespace of its own (bmv2/netns.h) that holds its two ports: port 0, a
// macvlan on the user's interface with the switch's MAC, and port 1, one end
// of the back end's control veth pair (the other end, here, carries the
// kicks). Its Thrift server is reachable only inside that namespace, where
// Connect() runs the CLI. Start() then waits for Thrift and installs the
// fixed configuration: the Serene address in `endpoint` and `arp`, port 1 in
// `control_port`, the fan-out clone session. The destructor stops
// simple_switch; its namespace and ports go with it. simple_switch also dies
// with this process (PR_SET_PDEATHSIG), even on kill -9.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bmv2/cli_session.h"
#include "common/status.h"

namespace serene::bmv2 {

// The MAC the switch answers ARP requests for its Serene address with (and
// sends from). simple_switch captures every frame on its port, so frames to
// any MAC reach it; this one is what ARP tells the workers.
inline constexpr const char* kSwitchMac = "02:53:45:00:00:01";

struct SimpleSwitchOptions {
  std::string prefix = "/opt/p4";  // the toolchain: bin/simple_switch, bin/p4c-bm2-ss, ...
  std::string p4_source;           // p4/serene.p4, compiled when `json` is empty
  std::string json;                // a compiled program (p4c-bm2-ss output)
  std::string interface;           // the workers' interface: switch port 0
  uint32_t ip = 0;                 // the Serene address (host order)
  uint16_t port = 7000;
  int thrift_port = 9090;
  std::string work_dir;  // compiled program and simple_switch.log
  std::chrono::milliseconds timeout = std::chrono::seconds(120);  // compile + start
};

class SimpleSwitchProcess {
 public:
  static Result<std::unique_ptr<SimpleSwitchProcess>> Start(const SimpleSwitchOptions& options);
  ~SimpleSwitchProcess();
  SimpleSwitchProcess(const SimpleSwitchProcess&) = delete;
  SimpleSwitchProcess& operator=(const SimpleSwitchProcess&) = delete;

  // A new CLI session on the switch's Thrift port, inside its namespace.
  Result<std::unique_ptr<CliSession>> Connect() const;
  // The back end's end of the control veth pair (KickChannel::Open).
  const std::string& control_interface() const { return control_peer_; }
  std::chrono::steady_clock::time_point started() const { return started_; }
  const std::string& json() const { return json_; }
  const std::string& log_path() const { return log_; }
  // simple_switch's network namespace (/proc/PID/ns/net).
  const std::string& netns() const { return netns_; }
  // simple_switch is still running.
  bool running() const;
  // Stops simple_switch (SIGTERM, then SIGKILL); its namespace and ports go with it.
  void Stop();

 private:
  SimpleSwitchProcess() = default;

  SimpleSwitchOptions options_;
  pid_t pid_ = -1;
  std::string control_port_;  // the switch's end of the control pair (port 1)
  std::string control_peer_;
  std::string data_port_;  // the macvlan on the user's interface (port 0)
  std::string netns_;
  std::string json_;
  std::string log_;
  std::chrono::steady_clock::time_point started_;
};

// Runs a program to completion with its output in `log` (appended), in the
// network namespace at `netns` if given; returns the exit code (-1 if it
// could not run) — for p4c, ip(8) and sysctl(8).
int RunLogged(const std::vector<std::string>& argv, const std::string& log,
              const std::string& netns = "");

}  // namespace serene::bmv2
