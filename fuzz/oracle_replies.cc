// Oracle checks of the packets the pipeline emits (see pipeline_oracle.h).
#include <algorithm>
#include <cstdint>
#include <functional>

#include "fuzz/pipeline_oracle.h"

namespace serene::fuzz {

using dataplane::DropReason;
using proto::Op;

namespace {

std::string S(uint64_t v) { return std::to_string(v); }

constexpr uint16_t kReservedFlags = 0xFF80;  // bits 7-15 (protocol.md)

// The ERROR code of a refusal, per docs/protocol.md's table.
int32_t ErrorCodeOf(DropReason r) {
  switch (r) {
    case DropReason::kBadRank:
      return 1;
    case DropReason::kBadRow:
      return 2;
    case DropReason::kBadRowCount:
      return 3;
    case DropReason::kBadClock:
      return 4;
    case DropReason::kNotJoined:
      return 5;
    case DropReason::kWrongSource:
      return 6;
    case DropReason::kEvicted:
      return 7;
    case DropReason::kBadCount:
      return 8;
    case DropReason::kNotReleased:
      return 9;
    case DropReason::kRankInUse:
      return 11;
    default:
      return 0;
  }
}

// The epoch of the bank that judges CLOCK(clock), from the telemetry.
uint32_t EpochFor(const dataplane::JobTelemetry& t, uint32_t clock) {
  return t.swap_pending && proto::ClockDiff(clock, t.swap_clock) >= 0 ? t.next_epoch
                                                                      : t.active_epoch;
}

}  // namespace

void Oracle::CheckEmitted(size_t slot, const Snapshot& after, const std::vector<Emitted>& emitted,
                          const Request* req) {
  const JobExpect& je = jobs_[slot];
  const dataplane::JobTelemetry& t = after.jobs[slot].t;
  for (const Emitted& e : emitted) {
    const std::string op = std::string(proto::OpName(e.h.op));
    ORACLE_CHECK(*this, e.h.job == je.config.id && e.h.key == je.config.key,
                 op + " carries the job's id and key");
    if (e.h.op == Op::kCookie) {
      // Return routability (protocol.md): header only, to the source, from
      // the address it reached, the cookie of (source, job, rank) now, the
      // answered op in flags bits 8..15 and no job flags.
      ORACLE_CHECK(*this, req != nullptr && e.dst == req->src && e.from == req->local,
                   "COOKIE goes to the request's source, from the address it reached");
      ORACLE_CHECK(*this, e.h.count == 0 && e.v.empty(), "COOKIE is header only");
      ORACLE_CHECK(*this, e.h.worker == req->h.worker, "COOKIE echoes the worker");
      ORACLE_CHECK(*this, e.h.flags == proto::cookie::FlagsFor(req->h.op),
                   "COOKIE names the answered op and carries no job flags");
      ORACLE_CHECK(*this,
                   proto::cookie::Of(e.h.clock, e.h.row) ==
                       dataplane::JoinCookieAt(kCookieSecret, req->src, je.config.id,
                                               req->h.worker, req->now),
                   "COOKIE carries the source's cookie");
      continue;
    }
    ORACLE_CHECK(*this, !proto::IsRequest(e.h.op) || e.h.op == Op::kLeave, op + " is a reply op");
    ORACLE_CHECK(*this, ((e.h.flags & proto::flags::kSaturated) != 0) == t.saturated,
                 op + ": SATURATED flag is the job's state");
    ORACLE_CHECK(*this, ((e.h.flags & proto::flags::kFinished) != 0) == t.finished,
                 op + ": FINISHED flag is the job's state");
    ORACLE_CHECK(*this, (e.h.flags & (kReservedFlags | proto::flags::kRetransmit)) == 0,
                 op + ": reserved or request flags set");
    ORACLE_CHECK(*this, !(e.h.flags & proto::flags::kWaiting) || e.h.op == Op::kJoinAck,
                 op + ": WAITING on a reply other than JOIN_ACK");
    ORACLE_CHECK(*this, !(e.h.flags & proto::flags::kExact) || e.h.op == Op::kReadReply,
                 op + ": EXACT on a reply other than READ_REPLY");
    ORACLE_CHECK(*this, e.h.count == e.v.size(), op + ": count");
    if (e.h.op == Op::kRelease) {
      CheckRelease(slot, after, e, req);
      continue;
    }
    ORACLE_CHECK(*this, req != nullptr, op + " without a request");
    ORACLE_CHECK(*this, e.from == req->local, op + " leaves from the address the request reached");
    const bool to_group = (e.h.flags & proto::flags::kGroup) != 0;
    ORACLE_CHECK(*this,
                 !to_group || (e.h.op == Op::kReadReply && (e.h.flags & proto::flags::kExact) &&
                               je.config.group.valid() && e.dst == je.config.group),
                 op + ": GROUP only on an exact READ_REPLY, sent to the job's group");
    if (req->h.op == Op::kInc) {
      // An INC is never answered; the one that completes a row sends the
      // row, the model after the INC's clock, to the group (protocol.md).
      ORACLE_CHECK(*this, e.h.op == Op::kReadReply && to_group, op + " sent for an INC");
      ORACLE_CHECK(*this,
                   e.h.worker == proto::kNoWorker && e.h.clock == req->h.clock + 1 &&
                       e.h.row == req->h.row,
                   "a completed row names no rank, the next clock and the INC's row");
      for (uint32_t w = 0; w < je.config.workers; ++w) {
        ORACLE_CHECK(*this, je.applied.count(std::make_tuple(w, req->h.clock, req->h.row)) == 1,
                     "a completed row has every rank's INC of its clock (rank " + S(w) +
                         "'s is missing)");
      }
      CheckReadReply(slot, e);
      continue;
    }
    // Every other reply answers the request, to its source (an exact
    // READ_REPLY to the group if the READ asked for it).
    ORACLE_CHECK(*this, e.h.worker == req->h.worker, op + " echoes the worker");
    if (to_group) {
      ORACLE_CHECK(*this, (req->h.flags & proto::flags::kGroup) != 0,
                   "a READ_REPLY to the group answers a READ that asked for it");
    } else {
      ORACLE_CHECK(*this, e.dst == req->src, op + " goes to the request's source");
    }
    switch (e.h.op) {
      case Op::kJoinAck: {
        ORACLE_CHECK(*this, req->h.op == Op::kJoin, "JOIN_ACK answers JOIN");
        const auto& v = e.v;
        const dataplane::WorkerTelemetry& w = t.workers.at(e.h.worker);
        ORACLE_CHECK(*this,
                     v.size() == (je.config.group.valid() ? proto::join_ack::kCountWithGroup
                                                          : proto::join_ack::kCount),
                     "JOIN_ACK values (10, or 12 with the job's group)");
        if (je.config.group.valid()) {
          const proto::Endpoint& g = je.config.group;
          const uint32_t addr = (uint32_t{g.addr[0]} << 24) | (uint32_t{g.addr[1]} << 16) |
                                (uint32_t{g.addr[2]} << 8) | g.addr[3];
          ORACLE_CHECK(*this,
                       static_cast<uint32_t>(v[proto::join_ack::kGroupAddress]) == addr &&
                           v[proto::join_ack::kGroupPort] == g.port,
                       "JOIN_ACK advertises the job's group");
        }
        ORACLE_CHECK(*this,
                     v[0] == static_cast<int32_t>(je.config.workers) &&
                         v[1] == static_cast<int32_t>(je.config.elements) &&
                         v[2] == static_cast<int32_t>(je.config.row_width) &&
                         v[7] == static_cast<int32_t>(t.rows) &&
                         v[8] == static_cast<int32_t>(je.config.scale_log2),
                     "JOIN_ACK describes the job");
        ORACLE_CHECK(*this, v[3] == static_cast<int32_t>(w.done) && e.h.clock == w.done,
                     "JOIN_ACK carries the rank's done");
        ORACLE_CHECK(*this,
                     v[4] == static_cast<int32_t>(t.low) && v[5] == static_cast<int32_t>(t.high),
                     "JOIN_ACK carries low and high");
        ORACLE_CHECK(*this, static_cast<uint32_t>(v[6]) == EpochFor(t, w.done),
                     "JOIN_ACK epoch: the bank that judges the rank's next CLOCK");
        const uint32_t incarnation = static_cast<uint32_t>(v[9]);
        ORACLE_CHECK(*this, incarnation != 0, "incarnation 0 reads as 'not told'");
        if (!jobs_[slot].incarnation) jobs_[slot].incarnation = incarnation;
        ORACLE_CHECK(*this, *jobs_[slot].incarnation == incarnation,
                     "incarnation changed within one job");
        ORACLE_CHECK(*this, ((e.h.flags & proto::flags::kWaiting) != 0) == w.waiting,
                     "JOIN_ACK WAITING iff the rank waits for its RELEASE");
        break;
      }
      case Op::kReadReply:
        ORACLE_CHECK(*this, req->h.op == Op::kRead, "READ_REPLY answers READ");
        ORACLE_CHECK(*this, e.h.clock == req->h.clock && e.h.row == req->h.row,
                     "READ_REPLY echoes clock and row");
        CheckReadReply(slot, e);
        break;
      case Op::kNack:
        ORACLE_CHECK(*this, req->h.op == Op::kClock, "NACK answers CLOCK");
        ORACLE_CHECK(*this, e.h.clock == req->h.clock && e.h.row == req->h.row,
                     "NACK echoes the clock and the rows announced");
        CheckNack(slot, after, e);
        break;
      case Op::kLeave:
        ORACLE_CHECK(*this, req->h.op == Op::kLeave && e.h.clock == req->h.clock && e.v.empty(),
                     "LEAVE reply echoes the LEAVE");
        break;
      case Op::kError: {
        ORACLE_CHECK(*this, e.v.size() == proto::error_reply::kCount, "ERROR values");
        ORACLE_CHECK(*this, e.v[0] == ErrorCodeOf(req->r.reason) && e.v[0] != 0,
                     "ERROR code " + std::to_string(e.v[0]) + " for reason " +
                         std::string(dataplane::DropReasonName(req->r.reason)));
        ORACLE_CHECK(*this, e.v[1] == static_cast<int32_t>(req->h.op), "ERROR names the op");
        ORACLE_CHECK(*this, e.h.clock == req->h.clock && e.h.row == req->h.row,
                     "ERROR echoes clock and row");
        ORACLE_CHECK(*this, ((e.h.flags & proto::flags::kEvicted) != 0) == (e.v[0] == 7),
                     "EVICTED flag iff code evicted");
        break;
      }
      default:
        ORACLE_CHECK(*this, false, "unexpected op " + op);
    }
  }
}

void Oracle::CheckRelease(size_t slot, const Snapshot& after, const Emitted& e,
                          const Request* req) {
  JobExpect& je = jobs_[slot];
  const dataplane::JobTelemetry& t = after.jobs[slot].t;
  ORACLE_CHECK(*this, e.h.worker < t.workers.size(), "RELEASE of a rank of the job");
  const dataplane::WorkerTelemetry& w = t.workers[e.h.worker];
  const std::string rank = "RELEASE of rank " + S(e.h.worker) + " clock " + S(e.h.clock);
  ORACLE_CHECK(*this, w.joined && w.live && e.dst == w.addr,
               rank + ": to the address a live rank joined from");
  ORACLE_CHECK(*this, e.h.clock == w.done && !w.waiting,
               rank + ": the rank's done (" + S(w.done) + ") and it is released");
  ORACLE_CHECK(*this, e.v.size() == proto::release::kCount, rank + ": values");
  ORACLE_CHECK(*this,
               static_cast<uint32_t>(e.v[1]) == t.low && static_cast<uint32_t>(e.v[2]) == t.high,
               rank + ": low and high");
  const uint32_t epoch = static_cast<uint32_t>(e.v[0]);
  auto& last = je.last_release[e.h.worker];
  if (last && last->first == e.h.clock) {
    // A re-sent RELEASE answers the rank's retransmitted CLOCK.
    ORACLE_CHECK(*this,
                 req != nullptr && req->h.op == Op::kClock && req->h.worker == e.h.worker &&
                     e.from == req->local,
                 rank + ": re-sent only to a CLOCK of the rank, from the address it reached");
    ORACLE_CHECK(*this, epoch == last->second,
                 rank + ": a re-sent RELEASE carries the stored epoch " + S(last->second) +
                     ", got " + S(epoch));
    return;
  }
  // A new decision, sent from the address the rank's JOIN reached.
  ORACLE_CHECK(*this, e.from == w.local, rank + ": from the address the rank's JOIN reached");
  ORACLE_CHECK(*this, epoch == EpochFor(t, e.h.clock),
               rank + ": epoch " + S(epoch) + " is not the bank in force for the clock (" +
                   S(EpochFor(t, e.h.clock)) + ")");
  ORACLE_CHECK(*this, !last || epoch >= last->second,
               rank + ": epoch went back from " + S(last ? last->second : 0) + " to " + S(epoch));
  auto [it, inserted] = je.epoch_of_clock.emplace(e.h.clock, epoch);
  // Finding epoch-split-after-all-evicted: with no live rank the old bank
  // retires although an evicted rank still waits for a clock it judges.
  ORACLE_CHECK(*this, it->second == epoch || Tolerated("epoch-split-after-all-evicted"),
               std::string(it->second != epoch ? "[epoch-split-after-all-evicted] " : "") + rank +
                   ": judged by epoch " + S(epoch) +
                   ", another rank's RELEASE of the same "
                   "clock by epoch " +
                   S(it->second));
  last = std::make_pair(e.h.clock, epoch);
  if (t.finished) return;  // a finished job releases every CLOCK at once

  // Not beyond the policy that judged it (the state after the action is the
  // one it was judged in: nothing changes after the barrier decides).
  auto params = je.params_of_epoch.find(epoch);
  ORACLE_CHECK(*this, params != je.params_of_epoch.end(), rank + ": unknown epoch " + S(epoch));
  const std::string why = Ineligible(t, params->second, e.h.clock);
  ORACLE_CHECK(*this, why.empty(), rank + ": " + why);
}

std::string Ineligible(const dataplane::JobTelemetry& t, const dataplane::BarrierParams& p,
                       uint32_t clock) {
  if (clock == 0 && proto::ClockDiff(t.low, 0) < 0) {
    return "clock 0 before every live rank completed it";
  }
  std::vector<int64_t> offsets;
  for (const dataplane::WorkerTelemetry& x : t.workers) {
    if (x.live) offsets.push_back(proto::ClockDiff(x.done, t.low));
  }
  if (offsets.empty()) return "";
  std::sort(offsets.begin(), offsets.end(), std::greater<>());
  const size_t k = std::min<size_t>(p.quorum, offsets.size());
  const uint32_t low_k = t.low + static_cast<uint32_t>(offsets[k - 1]);
  if (p.window != dataplane::BarrierParams::kUnbounded &&
      proto::ClockDiff(clock, low_k) > int64_t{p.window}) {
    return "beyond the window of " + p.ToString() + " (low_k " + S(low_k) + ")";
  }
  if (p.lag != dataplane::BarrierParams::kUnbounded &&
      proto::ClockDiff(clock, t.low) > int64_t{p.lag}) {
    return "beyond the lag bound of " + p.ToString() + " (low " + S(t.low) + ")";
  }
  return "";
}

void Oracle::CheckReadReply(size_t slot, const Emitted& e) {
  const JobExpect& je = jobs_[slot];
  ORACLE_CHECK(*this, e.h.row < je.config.rows() && e.v.size() == je.config.RowLength(e.h.row),
               "READ_REPLY carries the row");
  if (e.h.flags & proto::flags::kSaturated) return;  // clamping depends on the order
  const size_t base = size_t{e.h.row} * je.config.row_width;
  if (!(e.h.flags & proto::flags::kExact)) {
    // The live table: every applied update.
    for (size_t i = 0; i < e.v.size(); ++i) {
      // Finding live-read-unflagged-saturation: visible + pending clamped
      // in the reply, but neither the reply nor the job says SATURATED.
      const int64_t sum = je.sum[base + i];
      const bool clamped =
          sum != static_cast<int32_t>(sum) && e.v[i] == (sum > 0 ? INT32_MAX : INT32_MIN);
      if (clamped && Tolerated("live-read-unflagged-saturation")) continue;
      ORACLE_CHECK(*this, e.v[i] == je.sum[base + i],
                   std::string(clamped ? "[live-read-unflagged-saturation] " : "") +
                       "READ_REPLY (live) element " + S(i) + ": " + std::to_string(e.v[i]) +
                       ", every applied update sums to " + std::to_string(je.sum[base + i]));
    }
    return;
  }
  if (e.h.flags & proto::flags::kFinished) return;  // see docs/fuzzing.md
  // EXACT: every update of clocks < clock and none of clock.
  std::vector<int64_t> want(e.v.size(), 0);
  for (const JobExpect::Inc& inc : je.incs) {
    if (inc.row != e.h.row || proto::ClockDiff(inc.clock, e.h.clock) >= 0) continue;
    for (size_t i = 0; i < want.size(); ++i) want[i] += inc.values[i];
  }
  for (size_t i = 0; i < e.v.size(); ++i) {
    ORACLE_CHECK(*this, e.v[i] == want[i],
                 "EXACT READ_REPLY at clock " + S(e.h.clock) + " row " + S(e.h.row) + " element " +
                     S(i) + ": " + std::to_string(e.v[i]) + ", updates of earlier clocks sum to " +
                     std::to_string(want[i]));
  }
}

void Oracle::CheckNack(size_t slot, const Snapshot& after, const Emitted& e) {
  const JobExpect& je = jobs_[slot];
  const uint32_t rows = je.config.rows();
  std::vector<bool> have(rows, false);
  uint32_t received = 0;
  for (const auto& [rank, clock, row] : je.applied) {
    if (rank == e.h.worker && clock == e.h.clock) {
      have.at(row) = true;
      ++received;
    }
  }
  ORACLE_CHECK(*this, !e.v.empty(), "NACK carries [received, ...]");
  ORACLE_CHECK(*this,
               static_cast<uint32_t>(e.v[0]) == received &&
                   after.jobs[slot].t.workers.at(e.h.worker).rows_this_clock == received,
               "NACK received " + std::to_string(e.v[0]) + ", rows applied " + S(received));
  if (e.v.size() < 2) return;
  const uint32_t scan_end = static_cast<uint32_t>(e.v[1]);
  ORACLE_CHECK(*this, scan_end <= rows, "NACK scan_end within the rows");
  // Every row still to send is listed or >= scan_end; every listed row is missing.
  std::vector<bool> listed(rows, false);
  for (size_t i = proto::nack::kFirstMissing; i < e.v.size(); ++i) {
    const uint32_t r = static_cast<uint32_t>(e.v[i]);
    ORACLE_CHECK(*this, r < scan_end && !have[r] && !listed[r],
                 "NACK lists row " + S(r) + ": arrived, listed twice or beyond scan_end");
    listed[r] = true;
  }
  for (uint32_t r = 0; r < scan_end; ++r) {
    ORACLE_CHECK(*this, have[r] || listed[r],
                 "NACK: missing row " + S(r) + " is neither listed nor >= scan_end");
  }
}

}  // namespace serene::fuzz
