#include "loadgen/update_code.h"

#include <algorithm>

namespace serene::loadgen {
namespace {

constexpr uint32_t kFields = 3;
constexpr uint32_t kUnbounded = 0xFFFFFFFFu;

}  // namespace

UpdateCode::UpdateCode(uint32_t workers, uint64_t elements, uint32_t row, uint32_t clocks)
    : workers_(std::max<uint32_t>(workers, 1)), elements_(elements), row_(row), clocks_(clocks) {
  for (uint32_t f = 0; f < kFields; ++f) {
    prefix_[f].assign(size_t{clocks} + 1, 0);
    for (uint32_t c = 1; c <= clocks; ++c) prefix_[f][c] = prefix_[f][c - 1] + Field(f, c);
  }
}

int64_t UpdateCode::Field(uint32_t field, uint32_t clock) {
  switch (field) {
    case 0:
      return 1;
    case 1:
      return clock % 2039;
    default:
      return (uint64_t{clock} * clock) % 2029;
  }
}

uint32_t UpdateCode::Owner(size_t i) const {
  const uint64_t r = i / row_;
  const uint64_t group = (i % row_) / kFields;
  return static_cast<uint32_t>((r + group) % workers_);
}

void UpdateCode::Update(uint32_t rank, uint32_t clock, std::span<int32_t> out) const {
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = Owner(i) == rank ? static_cast<int32_t>(Field((i % row_) % kFields, clock)) : 0;
  }
}

PullBounds UpdateCode::Bounds(uint32_t t, bool exact, uint32_t lag) const {
  PullBounds b;
  const int64_t before = int64_t{t} - 1;  // the clocks < t
  b.own = static_cast<uint32_t>(std::clamp<int64_t>(before, 0, clocks_));
  if (exact) {
    b.lo = b.hi = b.own;
  } else if (lag == kUnbounded) {
    b.lo = 0;
    b.hi = clocks_;
  } else {
    b.lo = static_cast<uint32_t>(std::clamp<int64_t>(before - lag, 0, clocks_));
    b.hi = static_cast<uint32_t>(std::clamp<int64_t>(int64_t{t} + lag, 0, clocks_));
  }
  return b;
}

std::string UpdateCode::Check(std::span<const int32_t> model, uint32_t self,
                              const PullBounds& bounds) const {
  for (size_t row_begin = 0; row_begin < model.size(); row_begin += row_) {
    const size_t row_end = std::min<size_t>(row_begin + row_, model.size());
    for (size_t begin = row_begin; begin < row_end; begin += kFields) {
      // A group: up to three fields, cut by the row's end.
      const size_t end = std::min(begin + kFields, row_end);
      const uint32_t owner = Owner(begin);
      const int64_t a = int64_t{model[begin]} - Seed(begin);
      const std::string where =
          "element " + std::to_string(begin) + " (rank " + std::to_string(owner) + "'s updates) ";
      if (a < 0 || a > clocks_) {
        return where + "counts " + std::to_string(a) + " of them (value " +
               std::to_string(model[begin]) + "): updates lost or applied twice";
      }
      for (size_t i = begin + 1; i < end; ++i) {
        const int64_t want = Seed(i) + prefix_[i - begin][a];
        if (model[i] != want) {
          return "element " + std::to_string(i) + " is " + std::to_string(model[i]) +
                 ", expected " + std::to_string(want) + " for rank " + std::to_string(owner) +
                 "'s clocks 1.." + std::to_string(a) + ": an update lost or applied twice";
        }
      }
      const uint32_t lo = owner == self ? bounds.own : bounds.lo;
      const uint32_t hi = owner == self ? bounds.own : bounds.hi;
      if (a < lo || a > hi) {
        return where + "holds its clocks 1.." + std::to_string(a) + ", the barrier requires 1.." +
               (lo == hi ? std::to_string(lo)
                         : std::to_string(lo) + " up to 1.." + std::to_string(hi));
      }
    }
  }
  return {};
}

}  // namespace serene::loadgen
