#include "control/pause_reporter.h"

#include <spdlog/spdlog.h>

namespace serene::control {

Result<std::unique_ptr<PauseReporter>> PauseReporter::Create(const std::string& address,
                                                             const std::string& token,
                                                             uint32_t job, uint32_t rank,
                                                             std::chrono::milliseconds timeout) {
  auto client = RuntimeClient::Create(address, token, timeout);
  if (!client.ok()) return client.status();
  return std::unique_ptr<PauseReporter>(new PauseReporter(std::move(*client), job, rank));
}

void PauseReporter::Report(double seconds) {
  if (!(seconds > 0) || stopped()) return;
  const auto pause = std::chrono::nanoseconds(static_cast<int64_t>(seconds * 1e9 + 0.5));
  auto r = client_->ReportPause(job_, rank_, pause);
  if (r.ok()) {
    ++reported_;
    failed_in_a_row_ = 0;
    return;
  }
  ++failures_;
  if (++failed_in_a_row_ < kMaxFailures) {
    spdlog::warn("rank {}: cannot report an evaluation's pause to the switch: {}", rank_,
                 r.status().message());
  } else {
    spdlog::warn(
        "rank {}: cannot report an evaluation's pause to the switch ({} failures in a row, the "
        "last: {}); no more reports: a policy sees this rank's evaluations as slow steps",
        rank_, failed_in_a_row_, r.status().message());
  }
}

}  // namespace serene::control
