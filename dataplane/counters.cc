#include "dataplane/counters.h"

namespace serene::dataplane {

std::string_view DropReasonName(DropReason r) {
  switch (r) {
    case DropReason::kNone: return "none";
    case DropReason::kParse: return "parse";
    case DropReason::kNotRequest: return "not_request";
    case DropReason::kUnknownJob: return "unknown_job";
    case DropReason::kBadKey: return "bad_key";
    case DropReason::kBadRank: return "bad_rank";
    case DropReason::kNotJoined: return "not_joined";
    case DropReason::kWrongSource: return "wrong_source";
    case DropReason::kEvicted: return "evicted";
    case DropReason::kBadRow: return "bad_row";
    case DropReason::kBadRowLength: return "bad_row_length";
    case DropReason::kBadRowCount: return "bad_row_count";
    case DropReason::kBadCount: return "bad_count";
    case DropReason::kBadClock: return "bad_clock";
    case DropReason::kNotReleased: return "not_released";
    case DropReason::kIncStale: return "inc_stale";
    case DropReason::kIncEarly: return "inc_early";
    case DropReason::kIncDuplicate: return "inc_duplicate";
    case DropReason::kIncSeedNotRank0: return "inc_seed_not_rank0";
    case DropReason::kClockEarly: return "clock_early";
    case DropReason::kClockWaiting: return "clock_waiting";
    case DropReason::kRankInUse: return "rank_in_use";
    case DropReason::kFinishNotLive: return "finish_not_live";
    case DropReason::kSourceNotAllowed: return "source_not_allowed";
    case DropReason::kJoinCookie: return "join_cookie";
    case DropReason::kCount_: break;
  }
  return "unknown";
}

}  // namespace serene::dataplane
