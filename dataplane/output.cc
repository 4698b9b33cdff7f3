#include "dataplane/output.h"

#include "dataplane/consts.h"

namespace serene::dataplane {

Output::Output(size_t max_packets, size_t arena_bytes)
    : packets_(max_packets), arena_(arena_bytes) {}

Output Output::ForBatch(size_t batch) {
  return Output(batch * kMaxEmitPackets, batch * kMaxEmitBytes);
}

uint8_t* Output::Append(const proto::Endpoint& dst, const proto::Endpoint& src, size_t size) {
  if (count_ == packets_.size() || used_ + size > arena_.size()) return nullptr;
  packets_[count_] = Packet{dst, src, static_cast<uint32_t>(used_), static_cast<uint32_t>(size)};
  uint8_t* p = arena_.data() + used_;
  ++count_;
  used_ += size;
  return p;
}

bool Output::HasRoomForProcess() const {
  return packets_.size() - count_ >= kMaxEmitPackets && arena_.size() - used_ >= kMaxEmitBytes;
}

}  // namespace serene::dataplane
