#include "client/replay_history.h"

#include <utility>

namespace serene::client {
namespace {

// sum += sign * add, wrapping; returns true if any sum left the int32
// range. Branch-free so that the loop vectorizes: it runs over every row of
// every push.
bool AddChecked(std::span<int32_t> sum, std::span<const int32_t> add, int sign) {
  uint32_t overflow = 0;
  for (size_t i = 0; i < sum.size(); ++i) {
    const uint32_t a = static_cast<uint32_t>(sum[i]);
    const uint32_t b =
        sign > 0 ? static_cast<uint32_t>(add[i]) : 0u - static_cast<uint32_t>(add[i]);
    const uint32_t s = a + b;
    overflow |= (a ^ s) & (b ^ s);  // sign flipped where both operands agree
    sum[i] = static_cast<int32_t>(s);
  }
  return (overflow >> 31) != 0;
}

}  // namespace

void ReplayHistory::Start(size_t elements) {
  sum_.assign(elements, 0);
  updates_ = 0;
  overflowed_ = false;
  incomplete_.clear();
}

void ReplayHistory::MarkIncomplete(std::string why) {
  if (incomplete_.empty()) incomplete_ = std::move(why);
}

void ReplayHistory::AddRow(size_t begin, std::span<const int32_t> values, int sign) {
  overflowed_ |= AddChecked(std::span<int32_t>(sum_).subspan(begin, values.size()), values, sign);
}

void ReplayHistory::Remove(std::span<const int32_t> update) {
  AddRow(0, update, -1);
  CountUpdate(-1);
}

std::vector<int32_t> ReplayHistory::FoldWithout(std::span<const int32_t> in_flight) const {
  std::vector<int32_t> fold = sum_;
  // Wrapping: an overflow is reported by Incomplete() already.
  if (!in_flight.empty()) (void)AddChecked(fold, in_flight, -1);
  return fold;
}

std::string ReplayHistory::Incomplete() const {
  if (!incomplete_.empty()) return incomplete_;
  if (overflowed_) {
    return "the sum of this rank's updates left the int32 range, so it cannot be pushed again";
  }
  return {};
}

}  // namespace serene::client
