#include "bmv2/cli_session.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "bmv2/netns.h"
#include "common/sigpipe.h"

namespace serene::bmv2 {
namespace {

constexpr std::string_view kPrompt = "RuntimeCmd: ";
constexpr std::string_view kUnknown = "*** Unknown syntax: ";

// Lines the CLI prints instead of a result (runtime_CLI.py handle_bad_input).
bool IsErrorLine(std::string_view line) {
  for (std::string_view p : {"Error:", "Invalid ", "Error ", "Traceback"}) {
    if (line.substr(0, p.size()) == p) return true;
  }
  return false;
}

// Drops every prompt and blank line; keeps the rest, one per line.
std::string Clean(std::string_view text) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    while (line.substr(0, kPrompt.size()) == kPrompt) line.remove_prefix(kPrompt.size());
    if (!line.empty()) {
      if (!out.empty()) out += '\n';
      out += line;
    }
    start = end + 1;
  }
  return out;
}

// `fd` is a socket: send() with MSG_NOSIGNAL turns a CLI that is gone into
// EPIPE here, where a pipe's write() would kill this process with SIGPIPE.
Status WriteAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return Status::Unavailable(std::string("simple_switch_CLI: write: ") + std::strerror(errno));
    off += static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<CliSession>> CliSession::Start(const std::string& cli, int thrift_port,
                                                      const std::string& netns,
                                                      std::chrono::milliseconds timeout) {
  if (::access(cli.c_str(), X_OK) != 0) {
    return Status::NotFound(cli +
                            " not found or not executable (install the P4 toolchain: "
                            "docs/p4.md)");
  }
  // The CLI's input is a socket pair, not a pipe (WriteAll).
  int in[2], out[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0) {
    return Status::IoError(std::string("socketpair: ") + std::strerror(errno));
  }
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    return Status::IoError("pipe2 failed");
  }
  const std::string port = std::to_string(thrift_port);
  pid_t pid = ::fork();
  if (pid < 0) return Status::IoError("fork failed");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (!netns.empty() && !EnterNetns(netns.c_str())) ::_exit(126);
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::setenv("PYTHONUNBUFFERED", "1", 1);  // answers must reach the pipe at once
    DefaultSigpipeInChild();  // the daemon ignores it (common/sigpipe.h)
    ::execl(cli.c_str(), cli.c_str(), "--thrift-port", port.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  std::unique_ptr<CliSession> s(new CliSession(pid, in[1], out[0], timeout));
  // The CLI loads the program's description over Thrift first: a command
  // answering proves the connection.
  auto r = s->Run({});
  if (!r.ok()) {
    return Status::Unavailable("simple_switch_CLI on Thrift port " + port +
                               (netns.empty() ? "" : " in " + netns) +
                               " did not start: " + r.status().message());
  }
  return s;
}

CliSession::CliSession(pid_t pid, int to_cli, int from_cli, std::chrono::milliseconds timeout)
    : pid_(pid), to_cli_(to_cli), from_cli_(from_cli), timeout_(timeout) {}

