// BarrierParams: one point of the hybrid barrier space {window W, quorum k,
// lag bound L} (DESIGN.md §4, docs/architecture.md).
//
// A worker that completed clock c may start c+1 iff c - low_k <= W and
// c - low_all <= L, where low_k is the highest clock at least k live workers
// completed and low_all the slowest live worker's completed clock.
// Named strategies: SYNC (W=0, k=all, L=0), SSP(W) (k=all, L=W),
// ASYNC (W=L=unbounded), QUORUM(k, L) (W=0, k<N).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace serene::dataplane {

struct BarrierParams {
  static constexpr uint32_t kUnbounded = 0xFFFFFFFFu;  // W or L = infinity
  static constexpr uint32_t kAllWorkers = 0xFFFFFFFFu;  // k = every live worker

  uint32_t window = 0;            // W
  uint32_t quorum = kAllWorkers;  // k
  uint32_t lag = 0;               // L

  static BarrierParams Sync() { return {0, kAllWorkers, 0}; }
  static BarrierParams Ssp(uint32_t w) { return {w, kAllWorkers, w}; }
  static BarrierParams Async() { return {kUnbounded, kAllWorkers, kUnbounded}; }
  static BarrierParams Quorum(uint32_t k, uint32_t l) { return {0, k, l}; }

  // True when every worker must wait for all others to complete each clock,
  // so reads can be exact (the window in force is 0).
  bool Exact(uint32_t workers) const {
    return lag == 0 || (window == 0 && quorum >= workers);
  }

  // "sync", "ssp:W", "async", "quorum:K:L", or "window=W,quorum=K,lag=L"
  // for the general form ("inf" or "all" for the unbounded values).
  static Result<BarrierParams> Parse(std::string_view text);
  std::string ToString() const;

  friend bool operator==(const BarrierParams&, const BarrierParams&) = default;
};

}  // namespace serene::dataplane
