#include "loadgen/process_group.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace serene::loadgen {
namespace {

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

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  while (true) {
    ssize_t r = read(fd, buf, sizeof(buf));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    out.append(buf, static_cast<size_t>(r));
  }
  return out;
}

}  // namespace

Result<std::vector<ChildResult>> RunChildren(size_t n,
                                             const std::function<std::string(size_t)>& body) {
  std::vector<pid_t> pids(n, -1);
  std::vector<int> fds(n, -1);
  for (size_t i = 0; i < n; ++i) {
    int p[2];
    if (pipe(p) != 0) return Status::IoError(std::string("pipe: ") + std::strerror(errno));
    pid_t pid = fork();
    if (pid < 0) return Status::IoError(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
      close(p[0]);
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
    pids[i] = pid;
    fds[i] = p[0];
  }
  std::vector<ChildResult> results(n);
  for (size_t i = 0; i < n; ++i) {
    results[i].line = ReadAll(fds[i]);
    close(fds[i]);
    int status = 0;
    while (waitpid(pids[i], &status, 0) < 0 && errno == EINTR) {
    }
    results[i].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  return results;
}

}  // namespace serene::loadgen
