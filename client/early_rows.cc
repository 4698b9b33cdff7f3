#include "client/early_rows.h"

#include <algorithm>

#include "proto/values.h"

namespace serene::client {

void EarlyRows::Reset(const JobInfo& info, bool enabled) {
  row_width_ = info.row_width;
  elements_ = info.elements;
  values_.assign(enabled ? info.elements : 0, 0);
  clock_of_.assign(enabled ? info.rows : 0, kNone);
}

bool EarlyRows::Offer(const proto::PacketView& v) {
  const proto::Header& h = v.header;
  constexpr uint16_t kExactGroup = proto::flags::kExact | proto::flags::kGroup;
  if (h.op != proto::Op::kReadReply || (h.flags & kExactGroup) != kExactGroup ||
      h.row >= clock_of_.size() || h.clock == kNone) {
    return false;
  }
  const size_t begin = size_t{h.row} * row_width_;
  const size_t len = std::min<size_t>(row_width_, elements_ - begin);
  if (h.count != len) return false;
  proto::LoadValues(v.values, std::span<int32_t>(values_).subspan(begin, len));
  clock_of_[h.row] = h.clock;
  return true;
}

std::span<const int32_t> EarlyRows::Row(uint32_t row) const {
  const size_t begin = size_t{row} * row_width_;
  const size_t len = std::min<size_t>(row_width_, elements_ - begin);
  return std::span<const int32_t>(values_).subspan(begin, len);
}

}  // namespace serene::client
