// SwitchServer in-process: real sockets on loopback, a real Pipeline; checks
// threads sharing a port, control-plane Send(), fault injection at the ports
// and stopping (switch/switch_server.h).
#include "switch/switch_server.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <grp.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <thread>

#include "net/address.h"
#include "udp_peer.h"

namespace serene::switchd::testing {
namespace {

using namespace std::chrono_literals;
using proto::Op;

constexpr uint32_t kKey = 42;

dataplane::JobConfig Job(uint32_t workers) {
  auto c = dataplane::JobConfig::ParseSpec("id=1,workers=" + std::to_string(workers) +
                                           ",elements=8,row=4,key=42");
  EXPECT_TRUE(c.ok()) << c.status().message();
  return *c;
}

ServerOptions Loopback(uint32_t threads = 1) {
  ServerOptions o;
  o.bind = {"127.0.0.1"};
  o.port = 0;
  o.threads = threads;
  o.recv_buffer = 0;
  o.send_buffer = 0;
  return o;
}

Request Req(Op op, uint16_t worker, uint32_t clock = 0, uint32_t row = 0,
            std::vector<int32_t> values = {}) {
  return Request{op, 1, worker, kKey, clock, row, std::move(values), 0};
}

// Waits until `pred(counters)` holds; the guard only prevents a hang.
template <typename Pred>
bool WaitFor(const SwitchServer& server, Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!pred(server.counters())) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

TEST(SwitchServerTest, ThreadsShareOnePortAndAnswerEveryWorker) {
  dataplane::Pipeline pipeline;
  ASSERT_TRUE(pipeline.CreateJob(Job(16)).ok());
  SwitchServer server(&pipeline, Loopback(/*threads=*/3));
  ASSERT_TRUE(server.Start().ok());
  auto eps = server.local_endpoints();
  ASSERT_EQ(eps.size(), 3u);
  EXPECT_NE(eps[0].port, 0);
  EXPECT_EQ(eps[1], eps[0]);
  EXPECT_EQ(eps[2], eps[0]);

  std::vector<std::unique_ptr<UdpPeer>> peers;
  for (uint16_t rank = 0; rank < 16; ++rank) {
    peers.push_back(std::make_unique<UdpPeer>());
    ASSERT_TRUE(peers.back()->Send(eps[0], Req(Op::kJoin, rank)));
  }
  for (uint16_t rank = 0; rank < 16; ++rank) {
    auto ack = peers[rank]->Next();
    ASSERT_TRUE(ack.has_value()) << rank;
    EXPECT_EQ(ack->header.op, Op::kJoinAck);
    EXPECT_EQ(ack->header.worker, rank);
    EXPECT_EQ(ack->src, eps[0]);
  }
  server.Stop();
  // Each worker: JOIN, COOKIE, JOIN with the cookie, JOIN_ACK.
  ServerCounters c = server.counters();
  EXPECT_EQ(c.rx_datagrams, 32u);
  EXPECT_EQ(c.tx_datagrams, 32u);
  EXPECT_EQ(c.tx_errors, 0u);
  EXPECT_GT(c.rx_bytes, 0u);
  EXPECT_EQ(pipeline.global_counters().packets, 32u);
}

TEST(SwitchServerTest, SendDeliversPacketsOfControlOperations) {
  dataplane::Pipeline pipeline;
  ASSERT_TRUE(pipeline.CreateJob(Job(2)).ok());
  SwitchServer server(&pipeline, Loopback());
  ASSERT_TRUE(server.Start().ok());
  const proto::Endpoint sw = server.local_endpoints()[0];
  UdpPeer r0, r1;
  ASSERT_TRUE(r0.Send(sw, Req(Op::kJoin, 0)));
  ASSERT_TRUE(r0.Next().has_value());
  ASSERT_TRUE(r1.Send(sw, Req(Op::kJoin, 1)));
  ASSERT_TRUE(r1.Next().has_value());
  // Rank 0 seeds and completes clock 0, then waits for rank 1 (SYNC)...
  ASSERT_TRUE(r0.Send(sw, Req(Op::kInc, 0, 0, 0, {1, 2, 3, 4})));
  ASSERT_TRUE(r0.Send(sw, Req(Op::kInc, 0, 0, 1, {5, 6, 7, 8})));
  ASSERT_TRUE(r0.Send(sw, Req(Op::kClock, 0, 0, 2)));
  // Two JOINs each (the second echoes the COOKIE), two INCs and a CLOCK.
  ASSERT_TRUE(WaitFor(server, [](const ServerCounters& c) { return c.rx_datagrams == 7; }));
  ASSERT_TRUE(WaitFor(server, [&](const ServerCounters&) {
    auto t = pipeline.Telemetry(1);
    return t.ok() && t->workers[0].waiting;
  }));
  // ...until the controller evicts rank 1: the RELEASE comes out of Evict.
  dataplane::Output out = dataplane::Output::ForBatch(1);
  ASSERT_TRUE(pipeline.Evict(1, 1, NowNanos(), &out).ok());
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(server.Send(out).ok());
  auto release = r0.Next();
  ASSERT_TRUE(release.has_value());
  EXPECT_EQ(release->header.op, Op::kRelease);
  EXPECT_EQ(release->header.clock, 0u);
  EXPECT_EQ(release->src, sw);
  EXPECT_EQ(server.counters().control_tx, 1u);

  server.Stop();
  server.Stop();  // idempotent
  EXPECT_FALSE(server.Send(out).ok());
}

bool HaveIPv6Loopback() {
  net::UdpSocketOptions o;
  o.address = "::1";
  return net::UdpSocket::Open(o).ok();
}

TEST(SwitchServerTest, ReleasesCrossAddressFamiliesWithSeparateBinds) {
  if (!HaveIPv6Loopback()) GTEST_SKIP() << "no IPv6 loopback";
  dataplane::Pipeline pipeline;
  ASSERT_TRUE(pipeline.CreateJob(Job(2)).ok());
  ServerOptions o = Loopback();
  o.bind = {"127.0.0.1", "::1"};
  SwitchServer server(&pipeline, o);
  ASSERT_TRUE(server.Start().ok());
  const auto eps = server.local_endpoints();
  ASSERT_EQ(eps.size(), 2u);
  EXPECT_EQ(eps[0].port, eps[1].port);  // the ephemeral port is shared
  UdpPeer v4("127.0.0.1"), v6("::1");
  ASSERT_TRUE(v4.Send(eps[0], Req(Op::kJoin, 0)));
  ASSERT_TRUE(v4.Next().has_value());
  ASSERT_TRUE(v6.Send(eps[1], Req(Op::kJoin, 1)));
  ASSERT_TRUE(v6.Next().has_value());
  // Rank 0 (IPv4) seeds and waits; rank 1's CLOCK arrives on the IPv6
  // socket and releases both: rank 0's RELEASE must still reach it.
  ASSERT_TRUE(v4.Send(eps[0], Req(Op::kInc, 0, 0, 0, {1, 2, 3, 4})));
  ASSERT_TRUE(v4.Send(eps[0], Req(Op::kInc, 0, 0, 1, {5, 6, 7, 8})));
  ASSERT_TRUE(v4.Send(eps[0], Req(Op::kClock, 0, 0, 2)));
  ASSERT_TRUE(WaitFor(server, [&](const ServerCounters&) {
    auto t = pipeline.Telemetry(1);
    return t.ok() && t->workers[0].waiting;
  }));
  ASSERT_TRUE(v6.Send(eps[1], Req(Op::kClock, 1, 0, 0)));
  auto r1 = v6.Next();
  ASSERT_TRUE(r1.has_value());
  EXPECT_EQ(r1->header.op, Op::kRelease);
  auto r0 = v4.Next();
  ASSERT_TRUE(r0.has_value());
  EXPECT_EQ(r0->header.op, Op::kRelease);
  EXPECT_EQ(r0->src, eps[0]);  // from the IPv4 socket
  server.Stop();
  EXPECT_EQ(server.counters().tx_errors, 0u);
}

TEST(SwitchServerTest, StartsOnlyOnceAndReportsBindErrors) {
  dataplane::Pipeline pipeline;
  SwitchServer server(&pipeline, Loopback());
  ASSERT_TRUE(server.Start().ok());
  EXPECT_FALSE(server.Start().ok());
  const uint16_t port = server.local_endpoints()[0].port;

  ServerOptions taken = Loopback();
  taken.port = port;
  SwitchServer second(&pipeline, taken);
  Status s = second.Start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("127.0.0.1:" + std::to_string(port)), std::string::npos)
      << s.message();
  EXPECT_FALSE(second.running());
  EXPECT_TRUE(second.local_endpoints().empty());
}

// How many of this process's threads have `value` in field `field` of their
// /proc stat (counted from 1, the fields after the command's closing paren
// starting at 3: the state).
int ThreadsWithStatField(int field, const std::string& value) {
  int n = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream in(task.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream fields(stat.substr(paren + 2));
    std::string f;
    for (int i = 3; i <= field && fields >> f; ++i) {
      if (i == field && f == value) ++n;
    }
  }
  return n;
}

// Field 19 is the niceness, 41 the scheduling policy.
int ThreadsAtNiceness(int nice) { return ThreadsWithStatField(19, std::to_string(nice)); }
int ThreadsUnderSchedBatch() { return ThreadsWithStatField(41, std::to_string(SCHED_BATCH)); }

// Runs a switch of two loop threads with `o`'s scheduling settings and
// calls `check` once a JOIN was answered (the threads started, their
// settings applied first).
void WithRunningLoops(ServerOptions o, const std::function<void()>& check) {
  dataplane::Pipeline pipeline;
  ASSERT_TRUE(pipeline.CreateJob(Job(2)).ok());
  SwitchServer server(&pipeline, o);
  ASSERT_TRUE(server.Start().ok());
  UdpPeer peer;
  ASSERT_TRUE(peer.Send(server.local_endpoints()[0], Req(Op::kJoin, 0)));
  auto ack = peer.Next();
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->header.op, Op::kJoinAck);
  check();
  server.Stop();
}

