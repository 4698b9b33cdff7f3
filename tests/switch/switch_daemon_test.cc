// Integration test of the real serene-switch binary: it is started on a free
// loopback port (--port 0; the test reads the port from the log) and driven
// with UDP packets built with proto::Encode.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "loadgen/child_process.h"
#include "loadgen/switch_launch.h"
#include "dataplane/counters.h"
#include "net/address.h"
#include "proto/codec.h"
#include "udp_peer.h"

namespace serene::switchd::testing {
namespace {

using loadgen::ChildProcess;
using loadgen::RunToExit;

using proto::Op;

constexpr uint16_t kJob = 7;
constexpr uint32_t kKey = 0xC0FFEE;
const std::string kJobFlag = "id=7,workers=2,elements=10,row=4,key=0xC0FFEE,policy=sync";

// A running daemon and the address it listens on.
// The runtime API on a free port: tests run in parallel.
std::vector<std::string> WithControl(std::vector<std::string> args) {
  args.insert(args.end(), {"--control", "127.0.0.1:0"});
  return args;
}

class Daemon {
 public:
  explicit Daemon(const std::vector<std::string>& args)
      : child_(SERENE_SWITCH_BINARY, WithControl(args)) {}

  // Waits for the "listening on ADDR" line; false if the daemon did not get there.
  bool WaitListening() {
    auto listening = loadgen::WaitForListening(child_);
    if (!listening) return false;
    auto ep = net::ParseEndpoint(*listening);
    if (!ep.ok()) return false;
    addr_ = *ep;
    return true;
  }

  // The address to send to: the listening one, or `host` on its port for a wildcard bind.
  proto::Endpoint Target(const std::string& host = "") const {
    if (host.empty()) return addr_;
    auto ep = net::ParseHost(host, addr_.port);
    return ep.ok() ? *ep : proto::Endpoint{};
  }

  ChildProcess& child() { return child_; }

