#include "bmv2/simple_switch_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "net/address.h"

namespace serene::bmv2 {
namespace {

std::string FormatIp(uint32_t ip) { return net::FormatHost(net::Ipv4Endpoint(ip, 0)); }

pid_t Spawn(const std::vector<std::string>& argv, const std::string& log, bool die_with_parent) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  // SIGKILL: simple_switch does not always exit on SIGTERM while busy.
  if (die_with_parent) ::prctl(PR_SET_PDEATHSIG, SIGKILL);
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
  ::execvp(args[0], args.data());
  ::_exit(127);
}

std::string Tail(const std::string& path, size_t bytes = 600) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > bytes ? "..." + s.substr(s.size() - bytes) : s;
}

bool ThriftAnswers(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

void RemoveStaleControlPairs() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/class/net", ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() < 6 || name.rfind("srnk", 0) != 0 || name.back() != 's') continue;
    const std::string pid = name.substr(4, name.size() - 5);
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (std::filesystem::exists("/proc/" + pid, ec)) continue;  // its switch still runs
    RunLogged({"ip", "link", "del", name}, "/dev/null");
  }
}

}  // namespace

int RunLogged(const std::vector<std::string>& argv, const std::string& log) {
  pid_t pid = Spawn(argv, log, true);
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

  // Control veth pairs left by a serene-switch that was killed (kill -9
  // skips the clean-up): their names carry the pid.
  RemoveStaleControlPairs();
  // The control veth pair: names unique to this process.
  const std::string tag = std::to_string(::getpid());
  p->control_port_ = "srnk" + tag + "s";
  p->control_peer_ = "srnk" + tag + "c";
  const std::string iplog = options.work_dir + "/ip.log";
  RunLogged({"ip", "link", "del", p->control_port_}, "/dev/null");
  if (RunLogged(
          {"ip", "link", "add", p->control_port_, "type", "veth", "peer", "name", p->control_peer_},
          iplog) != 0) {
    return Status::IoError("cannot create the control veth pair: " + Tail(iplog));
  }
  for (const std::string& ifc : {p->control_port_, p->control_peer_}) {
    RunLogged({"sysctl", "-qw", "net.ipv6.conf." + ifc + ".disable_ipv6=1"}, iplog);
    RunLogged({"ip", "link", "set", ifc, "up"}, iplog);
  }

  p->started_ = std::chrono::steady_clock::now();
  p->pid_ =
      Spawn({bin + "simple_switch", "-i", "0@" + options.interface, "-i", "1@" + p->control_port_,
             "--thrift-port", std::to_string(options.thrift_port), "--device-id", "0",
             // Its own notification socket: two switches on one host would
             // both take the default ipc:///tmp/bmv2-0-notifications.ipc.
             "--notifications-addr", "ipc://" + options.work_dir + "/notifications.ipc", p->json_},
            p->log_, true);
  if (p->pid_ < 0) return Status::IoError("cannot start simple_switch");
  while (!ThriftAnswers(options.thrift_port)) {
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
                           std::chrono::seconds(30));
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
  if (!control_port_.empty()) {
    RunLogged({"ip", "link", "del", control_port_}, "/dev/null");
    control_port_.clear();
  }
}

SimpleSwitchProcess::~SimpleSwitchProcess() { Stop(); }

}  // namespace serene::bmv2