TEST(SwitchServerTest, LoopThreadsRunAtTheGivenNiceness) {
  // Raising the niceness needs no privilege; the loop threads get it, the
  // caller's thread keeps its own.
  ASSERT_EQ(ThreadsAtNiceness(7), 0);
  ServerOptions o = Loopback(/*threads=*/2);
  o.nice = 7;
  WithRunningLoops(o, [] {
    EXPECT_EQ(ThreadsAtNiceness(7), 2);
    EXPECT_EQ(getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())), 0);
  });
}

TEST(SwitchServerTest, LoopThreadsRunUnderSchedBatchKeepingTheirNiceness) {
  ASSERT_EQ(ThreadsUnderSchedBatch(), 0);
  ServerOptions o = Loopback(/*threads=*/2);
  o.nice = 6;
  o.sched_batch = true;
  WithRunningLoops(o, [] {
    EXPECT_EQ(ThreadsUnderSchedBatch(), 2);
    EXPECT_EQ(ThreadsAtNiceness(6), 2);
    EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER);  // the caller's thread keeps its own
  });
}

TEST(SwitchServerTest, ANicenessItMayNotTakeIsRefusedBeforeAnySocketOpens) {
  // In a child without the privilege (as root: dropped to nobody) and with
  // RLIMIT_NICE at 0, a niceness below 0 is refused, naming what it needs.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (geteuid() == 0 && (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) {
      _exit(10);
    }
    const rlimit none{0, 0};
    if (setrlimit(RLIMIT_NICE, &none) != 0) _exit(11);
    dataplane::Pipeline pipeline;
    ServerOptions o = Loopback();
    o.nice = -5;
    SwitchServer server(&pipeline, o);
    const Status s = server.Start();
    if (s.ok()) _exit(12);
    if (s.code() != Status::Code::kFailedPrecondition) _exit(13);
    if (s.message().find("niceness -5") == std::string::npos ||
        s.message().find("CAP_SYS_NICE") == std::string::npos) {
      _exit(14);
    }
    if (server.running() || !server.local_endpoints().empty()) _exit(15);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "10/11: could not drop the privilege; 12: started; 13: wrong code; 14: message does "
         "not name the niceness and CAP_SYS_NICE; 15: a socket was opened";
}

