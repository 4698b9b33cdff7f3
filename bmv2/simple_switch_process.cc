#include "bmv2/simple_switch_process.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>

#include "bmv2/netns.h"
#include "common/sigpipe.h"
#include "net/address.h"

namespace serene::bmv2 {
namespace {

std::string FormatIp(uint32_t ip) { return net::FormatHost(net::Ipv4Endpoint(ip, 0)); }

[[noreturn]] void Exec(const std::vector<std::string>& argv, const std::string& log) {
  int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
  }
  int null = ::open("/dev/null", O_RDONLY);
  if (null >= 0) ::dup2(null, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  DefaultSigpipeInChild();  // the daemon ignores it (common/sigpipe.h)
  ::execvp(args[0], args.data());
  ::_exit(127);
}

// Forks and execs `argv` with its output in `log`; in the network namespace
// at `netns` if it is not empty.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& log, bool die_with_parent,
            const std::string& netns = "") {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  // SIGKILL: simple_switch does not always exit on SIGTERM while busy.
  if (die_with_parent) ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (!netns.empty() && !EnterNetns(netns.c_str())) ::_exit(126);
  Exec(argv, log);
}

// Forks simple_switch's process. The child leaves for a network namespace of
// its own (which lives as long as it does), says so on a socket pair, and
// execs `argv` only when the parent has moved its ports in and sends a byte
// on *go (Go(); closing *go instead ends the child). A socket pair, not
// pipes: one channel both ways, and Go() to a child that died fails instead
// of raising SIGPIPE. Returns the pid, or -1.
pid_t SpawnInOwnNetns(const std::vector<std::string>& argv, const std::string& log, int* go) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::unshare(CLONE_NEWNET) != 0) ::_exit(126);
    char c = 'r';
    if (::send(sv[1], &c, 1, MSG_NOSIGNAL) != 1) ::_exit(126);
    if (::read(sv[1], &c, 1) != 1) ::_exit(125);
    Exec(argv, log);
  }
  ::close(sv[1]);
  char c = 0;
  ssize_t n = -1;
  if (pid > 0) {
    do n = ::read(sv[0], &c, 1);
    while (n < 0 && errno == EINTR);
  }
  if (n != 1) {  // the child could not unshare (it exited) or fork failed
    ::close(sv[0]);
    if (pid > 0) ::waitpid(pid, nullptr, 0);
    return -1;
  }
  *go = sv[0];
  return pid;
}

// Lets the child of SpawnInOwnNetns exec; closes `go`. False if it is gone.
bool Go(int go) {
  const char c = 'g';
  bool sent = ::send(go, &c, 1, MSG_NOSIGNAL) == 1;
  ::close(go);
  return sent;
}

std::string Tail(const std::string& path, size_t bytes = 600) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > bytes ? "..." + s.substr(s.size() - bytes) : s;
}

// Ports left by a serene-switch that was killed (kill -9 skips the clean-up)
// before it moved them into simple_switch's namespace: srnk<pid><s|c|m>.
void RemoveStalePorts() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/class/net", ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() < 6 || name.rfind("srnk", 0) != 0) continue;
    if (std::string_view("scm").find(name.back()) == std::string_view::npos) continue;
    const std::string pid = name.substr(4, name.size() - 5);
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (std::filesystem::exists("/proc/" + pid, ec)) continue;  // its switch still runs
    RunLogged({"ip", "link", "del", name}, "/dev/null");
  }
}

}  // namespace

