#include "switch/reuseport_steering.h"

#include <linux/filter.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "proto/packet.h"

namespace serene::switchd {

Status SteerByRank(int fd, uint32_t sockets) {
  // The program sees the UDP payload: A = job + worker (16-bit big-endian
  // fields), then A mod sockets is the index of the socket in the group.
  sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_H | BPF_ABS, proto::kOffJob),
      BPF_STMT(BPF_MISC | BPF_TAX, 0),
      BPF_STMT(BPF_LD | BPF_H | BPF_ABS, proto::kOffWorker),
      BPF_STMT(BPF_ALU | BPF_ADD | BPF_X, 0),
      BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, sockets),
      BPF_STMT(BPF_RET | BPF_A, 0),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof(code) / sizeof(code[0])), code};
  if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof(prog)) != 0) {
    return Status::Internal(std::string("setsockopt(SO_ATTACH_REUSEPORT_CBPF): ") +
                            std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace serene::switchd