TEST(SwitchServerTest, RxDropAllKeepsEveryPacketFromThePipeline) {
  dataplane::Pipeline pipeline;
  ASSERT_TRUE(pipeline.CreateJob(Job(2)).ok());
  ServerOptions o = Loopback();
  o.fault = *net::FaultSpec::Parse("drop=1,seed=3");
  SwitchServer server(&pipeline, o);
  ASSERT_TRUE(server.Start().ok());
  UdpPeer peer;
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(peer.Send(server.local_endpoints()[0], Req(Op::kJoin, 0)));
  ASSERT_TRUE(WaitFor(server, [](const ServerCounters& c) { return c.rx_faults.offered == 10; }));
  server.Stop();
  ServerCounters c = server.counters();
  EXPECT_EQ(c.rx_datagrams, 10u);
  EXPECT_EQ(c.rx_faults.dropped, 10u);
  EXPECT_EQ(c.rx_faults.delivered, 0u);
  EXPECT_EQ(c.tx_faults.offered, 0u);  // dir=rx only
  EXPECT_EQ(pipeline.global_counters().packets, 0u);
  EXPECT_EQ(c.tx_datagrams, 0u);
}

TEST(SwitchServerTest, TxDuplicateSendsEveryReplyTwice) {
  dataplane::Pipeline pipeline;
  ASSERT_TRUE(pipeline.CreateJob(Job(2)).ok());
  ServerOptions o = Loopback();
  o.fault = *net::FaultSpec::Parse("dup=1,dir=tx");
  SwitchServer server(&pipeline, o);
  ASSERT_TRUE(server.Start().ok());
  UdpPeer peer;
  ASSERT_TRUE(peer.Send(server.local_endpoints()[0], Req(Op::kJoin, 0)));
  auto a = peer.Next(), b = peer.Next();
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(a->header.op, Op::kJoinAck);
  EXPECT_EQ(b->header.op, Op::kJoinAck);
  EXPECT_EQ(a->values, b->values);
  // The COOKIE came twice and the peer echoed both: three JOINs, the first
  // answered with the COOKIE, the others with JOIN_ACKs, each sent twice.
  // Both JOIN_ACKs read may be the two copies of the first; on a loaded host
  // the second echoed JOIN may not have been served yet: wait for it.
  ASSERT_TRUE(WaitFor(server, [](const ServerCounters& c) { return c.tx_datagrams >= 6; }));
  server.Stop();
  EXPECT_EQ(peer.cookies_echoed(), 2u);
  EXPECT_EQ(pipeline.global_counters().packets, 3u);
  EXPECT_EQ(server.counters().tx_faults.duplicated, 3u);
  EXPECT_EQ(server.counters().tx_datagrams, 6u);
}

