// --key-file and --key for the tools that join a job as workers (serene-train,
// serene-bench): the key comes from the file, else SERENE_KEY, else --key
// (warned about), else the tool's default (common/worker_key.h,
// docs/security.md "Secrets").
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "common/worker_key.h"

namespace serene::apps {

struct KeyFlags {
  std::optional<std::string> key;
  std::optional<std::string> key_file;
};

// `prefix` starts each help text ("serene: " or ""); `fallback` is the
// default the help names.
inline void AddKeyFlags(CLI::App* app, KeyFlags* flags, const std::string& prefix,
                        const std::string& fallback) {
  app->add_option("--key-file", flags->key_file,
                  prefix + "file holding the job key (mode 0600); or the environment variable " +
                      kKeyEnvVar + " (default " + fallback + ")");
  app->add_option("--key", flags->key,
                  prefix +
                      "job key, decimal or 0x-hex; visible to every local user: prefer "
                      "--key-file or " +
                      kKeyEnvVar);
}

inline Result<WorkerKey> ResolveKeyFlags(const KeyFlags& flags, uint32_t fallback) {
  WorkerKeySources sources;
  sources.key = flags.key;
  sources.key_file = flags.key_file;
  sources.env = std::getenv(kKeyEnvVar);
  sources.fallback = fallback;
  return ResolveWorkerKey(sources);
}

}  // namespace serene::apps
