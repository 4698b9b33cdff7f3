#include "net/udp_socket.h"

#include <netinet/in.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "net/address.h"

namespace serene::net {
namespace {

std::string ErrnoText(int err) {
  char buf[128];
  // GNU strerror_r returns a pointer to the message (maybe not buf).
  return strerror_r(err, buf, sizeof(buf));
}

Status OpenError(std::string_view what, int err, const proto::Endpoint& ep) {
  return Status::IoError(std::string(what) + " " + FormatEndpoint(ep) + ": " + ErrnoText(err));
}

int SockaddrFamily(proto::Endpoint::Family f) {
  return f == proto::Endpoint::Family::kIPv6 ? AF_INET6 : AF_INET;
}

}  // namespace

// --- RecvBatch ---

RecvBatch::RecvBatch(size_t capacity, size_t max_datagram)
    : capacity_(std::clamp<size_t>(capacity, 1, kMaxBatch)),
      max_datagram_(std::max<size_t>(max_datagram, 1)),
      buffers_(capacity_ * max_datagram_),
      addrs_(capacity_),
      iovs_(capacity_),
      msgs_(capacity_),
      sources_(capacity_),
      truncated_(capacity_) {
  for (size_t i = 0; i < capacity_; ++i) {
    iovs_[i].iov_base = buffers_.data() + i * max_datagram_;
    iovs_[i].iov_len = max_datagram_;
    std::memset(&msgs_[i], 0, sizeof(msgs_[i]));
    msgs_[i].msg_hdr.msg_iov = &iovs_[i];
    msgs_[i].msg_hdr.msg_iovlen = 1;
    msgs_[i].msg_hdr.msg_name = &addrs_[i];
  }
}

RecvBatch::~RecvBatch() = default;

std::span<const uint8_t> RecvBatch::data(size_t i) const {
  const size_t len = std::min<size_t>(msgs_[i].msg_len, max_datagram_);
  return {buffers_.data() + i * max_datagram_, len};
}

// --- SendBatch ---

SendBatch::SendBatch(size_t capacity)
    : capacity_(std::max<size_t>(capacity, 1)),
      dsts_(capacity_),
      datas_(capacity_),
      addrs_(capacity_),
      iovs_(capacity_),
      msgs_(capacity_) {}

SendBatch::~SendBatch() = default;

bool SendBatch::Add(const proto::Endpoint& dst, std::span<const uint8_t> data) {
  if (size_ == capacity_) return false;
  dsts_[size_] = dst;
  datas_[size_] = data;
  ++size_;
  return true;
}

// --- UdpSocket ---

Result<UdpSocket> UdpSocket::Open(const UdpSocketOptions& options) {
  auto ep = ParseHost(options.address, options.port);
  if (!ep.ok()) return ep.status();
  const int family = SockaddrFamily(ep->family);
  int fd = ::socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return OpenError("socket for", errno, *ep);
  UdpSocket sock(fd, family, *ep);  // closes fd on every early return below

  const int one = 1;
  if (family == AF_INET6) {
    const int v6only = options.v6_only ? 1 : 0;
    if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only)) != 0) {
      return OpenError("setsockopt(IPV6_V6ONLY) on", errno, *ep);
    }
  }
  if (options.reuse_port && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) {
    return OpenError("setsockopt(SO_REUSEPORT) on", errno, *ep);
  }
  if (options.recv_buffer_bytes > 0) {
    Status s = sock.SetRecvBufferSize(options.recv_buffer_bytes);
    if (!s.ok()) return s;
  }
  if (options.send_buffer_bytes > 0) {
    Status s = sock.SetSendBufferSize(options.send_buffer_bytes);
    if (!s.ok()) return s;
  }

  sockaddr_storage ss;
  socklen_t len = ToSockaddr(*ep, family, &ss);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&ss), len) != 0) {
    return OpenError("bind", errno, *ep);
  }
  sockaddr_storage bound;
  socklen_t bound_len = sizeof(bound);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_len) != 0) {
    return OpenError("getsockname on", errno, *ep);
  }
  sock.local_ = FromSockaddr(reinterpret_cast<const sockaddr*>(&bound), bound_len);
  sock.v6_only_ = family == AF_INET6 && options.v6_only;
  return sock;
}

