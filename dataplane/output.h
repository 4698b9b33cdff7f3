// Output: the packets one or more Process() calls emit, in a buffer
// allocated once. Process() writes replies here instead of sending them, so
// the data plane stays free of I/O; the switch daemon drains it with one
// sendmmsg, tests inspect it directly.
//
// Not thread-safe: one Output per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "proto/endpoint.h"

namespace serene::dataplane {

class Output {
 public:
  struct Packet {
    proto::Endpoint dst;
    // The switch's address to send from: the address the request reached
    // (replies) or the one the rank's JOIN reached (RELEASEs for other
    // ranks). Invalid when unknown: the sender's socket (or the kernel's
    // routing) decides.
    proto::Endpoint src;
    uint32_t offset;  // into the arena
    uint32_t size;
  };

  // Room for `max_packets` packets of `arena_bytes` in total.
  Output(size_t max_packets, size_t arena_bytes);
  // Room for `batch` worst-case Process() calls.
  static Output ForBatch(size_t batch);

  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;
  Output(Output&&) = default;
  Output& operator=(Output&&) = default;

  // Reserves `size` bytes for a packet to `dst`, to be sent from `src`
  // (invalid: any), and returns where to write it, or nullptr when full (the
  // caller must ensure room beforehand: see HasRoomForProcess).
  uint8_t* Append(const proto::Endpoint& dst, const proto::Endpoint& src, size_t size);
  uint8_t* Append(const proto::Endpoint& dst, size_t size) { return Append(dst, {}, size); }

  // True if one more worst-case Process() call fits.
  bool HasRoomForProcess() const;

  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  const Packet& packet(size_t i) const { return packets_[i]; }
  std::span<const uint8_t> bytes(size_t i) const {
    return {arena_.data() + packets_[i].offset, packets_[i].size};
  }
  void Clear() {
    count_ = 0;
    used_ = 0;
  }

 private:
  std::vector<Packet> packets_;
  std::vector<uint8_t> arena_;
  size_t count_ = 0;
  size_t used_ = 0;
};

}  // namespace serene::dataplane
