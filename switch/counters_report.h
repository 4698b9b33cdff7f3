// The counters report: what the switch did, as text for the log or stdout
// (serene-switch prints it at exit; docs/switch.md explains each line).
//
// Global lines first (ports, fault injection, packets no job could claim,
// parse errors by proto::ParseErrorName), then per job (requests by op,
// drops by dataplane::DropReasonName, barrier state) and per rank. Zero drop
// and parse-error counters are left out so that what went wrong stands out.
//
// Reads a consistent snapshot of each job (Pipeline::Telemetry); safe to call
// while the switch runs.
#pragma once

#include <string>

#include "dataplane/pipeline.h"
#include "switch/switch_server.h"

namespace serene::switchd {

std::string FormatCountersReport(const dataplane::Pipeline& pipeline, const ServerCounters& server);

}  // namespace serene::switchd
