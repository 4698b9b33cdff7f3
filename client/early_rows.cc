#include "client/early_rows.h"

#include <algorithm>

#include "proto/values.h"

namespace serene::client {

void EarlyRows::Reset(const JobInfo& info, bool enabled) {
  row_width_ = info.row_width;
  elements_ = info.elements;
  area_ = {};
  clock_of_.assign(enabled ? info.rows : 0, kNone);
}

void EarlyRows::LandIn(std::span<int32_t> area) {
  if (area.data() == area_.data() && area.size() == area_.size()) return;
  area_ = area.size() == elements_ ? area : std::span<int32_t>();
  std::fill(clock_of_.begin(), clock_of_.end(), kNone);
}

bool EarlyRows::Offer(const proto::PacketView& v) {
  const proto::Header& h = v.header;
  constexpr uint16_t kExactGroup = proto::flags::kExact | proto::flags::kGroup;
  if (h.op != proto::Op::kReadReply || (h.flags & kExactGroup) != kExactGroup ||
      h.row >= clock_of_.size() || area_.empty() || h.clock == kNone || h.clock < floor_) {
    return false;
  }
  // Clocks only grow while the store is in use (LandIn and Reset forget).
  const uint32_t kept = clock_of_[h.row];
  if (kept != kNone && kept >= h.clock) return false;
  const size_t begin = size_t{h.row} * row_width_;
  const size_t len = std::min<size_t>(row_width_, elements_ - begin);
  if (h.count != len) return false;
  proto::LoadValues(v.values, area_.subspan(begin, len));
  clock_of_[h.row] = h.clock;
  return true;
}

std::span<const int32_t> EarlyRows::Row(uint32_t row) const {
  const size_t begin = size_t{row} * row_width_;
  const size_t len = std::min<size_t>(row_width_, elements_ - begin);
  return std::span<const int32_t>(area_).subspan(begin, len);
}

}  // namespace serene::client