TEST(SwitchServerTest, DelayedDatagramsAreDeliveredWithoutWaitingForThePollInterval) {
  dataplane::Pipeline pipeline;
  ASSERT_TRUE(pipeline.CreateJob(Job(2)).ok());
  ServerOptions o = Loopback();
  o.fault = *net::FaultSpec::Parse("delay=20ms,dir=rx");
  // A loop that slept for the whole poll interval would answer after 3 s,
  // past the peer's 2 s guard: the loop must wake when the delay ends.
  o.poll_interval = 3s;
  SwitchServer server(&pipeline, o);
  ASSERT_TRUE(server.Start().ok());
  UdpPeer peer;
  ASSERT_TRUE(peer.Send(server.local_endpoints()[0], Req(Op::kJoin, 0)));
  auto ack = peer.Next(2s);
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->header.op, Op::kJoinAck);
  EXPECT_EQ(server.counters().rx_faults.delayed, 2u);  // the JOIN and the one with its cookie
  server.Stop();
}

TEST(SwitchServerTest, HeldDatagramsAreProcessedAtStop) {
  dataplane::Pipeline pipeline;
  ASSERT_TRUE(pipeline.CreateJob(Job(2)).ok());
  ServerOptions o = Loopback();
  o.fault = *net::FaultSpec::Parse("delay=1s,dir=rx");
  SwitchServer server(&pipeline, o);
  ASSERT_TRUE(server.Start().ok());
  UdpPeer peer;
  ASSERT_TRUE(peer.Send(server.local_endpoints()[0], Req(Op::kJoin, 0)));
  ASSERT_TRUE(WaitFor(server, [](const ServerCounters& c) { return c.rx_faults.offered == 1; }));
  server.Stop();  // before the second is over
  EXPECT_EQ(pipeline.global_counters().packets, 1u);
  EXPECT_EQ(server.counters().rx_faults.delivered, 1u);
}

