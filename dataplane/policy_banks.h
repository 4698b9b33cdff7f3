// Policy banks stage: two banks of barrier parameters and the hot swap
// (DESIGN.md §4 "Hot swap").
//
// A change is installed in the idle bank with an effective clock X; the
// decision for CLOCK(c) uses the new bank iff c >= X, so every rank completing
// the same clock is judged by the same bank, and every RELEASE carries the
// epoch of the bank that judged it. X must be later than every clock already
// released (nobody has been judged for it yet). Once the slowest live rank
// has completed X no decision for an earlier clock remains and the old bank
// is retired; only then may the next change be installed.
//
// X may be at most kSwapHorizon clocks after the earliest legal clock (a
// change far in the future would block every other change for as long).
// A pending change can be withdrawn (CancelPolicyChange) as long as no rank
// has completed a clock >= X: until then the new bank has judged nothing (no
// CLOCK decision, no RELEASE epoch, no EXACT flag of a read came from it),
// so dropping it leaves every clock judged by the one bank in force. Once
// some rank has completed X, the change has begun to take effect and can
// only run to its end.
//
// REQUIRES: the caller holds job.mu exclusive (shared suffices for the
// read-only checks, which INC and READ run).
#pragma once

#include <cstdint>
#include <optional>

#include "common/status.h"
#include "dataplane/barrier_params.h"
#include "dataplane/job_state.h"
#include "dataplane/telemetry.h"

namespace serene::dataplane {

// How far ahead of the earliest legal clock a change may take effect.
inline constexpr uint32_t kSwapHorizon = 1'000'000;

// InvalidArgument naming the horizon if effective clock `x` is more than
// kSwapHorizon clocks after `earliest` (the clock after the highest
// released); Ok otherwise (a clock before `earliest` is not its business).
Status CheckSwapHorizon(uint16_t job, uint32_t x, uint32_t earliest);

// The bank that judges CLOCK(clock).
const PolicyBank& BankFor(const JobState& job, uint32_t clock);

// Installs `params` in the idle bank (see above). nullopt: the earliest legal clock.
// Fails with FailedPrecondition if a change is still pending or X is too early.
Result<PolicyChange> InstallPolicy(JobState& job, const BarrierParams& params,
                                   std::optional<uint32_t> effective_clock);

// Withdraws the pending change (see above) and returns it. `epoch`, if
// given, must be the pending change's (so that an operator cancels the change
// he saw, not a newer one). FailedPrecondition if no change is pending, or a
// rank has completed the swap clock; InvalidArgument for another epoch. The
// cancelled epoch is never reused.
Result<PolicyChange> CancelPolicy(JobState& job, std::optional<uint32_t> epoch);

// Retires the old bank once every live rank completed the swap clock.
// Returns true if the banks flipped. Call after the barrier summary changes.
bool MaybeRetireBank(JobState& job);

}  // namespace serene::dataplane
