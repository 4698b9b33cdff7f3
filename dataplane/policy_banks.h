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

// The bank that judges CLOCK(clock).
const PolicyBank& BankFor(const JobState& job, uint32_t clock);

// Installs `params` in the idle bank (see above). nullopt: the earliest legal clock.
// Fails with FailedPrecondition if a change is still pending or X is too early.
Result<PolicyChange> InstallPolicy(JobState& job, const BarrierParams& params,
                                   std::optional<uint32_t> effective_clock);

// Retires the old bank once every live rank completed the swap clock.
// Returns true if the banks flipped. Call after the barrier summary changes.
bool MaybeRetireBank(JobState& job);

}  // namespace serene::dataplane
