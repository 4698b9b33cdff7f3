// Link: one direction of a rank's connection to the switch, as the simulator
// models it (docs/simulator.md): a FIFO with a bandwidth (a packet occupies
// the link for its wire size / bandwidth, after the packets before it), a
// propagation latency, and an optional independent loss probability.
//
// Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "sim/event_queue.h"
#include "train/rng.h"

namespace serene::sim {

// Ethernet preamble + inter-frame gap (20), header + FCS (18), IPv4 (20) and
// UDP (8): the bytes a datagram occupies on the wire besides its payload.
inline constexpr size_t kFrameOverhead = 66;

struct LinkSpec {
  double latency_s = 5e-6;  // one-way propagation + switch pipeline latency
  double gbps = 10;         // bandwidth, gigabits per second
  double loss = 0;          // probability that a packet is lost, [0, 1)

  // "latency=5us,gbps=10,loss=0.001"; every field optional.
  static Result<LinkSpec> Parse(std::string_view text);
  std::string ToString() const;
};

class Link {
 public:
  Link(const LinkSpec& spec, uint64_t seed) : spec_(spec), rng_(seed) {}

  // A datagram of `payload` bytes handed to the link at `now`: when it
  // arrives, or nullopt if it is lost (it still occupied the link).
  std::optional<SimTime> Send(SimTime now, size_t payload);

  uint64_t sent() const { return sent_; }
  uint64_t lost() const { return lost_; }

 private:
  LinkSpec spec_;
  train::Rng rng_;
  SimTime busy_until_ = 0;
  uint64_t sent_ = 0;
  uint64_t lost_ = 0;
};

}  // namespace serene::sim