 private:
  ChildProcess child_;
  proto::Endpoint addr_;
};

bool HaveIPv6Loopback() {
  net::UdpSocketOptions o;
  o.address = "::1";
  return net::UdpSocket::Open(o).ok();
}

Request Req(Op op, uint16_t worker, uint32_t clock = 0, uint32_t row = 0,
            std::vector<int32_t> values = {}) {
  return Request{op, kJob, worker, kKey, clock, row, std::move(values), 0};
}

// JOIN -> JOIN_ACK with the job's geometry.
void Join(UdpPeer& peer, const proto::Endpoint& sw, uint16_t rank) {
  ASSERT_TRUE(peer.Send(sw, Req(Op::kJoin, rank)));
  auto ack = peer.Next();
  ASSERT_TRUE(ack.has_value()) << "no JOIN_ACK for rank " << rank;
  EXPECT_EQ(ack->header.op, Op::kJoinAck);
  EXPECT_EQ(ack->header.job, kJob);
  EXPECT_EQ(ack->header.worker, rank);
  EXPECT_EQ(ack->header.key, kKey);
  EXPECT_EQ(ack->src, sw);
  ASSERT_GE(ack->values.size(), proto::join_ack::kCount);
  EXPECT_EQ(ack->values[proto::join_ack::kWorkers], 2);
  EXPECT_EQ(ack->values[proto::join_ack::kElements], 10);
  EXPECT_EQ(ack->values[proto::join_ack::kRowWidth], 4);
  EXPECT_EQ(static_cast<uint32_t>(ack->values[proto::join_ack::kDone]), proto::kNoClock);
}

// RELEASE for `rank` at `clock`, sent from `sw` (the address the rank talks to).
void ExpectRelease(UdpPeer& peer, const proto::Endpoint& sw, uint16_t rank, uint32_t clock) {
  auto r = peer.Next();
  ASSERT_TRUE(r.has_value()) << "no RELEASE for rank " << rank << " clock " << clock;
  EXPECT_EQ(r->header.op, Op::kRelease);
  EXPECT_EQ(r->src, sw);
  EXPECT_EQ(r->header.worker, rank);
  EXPECT_EQ(r->header.clock, clock);
  ASSERT_GE(r->values.size(), proto::release::kCount);
  EXPECT_EQ(r->values[proto::release::kLow], static_cast<int32_t>(clock));
}

std::vector<int32_t> ReadModel(UdpPeer& peer, const proto::Endpoint& sw, uint16_t rank,
                               uint32_t clock) {
  std::vector<int32_t> model;
  for (uint32_t row = 0; row < 3; ++row) {
    EXPECT_TRUE(peer.Send(sw, Req(Op::kRead, rank, clock, row)));
    auto r = peer.Next();
    EXPECT_TRUE(r.has_value()) << "no READ_REPLY for row " << row;
    if (!r) return model;
    EXPECT_EQ(r->header.op, Op::kReadReply);
    EXPECT_EQ(r->src, sw);
    EXPECT_EQ(r->header.row, row);
    EXPECT_EQ(r->header.clock, clock);
    model.insert(model.end(), r->values.begin(), r->values.end());
  }
  return model;
}

// INCs `delta` into every row of the 10-element, row-4 model at `clock`.
void IncAll(UdpPeer& peer, const proto::Endpoint& sw, uint16_t rank, uint32_t clock,
            const std::vector<int32_t>& delta) {
  for (uint32_t row = 0; row < 3; ++row) {
    const size_t begin = row * 4, end = std::min<size_t>(begin + 4, delta.size());
    ASSERT_TRUE(peer.Send(sw, Req(Op::kInc, rank, clock, row,
                                  {delta.begin() + static_cast<ptrdiff_t>(begin),
                                   delta.begin() + static_cast<ptrdiff_t>(end)})));
  }
}

// The full protocol against a daemon serving job 7 at `sw`: seed, one SYNC
// step, reads, a stranger's packet and garbage. Returns the seeded model.
void DriveJob(const proto::Endpoint& sw, const std::string& host) {
  UdpPeer r0(host), r1(host);
  ASSERT_TRUE(r0.ok() && r1.ok());
  Join(r0, sw, 0);
  Join(r1, sw, 1);

  // Clock 0: rank 0 seeds the model; both CLOCK(0); SYNC releases both.
  std::vector<int32_t> model = {0, 100, 200, 300, 400, 500, 600, 700, 800, 900};
  IncAll(r0, sw, 0, 0, model);
  ASSERT_TRUE(r0.Send(sw, Req(Op::kClock, 0, 0, /*rows=*/3)));
  ASSERT_TRUE(r1.Send(sw, Req(Op::kClock, 1, 0, /*rows=*/0)));
  ExpectRelease(r0, sw, 0, 0);
  ExpectRelease(r1, sw, 1, 0);
  EXPECT_EQ(ReadModel(r1, sw, 1, 1), model);

  // Clock 1: both ranks add; the reads at clock 2 see the sum.
  std::vector<int32_t> d0(10, 1), d1(10, 2);
  IncAll(r0, sw, 0, 1, d0);
  IncAll(r1, sw, 1, 1, d1);
  ASSERT_TRUE(r0.Send(sw, Req(Op::kClock, 0, 1, 3)));
  ASSERT_TRUE(r1.Send(sw, Req(Op::kClock, 1, 1, 3)));
  ExpectRelease(r0, sw, 0, 1);
  ExpectRelease(r1, sw, 1, 1);
  for (int32_t& v : model) v += 3;
  EXPECT_EQ(ReadModel(r0, sw, 0, 2), model);

  // A wrong key gets no reply: the next reply is the READ sent after it.
  Request stranger = Req(Op::kRead, 0, 2, 1);
  stranger.key = kKey + 1;
  ASSERT_TRUE(r0.Send(sw, stranger));
  ASSERT_TRUE(r0.Send(sw, Req(Op::kRead, 0, 2, 2)));
  auto r = r0.Next();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->header.op, Op::kReadReply);
  EXPECT_EQ(r->header.row, 2u);

  // Garbage and a short datagram get no reply either.
  const std::vector<uint8_t> garbage(40, 0xAB), short_one(10, 0x53);
  ASSERT_TRUE(r0.SendRaw(sw, garbage));
  ASSERT_TRUE(r0.SendRaw(sw, short_one));
  ASSERT_TRUE(r0.Send(sw, Req(Op::kRead, 0, 2, 0)));
  r = r0.Next();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->header.op, Op::kReadReply);
  EXPECT_EQ(r->header.row, 0u);
  EXPECT_EQ(r->values, std::vector<int32_t>(model.begin(), model.begin() + 4));
}

