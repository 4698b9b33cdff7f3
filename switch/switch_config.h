// SwitchConfig: everything `serene-switch` is told at start-up, from a TOML
// file (--config), from command-line flags, or both.
//
// Flags override the file's settings one by one; jobs from both are added
// together and a job id defined twice is refused. Every value is checked here,
// once, and a bad one is refused with a message naming the setting, the value
// and what is expected, so the daemon never starts half-configured. The file
// format and every key's default are in docs/switch.md
// (configs/serene-switch.example.toml is a complete example).
//
// Pure functions over values (the file is read by LoadTomlConfig only);
// thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "dataplane/job_config.h"
#include "switch/switch_server.h"

namespace serene::switchd {

inline constexpr uint32_t kMaxThreads = 64;
inline constexpr int kMaxSocketBuffer = 1 << 30;  // 1 GiB

// The runtime API's default address (docs/control.md).
inline constexpr const char* kDefaultControl = "127.0.0.1:7001";

struct SwitchConfig {
  ServerOptions server;                    // bind, port, threads, batch, nice, buffers, fault
  std::string log_level = "info";          // trace, debug, info, warn, error, critical, off
  // Runtime API (gRPC) address HOST:PORT, or "off". A non-loopback address
  // needs a token. When left at the default and that port is taken (another
  // switch on this host), the daemon warns and runs without the API.
  std::string control = kDefaultControl;
  bool control_given = false;              // set explicitly (flag or file): failing to serve is fatal
  std::string token_file;                  // the API's token (file content); "" = none
  std::string metrics;                     // Prometheus HTTP address HOST:PORT; "" = off
  std::string metrics_token_file;          // /metrics' bearer token (file content); "" = none
  std::vector<dataplane::JobConfig> jobs;  // static jobs, created at start-up
  // recv_buffer was set (flag or file). If not, BuildConfig sizes it to the
  // static jobs: AutoRecvBuffer.
  bool recv_buffer_given = false;
  // Jobs whose key was given on the command line (--job key=K): Warnings()
  // says that every local user can read it.
  std::vector<uint16_t> argv_key_jobs;

  // Adds a job; refuses an id that is already defined.
  Status AddJob(const dataplane::JobConfig& job);

  // Things that work but are probably mistakes (a job without a key, rows
  // that do not fit a 1500-byte MTU on a non-loopback bind). For the log.
  std::vector<std::string> Warnings() const;
};

// The receive buffer (SO_RCVBUF) that holds the largest burst a static job
// can send at once — every rank pushing a whole model: workers x elements x
// 4 bytes (the kernel doubles the value for its own overhead), at least the
// 4 MiB default and at most 256 MiB. Larger jobs rely on NACK recovery.
int AutoRecvBuffer(const std::vector<dataplane::JobConfig>& jobs);

// The flags as typed on the command line. Unset optionals were not given.
// Numbers stay text so that a bad one is refused with the same message as in
// the file.
struct SwitchFlags {
  std::optional<std::string> config_path;
  std::vector<std::string> bind;  // empty: not given
  std::optional<std::string> port;
  std::optional<std::string> threads;
  std::optional<std::string> batch;
  std::optional<std::string> nice;
  std::optional<std::string> sched;
  std::optional<std::string> recv_buffer;
  std::optional<std::string> send_buffer;
  std::optional<std::string> offload;
  std::optional<std::string> log_level;
  std::optional<std::string> fault;
  std::optional<std::string> control;
  std::optional<std::string> token_file;
  std::optional<std::string> metrics;
  std::optional<std::string> metrics_token_file;
  std::vector<std::string> jobs;  // --job specs
};

// Parses a TOML document; `source` names it in error messages.
Result<SwitchConfig> ParseTomlConfig(std::string_view text, std::string_view source);
// Reads and parses a TOML file.
Result<SwitchConfig> LoadTomlConfig(const std::string& path);

// The file (if flags.config_path is set, else the defaults) with the flags
// applied over it.
Result<SwitchConfig> BuildConfig(const SwitchFlags& flags);

// Parses a byte size: "4194304", "512KiB", "4MiB", "1GiB" (K/M/G also accepted,
// all binary). Range 0..1 GiB.
bool ParseByteSize(std::string_view text, int* out);

// True for the log level names above.
bool IsLogLevel(std::string_view level);

}  // namespace serene::switchd