UdpSocket::~UdpSocket() { Close(); }

UdpSocket::UdpSocket(UdpSocket&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      family_(other.family_),
      v6_only_(other.v6_only_),
      local_(other.local_) {}

UdpSocket& UdpSocket::operator=(UdpSocket&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
    family_ = other.family_;
    v6_only_ = other.v6_only_;
    local_ = other.local_;
  }
  return *this;
}

void UdpSocket::Close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

Status UdpSocket::Errno(std::string_view what, int err) const {
  return OpenError(what, err, local_);
}

bool UdpSocket::CanReach(const proto::Endpoint& ep) const {
  // An IPv6 socket reaches IPv4 peers only when it is dual-stack: bound to
  // "::" and not IPv6-only (a specific IPv6 address cannot send to IPv4).
  if (ep.family == proto::Endpoint::Family::kIPv4) {
    return family_ == AF_INET || (!v6_only_ && IsWildcard(local_));
  }
  return ep.family == proto::Endpoint::Family::kIPv6 && family_ == AF_INET6;
}

namespace {

// Sets a buffer size; when the kernel caps it (net.core.rmem_max/wmem_max),
// tries the FORCE variant, which succeeds with CAP_NET_ADMIN.
bool SetBufferSize(int fd, int opt, int force_opt, int bytes) {
  if (setsockopt(fd, SOL_SOCKET, opt, &bytes, sizeof(bytes)) != 0) return false;
  int granted = 0;
  socklen_t len = sizeof(granted);
  if (getsockopt(fd, SOL_SOCKET, opt, &granted, &len) == 0 && granted / 2 < bytes) {
    (void)setsockopt(fd, SOL_SOCKET, force_opt, &bytes, sizeof(bytes));  // EPERM is fine
  }
  return true;
}

}  // namespace

Status UdpSocket::SetRecvBufferSize(int bytes) {
  if (!SetBufferSize(fd_, SO_RCVBUF, SO_RCVBUFFORCE, bytes)) {
    return Errno("setsockopt(SO_RCVBUF=" + std::to_string(bytes) + ") on", errno);
  }
  return Status::Ok();
}

Status UdpSocket::SetSendBufferSize(int bytes) {
  if (!SetBufferSize(fd_, SO_SNDBUF, SO_SNDBUFFORCE, bytes)) {
    return Errno("setsockopt(SO_SNDBUF=" + std::to_string(bytes) + ") on", errno);
  }
  return Status::Ok();
}

Result<int> UdpSocket::RecvBufferSize() const {
  int v = 0;
  socklen_t len = sizeof(v);
  if (getsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &v, &len) != 0) {
    return Errno("getsockopt(SO_RCVBUF) on", errno);
  }
  return v;
}

Result<int> UdpSocket::SendBufferSize() const {
  int v = 0;
  socklen_t len = sizeof(v);
  if (getsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &v, &len) != 0) {
    return Errno("getsockopt(SO_SNDBUF) on", errno);
  }
  return v;
}

