// UdpSocket: one IPv4 or IPv6 UDP socket with batched I/O (recvmmsg/sendmmsg).
//
// It is a plain port: it knows nothing about Serene packets, so the switch
// daemon and the worker library use the same class. A socket binds an address
// and port (port 0 = an ephemeral port, reported by local()); binding "::"
// gives a dual-stack socket that also serves IPv4 peers (unless v6_only).
// With reuse_port, several sockets (one per thread) share one port and the
// kernel spreads flows over them (SO_REUSEPORT).
//
// Receiving: Recv() waits at most `timeout` for the socket to become readable
// (poll), then takes up to a batch of datagrams at once without blocking, so a
// loop can check a stop flag between calls. Sending: Send() hands a batch of
// datagrams to the kernel in as few sendmmsg calls as possible; a datagram the
// kernel refuses (no route, too big) is skipped and counted, not fatal.
//
// Segmentation offload (on by default): Send() coalesces runs of datagrams to
// one destination, of one size (the last of a run may be shorter), into one
// message with UDP_SEGMENT (GSO), so up to 64 datagrams cross into the kernel
// as one; the wire still carries the separate datagrams. A socket with
// UDP_GRO accepts such trains (on loopback, or coalesced by the NIC's GRO)
// as one buffer, and Recv() splits them back at the segment size the kernel
// reports, so callers always see single datagrams, with or without offload.
// If the kernel refuses a train (e.g. segments larger than the route's MTU)
// it is sent again datagram by datagram and trains of that size are not
// tried again on this socket.
//
// Multi-homed hosts: a socket bound to a wildcard address ("0.0.0.0", "::")
// asks the kernel for each datagram's destination address (IP_PKTINFO,
// IPV6_RECVPKTINFO), which RecvBatch::local() reports, and a datagram sent
// with a source address leaves from that address (an IP_PKTINFO /
// IPV6_PKTINFO control message), so a reply can leave from the address its
// request reached instead of the one the kernel's routing would pick. A
// socket bound to a specific address always sends from it.
//
// Arrival times (option arrival_times): the kernel stamps each datagram when
// it receives it (SO_TIMESTAMPNS), and RecvBatch::arrival() reports that time
// on the steady clock, so a caller that was not scheduled for a while still
// knows when its data reached the host. Without the option (or a stamp) a
// datagram's arrival is when Recv() read it.
//
// Errors come back as Status with the errno text and the address involved.
//
// Thread safety: a UdpSocket may be used by one receiving and any number of
// sending threads at once (the kernel serializes datagrams); RecvBatch and
// SendBatch are per-thread scratch and not thread-safe.
#pragma once

#include <sys/socket.h>  // mmsghdr (g++ defines _GNU_SOURCE)
#include <sys/uio.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "proto/endpoint.h"

namespace serene::net {

// Largest datagram a RecvBatch slot holds by default: any UDP payload over
// IPv4 or IPv6 (without jumbograms) fits; a larger one is flagged truncated.
inline constexpr size_t kMaxUdpPayload = 65536;
// sendmmsg/recvmmsg take at most UIO_MAXIOV messages per call.
inline constexpr size_t kMaxBatch = 1024;
// A GSO train: at most this many datagrams and payload bytes (the kernel's
// limits are 64 KiB per train and UDP_MAX_SEGMENTS = 64 or 128 segments).
inline constexpr size_t kMaxGsoSegments = 64;
inline constexpr size_t kMaxGsoBytes = 65000;

struct UdpSocketOptions {
  std::string address = "0.0.0.0";  // numeric IPv4/IPv6 host to bind, "::" = every address
  uint16_t port = 0;                // 0 = ephemeral (see UdpSocket::local())
  bool reuse_port = false;          // SO_REUSEPORT: share the port with sibling sockets
  // SO_REUSEADDR: several sockets of this host bind one multicast group's
  // address and port, and each receives every datagram sent to it.
  bool reuse_address = false;
  bool v6_only = false;             // IPv6 only: do not also accept IPv4 on "::"
  int recv_buffer_bytes = 0;        // SO_RCVBUF; 0 = kernel default
  int send_buffer_bytes = 0;        // SO_SNDBUF; 0 = kernel default
  // Wildcard binds: learn each datagram's destination address (IP_PKTINFO /
  // IPV6_RECVPKTINFO; RecvBatch::local). Ignored for a specific address.
  bool learn_destination = true;
  // Segmentation offload: send trains with UDP_SEGMENT, accept them with
  // UDP_GRO (see above). Off: one datagram per message each way.
  bool gso = true;
  bool gro = true;
  // SO_TIMESTAMPNS: RecvBatch::arrival() is the kernel's receive time.
  bool arrival_times = false;
};

// Room for the control messages of one message (an in_pktinfo or an
// in6_pktinfo, a UDP_SEGMENT / UDP_GRO size and a receive timestamp),
// aligned for cmsghdr.
struct alignas(cmsghdr) ControlSlot {
  unsigned char bytes[160];
};

// Storage for up to `capacity` received messages of `max_datagram` bytes
// each; with GRO a message may hold a train of datagrams, which the batch
// presents one by one.
class RecvBatch {
 public:
  explicit RecvBatch(size_t capacity, size_t max_datagram = kMaxUdpPayload);
  ~RecvBatch();
  RecvBatch(const RecvBatch&) = delete;
  RecvBatch& operator=(const RecvBatch&) = delete;

