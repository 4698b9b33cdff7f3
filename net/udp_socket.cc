#include "net/udp_socket.h"

#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <time.h>
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

static_assert(CMSG_SPACE(sizeof(in6_pktinfo)) + CMSG_SPACE(sizeof(in_pktinfo)) +
                      CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(timespec)) <=
                  sizeof(ControlSlot),
              "a ControlSlot holds the packet-info, segment-size and timestamp control messages");

// Copies the payload of the first control message of `level` and `type` that
// holds a T into `out`; false if there is none.
template <typename T>
bool ControlMessage(msghdr* hdr, int level, int type, T* out) {
  if (hdr->msg_control == nullptr) return false;
  for (cmsghdr* c = CMSG_FIRSTHDR(hdr); c != nullptr; c = CMSG_NXTHDR(hdr, c)) {
    if (c->cmsg_level == level && c->cmsg_type == type && c->cmsg_len >= CMSG_LEN(sizeof(T))) {
      std::memcpy(out, CMSG_DATA(c), sizeof(T));
      return true;
    }
  }
  return false;
}

// When the kernel received a message (SCM_TIMESTAMPNS, on CLOCK_REALTIME), on
// the steady clock: `read_at` less how long before the read (`wall_now`) it
// arrived. A message without a stamp, or stamped after the read (the wall
// clock was stepped), arrived when it was read.
std::chrono::steady_clock::time_point ArrivalOf(msghdr* hdr,
                                                std::chrono::steady_clock::time_point read_at,
                                                const timespec& wall_now) {
  timespec stamp;
  if (!ControlMessage(hdr, SOL_SOCKET, SCM_TIMESTAMPNS, &stamp)) return read_at;
  const auto age = std::chrono::seconds(wall_now.tv_sec - stamp.tv_sec) +
                   std::chrono::nanoseconds(wall_now.tv_nsec - stamp.tv_nsec);
  if (age <= std::chrono::nanoseconds::zero()) return read_at;
  return read_at - std::chrono::duration_cast<std::chrono::steady_clock::duration>(age);
}

// The segment size of a GRO train (UDP_GRO control message), 0 if none.
size_t GroSegmentOf(msghdr* hdr) {
  int size = 0;
  if (!ControlMessage(hdr, SOL_UDP, UDP_GRO, &size)) return 0;
  return size > 0 ? static_cast<size_t>(size) : 0;
}

// The destination address a datagram's control messages report (IP_PKTINFO:
// the local address it was accepted on; IPV6_PKTINFO: the header's
// destination, IPv4-mapped for IPv4 peers of a dual-stack socket), with
// `port`; invalid if there is none.
proto::Endpoint DestinationOf(msghdr* hdr, uint16_t port) {
  proto::Endpoint ep;
  if (hdr->msg_control == nullptr) return ep;
  for (cmsghdr* c = CMSG_FIRSTHDR(hdr); c != nullptr; c = CMSG_NXTHDR(hdr, c)) {
    if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO &&
        c->cmsg_len >= CMSG_LEN(sizeof(in_pktinfo))) {
      in_pktinfo info;
      std::memcpy(&info, CMSG_DATA(c), sizeof(info));
      sockaddr_in sin{};
      sin.sin_family = AF_INET;
      sin.sin_port = htons(port);
      sin.sin_addr = info.ipi_spec_dst;
      ep = FromSockaddr(reinterpret_cast<const sockaddr*>(&sin), sizeof(sin));
    } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO &&
               c->cmsg_len >= CMSG_LEN(sizeof(in6_pktinfo))) {
      in6_pktinfo info;
      std::memcpy(&info, CMSG_DATA(c), sizeof(info));
      sockaddr_in6 sin6{};
      sin6.sin6_family = AF_INET6;
      sin6.sin6_port = htons(port);
      sin6.sin6_addr = info.ipi6_addr;
      // Only a link-local address needs its interface to be used again.
      if (IN6_IS_ADDR_LINKLOCAL(&info.ipi6_addr)) {
        sin6.sin6_scope_id = static_cast<uint32_t>(info.ipi6_ifindex);
      }
      ep = FromSockaddr(reinterpret_cast<const sockaddr*>(&sin6), sizeof(sin6));
    }
  }
  return ep;
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
      controls_(capacity_),
      sources_(capacity_),
      locals_(capacity_),
      truncated_(capacity_),
      arrivals_(capacity_) {
  segments_.reserve(capacity_ * 2 * kMaxGsoSegments);
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
  const Segment& s = segments_[i];
  return {buffers_.data() + s.slot * max_datagram_ + s.offset, s.length};
}