std::string Line(const std::string& output, const std::string& prefix) {
  const size_t at = output.find(prefix);
  if (at == std::string::npos) return "";
  return output.substr(at, output.find('\n', at) - at);
}

TEST(SwitchDaemonTest, ServesAJobOverIPv4AndPrintsCountersOnSigterm) {
  Daemon d({"--bind", "127.0.0.1", "--port", "0", "--job", kJobFlag});
  ASSERT_TRUE(d.WaitListening()) << d.child().output();
  ASSERT_NE(d.Target().port, 0);
  DriveJob(d.Target(), "127.0.0.1");

  d.child().Signal(SIGTERM);
  auto code = d.child().Wait();
  ASSERT_TRUE(code.has_value()) << "the daemon did not exit on SIGTERM";
  EXPECT_EQ(*code, 0);
  const std::string out = d.child().output();
  EXPECT_NE(out.find("=== serene-switch counters ==="), std::string::npos) << out;
  EXPECT_EQ(Line(out, "parse errors:"), "parse errors: truncated=1 bad_magic=1") << out;
  EXPECT_NE(Line(out, "pipeline:").find("bad_key=1"), std::string::npos) << out;
  // 4 JOIN (each rank's first is answered with a COOKIE), 6 + 3 = 9 INC (3
  // seed rows, 6 at clock 1), 4 CLOCK, 3 + 3 + 2 READ.
  EXPECT_EQ(Line(out, "  requests:"), "  requests: JOIN=4 READ=8 INC=9 CLOCK=4 LEAVE=0") << out;
  EXPECT_NE(
      Line(out, "  drops:")
          .find(std::string(dataplane::DropReasonName(dataplane::DropReason::kBadKey)) + "=1"),
      std::string::npos)
      << out;
  EXPECT_NE(Line(out, "  rank 0 127.0.0.1:").find("done=1"), std::string::npos) << out;
  EXPECT_NE(Line(out, "  rank 1 127.0.0.1:").find("done=1"), std::string::npos) << out;
}

TEST(SwitchDaemonTest, ServesOverIPv6) {
  if (!HaveIPv6Loopback()) GTEST_SKIP() << "no IPv6 loopback";
  Daemon d({"--bind", "::1", "--port", "0", "--job", kJobFlag, "--threads", "2"});
  ASSERT_TRUE(d.WaitListening()) << d.child().output();
  EXPECT_EQ(d.Target().family, proto::Endpoint::Family::kIPv6);
  DriveJob(d.Target(), "::1");
  d.child().Signal(SIGINT);
  EXPECT_EQ(d.child().Wait(), 0);
}

TEST(SwitchDaemonTest, DefaultBindIsDualStack) {
  if (!HaveIPv6Loopback()) GTEST_SKIP() << "no IPv6 loopback";
  Daemon d({"--port", "0", "--job", kJobFlag});
  ASSERT_TRUE(d.WaitListening()) << d.child().output();
  EXPECT_EQ(net::FormatHost(d.Target()), "::");
  // An IPv4 worker and an IPv6 worker of the same job.
  UdpPeer v4("127.0.0.1"), v6("::1");
  Join(v4, d.Target("127.0.0.1"), 0);
  Join(v6, d.Target("::1"), 1);
  d.child().Signal(SIGTERM);
  EXPECT_EQ(d.child().Wait(), 0);
  EXPECT_NE(d.child().output().find("rank 0 127.0.0.1:"), std::string::npos) << d.child().output();
  EXPECT_NE(d.child().output().find("rank 1 [::1]:"), std::string::npos) << d.child().output();
}

// Linux routes all of 127.0.0.0/8 to lo: a daemon bound to a wildcard
// address is reached at 127.0.0.2 as well as 127.0.0.1, a host with two
// addresses. Workers on 127.0.0.1 talk to 127.0.0.2; every reply and RELEASE
// must come from 127.0.0.2 (DriveJob checks each packet's source), although
// routing alone would answer 127.0.0.1 from 127.0.0.1.
TEST(SwitchDaemonTest, WithAWildcardBindAnswersFromTheAddressWorkersTalkTo) {
  Daemon d({"--bind", "0.0.0.0", "--port", "0", "--job", kJobFlag});
  ASSERT_TRUE(d.WaitListening()) << d.child().output();
  DriveJob(d.Target("127.0.0.2"), "127.0.0.1");
  d.child().Signal(SIGTERM);
  EXPECT_EQ(d.child().Wait(), 0);
  const std::string out = d.child().output();
  const std::string via = " via 127.0.0.2:" + std::to_string(d.Target().port) + " ";
  EXPECT_NE(Line(out, "  rank 0 127.0.0.1:").find(via), std::string::npos) << out;
  EXPECT_NE(Line(out, "ports:").find("tx_errors=0"), std::string::npos) << out;
}

