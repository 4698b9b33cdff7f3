// Operation and the event loop: how every blocking call of the client waits.
//
// A call (Join, Pull, Clock, Leave) is one Operation: Start() sends its first
// requests; then one loop feeds it every reply of this rank (OnReply) and
// calls it when its next timer falls due (OnTimer: retransmissions, probes),
// until the operation has an outcome. There is one deadline rule for every
// call: it fails once the operation has made no progress — as the operation
// itself defines it, by returning kProgress — for ClientOptions::deadline.
// The error then says what it waited for, and whether the switch had gone
// silent or was answering without the operation getting anywhere (Stalled).
// So every way out of a wait is the outcome, an I/O error, or the deadline.
//
// Not thread-safe: one operation at a time per client.
#pragma once

#include <chrono>
#include <optional>

#include "client/early_rows.h"
#include "client/transport.h"
#include "common/status.h"
#include "proto/codec.h"

namespace serene::client {

class Operation {
 public:
  enum class Reply {
    kStale,     // not for this operation (a late duplicate, another request's)
    kHandled,   // understood, but the operation is no closer to its end
    kProgress,  // the operation advanced: the deadline starts again
  };

  virtual ~Operation() = default;

  // Sends the first requests.
  virtual Status Start() = 0;
  // One reply of this job and rank.
  virtual Reply OnReply(const proto::PacketView& v) = 0;
  // When OnTimer wants to run next; time_point::min() for at once.
  virtual SteadyClock::time_point NextTimer() const = 0;
  // Retransmissions and probes; an error ends the call.
  virtual Status OnTimer(SteadyClock::time_point now) = 0;
  // The error of a call that made no progress for the deadline;
  // `switch_silent`: nothing at all was heard from the switch meanwhile.
  virtual Status Stalled(bool switch_silent) const = 0;

  // Set once the operation ended: OK, or why it failed.
  const std::optional<Status>& outcome() const { return outcome_; }

 protected:
  void Finish(Status s) {
    if (!outcome_) outcome_ = std::move(s);
  }

 private:
  std::optional<Status> outcome_;
};

// Runs `op` to its outcome (see above). Group rows `op` has no use for go to
// `early` (unless null), for the pull of their clock.
Status RunOperation(Transport& transport, Operation& op, ClientStats* stats,
                    EarlyRows* early = nullptr);

// DeadlineExceeded: the switch said nothing about `what` for the deadline.
Status SilenceError(const Transport& t, const std::string& what);
// FailedPrecondition: the switch refused `what` with the ERROR `error`.
Status Refused(const Transport& t, const std::string& what, const proto::PacketView& error);

// The ERROR's code, and whether it refuses a request of op `op` (an older
// switch that does not name the op: assume it does).
proto::ErrorCode ErrorCodeOf(const proto::PacketView& error);
// Whether `v` is a COOKIE answering a request of op `op` (docs/protocol.md,
// "Return routability": this address is not the rank's binding).
bool CookieAnswers(const proto::PacketView& v, proto::Op op);
// A COOKIE answering a JOIN: JOINs again at once with its cookie, unless the
// last JOIN already carried it (then the retransmission timer does).
Status JoinWithNewCookie(Transport& t);
bool ErrorRefuses(const proto::PacketView& error, proto::Op op);

}  // namespace serene::client
