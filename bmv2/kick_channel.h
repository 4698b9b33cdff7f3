// KickChannel: how the BMv2 back end asks the P4 program for what must be
// atomic with the barrier (docs/p4.md "Control"): a Serene packet with a kick
// op (0x81 EVAL, 0x82 EVICT, 0x83 FINISH, 0x84 POLICY), sent as a raw
// Ethernet frame on the back end's own veth into a simple_switch port listed
// in the `control_port` table; the program answers on the same port with
// `[status, a, b]`.
//
// Raw frames (AF_PACKET) rather than a UDP socket: the kick must enter the
// switch by the control port whatever the host's routes say about the
// Serene address. Needs CAP_NET_RAW (the bmv2 target runs as root anyway).
//
// Thread-safe: kicks are serialized, one in flight.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"

namespace serene::bmv2 {

inline constexpr uint8_t kKickEval = 0x81;
inline constexpr uint8_t kKickEvict = 0x82;
inline constexpr uint8_t kKickFinish = 0x83;
inline constexpr uint8_t kKickPolicy = 0x84;

struct KickReply {
  uint32_t status = 0;
  uint32_t a = 0;
  uint32_t b = 0;
  uint16_t flags = 0;
};

class KickChannel {
 public:
  // Opens a raw socket on `interface`; kicks go to the Serene address
  // `ip`:`port` (host order) of the switch.
  static Result<std::unique_ptr<KickChannel>> Open(const std::string& interface, uint32_t ip,
                                                   uint16_t port);
  ~KickChannel();
  KickChannel(const KickChannel&) = delete;
  KickChannel& operator=(const KickChannel&) = delete;

  // Sends the kick and waits for its answer, resending every `resend` until
  // `timeout` (a kick is idempotent only for EVAL and FINISH: the others are
  // sent once and a lost answer is Unavailable).
  Result<KickReply> Kick(uint8_t op, uint16_t job, uint32_t key, uint16_t worker,
                         const std::vector<uint32_t>& values,
                         std::chrono::milliseconds timeout = std::chrono::seconds(2));

 private:
  KickChannel(int fd, int ifindex, std::array<uint8_t, 6> mac, uint32_t ip, uint16_t port);

  std::mutex mu_;
  const int fd_;
  const int ifindex_;
  const std::array<uint8_t, 6> mac_;
  const uint32_t switch_ip_;
  const uint16_t switch_port_;
  uint16_t next_source_port_ = 40000;  // a fresh port per kick: late answers do not match
};

// The frame a kick is: Ethernet / IPv4 / UDP / Serene header / values. For tests.
std::vector<uint8_t> BuildKickFrame(const std::array<uint8_t, 6>& src_mac, uint32_t src_ip,
                                    uint16_t src_port, uint32_t dst_ip, uint16_t dst_port,
                                    uint8_t op, uint16_t job, uint32_t key, uint16_t worker,
                                    const std::vector<uint32_t>& values);

}  // namespace serene::bmv2