void RecvBatch::AddMessage(size_t slot, size_t length, size_t segment) {
  length = std::min(length, max_datagram_);
  const auto add = [&](size_t offset, size_t len) {
    segments_.push_back({static_cast<uint32_t>(slot), static_cast<uint32_t>(offset),
                         static_cast<uint32_t>(len)});
  };
  if (segment == 0 || segment >= length) {
    add(0, length);
    return;
  }
  for (size_t offset = 0; offset < length; offset += segment) {
    add(offset, std::min(segment, length - offset));
  }
}

// --- SendBatch ---

SendBatch::SendBatch(size_t capacity)
    : capacity_(std::max<size_t>(capacity, 1)),
      dsts_(capacity_),
      srcs_(capacity_),
      datas_(capacity_),
      controls_(capacity_),
      addrs_(capacity_),
      iovs_(capacity_),
      msgs_(capacity_),
      msg_first_(capacity_),
      msg_count_(capacity_) {}

SendBatch::~SendBatch() = default;

bool SendBatch::Add(const proto::Endpoint& dst, const proto::Endpoint& src,
                    std::span<const uint8_t> data) {
  if (size_ == capacity_) return false;
  dsts_[size_] = dst;
  srcs_[size_] = src;
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
  if (options.reuse_address &&
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) {
    return OpenError("setsockopt(SO_REUSEADDR) on", errno, *ep);
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
  // A wildcard socket learns where each datagram was sent, so replies can
  // leave from that address on a multi-homed host.
  if (options.learn_destination && IsWildcard(sock.local_)) {
    const int r = family == AF_INET6
                      ? setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one))
                      : setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
    if (r != 0) {
      return OpenError(
          family == AF_INET6 ? "setsockopt(IPV6_RECVPKTINFO) on" : "setsockopt(IP_PKTINFO) on",
          errno, *ep);
    }
    sock.learn_destination_ = true;
  }
  // Offload is an optimisation: a kernel without it gets plain datagrams.
  sock.gso_ = options.gso;
  if (options.gro && setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one)) == 0) sock.gro_ = true;
  if (options.arrival_times) {
    if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) != 0) {
      return OpenError("setsockopt(SO_TIMESTAMPNS) on", errno, sock.local_);
    }
    sock.arrival_times_ = true;
  }
  return sock;
}

UdpSocket::~UdpSocket() { Close(); }

