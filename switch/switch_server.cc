#include "switch/switch_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <system_error>
#include <type_traits>
#include <utility>

#include "net/address.h"
#include "switch/reuseport_steering.h"
#include "switch/thread_niceness.h"

namespace serene::switchd {

using std::chrono::nanoseconds;

namespace {
dataplane::Timestamp ToNanos(std::chrono::steady_clock::time_point t) {
  return static_cast<dataplane::Timestamp>(
      std::chrono::duration_cast<nanoseconds>(t.time_since_epoch()).count());
}
}  // namespace

dataplane::Timestamp NowNanos() { return ToNanos(std::chrono::steady_clock::now()); }

// One socket and what its loop thread owns.
struct SwitchServer::Port {
  net::UdpSocket socket;
  size_t index = 0;
  std::unique_ptr<net::FaultInjector> rx_faults;  // null when off for rx
  std::unique_ptr<net::FaultInjector> tx_faults;  // null when off for tx

  std::atomic<uint64_t> rx_datagrams{0};
  std::atomic<uint64_t> rx_bytes{0};
  std::atomic<uint64_t> rx_truncated{0};
  std::atomic<uint64_t> rx_errors{0};
  std::atomic<uint64_t> tx_datagrams{0};
  std::atomic<uint64_t> tx_bytes{0};
  std::atomic<uint64_t> tx_errors{0};

  // Snapshots of the injectors' counters, published by the loop.
  mutable std::mutex fault_mu;
  net::FaultCounters rx_fault_counters;
  net::FaultCounters tx_fault_counters;
};

namespace {

// True for the 1st, 2nd, 4th, 8th, ... occurrence: logs a persistent error
// without flooding the log.
bool ShouldLog(uint64_t n) { return (n & (n - 1)) == 0; }

// The socket a datagram to `dst` from the switch address `src` leaves
// through: `preferred` (the port's own) if it can send it from `src`, else
// the first socket of the server that can, else the first that can at least
// reach `dst` (the kernel then picks the source). Null if none reaches `dst`.
net::UdpSocket* PickSocket(const std::vector<std::unique_ptr<SwitchServer::Port>>& all,
                           net::UdpSocket* preferred, const proto::Endpoint& dst,
                           const proto::Endpoint& src);

// The fault injector queues opaque bytes and one address. A datagram's other
// address (the local address a received one reached, the source a sent one
// leaves from) rides behind its bytes as a trailer while it is queued.
static_assert(std::is_trivially_copyable_v<proto::Endpoint>);
constexpr size_t kTrailer = sizeof(proto::Endpoint);

void PushWithTrailer(net::FaultInjector* injector, const proto::Endpoint& peer,
                     const proto::Endpoint& other, std::span<const uint8_t> data,
                     dataplane::Timestamp now, std::vector<uint8_t>* scratch) {
  scratch->assign(data.begin(), data.end());
  scratch->resize(data.size() + kTrailer);
  std::memcpy(scratch->data() + data.size(), &other, kTrailer);
  injector->Push(peer, *scratch, now);
}

// Splits a datagram popped from an injector into its bytes and the address
// in its trailer.
std::span<const uint8_t> SplitTrailer(const std::vector<uint8_t>& bytes, proto::Endpoint* other) {
  if (bytes.size() < kTrailer) {  // cannot happen: every datagram was pushed with one
    *other = proto::Endpoint{};
    return {};
  }
  const size_t n = bytes.size() - kTrailer;
  std::memcpy(other, bytes.data() + n, kTrailer);
  return {bytes.data(), n};
}

// The loop of one port. Owns the scratch a loop needs; nothing here is shared.
class PortLoop {
 public:
  PortLoop(SwitchServer::Port* port, const std::vector<std::unique_ptr<SwitchServer::Port>>* all,
           dataplane::Pipeline* pipeline, const ServerOptions& options,
           const std::atomic<bool>* stop)
      : port_(*port),
        all_(*all),
        pipeline_(*pipeline),
        options_(options),
        stop_(*stop),
        burst_(*pipeline),
        rx_(options.batch),
        out_(dataplane::Output::ForBatch(options.batch)),
        tx_(net::kMaxBatch) {}

