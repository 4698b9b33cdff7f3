// UpdateCode: serene-bench's updates, encoded so that any pull can be
// decoded into the set of (rank, clock) updates it holds.
//
// Each row is cut into groups of three elements; group g of row r belongs to
// rank (r + g) mod N, and only that rank adds to it: at clock c >= 1 it adds
// [1, c mod 2039, c^2 mod 2029] to the group's three elements (a group cut
// by the row's end keeps its first fields). Every element starts at Seed(i).
// A rank's updates reach a row in clock order (it INCs c + 1 only after
// clock c completed), so a correct pull holds, in each group, its owner's
// clocks 1..a for some a: the first field counts them, and the other two are
// then known. An update lost, or applied twice, breaks that (a count with the
// wrong sums, or a count out of bounds); the count is checked against what
// the barrier guarantees at the pull's clock (PullBounds).
//
// The sums fit int32 for up to kMaxClocks clocks.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace serene::loadgen {

// What a pull at clock t must hold of each rank's updates: clocks 1..a with
// own == a for the pulling rank, lo <= a <= hi for the others.
struct PullBounds {
  uint32_t own = 0;
  uint32_t lo = 0;
  uint32_t hi = 0;
};

class UpdateCode {
 public:
  static constexpr uint32_t kMaxClocks = 1'000'000;

  // A job of `workers` ranks and `elements` values in rows of `row`, whose
  // ranks push for clocks 1..clocks. REQUIRES: clocks <= kMaxClocks.
  UpdateCode(uint32_t workers, uint64_t elements, uint32_t row, uint32_t clocks);

  static int32_t Seed(size_t i) { return static_cast<int32_t>(i % 1000) - 500; }

  // Rank `rank`'s update of clock `clock` (>= 1) into `out` (the elements).
  void Update(uint32_t rank, uint32_t clock, std::span<int32_t> out) const;

  // Empty if `model` is a pull by rank `self` that holds, of every rank,
  // its clocks 1..a (each once) within `bounds`; else the first failure, for
  // a message that starts "pull at clock t: ".
  std::string Check(std::span<const int32_t> model, uint32_t self, const PullBounds& bounds) const;

  // The bounds of the barrier {lag bound L} at clock t (docs/protocol.md,
  // The barrier): every rank's clocks <= t - L - 1 are in, none after
  // t + L; `exact` (SYNC's exact reads): exactly the clocks < t.
  // `lag` 0xFFFFFFFF: unbounded (ASYNC).
  PullBounds Bounds(uint32_t t, bool exact, uint32_t lag) const;

 private:
  uint32_t Owner(size_t i) const;
  static int64_t Field(uint32_t field, uint32_t clock);

  uint32_t workers_;
  uint64_t elements_;
  uint32_t row_;
  uint32_t clocks_;
  std::vector<int64_t> prefix_[3];  // prefix_[f][a]: field f's sum over clocks 1..a
};

}  // namespace serene::loadgen