  // Messages one Recv() takes at most.
  size_t capacity() const { return capacity_; }
  // Datagrams the last UdpSocket::Recv() filled (a GRO train counts each).
  size_t size() const { return segments_.size(); }
  // The last Recv() filled every message slot: more may be queued.
  bool full() const { return messages_ == capacity_; }
  // Messages (kernel buffers) the last Recv() took; <= size().
  size_t messages() const { return messages_; }
  // REQUIRES: i < size().
  std::span<const uint8_t> data(size_t i) const;
  const proto::Endpoint& source(size_t i) const { return sources_[segments_[i].slot]; }
  // The switch-side address the datagram reached, with the socket's port:
  // its destination address on a wildcard-bound socket that learns it
  // (IP_PKTINFO), the bound address otherwise. Invalid when unknown.
  const proto::Endpoint& local(size_t i) const { return locals_[segments_[i].slot]; }
  // The message was larger than max_datagram; data(i) holds only its start.
  bool truncated(size_t i) const { return truncated_[segments_[i].slot] != 0; }
  // When the datagram reached this host: the kernel's receive time on a
  // socket with arrival_times, else when Recv() read it (never later).
  std::chrono::steady_clock::time_point arrival(size_t i) const {
    return arrivals_[segments_[i].slot];
  }
  // When the last Recv() that filled datagrams read them, on the steady
  // clock: the "now" of a caller handling this batch (one clock read per
  // batch, taken by the socket). REQUIRES: size() > 0.
  std::chrono::steady_clock::time_point read_at() const { return read_at_; }

 private:
  friend class UdpSocket;
  struct Segment {
    uint32_t slot;
    uint32_t offset;
    uint32_t length;
  };
  // Splits message `slot` of `length` bytes into datagrams of `segment`
  // bytes (0: one datagram).
  void AddMessage(size_t slot, size_t length, size_t segment);

  size_t capacity_;
  size_t max_datagram_;
  size_t messages_ = 0;
  std::vector<uint8_t> buffers_;
  std::vector<sockaddr_storage> addrs_;
  std::vector<iovec> iovs_;
  std::vector<mmsghdr> msgs_;
  std::vector<ControlSlot> controls_;
  std::vector<proto::Endpoint> sources_;
  std::vector<proto::Endpoint> locals_;
  std::vector<uint8_t> truncated_;
  std::vector<std::chrono::steady_clock::time_point> arrivals_;
  std::chrono::steady_clock::time_point read_at_{};
  std::vector<Segment> segments_;
};

// Up to `capacity` datagrams to send. Add() does not copy: the bytes must stay
// valid until UdpSocket::Send() returns.
class SendBatch {
 public:
  explicit SendBatch(size_t capacity);
  ~SendBatch();
  SendBatch(const SendBatch&) = delete;
  SendBatch& operator=(const SendBatch&) = delete;

  // Queues a datagram for `dst`, to leave from the address of `src` (invalid
  // or wildcard: any; see UdpSocket::Send). False when the batch is full.
  bool Add(const proto::Endpoint& dst, const proto::Endpoint& src, std::span<const uint8_t> data);
  bool Add(const proto::Endpoint& dst, std::span<const uint8_t> data) {
    return Add(dst, proto::Endpoint{}, data);
  }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  bool full() const { return size_ == capacity_; }
  bool empty() const { return size_ == 0; }
  void Clear() { size_ = 0; }

 private:
  friend class UdpSocket;
  size_t capacity_;
  size_t size_ = 0;
  std::vector<proto::Endpoint> dsts_;
  std::vector<proto::Endpoint> srcs_;
  std::vector<std::span<const uint8_t>> datas_;
  std::vector<ControlSlot> controls_;
  std::vector<sockaddr_storage> addrs_;
  std::vector<iovec> iovs_;
  std::vector<mmsghdr> msgs_;
  std::vector<uint32_t> msg_first_;  // first datagram of each message
  std::vector<uint32_t> msg_count_;  // datagrams in each message (a GSO train: > 1)
};

// What Send() did with a batch.
struct SendResult {
  size_t sent = 0;      // datagrams
  size_t messages = 0;  // kernel messages they took (GSO trains count once)
  size_t bytes = 0;   // payload bytes of the datagrams sent
  size_t failed = 0;  // refused by the kernel (or unreachable family) and skipped
  Status error;       // the first failure, if any
};

class UdpSocket {
 public:
  // Creates, configures and binds a socket.
  static Result<UdpSocket> Open(const UdpSocketOptions& options);

  UdpSocket() = default;
  ~UdpSocket();
  UdpSocket(UdpSocket&& other) noexcept;
  UdpSocket& operator=(UdpSocket&& other) noexcept;
  UdpSocket(const UdpSocket&) = delete;
  UdpSocket& operator=(const UdpSocket&) = delete;

