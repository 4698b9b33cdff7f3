#include "bmv2/netns.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace serene::bmv2 {

std::string NetnsOf(pid_t pid) { return "/proc/" + std::to_string(pid) + "/ns/net"; }

bool EnterNetns(const char* path) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::setns(fd, CLONE_NEWNET) == 0;
  ::close(fd);
  return ok;
}

bool LoopbackTcpAnswers(const std::string& netns, int port) {
  // A socket belongs to the namespace of the thread that created it, for
  // good: create it on a thread that enters `netns` and then ends.
  int fd = -1;
  std::thread([&] {
    if (EnterNetns(netns.c_str())) fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  }).join();
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

}  // namespace serene::bmv2