// --- Source addresses on a multi-homed host ---
// Linux routes all of 127.0.0.0/8 to lo: a switch bound to a wildcard
// address is reached at 127.0.0.1 and at 127.0.0.2, a two-address host
// without configuring any. A worker on 127.0.0.1 that talks to 127.0.0.2
// must hear from 127.0.0.2, although routing would answer it from 127.0.0.1.

proto::Endpoint At(const std::string& host, uint16_t port) {
  auto ep = net::ParseHost(host, port);
  EXPECT_TRUE(ep.ok()) << ep.status().message();
  return ep.ok() ? *ep : proto::Endpoint{};
}

struct MultiHomedCase {
  const char* bind;
  const char* fault;  // "" = none
};

void PrintTo(const MultiHomedCase& c, std::ostream* os) {
  *os << "bind " << c.bind << (*c.fault != 0 ? ", fault " : "") << c.fault;
}

class MultiHomedTest : public ::testing::TestWithParam<MultiHomedCase> {};

TEST_P(MultiHomedTest, RepliesAndReleasesLeaveFromTheAddressEachRankTalksTo) {
  const MultiHomedCase c = GetParam();
  if (std::string(c.bind) == "::" && !HaveIPv6Loopback()) GTEST_SKIP() << "no IPv6";
  dataplane::Pipeline pipeline;
  ASSERT_TRUE(pipeline.CreateJob(Job(2)).ok());
  ServerOptions o = Loopback();
  o.bind = {c.bind};
  o.fault = *net::FaultSpec::Parse(c.fault);
  SwitchServer server(&pipeline, o);
  ASSERT_TRUE(server.Start().ok());
  const uint16_t port = server.local_endpoints()[0].port;
  const proto::Endpoint a = At("127.0.0.2", port), b = At("127.0.0.1", port);
  UdpPeer r0, r1;  // both on 127.0.0.1; rank 0 talks to a, rank 1 to b

  ASSERT_TRUE(r0.Send(a, Req(Op::kJoin, 0)));
  auto ack0 = r0.Next();
  ASSERT_TRUE(ack0.has_value());
  EXPECT_EQ(ack0->header.op, Op::kJoinAck);
  EXPECT_EQ(ack0->src, a) << "a reply leaves from the address its request reached";
  ASSERT_TRUE(r1.Send(b, Req(Op::kJoin, 1)));
  auto ack1 = r1.Next();
  ASSERT_TRUE(ack1.has_value());
  EXPECT_EQ(ack1->src, b);

  // Rank 0 seeds and waits; rank 1's CLOCK (through b) releases both.
  ASSERT_TRUE(r0.Send(a, Req(Op::kInc, 0, 0, 0, {1, 2, 3, 4})));
  ASSERT_TRUE(r0.Send(a, Req(Op::kInc, 0, 0, 1, {5, 6, 7, 8})));
  ASSERT_TRUE(r0.Send(a, Req(Op::kClock, 0, 0, 2)));
  ASSERT_TRUE(WaitFor(server, [&](const ServerCounters&) {
    auto t = pipeline.Telemetry(1);
    return t.ok() && t->workers[0].waiting;
  }));
  ASSERT_TRUE(r1.Send(b, Req(Op::kClock, 1, 0, 0)));
  auto rel1 = r1.Next();
  ASSERT_TRUE(rel1.has_value());
  EXPECT_EQ(rel1->header.op, Op::kRelease);
  EXPECT_EQ(rel1->src, b);
  auto rel0 = r0.Next();
  ASSERT_TRUE(rel0.has_value());
  EXPECT_EQ(rel0->header.op, Op::kRelease);
  EXPECT_EQ(rel0->src, a) << "a RELEASE triggered by another rank leaves from where rank 0 joined";

  // A READ through a: the reply from a.
  ASSERT_TRUE(r0.Send(a, Req(Op::kRead, 0, 1, 0)));
  auto row = r0.Next();
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->header.op, Op::kReadReply);
  EXPECT_EQ(row->src, a);

  // Rank 0 completes clock 1 and waits; the operator evicts rank 1: the
  // RELEASE a control operation emits also leaves from a.
  ASSERT_TRUE(r0.Send(a, Req(Op::kClock, 0, 1, 0)));
  ASSERT_TRUE(WaitFor(server, [&](const ServerCounters&) {
    auto t = pipeline.Telemetry(1);
    return t.ok() && t->workers[0].waiting && t->workers[0].done == 1;
  }));
  dataplane::Output out = dataplane::Output::ForBatch(1);
  ASSERT_TRUE(pipeline.Evict(1, 1, NowNanos(), &out).ok());
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(server.Send(out).ok());
  auto control = r0.Next();
  ASSERT_TRUE(control.has_value());
  EXPECT_EQ(control->header.op, Op::kRelease);
  EXPECT_EQ(control->header.clock, 1u);
  EXPECT_EQ(control->src, a);

  server.Stop();
  EXPECT_EQ(server.counters().tx_errors, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Binds, MultiHomedTest,
    ::testing::Values(MultiHomedCase{"0.0.0.0", ""}, MultiHomedCase{"::", ""},
                      MultiHomedCase{"0.0.0.0", "delay=1ms,dir=both,seed=5"}),
    [](const ::testing::TestParamInfo<MultiHomedCase>& param_info) {
      const MultiHomedCase& c = param_info.param;
      std::string name = std::string(c.bind) == "::" ? "DualStack" : "IPv4Wildcard";
      if (*c.fault != 0) name += "WithFaultInjection";
      return name;
    });

