#include "bmv2/kick_channel.h"

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "proto/codec.h"

namespace serene::bmv2 {
namespace {

// The kicks' source address: link-local, never routed, answered on the veth.
constexpr uint32_t kKickSourceIp = 0xA9FE5345;  // 169.254.83.69
constexpr std::array<uint8_t, 6> kSwitchMac = {0x02, 0x53, 0x45, 0x00, 0x00, 0x01};

void Put16(std::vector<uint8_t>* f, uint16_t v) {
  f->push_back(static_cast<uint8_t>(v >> 8));
  f->push_back(static_cast<uint8_t>(v));
}
void Put32(std::vector<uint8_t>* f, uint32_t v) {
  Put16(f, static_cast<uint16_t>(v >> 16));
  Put16(f, static_cast<uint16_t>(v));
}
uint16_t Get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint32_t Get32(const uint8_t* p) { return uint32_t{Get16(p)} << 16 | Get16(p + 2); }

}  // namespace

std::vector<uint8_t> BuildKickFrame(const std::array<uint8_t, 6>& src_mac, uint32_t src_ip,
                                    uint16_t src_port, uint32_t dst_ip, uint16_t dst_port,
                                    uint8_t op, uint16_t job, uint32_t key, uint16_t worker,
                                    const std::vector<uint32_t>& values) {
  std::vector<uint8_t> f;
  f.insert(f.end(), kSwitchMac.begin(), kSwitchMac.end());
  f.insert(f.end(), src_mac.begin(), src_mac.end());
  Put16(&f, 0x0800);
  const size_t serene = proto::kHeaderSize + 4 * values.size();
  const size_t ip_at = f.size();
  Put16(&f, 0x4500);
  Put16(&f, static_cast<uint16_t>(20 + 8 + serene));
  Put16(&f, 0);       // id
  Put16(&f, 0x4000);  // DF
  f.push_back(64);
  f.push_back(17);
  Put16(&f, 0);  // checksum, below
  Put32(&f, src_ip);
  Put32(&f, dst_ip);
  uint32_t sum = 0;
  for (size_t i = ip_at; i < ip_at + 20; i += 2) sum += Get16(&f[i]);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  f[ip_at + 10] = static_cast<uint8_t>(~sum >> 8);
  f[ip_at + 11] = static_cast<uint8_t>(~sum);
  Put16(&f, src_port);
  Put16(&f, dst_port);
  Put16(&f, static_cast<uint16_t>(8 + serene));
  Put16(&f, 0);  // no UDP checksum
  // The Serene header (protocol.md): magic, version, op, job, worker, key,
  // clock, row, count, flags; then the values.
  Put16(&f, proto::kMagic);
  f.push_back(proto::kVersion);
  f.push_back(op);
  Put16(&f, job);
  Put16(&f, worker);
  Put32(&f, key);
  Put32(&f, 0);
  Put32(&f, 0);
  Put16(&f, static_cast<uint16_t>(values.size()));
  Put16(&f, 0);
  for (uint32_t v : values) Put32(&f, v);
  return f;
}

Result<std::unique_ptr<KickChannel>> KickChannel::Open(const std::string& interface, uint32_t ip,
                                                       uint16_t port) {
  int fd = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_IP));
  if (fd < 0) {
    return Status::FailedPrecondition(std::string("raw socket for kicks: ") + std::strerror(errno) +
                                      " (the bmv2 target needs root)");
  }
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, interface.c_str(), IFNAMSIZ - 1);
  if (::ioctl(fd, SIOCGIFINDEX, &ifr) != 0) {
    ::close(fd);
    return Status::NotFound("control interface " + interface + ": " + std::strerror(errno));
  }
  const int ifindex = ifr.ifr_ifindex;
  if (::ioctl(fd, SIOCGIFHWADDR, &ifr) != 0) {
    ::close(fd);
    return Status::IoError("control interface " + interface + ": no hardware address");
  }
  std::array<uint8_t, 6> mac{};
  std::memcpy(mac.data(), ifr.ifr_hwaddr.sa_data, 6);
  sockaddr_ll sll{};
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(ETH_P_IP);
  sll.sll_ifindex = ifindex;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sll), sizeof sll) != 0) {
    ::close(fd);
    return Status::IoError("bind raw socket to " + interface + ": " + std::strerror(errno));
  }
  return std::unique_ptr<KickChannel>(new KickChannel(fd, ifindex, mac, ip, port));
}

KickChannel::KickChannel(int fd, int ifindex, std::array<uint8_t, 6> mac, uint32_t ip,
                         uint16_t port)
    : fd_(fd), ifindex_(ifindex), mac_(mac), switch_ip_(ip), switch_port_(port) {}

KickChannel::~KickChannel() { ::close(fd_); }

Result<KickReply> KickChannel::Kick(uint8_t op, uint16_t job, uint32_t key, uint16_t worker,
                                    const std::vector<uint32_t>& values,
                                    std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint16_t src_port = next_source_port_;
  next_source_port_ =
      static_cast<uint16_t>(next_source_port_ == 60000 ? 40000 : next_source_port_ + 1);
  const std::vector<uint8_t> frame = BuildKickFrame(mac_, kKickSourceIp, src_port, switch_ip_,
                                                    switch_port_, op, job, key, worker, values);
  sockaddr_ll to{};
  to.sll_family = AF_PACKET;
  to.sll_ifindex = ifindex_;
  to.sll_halen = 6;
  std::memcpy(to.sll_addr, kSwitchMac.data(), 6);
  const bool resend = op == kKickEval || op == kKickFinish;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto next_send = std::chrono::steady_clock::now();
  bool sent = false;
  for (;;) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      return Status::Unavailable("the P4 switch did not answer kick 0x" + std::to_string(op) +
                                 " for job " + std::to_string(job) + " within " +
                                 std::to_string(timeout.count()) +
                                 " ms (is simple_switch running and the control port set?)");
    }
    if (!sent || (resend && now >= next_send)) {
      if (::sendto(fd_, frame.data(), frame.size(), 0, reinterpret_cast<sockaddr*>(&to),
                   sizeof to) < 0) {
        return Status::IoError(std::string("send kick: ") + std::strerror(errno));
      }
      sent = true;
      next_send = now + std::chrono::milliseconds(200);
    }
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::min(deadline, resend ? next_send : deadline) - now);
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(1, wait.count()))) <= 0) continue;
    uint8_t buf[2048];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 14 + 20 + 8 + static_cast<ssize_t>(proto::kHeaderSize) + 12) continue;
    const uint8_t* ip = buf + 14;
    if (Get16(buf + 12) != 0x0800 || (ip[0] >> 4) != 4 || ip[9] != 17) continue;
    const uint8_t* udp = ip + (ip[0] & 0x0F) * 4;
    if (udp + 8 + proto::kHeaderSize + 12 > buf + n) continue;
    // The answer: from the Serene address to our source port, same op and job.
    if (Get32(ip + 12) != switch_ip_ || Get32(ip + 16) != kKickSourceIp) continue;
    if (Get16(udp) != switch_port_ || Get16(udp + 2) != src_port) continue;
    const uint8_t* se = udp + 8;
    if (Get16(se) != proto::kMagic || se[3] != op || Get16(se + 4) != job) continue;
    if (Get16(se + 20) < 3) continue;
    KickReply r;
    r.flags = Get16(se + 22);
    r.status = Get32(se + 24);
    r.a = Get32(se + 28);
    r.b = Get32(se + 32);
    return r;
  }
}

}  // namespace serene::bmv2