CliSession::~CliSession() {
  if (to_cli_ >= 0) ::close(to_cli_);  // EOF: the CLI's loop ends
  if (pid_ > 0) {
    for (int i = 0; i < 50; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      ::usleep(20'000);
    }
    if (pid_ > 0) Kill();
  }
  if (from_cli_ >= 0) ::close(from_cli_);
}

void CliSession::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

Result<std::string> CliSession::ReadUntil(const std::string& marker) {
  const std::string end = std::string(kUnknown) + marker + "\n";
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (;;) {
    size_t at = pending_.find(end);
    if (at != std::string::npos) {
      std::string before = pending_.substr(0, at);
      pending_.erase(0, at + end.size());
      return before;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return Status::Unavailable("simple_switch_CLI gave no answer within " +
                                 std::to_string(timeout_.count()) +
                                 " ms (is simple_switch running?)");
    }
    pollfd p{from_cli_, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char buf[65536];
    ssize_t got = ::read(from_cli_, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      std::string said = Clean(pending_);
      if (said.size() > 400) said = "..." + said.substr(said.size() - 400);
      return Status::Unavailable("simple_switch_CLI exited" +
                                 (said.empty() ? std::string() : ": " + said));
    }
    pending_.append(buf, static_cast<size_t>(got));
  }
}

Result<std::vector<std::string>> CliSession::Run(const std::vector<std::string>& commands) {
  std::lock_guard<std::mutex> lock(mu_);
  if (dead_)
    return Status::Unavailable("simple_switch_CLI session is closed after an earlier failure");
  // One marker after every command: each command's output is delimited.
  const uint64_t first = next_marker_;
  std::string batch;
  for (const std::string& c : commands) {
    batch += c;
    batch += "\n__serene_" + std::to_string(next_marker_++) + "\n";
  }
  const std::string last = "__serene_" + std::to_string(next_marker_++);
  batch += last + "\n";
  Status w = WriteAll(to_cli_, batch);
  if (!w.ok()) {
    dead_ = true;
    return w;
  }
  std::vector<std::string> outputs;
  std::string failure;
  for (size_t i = 0; i < commands.size(); ++i) {
    auto r = ReadUntil("__serene_" + std::to_string(first + i));
    if (!r.ok()) {
      dead_ = true;
      Kill();
      return r.status();
    }
    std::string out = Clean(*r);
    if (failure.empty()) {
      size_t start = 0;
      while (start <= out.size()) {
        size_t e = out.find('\n', start);
        if (e == std::string::npos) e = out.size();
        if (IsErrorLine(std::string_view(out).substr(start, e - start))) {
          failure = "`" + commands[i] + "`: " + out.substr(start, e - start);
          break;
        }
        start = e + 1;
      }
    }
    outputs.push_back(std::move(out));
  }
  auto r = ReadUntil(last);
  if (!r.ok()) {
    dead_ = true;
    Kill();
    return r.status();
  }
  if (!failure.empty()) return Status::FailedPrecondition("simple_switch_CLI: " + failure);
  return outputs;
}

Status CliSession::RunAll(const std::vector<std::string>& commands) {
  auto r = Run(commands);
  return r.ok() ? Status::Ok() : r.status();
}

Result<std::vector<uint64_t>> CliSession::ReadValues(
    const std::string& command, const std::string& name, const std::vector<uint32_t>& indices,
    Result<uint64_t> (*parse)(const std::string&)) {
  std::vector<std::string> cmds;
  cmds.reserve(indices.size());
  for (uint32_t i : indices) cmds.push_back(command + " " + name + " " + std::to_string(i));
  auto r = Run(cmds);
  if (!r.ok()) return r.status();
  std::vector<uint64_t> values;
  for (const std::string& out : *r) {
    auto v = parse(out);
    if (!v.ok()) return v.status();
    values.push_back(*v);
  }
  return values;
}

Result<std::vector<uint64_t>> CliSession::ReadRegisters(const std::string& name,
                                                        const std::vector<uint32_t>& indices) {
  return ReadValues("register_read", name, indices, ParseRegisterValue);
}

Result<std::vector<uint64_t>> CliSession::ReadCounters(const std::string& name,
                                                       const std::vector<uint32_t>& indices) {
  return ReadValues("counter_read", name, indices, ParseCounterPackets);
}

Result<uint64_t> CliSession::TableAdd(const std::string& command) {
  auto r = Run({command});
  if (!r.ok()) return r.status();
  constexpr std::string_view kAdded = "Entry has been added with handle ";
  size_t at = (*r)[0].find(kAdded);
  if (at == std::string::npos) {
    return Status::Internal("simple_switch_CLI: `" + command + "` answered: " + (*r)[0]);
  }
  return std::strtoull((*r)[0].c_str() + at + kAdded.size(), nullptr, 10);
}

Result<uint64_t> ParseRegisterValue(const std::string& output) {
  size_t eq = output.rfind("]= ");
  if (eq == std::string::npos) {
    return Status::Internal("simple_switch_CLI: not a register value: " + output);
  }
  const char* p = output.c_str() + eq + 3;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(p, &end, 10);
  if (end == p || errno != 0) {
    return Status::Internal("simple_switch_CLI: not a register value: " + output);
  }
  return static_cast<uint64_t>(v);
}

Result<uint64_t> ParseCounterPackets(const std::string& output) {
  size_t comma = output.rfind(", ");
  size_t packets = output.rfind(" packets)");
  if (comma == std::string::npos || packets == std::string::npos || packets < comma) {
    return Status::Internal("simple_switch_CLI: not a counter value: " + output);
  }
  return std::strtoull(output.c_str() + comma + 2, nullptr, 10);
}

}  // namespace serene::bmv2