TEST(SwitchServerTest, WithSpecificBindsAReleaseLeavesThroughTheSocketTheRankJoined) {
  dataplane::Pipeline pipeline;
  ASSERT_TRUE(pipeline.CreateJob(Job(2)).ok());
  ServerOptions o = Loopback();
  o.bind = {"127.0.0.1", "127.0.0.2"};
  SwitchServer server(&pipeline, o);
  ASSERT_TRUE(server.Start().ok());
  const auto eps = server.local_endpoints();
  ASSERT_EQ(eps.size(), 2u);
  UdpPeer r0, r1;
  ASSERT_TRUE(r0.Send(eps[1], Req(Op::kJoin, 0)));  // rank 0 through 127.0.0.2
  ASSERT_TRUE(r0.Next().has_value());
  ASSERT_TRUE(r1.Send(eps[0], Req(Op::kJoin, 1)));  // rank 1 through 127.0.0.1
  ASSERT_TRUE(r1.Next().has_value());
  ASSERT_TRUE(r0.Send(eps[1], Req(Op::kClock, 0, 0, 0)));
  ASSERT_TRUE(WaitFor(server, [&](const ServerCounters&) {
    auto t = pipeline.Telemetry(1);
    return t.ok() && t->workers[0].waiting;
  }));
  // Rank 1's CLOCK arrives on the 127.0.0.1 socket; rank 0's RELEASE leaves
  // through the 127.0.0.2 socket, the address rank 0 talks to.
  ASSERT_TRUE(r1.Send(eps[0], Req(Op::kClock, 1, 0, 0)));
  auto rel0 = r0.Next();
  ASSERT_TRUE(rel0.has_value());
  EXPECT_EQ(rel0->header.op, Op::kRelease);
  EXPECT_EQ(rel0->src, eps[1]);
  auto rel1 = r1.Next();
  ASSERT_TRUE(rel1.has_value());
  EXPECT_EQ(rel1->src, eps[0]);
}

}  // namespace
}  // namespace serene::switchd::testing
