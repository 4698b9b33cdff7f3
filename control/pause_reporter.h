// PauseReporter: a rank's side of the runtime API's ReportPause. serene-train
// tells the switch how long each evaluation kept it from its steps, so that a
// policy can tell that pause from a straggler (control/pause_ledger.h).
//
// Reporting is best effort and bounded: a call waits at most `timeout`; after
// kMaxFailures failed calls in a row the reporter stops calling (and says so
// once), and training goes on: the policy then sees the pauses as slow steps,
// as it would without a reporter.
//
// Thread-compatible: one rank's training thread calls it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "control/runtime_client.h"

namespace serene::control {

class PauseReporter {
 public:
  static constexpr int kMaxFailures = 3;

  // `address` is the switch's runtime API (HOST:PORT), `token` its token or "".
  static Result<std::unique_ptr<PauseReporter>> Create(
      const std::string& address, const std::string& token, uint32_t job, uint32_t rank,
      std::chrono::milliseconds timeout = std::chrono::milliseconds(250));

  // Reports one pause of `seconds` (ignored if not > 0).
  void Report(double seconds);

  uint64_t reported() const { return reported_; }
  uint64_t failures() const { return failures_; }
  bool stopped() const { return failed_in_a_row_ >= kMaxFailures; }

 private:
  PauseReporter(std::unique_ptr<RuntimeClient> client, uint32_t job, uint32_t rank)
      : client_(std::move(client)), job_(job), rank_(rank) {}

  std::unique_ptr<RuntimeClient> client_;
  const uint32_t job_;
  const uint32_t rank_;
  uint64_t reported_ = 0;
  uint64_t failures_ = 0;
  int failed_in_a_row_ = 0;
};

}  // namespace serene::control