  void Run() {
    while (!stop_.load(std::memory_order_relaxed)) {
      auto n = port_.socket.Recv(&rx_, Timeout(NowNanos()));
      // A batch's time is when the socket read it (no second clock read on
      // the receive path); after a timeout or an error, now.
      const dataplane::Timestamp now = n.ok() && *n > 0 ? ToNanos(rx_.read_at()) : NowNanos();
      if (!n.ok()) {
        const uint64_t errors = port_.rx_errors.fetch_add(1, std::memory_order_relaxed) + 1;
        if (ShouldLog(errors)) {
          spdlog::error("receive failed ({} so far): {}", errors, n.status().message());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));  // no hot spin on errors
        continue;
      }
      uint64_t datagrams = 0, bytes = 0;
      for (size_t i = 0; i < *n; ++i) Receive(i, now, &datagrams, &bytes);
      // Counted once per batch: an atomic per datagram costs as much as a
      // small row's aggregation.
      port_.rx_datagrams.fetch_add(datagrams, std::memory_order_relaxed);
      port_.rx_bytes.fetch_add(bytes, std::memory_order_relaxed);
      if (port_.rx_faults) {
        while (port_.rx_faults->Pop(now, &scratch_)) ProcessInjected(now);
      }
      Flush(now);
      if (port_.tx_faults) DrainTx(now);
      PublishFaultCounters();
    }
    // Deliver what the injectors still hold as if its time had come: a
    // stopping switch loses nothing it accepted.
    const dataplane::Timestamp now = NowNanos();
    if (port_.rx_faults) {
      while (auto due = port_.rx_faults->NextDue()) {
        while (port_.rx_faults->Pop(std::max(now, *due), &scratch_)) ProcessInjected(now);
      }
    }
    Flush(now);
    if (port_.tx_faults) {
      while (auto due = port_.tx_faults->NextDue()) DrainTx(std::max(now, *due));
    }
    PublishFaultCounters();
  }

 private:
  // How long Recv may wait: the poll interval, or less when a delayed
  // datagram falls due sooner.
  nanoseconds Timeout(dataplane::Timestamp now) const {
    nanoseconds timeout = options_.poll_interval;
    for (const auto* inj : {port_.rx_faults.get(), port_.tx_faults.get()}) {
      if (inj == nullptr) continue;
      if (auto due = inj->NextDue()) {
        timeout = std::min(timeout, nanoseconds(*due > now ? *due - now : 0));
      }
    }
    return timeout;
  }