TEST(SwitchDaemonTest, DualStackBindAnswersIPv4WorkersFromTheAddressTheyTalkTo) {
  if (!HaveIPv6Loopback()) GTEST_SKIP() << "no IPv6 loopback";
  Daemon d({"--port", "0", "--job", kJobFlag});
  ASSERT_TRUE(d.WaitListening()) << d.child().output();
  DriveJob(d.Target("127.0.0.2"), "127.0.0.1");
  d.child().Signal(SIGTERM);
  EXPECT_EQ(d.child().Wait(), 0);
}

TEST(SwitchDaemonTest, ReadsJobsFromAConfigFileAndFlags) {
  const std::string path = ::testing::TempDir() + "/serene-switch-daemon-test.toml";
  {
    std::ofstream f(path);
    f << "bind = \"127.0.0.1\"\n"
         "port = 7000   # overridden by --port 0\n"
         "log_level = \"debug\"\n"
         "[[job]]\n"
         "id = 7\nworkers = 2\nelements = 10\nrow = 4\nkey = 0xC0FFEE\npolicy = \"sync\"\n";
  }
  Daemon d({"--config", path, "--port", "0", "--job", "id=8,workers=1,elements=3,key=1"});
  ASSERT_TRUE(d.WaitListening()) << d.child().output();
  EXPECT_NE(d.Target().port, 7000);
  UdpPeer peer;
  Join(peer, d.Target(), 0);  // job 7, from the file
  Request join8{Op::kJoin, 8, 0, 1, 0, 0, {}, 0};
  ASSERT_TRUE(peer.Send(d.Target(), join8));
  auto ack = peer.Next();
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->header.op, Op::kJoinAck);
  EXPECT_EQ(ack->header.job, 8);
  EXPECT_EQ(ack->values[proto::join_ack::kElements], 3);
  d.child().Signal(SIGTERM);
  EXPECT_EQ(d.child().Wait(), 0);
  EXPECT_NE(d.child().output().find("job 8 ["), std::string::npos) << d.child().output();
  std::filesystem::remove(path);
}

TEST(SwitchDaemonTest, WarnsAboutAJobWithoutKey) {
  Daemon d({"--bind", "127.0.0.1", "--port", "0", "--job", "id=3,workers=1,elements=4"});
  ASSERT_TRUE(d.WaitListening()) << d.child().output();
  d.child().Signal(SIGTERM);
  EXPECT_EQ(d.child().Wait(), 0);
  EXPECT_NE(d.child().output().find("job 3 has no key"), std::string::npos) << d.child().output();
}

TEST(SwitchDaemonTest, RefusesBadFlagsWithAMessage) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"--job", "id=0,workers=1,elements=1"}, "id must be 1..65535"},
      {{"--port", "99999"}, "--port '99999': expected a UDP port number 0..65535"},
      {{"--job", "id=1,workers=2,elements=10,policy=bogus"}, "bad policy 'bogus'"},
      {{"--job", "id=1,workers=2"}, "missing elements"},
      {{"--job", "id=1,workers=1,elements=1", "--job", "id=1,workers=1,elements=2"},
       "job id 1 is defined twice"},
      {{"--no-such-flag"}, "--no-such-flag"},
      {{"--config", "/nonexistent/serene.toml"},
       "cannot read config file '/nonexistent/serene.toml'"},
      {{"--log-level", "loud"}, "--log-level 'loud'"},
      {{"--fault", "drop=2"}, "drop=2 is not a probability"},
      {{"--bind", "localhost"}, "--bind 'localhost'"},
      {{"--threads", "0"}, "--threads '0'"},
      {{"--batch", "5000"}, "--batch '5000'"},
      {{"--recv-buffer", "lots"}, "--recv-buffer 'lots'"},
  };
  for (const Case& c : cases) {
    auto [code, out] = RunToExit(SERENE_SWITCH_BINARY, c.args);
    EXPECT_EQ(code, 2) << c.args[0] << "\n" << out;  // usage errors exit 2
    EXPECT_NE(out.find(c.message), std::string::npos) << "expected '" << c.message << "' in:\n"
                                                      << out;
  }
}

