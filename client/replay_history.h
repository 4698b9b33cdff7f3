// ReplayHistory: what a rank keeps of its own updates so that a switch that
// lost the job (it restarted) can be rebuilt exactly (docs/protocol.md,
// "Recovery: a switch that lost the job").
//
// One sum, whatever the job's age: the *fold*, every update this rank pushed
// in a clock it was released from (rank 0's includes its clock-0 seed). The
// update in flight is the client's own (RankState::pushed_values). Each
// RELEASE adds the clock's update to the fold: one pass over the model.
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

  // A clock was released in which this rank pushed `pushed` (empty: nothing).
  void OnReleased(std::span<const int32_t> pushed);

  // Empty when the job can be rebuilt from this history, else why not.
  std::string Incomplete() const;

  // The fold, and whether it holds any update.
  bool has_fold() const { return folded_; }
  std::span<const int32_t> fold() const { return fold_; }

 private:
  std::vector<int32_t> fold_;
  bool folded_ = false;      // fold_ holds at least one update
  bool overflowed_ = false;  // a sum in fold_ left the int32 range
  std::string incomplete_;
};

}  // namespace serene::client