  void Receive(size_t i, dataplane::Timestamp now, uint64_t* datagrams, uint64_t* bytes) {
    if (rx_.truncated(i)) {
      port_.rx_truncated.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    const auto data = rx_.data(i);
    ++*datagrams;
    *bytes += data.size();
    if (port_.rx_faults) {
      PushWithTrailer(port_.rx_faults.get(), rx_.source(i), rx_.local(i), data, now,
                      &push_scratch_);
    } else {
      Process(data, rx_.source(i), rx_.local(i), now);
    }
  }

  // `local`: the address the datagram reached (replies leave from it).
  void Process(std::span<const uint8_t> data, const proto::Endpoint& src,
               const proto::Endpoint& local, dataplane::Timestamp now) {
    if (!out_.HasRoomForProcess()) Flush(now);
    burst_.Process(data, src, local, now, &out_);
  }

  // Processes the datagram the rx injector handed back in scratch_.
  void ProcessInjected(dataplane::Timestamp now) {
    proto::Endpoint local;
    const auto data = SplitTrailer(scratch_.bytes, &local);
    Process(data, scratch_.peer, local, now);
  }

  // Ends the burst (sending may block: no job lock is held across it), then
  // puts the Output on the wire (through the tx injector when it is on).
  void Flush(dataplane::Timestamp now) {
    burst_.End();
    if (out_.empty()) return;
    if (port_.tx_faults) {
      for (size_t i = 0; i < out_.size(); ++i) {
        PushWithTrailer(port_.tx_faults.get(), out_.packet(i).dst, out_.packet(i).src,
                        out_.bytes(i), now, &push_scratch_);
      }
      out_.Clear();
      DrainTx(now);
      return;
    }
    for (size_t i = 0; i < out_.size(); ++i) {
      const proto::Endpoint& dst = out_.packet(i).dst;
      const proto::Endpoint& src = out_.packet(i).src;
      if (!port_.socket.CanSendFrom(src, dst)) {
        // e.g. a RELEASE for a rank of the other family, or one that joined
        // through another specifically bound address
        SendOne(dst, src, out_.bytes(i));
        continue;
      }
      if (tx_.full()) SendBatch();
      tx_.Add(dst, src, out_.bytes(i));
    }
    SendBatch();
    out_.Clear();
  }

  void SendBatch() {
    if (tx_.empty()) return;
    net::SendResult r = port_.socket.Send(&tx_);
    tx_.Clear();
    Count(r.sent, r.failed, r.bytes, r.error);
  }

  // Sends the datagrams the tx injector has due (one at a time: a test path).
  void DrainTx(dataplane::Timestamp now) {
    while (port_.tx_faults->Pop(now, &tx_scratch_)) {
      proto::Endpoint src;
      const auto data = SplitTrailer(tx_scratch_.bytes, &src);
      SendOne(tx_scratch_.peer, src, data);
    }
  }

  // Sends one datagram from `src` through the socket PickSocket chooses (a
  // rank released by another rank's CLOCK may use the other address family,
  // or have joined through another bound address).
  void SendOne(const proto::Endpoint& dst, const proto::Endpoint& src,
               std::span<const uint8_t> data) {
    net::UdpSocket* socket = PickSocket(all_, &port_.socket, dst, src);
    if (socket == nullptr) socket = &port_.socket;  // fails, and is counted, as unreachable
    Status s = socket->SendTo(dst, src, data);
    Count(s.ok() ? 1 : 0, s.ok() ? 0 : 1, s.ok() ? data.size() : 0, s);
  }

  void Count(size_t sent, size_t failed, uint64_t bytes, const Status& error) {
    port_.tx_datagrams.fetch_add(sent, std::memory_order_relaxed);
    port_.tx_bytes.fetch_add(bytes, std::memory_order_relaxed);
    if (failed == 0) return;
    const uint64_t before = port_.tx_errors.fetch_add(failed, std::memory_order_relaxed);
    for (uint64_t n = before + 1; n <= before + failed; ++n) {
      if (ShouldLog(n)) {
        spdlog::warn("send failed ({} so far): {}", n, error.message());
        break;
      }
    }
  }

  void PublishFaultCounters() {
    if (!port_.rx_faults && !port_.tx_faults) return;
    std::lock_guard lock(port_.fault_mu);
    if (port_.rx_faults) port_.rx_fault_counters = port_.rx_faults->counters();
    if (port_.tx_faults) port_.tx_fault_counters = port_.tx_faults->counters();
  }

  SwitchServer::Port& port_;
  const std::vector<std::unique_ptr<SwitchServer::Port>>& all_;  // fixed while loops run
  dataplane::Pipeline& pipeline_;
  const ServerOptions& options_;
  const std::atomic<bool>& stop_;
  dataplane::Pipeline::Burst burst_;  // the datagrams of one receive batch
  net::RecvBatch rx_;
  dataplane::Output out_;
  net::SendBatch tx_;
  net::FaultInjector::Datagram scratch_;     // rx injector output
  net::FaultInjector::Datagram tx_scratch_;  // tx injector output
  std::vector<uint8_t> push_scratch_;        // a datagram and its trailer, for the injectors
};

net::UdpSocket* PickSocket(const std::vector<std::unique_ptr<SwitchServer::Port>>& all,
                           net::UdpSocket* preferred, const proto::Endpoint& dst,
                           const proto::Endpoint& src) {
  if (preferred != nullptr && preferred->CanSendFrom(src, dst)) return preferred;
  for (const auto& p : all) {
    if (p->socket.CanSendFrom(src, dst)) return &p->socket;
  }
  if (preferred != nullptr && preferred->CanReach(dst)) return preferred;
  for (const auto& p : all) {
    if (p->socket.CanReach(dst)) return &p->socket;
  }
  return nullptr;
}

}  // namespace

SwitchServer::SwitchServer(dataplane::Pipeline* pipeline, ServerOptions options)
    : pipeline_(pipeline), options_(std::move(options)) {}

SwitchServer::~SwitchServer() { Stop(); }

Status SwitchServer::OpenPorts() {
  const bool default_bind = options_.bind.empty();
  std::vector<std::string> hosts = default_bind ? std::vector<std::string>{"::"} : options_.bind;
  uint16_t port = options_.port;
  for (std::string& host : hosts) {
    for (uint32_t t = 0; t < options_.threads; ++t) {
      net::UdpSocketOptions o;
      o.address = host;
      o.port = port;
      o.reuse_port = options_.threads > 1;
      o.recv_buffer_bytes = options_.recv_buffer;
      o.send_buffer_bytes = options_.send_buffer;
      o.gso = options_.offload;
      o.gro = options_.offload;
      auto socket = net::UdpSocket::Open(o);
      if (!socket.ok() && default_bind && t == 0) {
        // No IPv6 on this host: serve IPv4 only.
        o.address = "0.0.0.0";
        auto v4 = net::UdpSocket::Open(o);
        if (v4.ok()) {
          spdlog::info("IPv6 unavailable ({}); binding 0.0.0.0", socket.status().message());
          host = o.address;
          socket = std::move(v4);
        }
      }
      if (!socket.ok()) return socket.status();
      if (port == 0) port = socket->local().port;  // every socket shares the first one's port
      if (ports_.empty()) {
        auto rcv = socket->RecvBufferSize();
        if (options_.recv_buffer > 0 && rcv.ok() && *rcv / 2 < options_.recv_buffer) {
          spdlog::info("SO_RCVBUF: requested {} bytes, the kernel granted {} (net.core.rmem_max)",
                       options_.recv_buffer, *rcv / 2);
        }
      }
      auto p = std::make_unique<Port>();
      p->socket = std::move(*socket);
      p->index = ports_.size();
      if (options_.fault.applies_to_rx()) {
        p->rx_faults = std::make_unique<net::FaultInjector>(options_.fault, 2 * p->index);
      }
      if (options_.fault.applies_to_tx()) {
        p->tx_faults = std::make_unique<net::FaultInjector>(options_.fault, 2 * p->index + 1);
      }
      ports_.push_back(std::move(p));
    }
    if (options_.threads > 1) {
      // Spread ranks evenly over this address's sockets (the kernel's hash
      // of addresses is lopsided with few workers). Without it the kernel
      // still hashes: slower, as correct.
      Status s = SteerByRank(ports_.back()->socket.fd(), options_.threads);
      if (!s.ok()) spdlog::warn("{}; the kernel spreads workers over the threads by address", s.message());
    }
  }
  return Status::Ok();
}

Status SwitchServer::Start() {
  std::lock_guard lock(lifecycle_mu_);
  if (started_) return Status::FailedPrecondition("the switch server was already started");
  started_ = true;
  if (options_.threads < 1 || options_.batch < 1 || options_.batch > net::kMaxBatch) {
    return Status::InvalidArgument("threads must be >= 1 and batch 1.." +
                                   std::to_string(net::kMaxBatch));
  }
  if (options_.nice) {
    // Tried before any socket opens, so that a refusal changes nothing.
    if (Status s = CheckThreadNiceness(*options_.nice); !s.ok()) return s;
  }
  Status s = OpenPorts();
  if (!s.ok()) {
    ports_.clear();
    return s;
  }
  stop_.store(false);
  running_.store(true, std::memory_order_release);
  try {
    for (auto& p : ports_) {
      Port* port = p.get();
      threads_.emplace_back([this, port] { Loop(port); });
    }
  } catch (const std::system_error& e) {
    stop_.store(true);
    for (auto& t : threads_) t.join();
    threads_.clear();
    running_.store(false, std::memory_order_release);
    return Status::Internal(std::string("cannot start a port thread: ") + e.what());
  }
  return Status::Ok();
}

void SwitchServer::Loop(Port* port) {
  if (options_.nice) {
    // Start() checked that it can be applied.
    if (Status s = SetThreadNiceness(*options_.nice); !s.ok()) spdlog::error("{}", s.message());
  }
  if (options_.sched_batch) {
    if (Status s = SetThreadBatchScheduling(); !s.ok()) spdlog::error("{}", s.message());
  }
  PortLoop loop(port, &ports_, pipeline_, options_, &stop_);
  loop.Run();
}

void SwitchServer::Stop() {
  std::lock_guard lock(lifecycle_mu_);
  stop_.store(true);
  for (auto& t : threads_) t.join();
  threads_.clear();
  running_.store(false, std::memory_order_release);
}

std::vector<proto::Endpoint> SwitchServer::local_endpoints() const {
  std::vector<proto::Endpoint> eps;
  for (const auto& p : ports_) eps.push_back(p->socket.local());
  return eps;
}

Status SwitchServer::Send(const dataplane::Output& out) {
  if (!running()) return Status::FailedPrecondition("the switch server is not running");
  Status first_error;
  for (size_t i = 0; i < out.size(); ++i) {
    const proto::Endpoint& dst = out.packet(i).dst;
    const proto::Endpoint& src = out.packet(i).src;
    net::UdpSocket* socket = PickSocket(ports_, nullptr, dst, src);
    Status s = socket == nullptr
                   ? Status::Unavailable("no socket can reach " + net::FormatEndpoint(dst))
                   : socket->SendTo(dst, src, out.bytes(i));
    if (s.ok()) {
      control_tx_.fetch_add(1, std::memory_order_relaxed);
    } else {
      control_errors_.fetch_add(1, std::memory_order_relaxed);
      if (first_error.ok()) first_error = s;
    }
  }
  return first_error;
}

ServerCounters SwitchServer::counters() const {
  ServerCounters c;
  for (const auto& p : ports_) {
    c.rx_datagrams += p->rx_datagrams.load(std::memory_order_relaxed);
    c.rx_bytes += p->rx_bytes.load(std::memory_order_relaxed);
    c.rx_truncated += p->rx_truncated.load(std::memory_order_relaxed);
    c.rx_errors += p->rx_errors.load(std::memory_order_relaxed);
    c.tx_datagrams += p->tx_datagrams.load(std::memory_order_relaxed);
    c.tx_bytes += p->tx_bytes.load(std::memory_order_relaxed);
    c.tx_errors += p->tx_errors.load(std::memory_order_relaxed);
    std::lock_guard lock(p->fault_mu);
    c.rx_faults += p->rx_fault_counters;
    c.tx_faults += p->tx_fault_counters;
  }
  c.control_tx = control_tx_.load(std::memory_order_relaxed);
  c.tx_errors += control_errors_.load(std::memory_order_relaxed);
  return c;
}

}  // namespace serene::switchd
