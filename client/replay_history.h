// ReplayHistory: what a rank keeps of its own updates so that a switch that
// lost the job (it restarted) can be rebuilt exactly (docs/protocol.md,
// "Recovery: a switch that lost the job").
//
// One sum, whatever the job's age: every update this rank pushed (rank 0's
// clock-0 seed included). A row is added as it is pushed, while it is in
// cache from being encoded, so the sum costs about one more pass over the
// model's memory per clock. The protocol's *fold* is this sum without the
// update in flight (pushed, not yet released), which recovery pushes at its
// own clock: FoldWithout.
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

  // Adds (sign +1) or takes back (-1) `values`, elements [begin, begin +
  // size) of an update: a row as it is pushed, or a row whose push failed.
  void AddRow(size_t begin, std::span<const int32_t> values, int sign = 1);
  // One more (or, with -1, one fewer) update is in the sum.
  void CountUpdate(int sign = 1) { updates_ += sign; }
  // Takes a whole update back out (an update the switch dropped as moot: the
  // rank was evicted and resumed ahead).
  void Remove(std::span<const int32_t> update);

  // Empty when the job can be rebuilt from this history, else why not.
  std::string Incomplete() const;

  // The fold: the sum without `in_flight` (empty: nothing in flight), and
  // whether it holds any update.
  std::vector<int32_t> FoldWithout(std::span<const int32_t> in_flight) const;
  bool HasFold(bool in_flight) const { return updates_ > (in_flight ? 1 : 0); }

 private:
  std::vector<int32_t> sum_;
  int64_t updates_ = 0;      // updates in sum_
  bool overflowed_ = false;  // a sum in sum_ left the int32 range
  std::string incomplete_;
};

}  // namespace serene::client
