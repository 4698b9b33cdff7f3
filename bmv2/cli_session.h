// CliSession: one long-lived simple_switch_CLI process, BMv2's Thrift runtime
// client, driven over pipes. Commands are the CLI's own (table_add,
// register_read, counter_read, mirroring_add, ...; docs/p4.md "Control").
//
// Each batch of commands is written at once, followed by a marker the CLI
// does not know: its "*** Unknown syntax: <marker>" line ends the batch, so
// a batch costs one round of pipe I/O however many commands it holds. The
// CLI prints an error line instead of a result when a command fails; Run()
// turns the first such line into a Status naming the command.
//
// Every wait has a deadline: a CLI that stops answering (simple_switch gone)
// makes Run() fail with Unavailable, and the session is dead from then on.
//
// Thread-safe: batches are serialized.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"

namespace serene::bmv2 {

class CliSession {
 public:
  // Starts `cli` (e.g. /opt/p4/bin/simple_switch_CLI) against the Thrift
  // server on 127.0.0.1:`thrift_port` of the network namespace at `netns`
  // (simple_switch's own, bmv2/netns.h; empty: this process's) and checks
  // that it answers.
  static Result<std::unique_ptr<CliSession>> Start(const std::string& cli, int thrift_port,
                                                   const std::string& netns,
                                                   std::chrono::milliseconds timeout);
  ~CliSession();
  CliSession(const CliSession&) = delete;
  CliSession& operator=(const CliSession&) = delete;

  // Runs `commands` in order; returns each command's output (its lines
  // joined by '\n', prompts removed). Fails on the first command whose output
  // is an error, naming it; the commands after it still ran.
  Result<std::vector<std::string>> Run(const std::vector<std::string>& commands);

  // Conveniences over Run().
  Status RunAll(const std::vector<std::string>& commands);
  // register_read NAME INDEX for each index, in one batch.
  Result<std::vector<uint64_t>> ReadRegisters(const std::string& name,
                                              const std::vector<uint32_t>& indices);
  // counter_read NAME INDEX (packets) for each index, in one batch.
  Result<std::vector<uint64_t>> ReadCounters(const std::string& name,
                                             const std::vector<uint32_t>& indices);
  // table_add ...: returns the entry handle.
  Result<uint64_t> TableAdd(const std::string& command);

 private:
  CliSession(pid_t pid, int to_cli, int from_cli, std::chrono::milliseconds timeout);
  // `command NAME INDEX` for each index, each answer through `parse`.
  Result<std::vector<uint64_t>> ReadValues(const std::string& command, const std::string& name,
                                           const std::vector<uint32_t>& indices,
                                           Result<uint64_t> (*parse)(const std::string&));
  // Reads until the line "*** Unknown syntax: <marker>"; returns what came before.
  Result<std::string> ReadUntil(const std::string& marker);
  void Kill();

  std::mutex mu_;
  pid_t pid_;
  int to_cli_;
  int from_cli_;
  const std::chrono::milliseconds timeout_;
  uint64_t next_marker_ = 0;
  std::string pending_;  // bytes read past the last marker
  bool dead_ = false;
};

// The value in a register_read answer ("NAME[3]= 42"); nullopt-like error if
// the line does not have that shape.
Result<uint64_t> ParseRegisterValue(const std::string& output);
// The packet count in a counter_read answer ("NAME[3]=  BmCounterValue(packets=5, bytes=9)").
Result<uint64_t> ParseCounterPackets(const std::string& output);

}  // namespace serene::bmv2
