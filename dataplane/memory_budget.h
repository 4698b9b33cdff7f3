// MemoryBudget: how much memory the switch may still give to a new job's
// registers, as its environment says now (the host's available memory, a
// cgroup's limit). Pipeline::CreateJob reads it while it admits a job, under
// its admission lock, and refuses a job that does not fit before allocating
// anything (docs/control.md, "Admission").
//
// The data plane does not read /proc or /sys itself: the daemon injects a
// MemoryBudgetSource that does (switch/system_memory.h). Tests and the
// simulator may pass none: then only the job limit and duplicate ids bound
// admission.
//
// Thread-safety: Read() is called from concurrent CreateJob calls, one at a
// time (under the pipeline's admission lock), but from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace serene::dataplane {

struct MemoryBudget {
  uint64_t available = 0;  // bytes that may be allocated now
  // How it was measured, for error messages, e.g. "the host has 21873 MiB
  // available (MemAvailable)" or "cgroup /jobs/switch allows 512 MiB
  // (memory.max) and 301 MiB of it are in use (memory.current less
  // inactive_file)".
  std::string source;
  // What an operator can do about it besides a smaller job, e.g. "raise
  // memory.max of cgroup /jobs/switch"; may be empty.
  std::string remedy;
};

class MemoryBudgetSource {
 public:
  MemoryBudgetSource() = default;
  virtual ~MemoryBudgetSource() = default;
  MemoryBudgetSource(const MemoryBudgetSource&) = delete;
  MemoryBudgetSource& operator=(const MemoryBudgetSource&) = delete;

  // The budget now; nullopt if nothing could be measured (a job is then not
  // refused for memory).
  virtual std::optional<MemoryBudget> Read() const = 0;
};

}  // namespace serene::dataplane
