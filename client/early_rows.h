// EarlyRows: rows of the job's reply group that arrived before this rank
// started the pull they belong to.
//
// Ranks are released together but do not start pulling together: a rank
// still waiting for its RELEASE, or still pushing, receives the rows its
// faster peers READ for the clock it is about to pull. They are exact (the
// model after the previous clock, the same for every rank), so the pull of
// that clock takes them instead of READing them again. Rows are kept per
// row with the clock they belong to; a pull takes only its own clock's.
//
// Not thread-safe: one per Client.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "include/serene/client.h"
#include "proto/codec.h"

namespace serene::client {

class EarlyRows {
 public:
  // Forgets every row (a new job geometry or incarnation: rows kept from
  // before describe another model) and sizes the store to the job, or to
  // nothing when `enabled` is false (no group: no rows come early, and a
  // large model need not be held twice).
  void Reset(const JobInfo& info, bool enabled);

  // Keeps `v` if it is an exact group READ_REPLY of a row of the job with the
  // row's length. Returns whether it was kept.
  bool Offer(const proto::PacketView& v);

  // Row `row` of `clock` was kept.
  bool Has(uint32_t row, uint32_t clock) const {
    return row < clock_of_.size() && clock_of_[row] == clock && clock != kNone;
  }
  // Its values; REQUIRES Has(row, clock).
  std::span<const int32_t> Row(uint32_t row) const;

 private:
  static constexpr uint32_t kNone = 0xFFFFFFFFu;
  uint32_t row_width_ = 0;
  uint64_t elements_ = 0;
  std::vector<int32_t> values_;
  std::vector<uint32_t> clock_of_;  // per row: the clock its values belong to
};

}  // namespace serene::client
