// ProcessGroup: runs N copies of a function in forked child processes and
// collects one line of output from each, for tools that need real separate
// worker processes (serene-bench) without a launcher.
//
// Not thread-safe; fork before starting threads in the parent.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"

namespace serene::loadgen {

struct ChildResult {
  int exit_code = -1;    // 128 + signal if a signal ended it
  std::string line;      // what the child returned
  bool stopped = false;  // ended by the parent because another child failed
};

// Forks `n` children; child i runs body(i), whose string is sent to the
// parent, then exits (0 if body returned, 1 if it threw). Waits for all,
// reading every child's output as it comes. A child that fails — exits
// non-zero, is killed, or returns a line `failed(line)` says is a failure —
// ends the others at once (SIGTERM, then SIGKILL after a grace period): they
// would otherwise wait for it until their own deadlines. Never blocks on one
// child while another has finished.
Result<std::vector<ChildResult>> RunChildren(
    size_t n, const std::function<std::string(size_t)>& body,
    const std::function<bool(const std::string&)>& failed = nullptr);

}  // namespace serene::loadgen
