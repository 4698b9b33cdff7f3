// Operator metrics in the Prometheus text exposition format (version 0.0.4):
// what `serene-switch --metrics HOST:PORT` serves at /metrics
// (switch/metrics_http.h; docs/metrics.md lists every metric).
//
// FormatMetrics is a pure function of a snapshot (MetricsSnapshot): the
// telemetry of every job, the data plane's global counters, the ports'
// counters, the control plane's counters and the time of the snapshot. Per
// job and per rank series carry the labels job_id="J" and rank="R"; per-reason
// series reason="..." (dataplane::DropReasonName), op="..." (proto::OpName)
// and kind="..." (proto::ParseErrorName). Job keys are never written: the
// formatter reads the job's id and geometry from its config, nothing else.
//
// Clocks are written as numbers, with -1 for "no clock yet" (kNoClock).
// Durations are seconds, measured against `now` (steady-clock nanoseconds,
// the time base of the data plane's time stamps).
//
// Thread safety: the functions here are pure. SnapshotMetrics reads the
// pipeline through its thread-safe API (each job's telemetry is consistent
// on its own; jobs are read one after the other).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/consts.h"
#include "dataplane/counters.h"
#include "dataplane/pipeline.h"
#include "dataplane/telemetry.h"
#include "switch/switch_server.h"

namespace serene::switchd {

// Counters of the control plane (runtime API and the daemon's own
// decisions), kept by the caller and passed in at each scrape.
struct ControlPlaneCounters {
  uint64_t rpcs = 0;               // runtime API calls received
  uint64_t unauthenticated = 0;    // calls refused for a missing or wrong token
  uint64_t invalid_argument = 0;   // calls refused for a bad argument
  uint64_t silence_evictions = 0;  // ranks evicted for silence (JobConfig::evict_after_ms)
};

// Everything one scrape shows.
struct MetricsSnapshot {
  std::vector<dataplane::JobTelemetry> jobs;  // in the order written (by job id)
  dataplane::GlobalCounters global;
  ServerCounters server;
  ControlPlaneCounters control;
  dataplane::Timestamp now = 0;  // steady-clock ns: the time base of wait_since/last_seen
};

// Reads every job's telemetry (in JobIds() order; a job deleted meanwhile is
// skipped) and the pipeline's global counters.
MetricsSnapshot SnapshotMetrics(const dataplane::Pipeline& pipeline, const ServerCounters& server,
                                const ControlPlaneCounters& control, dataplane::Timestamp now);

// Appends the exposition of `snapshot` to *out: for each metric family one
// `# HELP` and one `# TYPE` line followed by all its samples.
void AppendMetrics(const MetricsSnapshot& snapshot, std::string* out);
std::string FormatMetrics(const MetricsSnapshot& snapshot);

// SnapshotMetrics + FormatMetrics: the body of one scrape.
std::string RenderMetrics(const dataplane::Pipeline& pipeline, const ServerCounters& server,
                          const ControlPlaneCounters& control, dataplane::Timestamp now);

// A label value as the format requires it inside double quotes: backslash,
// double quote and line feed escaped as \\, \" and \n.
void AppendEscapedLabelValue(std::string_view value, std::string* out);
std::string EscapeLabelValue(std::string_view value);

}  // namespace serene::switchd
