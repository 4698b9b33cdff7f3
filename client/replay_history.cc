#include "client/replay_history.h"

#include <utility>

namespace serene::client {
namespace {

// fold += add, wrapping; returns true if any sum left the int32 range.
// Branch-free so that the loop vectorizes: it runs once per clock over the
// whole model.
bool AddChecked(std::span<int32_t> fold, std::span<const int32_t> add) {
  uint32_t overflow = 0;
  for (size_t i = 0; i < fold.size(); ++i) {
    const uint32_t a = static_cast<uint32_t>(fold[i]);
    const uint32_t b = static_cast<uint32_t>(add[i]);
    const uint32_t s = a + b;
    overflow |= (a ^ s) & (b ^ s);  // sign flipped where both operands agree
    fold[i] = static_cast<int32_t>(s);
  }
  return (overflow >> 31) != 0;
}

}  // namespace

void ReplayHistory::Start(size_t elements) {
  fold_.assign(elements, 0);
  folded_ = overflowed_ = false;
  incomplete_.clear();
}

void ReplayHistory::MarkIncomplete(std::string why) {
  if (incomplete_.empty()) incomplete_ = std::move(why);
}

void ReplayHistory::OnReleased(std::span<const int32_t> pushed) {
  if (pushed.empty()) return;
  overflowed_ |= AddChecked(fold_, pushed);
  folded_ = true;
}

std::string ReplayHistory::Incomplete() const {
  if (!incomplete_.empty()) return incomplete_;
  if (overflowed_) {
    return "the sum of this rank's updates left the int32 range, so it cannot be pushed again";
  }
  return {};
}

}  // namespace serene::client
