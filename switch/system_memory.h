// SystemMemory: the memory budget of the switch daemon (a
// dataplane::MemoryBudgetSource), read afresh at each job admission from
//
//   - the host: MemAvailable in /proc/meminfo;
//   - the switch's memory cgroup, found through /proc/self/cgroup and the
//     cgroup mounts in /proc/self/mountinfo: cgroup v2 (`0::PATH`,
//     memory.max, "max" = no limit, memory.current) or, on a host whose
//     memory controller is in a v1 hierarchy, v1 (memory.limit_in_bytes,
//     memory.usage_in_bytes; 2^62 or more = no limit). The cgroup and each
//     of its ancestors up to the mount's root are read, and the tightest
//     limit wins: a cgroup's room is its limit less what it holds, not
//     counting inactive file pages (memory.stat's inactive_file, which the
//     kernel reclaims before it runs out: the "working set" of container
//     runtimes).
//
// The budget is the smaller of the two. Files that are missing or cannot be
// parsed are skipped (no cgroup, no memory controller: the host's memory
// alone); if neither source can be read there is no budget (nullopt).
//
// The paths are injectable so that tests parse real files in a temporary
// directory. Thread-safe (Read() only reads files).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "dataplane/memory_budget.h"

namespace serene::switchd {

struct SystemMemoryPaths {
  std::string meminfo = "/proc/meminfo";
  std::string self_cgroup = "/proc/self/cgroup";
  std::string mountinfo = "/proc/self/mountinfo";
};

// Where the switch's memory cgroup is.
struct CgroupLocation {
  int version = 2;        // 1 or 2
  std::string cgroup;     // as /proc/self/cgroup names it ("/a/b")
  std::string directory;  // its directory under the cgroup mount
};

// The room a memory cgroup leaves, at its tightest level.
struct CgroupRoom {
  int version = 2;        // 1 or 2
  std::string cgroup;     // the limiting cgroup, as /proc/self/cgroup names it ("/a/b")
  std::string directory;  // its directory under the cgroup mount
  uint64_t limit = 0;     // bytes: memory.max / memory.limit_in_bytes
  uint64_t in_use = 0;    // bytes: current / usage, less inactive_file
  uint64_t room() const { return limit > in_use ? limit - in_use : 0; }
};

class SystemMemory : public dataplane::MemoryBudgetSource {
 public:
  explicit SystemMemory(SystemMemoryPaths paths = {});

  std::optional<dataplane::MemoryBudget> Read() const override;

  // MemAvailable in bytes; nullopt if it cannot be read.
  std::optional<uint64_t> HostAvailable() const;
  // The process's memory cgroup (the v1 memory hierarchy's if there is one,
  // else v2's); nullopt if neither /proc/self/cgroup nor the mounts show one.
  std::optional<CgroupLocation> Location() const;
  // The switch's memory cgroup at its tightest limited level; nullopt if it
  // has no memory cgroup, or neither it nor an ancestor sets a limit.
  std::optional<CgroupRoom> Cgroup() const;

 private:
  const SystemMemoryPaths paths_;
};

}  // namespace serene::switchd
