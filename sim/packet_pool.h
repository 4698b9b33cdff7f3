// PacketPool: the datagrams in flight on the simulated links, each in a
// buffer that is reused once the datagram is delivered. An event then carries
// only the buffer's index — small enough for std::function to store without
// allocating — instead of a fresh copy of the bytes per packet (which made a
// packet cost ~15 µs, most of it allocation; docs/simulator.md "Speed").
//
// Not thread-safe: used by the simulation's event loop.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace serene::sim {

class PacketPool {
 public:
  // Copies `datagram` into a free buffer and returns its index.
  uint32_t Put(std::span<const uint8_t> datagram) {
    uint32_t slot;
    if (free_.empty()) {
      slot = static_cast<uint32_t>(buffers_.size());
      buffers_.emplace_back();
    } else {
      slot = free_.back();
      free_.pop_back();
    }
    buffers_[slot].assign(datagram.begin(), datagram.end());
    return slot;
  }
  // The datagram in `slot`; valid until Free(slot), even across Put (a
  // buffer's bytes do not move when the pool grows).
  std::span<const uint8_t> Get(uint32_t slot) const { return buffers_[slot]; }
  void Free(uint32_t slot) { free_.push_back(slot); }

  size_t in_flight() const { return buffers_.size() - free_.size(); }

 private:
  std::vector<std::vector<uint8_t>> buffers_;
  std::vector<uint32_t> free_;
};

}  // namespace serene::sim
