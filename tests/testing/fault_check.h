// Fault checks for tests that run the real switch with --fault: its
// injectors' exit counters ("faults rx: offered=... delayed=N", printed by
// switch/counters_report.cc when it stops) parsed back, and the check that
// the faults a spec configures fired. A --fault the switch ignored, or an
// injector that does nothing, then fails the test instead of passing as a
// clean run (docs/reliability.md, the fault matrix).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace serene::testing {

// One direction's fault injector counters.
struct InjectorCounters {
  uint64_t offered = 0, delivered = 0, dropped = 0, duplicated = 0, reordered = 0, held_expired = 0,
           delayed = 0;
};

// The switch's injectors, from its exit counters (nullopt: no such line).
struct InjectorReport {
  std::optional<InjectorCounters> rx, tx;
};

// Parses "offered=N delivered=N ..." (what follows "faults rx: ").
InjectorCounters ParseInjectorCounters(const std::string& fields);
// Finds the "faults rx: ..." and "faults tx: ..." lines in a switch's output.
InjectorReport ParseInjectorReport(const std::string& output);

// gtest expectations: in each direction `spec` (a --fault spec) names,
// datagrams dropped, duplicated, reordered and delayed > 0 for each fault
// with a non-zero probability or delay; and, if `retransmissions` is given
// (every re-send: on a timeout or a NACK) and the spec loses requests, that
// it is > 0 (the ranks had to recover).
// `output` is shown on failure.
void ExpectFaultsFired(const std::string& spec, const InjectorReport& report,
                       std::optional<uint64_t> retransmissions, const std::string& output);

}  // namespace serene::testing