TEST(SwitchDaemonTest, FailsCleanlyWhenThePortIsTaken) {
  net::UdpSocketOptions o;
  o.address = "127.0.0.1";
  auto taken = net::UdpSocket::Open(o);
  ASSERT_TRUE(taken.ok());
  const std::string port = std::to_string(taken->local().port);
  auto [code, out] = RunToExit(SERENE_SWITCH_BINARY, {"--bind", "127.0.0.1", "--port", port});
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("127.0.0.1:" + port), std::string::npos) << out;
  EXPECT_NE(out.find("in use"), std::string::npos) << out;
}

// The runtime API's port is its own: a second switch given the port of a
// running one's API fails instead of sharing it (gRPC's default SO_REUSEPORT
// would let both listen, and a controller would reach either at random).
TEST(SwitchDaemonTest, FailsCleanlyWhenTheRuntimeApiPortIsTaken) {
  Daemon first({"--bind", "127.0.0.1", "--port", "0"});
  ASSERT_TRUE(first.WaitListening()) << first.child().output();
  auto control = loadgen::WaitForControl(first.child(), std::chrono::seconds(5));
  ASSERT_TRUE(control.has_value()) << first.child().output();
  auto [code, out] = RunToExit(SERENE_SWITCH_BINARY,
                               {"--bind", "127.0.0.1", "--port", "0", "--control", *control});
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find(*control), std::string::npos) << out;
  EXPECT_NE(out.find("in use"), std::string::npos) << out;
}

// A job larger than the host's memory is refused with the numbers, and the
// daemon exits 1 (it used to abort with an uncaught std::bad_alloc).
TEST(SwitchDaemonTest, RefusesAJobLargerThanMemoryWithAMessage) {
  auto [code, out] =
      RunToExit(SERENE_SWITCH_BINARY, {"--bind", "127.0.0.1", "--port", "0", "--control", "off",
                                       "--job", "id=1,workers=256,elements=2147483648,row=1,key=5"});
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("cannot create job 1"), std::string::npos) << out;
  EXPECT_NE(out.find("MiB of switch memory but only"), std::string::npos) << out;
  EXPECT_NE(out.find("use fewer elements or workers"), std::string::npos) << out;
  EXPECT_EQ(out.find("bad_alloc"), std::string::npos) << out;
}

// Its log and counters go to a pipe whose reader is gone (a `| tee` that was
// killed): the switch still stops cleanly on SIGTERM, where the default
// SIGPIPE action would end it at the first write (the counters report).
TEST(SwitchDaemonTest, OutputToAPipeNobodyReadsDoesNotKillIt) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    execl(SERENE_SWITCH_BINARY, SERENE_SWITCH_BINARY, "--bind", "127.0.0.1", "--port", "0",
          "--control", "127.0.0.1:0", "--job", kJobFlag.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  // Read until it listens, then close the only read end.
  std::string out;
  char buf[512];
  ssize_t n;
  while (out.find("listening on") == std::string::npos && (n = read(fds[0], buf, sizeof buf)) > 0) {
    out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  ASSERT_NE(out.find("listening on"), std::string::npos) << out;
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int status = 0;
  pid_t exited = 0;
  for (int i = 0; i < 100 && (exited = waitpid(pid, &status, WNOHANG)) == 0; ++i) usleep(100'000);
  if (exited == 0) {  // still running after 10 s
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "serene-switch did not exit within 10 s of SIGTERM";
  }
  ASSERT_FALSE(WIFSIGNALED(status)) << "serene-switch died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(SwitchDaemonTest, HelpListsTheFlags) {
  auto [code, out] = RunToExit(SERENE_SWITCH_BINARY, {"--help"});
  EXPECT_EQ(code, 0);
  for (const char* flag : {"--config", "--bind", "--port", "--threads", "--batch", "--recv-buffer",
                           "--send-buffer", "--log-level", "--fault", "--job"}) {
    EXPECT_NE(out.find(flag), std::string::npos) << flag;
  }
}

}  // namespace
}  // namespace serene::switchd::testing
