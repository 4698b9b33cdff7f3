// SwitchServer: runs the data plane on UDP ports, the I/O half of the
// `serene-switch` daemon.
//
// For each bind address it opens `threads` sockets on the same port
// (SO_REUSEPORT when threads > 1, so the kernel spreads workers over them)
// and gives each socket a thread running one loop:
//
//   recvmmsg a batch -> [rx fault injection] -> Pipeline::Process per datagram,
//   stamped with steady_clock nanoseconds -> [tx fault injection] -> sendmmsg
//   the Output (flushed whenever it cannot hold one more Process() call)
//
// The Pipeline is shared and thread-safe (jobs lock themselves), so a loop
// needs no lock of its own; its Output, batches and fault injectors are
// private to it.
//
// Source addresses: each datagram is processed with the address it reached
// (on a wildcard bind, its destination as IP_PKTINFO reports it; else the
// bound address), and every packet the pipeline emits names the switch
// address to send from: the request's destination for a reply, the address
// a rank's JOIN reached for a RELEASE it did not ask for. A packet leaves
// through the port's own socket when that socket can send it from that
// address (a wildcard socket does so with an IP_PKTINFO / IPV6_PKTINFO
// control message), else through the first socket that can (a specific bind
// of that address, or a socket of the right family when the rank's family
// differs, with separate IPv4 and IPv6 binds), else through any socket that
// reaches the destination. So on a multi-homed host a worker hears from the
// address it sends to, whatever the kernel's routing would pick.
// Loops poll with a timeout of at most `poll_interval` (and wake earlier when
// a delayed datagram of the fault injector falls due), so Stop() returns
// within about that time.
//
// Control operations of the runtime API (Pipeline::Evict, SetPolicy, Finish)
// emit packets into an Output of their own; Send() puts them on the wire.
//
// Thread safety: Start() and Stop() are for one owner thread (Stop() may be
// called from any thread other than the loops, e.g. a signal-waiting thread,
// and more than once). Send(), counters() and local_endpoints() are safe from
// any thread while the server runs.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "dataplane/output.h"
#include "dataplane/pipeline.h"
#include "net/fault_injector.h"
#include "net/udp_socket.h"

namespace serene::switchd {

// Network settings of the daemon (the [network] part of SwitchConfig).
struct ServerOptions {
  // Numeric hosts to bind. Empty: "::" (dual-stack: IPv6 and IPv4), or
  // "0.0.0.0" when the host has no IPv6.
  std::vector<std::string> bind;
  uint16_t port = 7000;       // 0 = an ephemeral port, shared by every socket
  uint32_t threads = 1;       // sockets (and loop threads) per bind address
  uint32_t batch = 32;        // datagrams per recvmmsg, Process() calls per Output
  int recv_buffer = 4 << 20;  // SO_RCVBUF bytes per socket; 0 = kernel default
  int send_buffer = 4 << 20;  // SO_SNDBUF bytes per socket; 0 = kernel default
  bool offload = true;        // UDP GSO trains out, GRO trains in (net/udp_socket.h)
  net::FaultSpec fault;       // applied per socket, seeded per socket and direction
  // Niceness of the loop threads (-20..19; thread_niceness.h); unset: as
  // started. Start() fails if it cannot be applied.
  std::optional<int> nice;
  // The loop threads run under SCHED_BATCH (thread_niceness.h): woken by a
  // datagram they do not preempt a running worker on a shared host.
  bool sched_batch = false;
  std::chrono::milliseconds poll_interval{50};  // longest a loop sleeps between stop checks
};

// What the ports did (summed over sockets).
struct ServerCounters {
  uint64_t rx_datagrams = 0;
  uint64_t rx_bytes = 0;
  uint64_t rx_truncated = 0;  // larger than the receive buffer slot: dropped
  uint64_t rx_errors = 0;     // failed recvmmsg/poll calls
  uint64_t tx_datagrams = 0;
  uint64_t tx_bytes = 0;
  uint64_t tx_errors = 0;   // datagrams the kernel refused
  uint64_t control_tx = 0;  // datagrams sent by Send() (control operations)
  net::FaultCounters rx_faults;
  net::FaultCounters tx_faults;
};

class SwitchServer {
 public:
  // `pipeline` must outlive the server.
  SwitchServer(dataplane::Pipeline* pipeline, ServerOptions options);
  ~SwitchServer();  // stops
  SwitchServer(const SwitchServer&) = delete;
  SwitchServer& operator=(const SwitchServer&) = delete;

  // Opens every socket (all or nothing), then starts the loops. A server
  // starts at most once.
  Status Start();
  // Stops the loops and joins them; pending output is flushed. Idempotent.
  // Sockets stay open (and local_endpoints() valid) until destruction.
  void Stop();
  bool running() const { return running_.load(std::memory_order_acquire); }

  // The bound address of each socket, in bind order (threads of one address
  // share it). Valid after a successful Start().
  std::vector<proto::Endpoint> local_endpoints() const;

  // Sends packets produced by a control operation, each from its source
  // address (the one the rank's JOIN reached) through the first socket that
  // can send it from there, else the first that reaches its destination.
  // Thread-safe. Fault injection does not apply. Fails if the server is not
  // running or a packet could not be sent.
  Status Send(const dataplane::Output& out);

  ServerCounters counters() const;

  struct Port;  // a socket and its loop's state (implementation detail)

 private:
  Status OpenPorts();
  void Loop(Port* port);

  dataplane::Pipeline* const pipeline_;
  const ServerOptions options_;
  std::vector<std::unique_ptr<Port>> ports_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> running_{false};
  bool started_ = false;     // a server starts once
  std::mutex lifecycle_mu_;  // Start/Stop

  std::atomic<uint64_t> control_tx_{0};
  std::atomic<uint64_t> control_errors_{0};
};

// steady_clock nanoseconds: the `now` handed to the data plane.
dataplane::Timestamp NowNanos();

}  // namespace serene::switchd
