#include "loadgen/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

extern char** environ;

namespace serene::loadgen {

ChildProcess::ChildProcess(const std::string& path, const std::vector<std::string>& args) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDERR_FILENO);
  std::vector<std::string> argv_store = {path};
  argv_store.insert(argv_store.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_store) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The child gets SIGPIPE's default action even where this process ignores it
  // (common/sigpipe.h): an ignored signal would stay ignored across exec.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t pipe_signal;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &pipe_signal);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, path.c_str(), &fa, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return;
  }
  pid_ = pid;
  reader_ = std::thread([this, fd = fds[0]] { ReadLoop(fd); });
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !status_) {
    kill(pid_, SIGKILL);
    int st = 0;
    waitpid(pid_, &st, 0);
  }
  if (reader_.joinable()) reader_.join();
}

void ChildProcess::ReadLoop(int fd) {
  char buf[4096];
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::lock_guard lock(mu_);
    output_.append(buf, static_cast<size_t>(n));
    cv_.notify_all();
  }
  close(fd);
  std::lock_guard lock(mu_);
  eof_ = true;
  cv_.notify_all();
}

std::optional<std::string> ChildProcess::WaitForOutput(const std::string& text,
                                                       std::chrono::milliseconds guard) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, guard, [&] { return eof_ || output_.find(text) != std::string::npos; });
  const size_t at = output_.find(text);
  if (at == std::string::npos) return std::nullopt;
  return output_.substr(at);
}

void ChildProcess::Signal(int sig) {
  if (pid_ > 0 && !status_) kill(pid_, sig);
}

std::optional<int> ChildProcess::Wait(std::chrono::milliseconds guard) {
  if (pid_ <= 0) return std::nullopt;
  if (status_) return status_;
  const auto deadline = std::chrono::steady_clock::now() + guard;
  int st = 0;
  while (true) {
    pid_t r = waitpid(pid_, &st, WNOHANG);
    if (r == pid_) break;
    if (r < 0 && errno != EINTR) return std::nullopt;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &st, 0);
      status_ = -1;
      if (reader_.joinable()) reader_.join();
      return std::nullopt;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  if (reader_.joinable()) reader_.join();  // the child closed its end: read to EOF
  return status_;
}

std::string ChildProcess::output() const {
  std::lock_guard lock(mu_);
  return output_;
}

std::pair<int, std::string> RunToExit(const std::string& path,
                                      const std::vector<std::string>& args) {
  ChildProcess child(path, args);
  if (!child.started()) return {-1, "could not start " + path};
  auto code = child.Wait();
  return {code.value_or(-1), child.output()};
}

double ChildProcess::CpuSeconds() const {
  if (pid_ <= 0) return -1;
  // Nanoseconds on CPU of every thread (/proc/PID/task/TID/schedstat, first
  // field): finer than /proc/PID/stat's 10 ms ticks.
  std::error_code ec;
  const std::string tasks = "/proc/" + std::to_string(pid_) + "/task";
  unsigned long long ns = 0;
  bool any = false;
  for (const auto& t : std::filesystem::directory_iterator(tasks, ec)) {
    std::ifstream in(t.path() / "schedstat");
    unsigned long long run = 0;
    if (in >> run) {
      ns += run;
      any = true;
    }
  }
  return any ? static_cast<double>(ns) / 1e9 : -1;
}

}  // namespace serene::loadgen