int RunLogged(const std::vector<std::string>& argv, const std::string& log,
              const std::string& netns) {
  pid_t pid = Spawn(argv, log, true, netns);
  if (pid < 0) return -1;
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Result<std::unique_ptr<SimpleSwitchProcess>> SimpleSwitchProcess::Start(
    const SimpleSwitchOptions& options) {
  std::unique_ptr<SimpleSwitchProcess> p(new SimpleSwitchProcess());
  p->options_ = options;
  const std::string bin = options.prefix + "/bin/";
  if (::access((bin + "simple_switch").c_str(), X_OK) != 0) {
    return Status::NotFound(bin +
                            "simple_switch not found: install the P4 toolchain "
                            "(docs/p4.md \"The toolchain\") or pass --p4-prefix");
  }
  if (::geteuid() != 0) {
    return Status::FailedPrecondition(
        "the bmv2 target needs root (it attaches simple_switch to "
        "interfaces and creates a veth pair)");
  }
  ::mkdir(options.work_dir.c_str(), 0755);
  p->log_ = options.work_dir + "/simple_switch.log";
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;

  // The program.
  p->json_ = options.json;
  if (p->json_.empty()) {
    p->json_ = options.work_dir + "/serene.json";
    const std::string log = options.work_dir + "/p4c.log";
    int rc = RunLogged(
        {bin + "p4c-bm2-ss", "--std", "p4-16", "--target", "bmv2", "--arch", "v1model", "-I",
         options.prefix + "/share/p4c/p4include", "-o", p->json_, options.p4_source},
        log);
    if (rc != 0) {
      return Status::FailedPrecondition("p4c-bm2-ss could not compile " + options.p4_source +
                                        " (exit " + std::to_string(rc) + "): " + Tail(log));
    }
  } else if (::access(p->json_.c_str(), R_OK) != 0) {
    return Status::NotFound("--p4-json " + p->json_ + ": cannot read it");
  }

  RemoveStalePorts();
  // simple_switch's ports, named after this process: the control veth pair
  // (its switch end is port 1) and a macvlan on the user's interface that
  // answers to the switch's MAC (port 0). Both move into simple_switch's
  // namespace, so they and the pair's other end vanish with it.
  const std::string tag = std::to_string(::getpid());
  p->control_port_ = "srnk" + tag + "s";
  p->control_peer_ = "srnk" + tag + "c";
  p->data_port_ = "srnk" + tag + "m";
  const std::string iplog = options.work_dir + "/ip.log";
  if (RunLogged(
          {"ip", "link", "add", p->control_port_, "type", "veth", "peer", "name", p->control_peer_},
          iplog) != 0) {
    return Status::IoError("cannot create the control veth pair: " + Tail(iplog));
  }
  RunLogged({"sysctl", "-qw", "net.ipv6.conf." + p->control_peer_ + ".disable_ipv6=1"}, iplog);
  RunLogged({"ip", "link", "set", p->control_peer_, "up"}, iplog);
  if (RunLogged({"ip", "link", "add", p->data_port_, "link", options.interface, "address", kSwitchMac,
                 "type", "macvlan", "mode", "bridge"},
                iplog) != 0) {
    return Status::IoError("cannot create the switch's port on " + options.interface +
                           " (a macvlan with MAC " + kSwitchMac +
                           "; is another switch on that interface?): " + Tail(iplog));
  }

  p->started_ = std::chrono::steady_clock::now();
  int go = -1;
  p->pid_ = SpawnInOwnNetns(
      {bin + "simple_switch", "-i", "0@" + p->data_port_, "-i", "1@" + p->control_port_,
       "--thrift-port", std::to_string(options.thrift_port), "--device-id", "0",
       // Its own notification socket: two switches on one host would
       // both take the default ipc:///tmp/bmv2-0-notifications.ipc.
       "--notifications-addr", "ipc://" + options.work_dir + "/notifications.ipc", p->json_},
      p->log_, &go);
  if (p->pid_ < 0) {
    return Status::IoError("cannot start simple_switch in a network namespace of its own");
  }
  p->netns_ = NetnsOf(p->pid_);
  // In the new namespace: loopback up (the Thrift server and the CLI meet
  // there), no IPv6 (no kernel chatter into the ports), then the ports.
  bool moved =
      RunLogged({"ip", "link", "set", "lo", "up"}, iplog, p->netns_) == 0 &&
      RunLogged({"sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                 "net.ipv6.conf.default.disable_ipv6=1"},
                iplog, p->netns_) == 0;
  for (const std::string& port : {p->control_port_, p->data_port_}) {
    moved = moved &&
            RunLogged({"ip", "link", "set", port, "netns", std::to_string(p->pid_)}, iplog) == 0 &&
            RunLogged({"ip", "link", "set", port, "up"}, iplog, p->netns_) == 0;
  }
  if (!moved) {
    ::close(go);
    return Status::IoError("cannot move simple_switch's ports into its network namespace: " +
                           Tail(iplog));
  }
  if (!Go(go)) return Status::FailedPrecondition("simple_switch exited at start: " + Tail(p->log_));
  while (!LoopbackTcpAnswers(p->netns_, options.thrift_port)) {
    if (!p->running()) {
      return Status::FailedPrecondition("simple_switch exited at start: " + Tail(p->log_));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return Status::DeadlineExceeded("simple_switch did not open Thrift port " +
                                      std::to_string(options.thrift_port) + ": " + Tail(p->log_));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto cli = p->Connect();
  if (!cli.ok()) return cli.status();
  Status s = (*cli)->RunAll({"table_add SereneIngress.endpoint SereneIngress.set_endpoint " +
                                 FormatIp(options.ip) + " " + std::to_string(options.port) + " =>",
                             "table_add SereneIngress.arp SereneIngress.arp_reply " +
                                 FormatIp(options.ip) + " => " + kSwitchMac,
                             "table_add SereneIngress.control_port SereneIngress.set_control 1 =>",
                             "mirroring_add 100 0"});
  if (!s.ok()) return s;
  return p;
}

Result<std::unique_ptr<CliSession>> SimpleSwitchProcess::Connect() const {
  return CliSession::Start(options_.prefix + "/bin/simple_switch_CLI", options_.thrift_port,
                           netns_, std::chrono::seconds(30));
}

bool SimpleSwitchProcess::running() const {
  if (pid_ <= 0) return false;
  return ::waitpid(pid_, nullptr, WNOHANG) == 0;
}

void SimpleSwitchProcess::Stop() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {
      gone = ::waitpid(pid_, nullptr, WNOHANG) == pid_;
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!gone) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    pid_ = -1;
  }
  // The ports went with simple_switch's namespace; a pair that never moved
  // in (a failed start) goes here: deleting one end deletes both.
  if (!control_peer_.empty()) {
    RunLogged({"ip", "link", "del", control_peer_}, "/dev/null");
    RunLogged({"ip", "link", "del", data_port_}, "/dev/null");
    control_peer_.clear();
  }
}

SimpleSwitchProcess::~SimpleSwitchProcess() { Stop(); }

}  // namespace serene::bmv2