UdpSocket::UdpSocket(UdpSocket&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      family_(other.family_),
      v6_only_(other.v6_only_),
      learn_destination_(other.learn_destination_),
      gso_(other.gso_),
      gro_(other.gro_),
      arrival_times_(other.arrival_times_),
      gso_refused_size_(other.gso_refused_size_),
      local_(other.local_) {}

UdpSocket& UdpSocket::operator=(UdpSocket&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
    family_ = other.family_;
    v6_only_ = other.v6_only_;
    learn_destination_ = other.learn_destination_;
    gso_ = other.gso_;
    gro_ = other.gro_;
    arrival_times_ = other.arrival_times_;
    gso_refused_size_ = other.gso_refused_size_;
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

bool UdpSocket::CanSendFrom(const proto::Endpoint& src, const proto::Endpoint& dst) const {
  if (!CanReach(dst)) return false;
  if (!src.valid() || IsWildcard(src)) return true;
  // A datagram leaves from the family of its destination (an IPv4 peer of a
  // dual-stack socket is answered over IPv4).
  if (src.family != dst.family) return false;
  if (!IsWildcard(local_)) return src.addr == local_.addr && src.family == local_.family;
  return true;
}

size_t UdpSocket::SourceControl(const proto::Endpoint& src, const proto::Endpoint& dst,
                                ControlSlot* slot) const {
  if (!src.valid() || IsWildcard(src) || !IsWildcard(local_) || src.family != dst.family) {
    return 0;
  }
  std::memset(slot->bytes, 0, CMSG_SPACE(sizeof(in6_pktinfo)));
  msghdr m{};
  m.msg_control = slot->bytes;
  if (family_ == AF_INET) {
    if (src.family != proto::Endpoint::Family::kIPv4) return 0;
    m.msg_controllen = CMSG_SPACE(sizeof(in_pktinfo));
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = IPPROTO_IP;
    c->cmsg_type = IP_PKTINFO;
    c->cmsg_len = CMSG_LEN(sizeof(in_pktinfo));
    in_pktinfo info{};
    std::memcpy(&info.ipi_spec_dst, src.addr.data(), 4);
    std::memcpy(CMSG_DATA(c), &info, sizeof(info));
    return m.msg_controllen;
  }
  // IPv6 socket: IPV6_PKTINFO, with an IPv4 source mapped (the kernel takes
  // ::ffff:a.b.c.d as the IPv4 source of a datagram to an IPv4 peer).
  sockaddr_storage ss;
  if (ToSockaddr(src, AF_INET6, &ss) == 0) return 0;
  sockaddr_in6 sin6;
  std::memcpy(&sin6, &ss, sizeof(sin6));
  m.msg_controllen = CMSG_SPACE(sizeof(in6_pktinfo));
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = IPPROTO_IPV6;
  c->cmsg_type = IPV6_PKTINFO;
  c->cmsg_len = CMSG_LEN(sizeof(in6_pktinfo));
  in6_pktinfo info{};
  info.ipi6_addr = sin6.sin6_addr;
  info.ipi6_ifindex = src.scope_id;  // 0 except for a link-local source
  std::memcpy(CMSG_DATA(c), &info, sizeof(info));
  return m.msg_controllen;
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

namespace {

timespec ToTimespec(std::chrono::nanoseconds timeout) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(timeout.count() / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(timeout.count() % 1'000'000'000);
  return ts;
}

}  // namespace

Result<size_t> UdpSocket::Recv(RecvBatch* batch, std::chrono::nanoseconds timeout) {
  batch->segments_.clear();
  batch->messages_ = 0;
  pollfd pfd{fd_, POLLIN, 0};
  const timespec ts = ToTimespec(timeout);
  int r = ::ppoll(&pfd, 1, timeout.count() < 0 ? nullptr : &ts, nullptr);
  if (r < 0) {
    if (errno == EINTR) return size_t{0};
    return Errno("poll on", errno);
  }
  if (r == 0) return size_t{0};
  return RecvQueued(batch);
}

Result<unsigned> UdpSocket::WaitEither(const UdpSocket& a, const UdpSocket& b,
                                       std::chrono::nanoseconds timeout) {
  pollfd pfds[2] = {{a.fd_, POLLIN, 0}, {b.fd_, POLLIN, 0}};
  const timespec ts = ToTimespec(timeout);
  int r = ::ppoll(pfds, 2, timeout.count() < 0 ? nullptr : &ts, nullptr);
  if (r < 0) {
    if (errno == EINTR) return 0u;
    return a.Errno("poll on", errno);
  }
  return (pfds[0].revents != 0 ? 1u : 0u) | (pfds[1].revents != 0 ? 2u : 0u);
}

Status UdpSocket::JoinGroup(const proto::Endpoint& group,
                            const proto::Endpoint& interface_address) {
  if (family_ != AF_INET || group.family != proto::Endpoint::Family::kIPv4 ||
      interface_address.family != proto::Endpoint::Family::kIPv4) {
    return Status::InvalidArgument("multicast groups are IPv4 only: cannot join " +
                                   FormatEndpoint(group) + " on " +
                                   FormatEndpoint(interface_address));
  }
  ip_mreq m{};
  std::memcpy(&m.imr_multiaddr, group.addr.data(), 4);
  std::memcpy(&m.imr_interface, interface_address.addr.data(), 4);
  if (setsockopt(fd_, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof(m)) != 0) {
    return Errno("IP_ADD_MEMBERSHIP " + FormatEndpoint(group) + " on", errno);
  }
  // Only the groups this socket joined (Linux delivers every group joined on
  // the host to a matching socket otherwise).
  const int zero = 0;
  if (setsockopt(fd_, IPPROTO_IP, IP_MULTICAST_ALL, &zero, sizeof(zero)) != 0) {
    return Errno("setsockopt(IP_MULTICAST_ALL) on", errno);
  }
  return Status::Ok();
}

Result<proto::Endpoint> RouteSource(const proto::Endpoint& peer) {
  const int family = peer.family == proto::Endpoint::Family::kIPv6 ? AF_INET6 : AF_INET;
  const int fd = ::socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return OpenError("socket towards", errno, peer);
  sockaddr_storage ss;
  const socklen_t len = ToSockaddr(peer, family, &ss);
  sockaddr_storage local;
  socklen_t local_len = sizeof(local);
  int err = 0;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&ss), len) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) {
    err = errno;
  }
  ::close(fd);
  if (err != 0) return OpenError("no route to", err, peer);
  return FromSockaddr(reinterpret_cast<const sockaddr*>(&local), local_len);
}

Result<size_t> UdpSocket::RecvQueued(RecvBatch* batch) {
  for (size_t i = 0; i < batch->capacity_; ++i) {
    msghdr& hdr = batch->msgs_[i].msg_hdr;
    hdr.msg_namelen = sizeof(sockaddr_storage);
    hdr.msg_flags = 0;
    const bool control = learn_destination_ || gro_ || arrival_times_;
    hdr.msg_control = control ? batch->controls_[i].bytes : nullptr;
    hdr.msg_controllen = control ? sizeof(ControlSlot::bytes) : 0;
    batch->msgs_[i].msg_len = 0;
  }
  batch->segments_.clear();
  batch->messages_ = 0;
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
  // One read of each clock per call: a clock read is dear in some VMs.
  const auto read_at = std::chrono::steady_clock::now();
  batch->read_at_ = read_at;
  timespec wall_now{};
  if (arrival_times_) clock_gettime(CLOCK_REALTIME, &wall_now);
  for (int i = 0; i < n; ++i) {
    const size_t k = static_cast<size_t>(i);
    msghdr& hdr = batch->msgs_[k].msg_hdr;
    batch->sources_[k] =
        FromSockaddr(reinterpret_cast<const sockaddr*>(hdr.msg_name), hdr.msg_namelen);
    batch->locals_[k] = learn_destination_   ? DestinationOf(&hdr, local_.port)
                        : IsWildcard(local_) ? proto::Endpoint{}
                                             : local_;
    batch->truncated_[k] = (hdr.msg_flags & MSG_TRUNC) != 0;
    batch->arrivals_[k] = arrival_times_ ? ArrivalOf(&hdr, read_at, wall_now) : read_at;
    batch->AddMessage(k, batch->msgs_[k].msg_len, gro_ ? GroSegmentOf(&hdr) : 0);
  }
  batch->messages_ = static_cast<size_t>(n);
  return batch->segments_.size();
}

size_t UdpSocket::BuildMessages(SendBatch* batch, size_t from, SendResult* result) const {
  SendBatch& b = *batch;
  size_t m = 0;
  size_t i = from;
  while (i < b.size_) {
    socklen_t len = ToSockaddr(b.dsts_[i], family_, &b.addrs_[m]);
    if (len == 0) {
      if (result == nullptr) {  // a rebuild: counted the first time
        ++i;
        continue;
      }
      ++result->failed;
      if (result->error.ok()) {
        result->error = Status::InvalidArgument("cannot send to " + FormatEndpoint(b.dsts_[i]) +
                                                " from socket " + FormatEndpoint(local_) +
                                                ": address family not reachable");
      }
      ++i;
      continue;
    }
    // A train: the following datagrams to the same place, of the same size,
    // the last one possibly shorter.
    const size_t segment = b.datas_[i].size();
    size_t count = 1, bytes = segment;
    if (gso_ && segment > 0 && segment < gso_refused_size_) {
      while (i + count < b.size_ && count < kMaxGsoSegments) {
        const size_t j = i + count;
        const size_t size = b.datas_[j].size();
        if (size == 0 || size > segment || bytes + size > kMaxGsoBytes ||
            !(b.dsts_[j] == b.dsts_[i]) || !(b.srcs_[j] == b.srcs_[i])) {
          break;
        }
        ++count;
        bytes += size;
        if (size < segment) break;  // a short datagram ends the train
      }
    }
    // Datagrams encoded back to back in one buffer are one iovec: the kernel
    // segments a train by UDP_SEGMENT, not by iovec, and copies (and checks,
    // with hardened usercopy) one iovec at a time.
    size_t iovs = 0;
    for (size_t k = 0; k < count; ++k) {
      const std::span<const uint8_t> d = b.datas_[i + k];
      iovec* last = iovs > 0 ? &b.iovs_[i + iovs - 1] : nullptr;
      if (last != nullptr &&
          static_cast<const uint8_t*>(last->iov_base) + last->iov_len == d.data()) {
        last->iov_len += d.size();
        continue;
      }
      b.iovs_[i + iovs].iov_base = const_cast<uint8_t*>(d.data());
      b.iovs_[i + iovs].iov_len = d.size();
      ++iovs;
    }
    std::memset(&b.msgs_[m], 0, sizeof(b.msgs_[m]));
    msghdr& hdr = b.msgs_[m].msg_hdr;
    hdr.msg_name = &b.addrs_[m];
    hdr.msg_namelen = len;
    hdr.msg_iov = &b.iovs_[i];
    hdr.msg_iovlen = iovs;
    size_t control = SourceControl(b.srcs_[i], b.dsts_[i], &b.controls_[m]);
    if (count > 1) {
      // After the packet-info message, if any (SourceControl returns a CMSG_SPACE).
      auto* c = reinterpret_cast<cmsghdr*>(b.controls_[m].bytes + control);
      std::memset(c, 0, CMSG_SPACE(sizeof(uint16_t)));
      c->cmsg_level = SOL_UDP;
      c->cmsg_type = UDP_SEGMENT;
      c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
      const uint16_t size = static_cast<uint16_t>(segment);
      std::memcpy(CMSG_DATA(c), &size, sizeof(size));
      control += CMSG_SPACE(sizeof(uint16_t));
    }
    if (control > 0) {
      hdr.msg_control = b.controls_[m].bytes;
      hdr.msg_controllen = control;
    }
    b.msg_first_[m] = static_cast<uint32_t>(i);
    b.msg_count_[m] = static_cast<uint32_t>(count);
    ++m;
    i += count;
  }
  return m;
}

SendResult UdpSocket::Send(SendBatch* batch) {
  SendResult result;
  SendBatch& b = *batch;
  size_t m = BuildMessages(batch, 0, &result);
  size_t i = 0;
  while (i < m) {
    const unsigned chunk = static_cast<unsigned>(std::min(m - i, kMaxBatch));
    int r = ::sendmmsg(fd_, b.msgs_.data() + i, chunk, 0);
    if (r > 0) {
      for (size_t k = i; k < i + static_cast<size_t>(r); ++k) {
        result.bytes += b.msgs_[k].msg_len;
        result.sent += b.msg_count_[k];
      }
      i += static_cast<size_t>(r);
      result.messages += static_cast<size_t>(r);
      continue;
    }
    const int err = errno;
    if (r < 0 && err == EINTR) continue;
    if (r < 0 && b.msg_count_[i] > 1) {
      // The kernel refused a train (segments over the route's MTU, a device
      // without offload): send its datagrams one by one, and the rest of the
      // batch without trains of that size.
      const size_t first = b.msg_first_[i];
      gso_refused_size_ = std::min(gso_refused_size_, b.datas_[first].size());
      m = BuildMessages(batch, first, nullptr);
      i = 0;
      continue;
    }
    if (r < 0 && b.msgs_[i].msg_hdr.msg_control != nullptr) {
      // The source address may be the reason (removed from the host: EINVAL
      // or ENETUNREACH): send it again from whatever address the kernel picks.
      b.msgs_[i].msg_hdr.msg_control = nullptr;
      b.msgs_[i].msg_hdr.msg_controllen = 0;
      continue;
    }
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

Status UdpSocket::SendTo(const proto::Endpoint& dst, const proto::Endpoint& src,
                         std::span<const uint8_t> data) {
  sockaddr_storage ss;
  socklen_t len = ToSockaddr(dst, family_, &ss);
  if (len == 0) {
    return Status::InvalidArgument("cannot send to " + FormatEndpoint(dst) + " from socket " +
                                   FormatEndpoint(local_) + ": address family not reachable");
  }
  iovec iov{const_cast<uint8_t*>(data.data()), data.size()};
  msghdr m{};
  m.msg_name = &ss;
  m.msg_namelen = len;
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  ControlSlot control;
  if (const size_t n = SourceControl(src, dst, &control)) {
    m.msg_control = control.bytes;
    m.msg_controllen = n;
  }
  while (true) {
    ssize_t r = ::sendmsg(fd_, &m, 0);
    if (r >= 0) return Status::Ok();
    if (errno == EINTR) continue;
    if (m.msg_control != nullptr) {
      m.msg_control = nullptr;  // the source address may be gone: let the kernel pick
      m.msg_controllen = 0;
      continue;
    }
    return Status::IoError("sendto from " + FormatEndpoint(local_) + " to " + FormatEndpoint(dst) +
                           ": " + ErrnoText(errno));
  }
}

}  // namespace serene::net
