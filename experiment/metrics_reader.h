// Reading back the metrics JSON that every serene-train rank writes
// (train/metrics.h, MetricsToJson; docs/training.md lists the fields).
//
// The reader is strict about what the report needs (rank, world_size,
// backend, stop_reason, iterations, job_completion_s, wait_s) and lenient
// about the rest: a missing optional field keeps RunMetrics' default, and
// null numbers are NaN, as the writer means them. The per-iteration log is
// not part of the JSON and stays empty.
//
// Pure functions (ReadMetricsFile reads one file); thread-compatible.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "train/metrics.h"

namespace serene::experiment {

// Parses one rank's metrics document; `source` names it in errors.
// Errors: InvalidArgument for malformed JSON, a missing required field or a
// field of the wrong type, naming `source` and the field.
Result<train::RunMetrics> ParseMetricsJson(std::string_view text, const std::string& source);

// Reads and parses a metrics file. Errors: NotFound if it does not exist.
Result<train::RunMetrics> ReadMetricsFile(const std::string& path);

// "step_limit" -> StopReason::kStepLimit, ... (StopReasonName's inverse).
// Errors: InvalidArgument for any other name.
Result<train::StopReason> ParseStopReason(std::string_view name);

}  // namespace serene::experiment
