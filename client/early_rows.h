// EarlyRows: rows of the job's reply group that arrived before this rank
// started the pull they belong to.
//
// Ranks are released together but do not start pulling together: a rank
// still waiting for its RELEASE, or still pushing, receives the rows its
// faster peers READ for the clock it is about to pull, and the rows the
// switch completed with the ranks' INCs. They are exact (the model after the
// previous clock, the same for every rank), so the pull of that clock takes
// them instead of READing them again.
//
// Rows land where the pull will want them (LandIn): the client's own
// fixed-point landing area, or the caller's model during an Exchange, so a
// row that came early costs no second copy. Each row is kept with the clock
// it belongs to; a pull takes only its own clock's. Rows of a clock older
// than the rank's (late duplicates) are refused, and a row never replaces a
// newer one: the area may be the model a pull is writing.
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
  // before describe another model) and takes the job's geometry; with
  // `enabled` false (no group: no rows come early) it keeps none. Rows land
  // nowhere until LandIn.
  void Reset(const JobInfo& info, bool enabled);

  // Rows land in `area` (the job's elements, or empty: nowhere) from now on.
  // Forgets the rows kept so far, unless `area` is where they already are.
  void LandIn(std::span<int32_t> area);
  // The clock the rank is in: rows of older clocks are refused.
  void SetFloor(uint32_t clock) { floor_ = clock; }

  // Keeps `v` if it is an exact group READ_REPLY of a row of the job with the
  // row's length, of the floor's clock or later and newer than the row kept.
  // Returns whether it was kept.
  bool Offer(const proto::PacketView& v);

  // Row `row` of `clock` was kept.
  bool Has(uint32_t row, uint32_t clock) const {
    return row < clock_of_.size() && clock_of_[row] == clock && clock != kNone;
  }
  // Its values, in the landing area; REQUIRES Has(row, clock).
  std::span<const int32_t> Row(uint32_t row) const;

 private:
  static constexpr uint32_t kNone = 0xFFFFFFFFu;
  uint32_t row_width_ = 0;
  uint64_t elements_ = 0;
  uint32_t floor_ = 0;
  std::span<int32_t> area_;
  std::vector<uint32_t> clock_of_;  // per row: the clock its values belong to
};

}  // namespace serene::client
