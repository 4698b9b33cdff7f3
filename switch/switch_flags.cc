#include "switch/switch_flags.h"

#include <CLI/CLI.hpp>

namespace serene::switchd {
namespace {

// Declares an option whose value is kept only if it was given.
void Optional(CLI::App* app, const std::string& name, std::optional<std::string>* out,
              const std::string& help, const std::string& type) {
  app->add_option_function<std::string>(
         name, [out](const std::string& v) { *out = v; }, help)
      ->type_name(type);
}

}  // namespace

void AddSwitchFlags(CLI::App* app, SwitchFlags* flags) {
  Optional(app, "--config", &flags->config_path, "TOML config file (see docs/switch.md)", "FILE");
  app->add_option("--bind", flags->bind,
                  "Numeric address to listen on, repeatable (default: :: dual-stack, or "
                  "0.0.0.0 without IPv6)")
      ->type_name("ADDR");
  Optional(app, "--port", &flags->port, "UDP port, 0 = ephemeral (default 7000)", "PORT");
  Optional(app, "--threads", &flags->threads,
           "Sockets and loop threads per address, 1..64 (default 1)", "N");
  Optional(app, "--batch", &flags->batch, "Datagrams per recvmmsg, 1..1024 (default 32)", "N");
  Optional(app, "--nice", &flags->nice,
           "Niceness of the loop threads, -20..19: lower runs ahead of the workers when they "
           "share the cores; below the current one needs root or CAP_SYS_NICE (default: as "
           "started)",
           "N");
  Optional(app, "--sched", &flags->sched,
           "Scheduling of the loop threads: normal, or batch (Linux SCHED_BATCH: a woken loop "
           "thread does not preempt a running worker, so on a host whose cores it shares it "
           "takes each turn with more datagrams queued; no privilege needed) (default normal)",
           "normal|batch");
  Optional(app, "--recv-buffer", &flags->recv_buffer,
           "SO_RCVBUF per socket, e.g. 64MiB; 0 = kernel default (default: the largest static "
           "job's burst, workers x elements x 4 bytes, 4..256 MiB)", "BYTES");
  Optional(app, "--send-buffer", &flags->send_buffer,
           "SO_SNDBUF per socket, e.g. 4MiB; 0 = kernel default (default 4MiB)", "BYTES");
  Optional(app, "--offload", &flags->offload,
           "UDP segmentation offload: send trains of datagrams with GSO, accept GRO trains, "
           "on or off (default on)",
           "on|off");
  Optional(app, "--log-level", &flags->log_level,
           "trace, debug, info, warn, error, critical or off (default info)", "LEVEL");
  Optional(app, "--fault", &flags->fault,
           "Fault injection: drop=P,dup=P,reorder=P,delay=D[..D],hold=D,seed=N,dir=rx|tx|both "
           "(default none)",
           "SPEC");
  Optional(app, "--control", &flags->control,
           "Runtime API (gRPC) address, or off (default 127.0.0.1:7001; a non-loopback "
           "address needs --token-file)",
           "HOST:PORT");
  Optional(app, "--token-file", &flags->token_file,
           "File holding the runtime API's token (mode 0600, at least 16 bytes); every call must "
           "present it (default none)",
           "FILE");
  Optional(app, "--metrics", &flags->metrics,
           "Serve Prometheus metrics over HTTP at http://HOST:PORT/metrics (default off)",
           "HOST:PORT");
  Optional(app, "--metrics-token-file", &flags->metrics_token_file,
           "File holding /metrics' token (mode 0600, at least 16 bytes); scrapes must send "
           "Authorization: Bearer TOKEN (default none: open)",
           "FILE");
  app->add_option("--job", flags->jobs,
                  "Static job, repeatable: id=J,workers=N,elements=E[,row=R][,scale=S]"
                  "[,key_file=FILE|,key=K][,evict_after=D][,policy=sync|ssp:W|async|quorum:K:L]"
                  " (key_file: a 0600 file holding the key; key= is visible to every local user)")
      ->type_name("SPEC");
}

}  // namespace serene::switchd
