// RunMetrics: what one rank measured during a training run, and its JSON and
// CSV forms (docs/training.md describes every field).
//
// Times are seconds of a monotonic clock. The run clock starts when
// Backend::Initialize returns (every rank holds the initial model), so
// job_completion_s is the time from the common start until this rank stopped.
// Values that do not apply (accuracy on a rank that does not evaluate, the
// time the target was reached on a run that did not reach it) are NaN in
// memory and null in JSON / empty in CSV.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace serene::train {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

enum class StopReason { kStepLimit, kTimeLimit, kTargetReached, kFinishedByPeer };
std::string_view StopReasonName(StopReason reason);

// One evaluation point, every eval_every steps (and at the end).
struct TimelinePoint {
  int64_t step = 0;          // completed iterations when the point was taken
  double time_s = 0;         // run clock
  double train_loss = kNaN;  // mean training loss of the iterations since the last point
  double accuracy = kNaN;    // test accuracy (evaluating ranks only)
  double test_loss = kNaN;   // mean test cross-entropy (evaluating ranks only)
};

// One training iteration.
struct IterationRecord {
  int64_t step = 0;    // 1-based
  double start_s = 0;  // run clock at the start of its Pull
  double pull_s = 0;
  double compute_s = 0;  // batch assembly + forward + backward + scaling (+ the compute floor's sleep)
  double sleep_s = 0;    // straggler injection
  double push_s = 0;
  double loss = 0;  // training loss of its batch
};

struct RunMetrics {
  // Configuration.
  std::string backend;
  int rank = 0;
  int world_size = 1;
  std::string model;
  size_t parameters = 0;
  uint64_t seed = 0;
  double learning_rate = 0;
  size_t batch_size = 0;
  std::string straggler = "none";  // pattern in force on this rank
  double target_accuracy = kNaN;
  int64_t max_steps = 0;    // 0 = no step limit
  double time_limit_s = 0;  // 0 = no time limit
  int64_t eval_every = 0;
  bool evaluates = false;  // whether this rank evaluates test accuracy
  size_t eval_samples = 0;

  // Outcome.
  StopReason stop_reason = StopReason::kStepLimit;
  int64_t iterations = 0;          // completed Pull-compute-Push iterations
  int64_t epochs = 0;              // completed passes over this rank's shard
  double init_s = 0;               // Backend::Initialize
  double job_completion_s = 0;     // run clock when the rank stopped
  double target_reached_s = kNaN;  // run clock when this rank measured the target
  double compute_s = 0;
  double pull_s = 0;
  double push_s = 0;
  double wait_s = 0;          // pull_s + push_s: time blocked synchronizing
  double barrier_wait_s = 0;  // part of wait_s the backend attributes to waiting for others
  double straggler_sleep_s = 0;
  int64_t slowed_iterations = 0;
  double eval_s = 0;
  double final_accuracy = kNaN;
  double final_test_loss = kNaN;
  // Serene backend: packets the client re-sent (READs and CLOCKs on a
  // timeout, INC rows a NACK asked for again; ClientStats). 0 for Gloo.
  uint64_t retransmissions = 0;
  std::vector<TimelinePoint> timeline;
  std::vector<IterationRecord> iteration_log;
};

// The metrics as a JSON document (without iteration_log, which goes to CSV).
std::string MetricsToJson(const RunMetrics& m);

// Writers; parent directories are created. Errors: IoError naming the path.
Status WriteMetricsJson(const RunMetrics& m, const std::string& path);
// Columns: step,time_s,train_loss,accuracy,test_loss.
Status WriteTimelineCsv(const RunMetrics& m, const std::string& path);
// Columns: step,start_s,pull_s,compute_s,sleep_s,push_s,loss.
Status WriteIterationsCsv(const RunMetrics& m, const std::string& path);

// Writes `model` (a rank's parameters in ModelLayout order) as raw float32
// in the host's byte order (little-endian on x86-64): two runs trained the
// same model iff their files are equal byte for byte. Errors: IoError.
Status WriteModelFile(std::span<const float> model, const std::string& path);

// Replaces every "{rank}" in `pattern` with `rank`.
std::string ExpandRankPattern(std::string pattern, int rank);

// Where a run's metrics go; empty paths are skipped, "{rank}" is expanded.
struct MetricsPaths {
  std::string json;
  std::string timeline_csv;
  std::string iterations_csv;
};
Status WriteMetrics(const RunMetrics& m, const MetricsPaths& paths);

}  // namespace serene::train
