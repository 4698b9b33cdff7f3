// Where a worker tool (serene-train, serene-bench) takes its job key from
// (docs/security.md, "Secrets"), in this order:
//   1. --key-file FILE: a private file holding the key (common/secret_file.h);
//   2. the environment variable SERENE_KEY (a process's environment is
//      readable only by its owner and root, unlike its command line);
//   3. --key K on the command line: kept for tests and throwaway runs on a
//      host of one's own; every local user can read it in /proc/PID/cmdline,
//      so the tool warns (ArgvKeyWarning);
//   4. the tool's default.
// Giving both --key and --key-file is an error.
//
// Pure function of its arguments and the file it reads; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"

namespace serene {

inline constexpr char kKeyEnvVar[] = "SERENE_KEY";

struct WorkerKeySources {
  std::optional<std::string> key;       // --key, as typed
  std::optional<std::string> key_file;  // --key-file
  const char* env = nullptr;            // getenv(kKeyEnvVar)
  uint32_t fallback = 0;                // the tool's default
};

struct WorkerKey {
  uint32_t key = 0;
  bool from_argv = false;  // came from --key: warn (ArgvKeyWarning)
};

// The key, or an error naming the flag, the variable or the file at fault.
Result<WorkerKey> ResolveWorkerKey(const WorkerKeySources& sources);

// What a tool logs when its key came from the command line.
std::string ArgvKeyWarning();

}  // namespace serene
