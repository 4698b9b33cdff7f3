#include "loadgen/process_group.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace serene::loadgen {
namespace {

constexpr auto kGrace = std::chrono::seconds(3);  // after SIGTERM, before SIGKILL

bool WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t w = write(fd, s.data() + off, s.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    off += static_cast<size_t>(w);
  }
  return true;
}

// The state of one child as the parent follows it.
struct Child {
  pid_t pid = -1;
  int fd = -1;        // read end of its pipe; -1 once it closed
  bool reaped = false;
};

int ExitCode(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

Result<std::vector<ChildResult>> RunChildren(size_t n,
                                             const std::function<std::string(size_t)>& body,
                                             const std::function<bool(const std::string&)>& failed) {
  std::vector<Child> kids(n);
  std::vector<ChildResult> results(n);
  auto kill_all = [&](int sig) {
    for (const Child& k : kids) {
      if (k.pid > 0 && !k.reaped) kill(k.pid, sig);
    }
  };
  for (size_t i = 0; i < n; ++i) {
    int p[2];
    if (pipe(p) != 0) {
      kill_all(SIGKILL);
      return Status::IoError(std::string("pipe: ") + std::strerror(errno));
    }
    pid_t pid = fork();
    if (pid < 0) {
      kill_all(SIGKILL);
      return Status::IoError(std::string("fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
      close(p[0]);
      for (size_t j = 0; j < i; ++j) close(kids[j].fd);  // the siblings' pipes are not ours
      int code = 0;
      std::string line;
      try {
        line = body(i);
      } catch (...) {
        code = 1;
      }
      WriteAll(p[1], line);
      close(p[1]);
      _exit(code);
    }
    close(p[1]);
    kids[i].pid = pid;
    kids[i].fd = p[0];
  }

  // Read every pipe as data comes; reap a child once its pipe closed.
  bool stopping = false;
  std::chrono::steady_clock::time_point kill_at;
  size_t left = n;
  while (left > 0) {
    std::vector<pollfd> fds;
    std::vector<size_t> who;
    for (size_t i = 0; i < n; ++i) {
      if (kids[i].fd >= 0) {
        fds.push_back({kids[i].fd, POLLIN, 0});
        who.push_back(i);
      }
    }
    int timeout_ms = -1;
    if (stopping) {
      const auto left_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
          kill_at - std::chrono::steady_clock::now());
      timeout_ms = static_cast<int>(std::max<int64_t>(0, left_ms.count()));
    }
    const int r = poll(fds.data(), fds.size(), timeout_ms);
    if (r < 0 && errno != EINTR) {
      kill_all(SIGKILL);
      return Status::IoError(std::string("poll: ") + std::strerror(errno));
    }
    if (stopping && std::chrono::steady_clock::now() >= kill_at) kill_all(SIGKILL);
    for (size_t k = 0; k < fds.size() && r > 0; ++k) {
      if (fds[k].revents == 0) continue;
      const size_t i = who[k];
      char buf[4096];
      const ssize_t got = read(kids[i].fd, buf, sizeof(buf));
      if (got < 0 && errno == EINTR) continue;
      if (got > 0) {
        results[i].line.append(buf, static_cast<size_t>(got));
        continue;
      }
      close(kids[i].fd);
      kids[i].fd = -1;
      int status = 0;
      while (waitpid(kids[i].pid, &status, 0) < 0 && errno == EINTR) {
      }
      kids[i].reaped = true;
      --left;
      results[i].exit_code = ExitCode(status);
      const bool bad = results[i].exit_code != 0 || (failed && failed(results[i].line));
      if (bad && !stopping) {
        stopping = true;
        kill_at = std::chrono::steady_clock::now() + kGrace;
        for (size_t j = 0; j < n; ++j) {
          if (!kids[j].reaped) {
            results[j].stopped = true;
            kill(kids[j].pid, SIGTERM);
          }
        }
      }
    }
  }
  return results;
}

}  // namespace serene::loadgen