Result<size_t> UdpSocket::Recv(RecvBatch* batch, std::chrono::nanoseconds timeout) {
  batch->size_ = 0;
  pollfd pfd{fd_, POLLIN, 0};
  timespec ts{};
  if (timeout.count() >= 0) {
    ts.tv_sec = static_cast<time_t>(timeout.count() / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(timeout.count() % 1'000'000'000);
  }
  int r = ::ppoll(&pfd, 1, timeout.count() < 0 ? nullptr : &ts, nullptr);
  if (r < 0) {
    if (errno == EINTR) return size_t{0};
    return Errno("poll on", errno);
  }
  if (r == 0) return size_t{0};
  for (size_t i = 0; i < batch->capacity_; ++i) {
    batch->msgs_[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
    batch->msgs_[i].msg_hdr.msg_flags = 0;
    batch->msgs_[i].msg_len = 0;
  }
  int n = ::recvmmsg(fd_, batch->msgs_.data(), static_cast<unsigned>(batch->capacity_),
                     MSG_DONTWAIT, nullptr);
  if (n < 0) {
    const int err = errno;
    // Nothing to read after all, or a transient error queued by an ICMP message.
    if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == ECONNREFUSED ||
        err == EHOSTUNREACH || err == ENETUNREACH) {
      return size_t{0};
    }
    return Errno("recvmmsg on", err);
  }
  for (int i = 0; i < n; ++i) {
    const auto& hdr = batch->msgs_[static_cast<size_t>(i)].msg_hdr;
    batch->sources_[static_cast<size_t>(i)] =
        FromSockaddr(reinterpret_cast<const sockaddr*>(hdr.msg_name), hdr.msg_namelen);
    batch->truncated_[static_cast<size_t>(i)] = (hdr.msg_flags & MSG_TRUNC) != 0;
  }
  batch->size_ = static_cast<size_t>(n);
  return batch->size_;
}

SendResult UdpSocket::Send(SendBatch* batch) {
  SendResult result;
  SendBatch& b = *batch;
  // Build the message headers, skipping destinations this socket cannot reach.
  size_t m = 0;
  for (size_t i = 0; i < b.size_; ++i) {
    socklen_t len = ToSockaddr(b.dsts_[i], family_, &b.addrs_[m]);
    if (len == 0) {
      ++result.failed;
      if (result.error.ok()) {
        result.error = Status::InvalidArgument("cannot send to " + FormatEndpoint(b.dsts_[i]) +
                                               " from socket " + FormatEndpoint(local_) +
                                               ": address family not reachable");
      }
      continue;
    }
    b.iovs_[m].iov_base = const_cast<uint8_t*>(b.datas_[i].data());
    b.iovs_[m].iov_len = b.datas_[i].size();
    std::memset(&b.msgs_[m], 0, sizeof(b.msgs_[m]));
    b.msgs_[m].msg_hdr.msg_name = &b.addrs_[m];
    b.msgs_[m].msg_hdr.msg_namelen = len;
    b.msgs_[m].msg_hdr.msg_iov = &b.iovs_[m];
    b.msgs_[m].msg_hdr.msg_iovlen = 1;
    ++m;
  }
  size_t i = 0;
  while (i < m) {
    const unsigned chunk = static_cast<unsigned>(std::min(m - i, kMaxBatch));
    int r = ::sendmmsg(fd_, b.msgs_.data() + i, chunk, 0);
    if (r > 0) {
      for (size_t k = i; k < i + static_cast<size_t>(r); ++k) result.bytes += b.msgs_[k].msg_len;
      i += static_cast<size_t>(r);
      result.sent += static_cast<size_t>(r);
      continue;
    }
    const int err = errno;
    if (r < 0 && err == EINTR) continue;
    // Message i was refused (too big, no route, no buffer): skip it.
    ++result.failed;
    if (result.error.ok()) {
      proto::Endpoint dst = FromSockaddr(reinterpret_cast<const sockaddr*>(&b.addrs_[i]),
                                         b.msgs_[i].msg_hdr.msg_namelen);
      result.error =
          Status::IoError("sendmmsg from " + FormatEndpoint(local_) + " to " + FormatEndpoint(dst) +
                          ": " + (r < 0 ? ErrnoText(err) : std::string("nothing sent")));
    }
    ++i;
  }
  return result;
}

Status UdpSocket::SendTo(const proto::Endpoint& dst, std::span<const uint8_t> data) {
  sockaddr_storage ss;
  socklen_t len = ToSockaddr(dst, family_, &ss);
  if (len == 0) {
    return Status::InvalidArgument("cannot send to " + FormatEndpoint(dst) + " from socket " +
                                   FormatEndpoint(local_) + ": address family not reachable");
  }
  while (true) {
    ssize_t r =
        ::sendto(fd_, data.data(), data.size(), 0, reinterpret_cast<const sockaddr*>(&ss), len);
    if (r >= 0) return Status::Ok();
    if (errno == EINTR) continue;
    return Status::IoError("sendto from " + FormatEndpoint(local_) + " to " + FormatEndpoint(dst) +
                           ": " + ErrnoText(errno));
  }
}

}  // namespace serene::net
