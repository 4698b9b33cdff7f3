#include "common/worker_key.h"

#include "common/parse.h"
#include "common/secret_file.h"

namespace serene {

Result<WorkerKey> ResolveWorkerKey(const WorkerKeySources& sources) {
  if (sources.key && sources.key_file) {
    return Status::InvalidArgument("give the job key once: --key-file or --key, not both");
  }
  WorkerKey out;
  if (sources.key_file) {
    Result<uint32_t> key = ReadKeyFile(*sources.key_file);
    if (!key.ok()) return Status::InvalidArgument("--key-file: " + key.status().message());
    out.key = *key;
  } else if (sources.key) {
    if (!ParseUint32(*sources.key, &out.key)) {
      return Status::InvalidArgument("--key '" + *sources.key +
                                     "': expected a 32-bit decimal or 0x-hex number");
    }
    out.from_argv = true;
  } else if (sources.env != nullptr) {
    if (!ParseUint32(sources.env, &out.key)) {
      return Status::InvalidArgument(std::string(kKeyEnvVar) +
                                     ": expected a 32-bit decimal or 0x-hex number");
    }
  } else {
    out.key = sources.fallback;
  }
  return out;
}

std::string ArgvKeyWarning() {
  return "the job key is on the command line, where every local user can read it "
         "(/proc/PID/cmdline); use --key-file FILE (mode 0600) or the environment variable " +
         std::string(kKeyEnvVar) + " instead";
}

}  // namespace serene