  bool is_open() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  // AF_INET or AF_INET6.
  int family() const { return family_; }
  // The bound address, with the kernel's port when bound to port 0.
  const proto::Endpoint& local() const { return local_; }
  // True if the socket can send to `ep`'s family: IPv4 sockets reach IPv4,
  // IPv6 sockets reach IPv6, and dual-stack "::" sockets reach both.
  bool CanReach(const proto::Endpoint& ep) const;
  // True if a datagram to `dst` sent through this socket leaves from the
  // address of `src`: the socket can reach `dst` and is bound to that very
  // address, or is wildcard-bound and `src` is of the family a datagram to
  // `dst` uses. Also true for an invalid or wildcard `src` (no preference).
  bool CanSendFrom(const proto::Endpoint& src, const proto::Endpoint& dst) const;
  // True if the socket reports each datagram's destination (wildcard bind
  // with learn_destination).
  bool learns_destination() const { return learn_destination_; }
  // Segmentation offload in use: Send() builds GSO trains / Recv() splits GRO trains.
  bool gso() const { return gso_; }
  bool gro() const { return gro_; }
  // The kernel stamps received datagrams (RecvBatch::arrival).
  bool arrival_times() const { return arrival_times_; }

  // SO_RCVBUF / SO_SNDBUF. The kernel caps the size at net.core.rmem_max /
  // wmem_max unless the process has CAP_NET_ADMIN (then the cap is lifted).
  Status SetRecvBufferSize(int bytes);
  Status SetSendBufferSize(int bytes);
  // The sizes the kernel granted (Linux reports twice the requested value,
  // for its bookkeeping overhead).
  Result<int> RecvBufferSize() const;
  Result<int> SendBufferSize() const;

  // Waits up to `timeout` for datagrams, then receives as many messages as
  // fit in `batch` (at least one if any arrived). Returns the count of
  // datagrams: 0 on timeout or when interrupted by a signal. A negative
  // timeout waits forever.
  Result<size_t> Recv(RecvBatch* batch, std::chrono::nanoseconds timeout);
  // Recv without waiting: the datagrams already queued (0 if none).
  Result<size_t> RecvQueued(RecvBatch* batch);
  // Waits up to `timeout` (negative: forever) until `a` or `b` is readable;
  // returns which, as bits 1 (a) and 2 (b); 0 on timeout or a signal.
  static Result<unsigned> WaitEither(const UdpSocket& a, const UdpSocket& b,
                                     std::chrono::nanoseconds timeout);

  // IPv4 multicast: receive datagrams sent to `group` (an address the socket
  // is bound to, with its port) arriving on the interface that holds
  // `interface_address` (IP_ADD_MEMBERSHIP), and no other group's.
  Status JoinGroup(const proto::Endpoint& group, const proto::Endpoint& interface_address);

  // Sends every datagram of `batch` (blocking while the send buffer is full).
  // The batch's kernel headers are rewritten; its datagrams are left queued.
  // On a wildcard-bound socket a datagram queued with a source address
  // leaves from it (IP_PKTINFO / IPV6_PKTINFO) when CanSendFrom(src, dst);
  // if the kernel refuses such a datagram (e.g. the address was removed from
  // the host), it is sent once more without it. Elsewhere the source is
  // ignored.
  SendResult Send(SendBatch* batch);
  // Sends one datagram, from `src`'s address as Send() does.
  Status SendTo(const proto::Endpoint& dst, const proto::Endpoint& src,
                std::span<const uint8_t> data);
  Status SendTo(const proto::Endpoint& dst, std::span<const uint8_t> data) {
    return SendTo(dst, proto::Endpoint{}, data);
  }

  // Closes the socket (also done by the destructor).
  void Close();

 private:
  UdpSocket(int fd, int family, proto::Endpoint local) : fd_(fd), family_(family), local_(local) {}
  Status Errno(std::string_view what, int err) const;

  // Writes the control message that makes a datagram to `dst` leave from
  // `src` into `slot`; returns its length, 0 when none applies.
  size_t SourceControl(const proto::Endpoint& src, const proto::Endpoint& dst,
                       ControlSlot* slot) const;
  // Builds the kernel messages of batch datagrams [from, size), coalescing
  // GSO trains; returns the number of messages. Datagrams to unreachable
  // families are skipped and counted in `result` (unless null).
  size_t BuildMessages(SendBatch* batch, size_t from, SendResult* result) const;

  int fd_ = -1;
  int family_ = 0;
  bool v6_only_ = false;
  bool learn_destination_ = false;  // IP_PKTINFO / IPV6_RECVPKTINFO is on
  bool gso_ = false;
  bool gro_ = false;
  bool arrival_times_ = false;  // SO_TIMESTAMPNS is on
  // Trains of datagrams this large or larger were refused: not tried again.
  size_t gso_refused_size_ = SIZE_MAX;
  proto::Endpoint local_;
};

// The local address the kernel's routing picks to reach `peer` (a UDP
// connect, nothing sent): 127.0.0.1 for a peer on this host's loopback.
Result<proto::Endpoint> RouteSource(const proto::Endpoint& peer);

}  // namespace serene::net
