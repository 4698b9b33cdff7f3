// ReplayHistory: what a rank keeps of its own updates so that a switch that
// lost the job (it restarted) can be rebuilt exactly (docs/protocol.md,
// "Recovery: a switch that lost the job").
//
// Two updates and one sum, whatever the job's age: the update of the last
// released clock (`last`), and the *fold*, the sum of every update released
// before it (rank 0's includes its clock-0 seed). The update in flight is
// the client's own (RankState::pushed_values). Each RELEASE adds `last` to
// the fold and keeps the clock's update as the new `last`: one pass over the
// model per clock.
//
// Not thread-safe: one per Client.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace serene::client {

class ReplayHistory {
 public:
  // Starts an empty history of a job of `elements` values.
  void Start(size_t elements);

  // The rank's process did not take part in every clock (it joined an
  // ongoing job): its earlier updates are not here, so nothing can be
  // rebuilt. `why` ends up in the error recovery fails with.
  void MarkIncomplete(std::string why);

  // Clock `clock` was released; `pushed` is the update this rank pushed in
  // it (empty: none). If `pushed` is `*inc`'s buffer the two are swapped
  // instead of copied: `*inc` then holds stale values, which the next push
  // overwrites.
  void OnReleased(uint32_t clock, std::span<const int32_t> pushed, std::vector<int32_t>* inc);

  // Empty when the job can be rebuilt from this history, else why not.
  std::string Incomplete() const;

  bool has_fold() const { return folded_; }
  std::span<const int32_t> fold() const { return fold_; }
  bool has_last() const { return has_last_; }
  uint32_t last_clock() const { return last_clock_; }
  std::span<const int32_t> last() const { return last_; }

 private:
  std::vector<int32_t> fold_;
  std::vector<int32_t> last_;
  bool folded_ = false;     // fold_ holds at least one update
  bool has_last_ = false;   // last_ holds the update of last_clock_
  uint32_t last_clock_ = 0;
  bool overflowed_ = false;  // a sum in fold_ left the int32 range
  std::string incomplete_;
};

}  // namespace serene::client
