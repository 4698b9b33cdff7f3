#include <cstdlib>
#include <string>
#include <string_view>

#include "common/parse.h"
#include "include/serene/client.h"

namespace serene {
namespace {

// The first of `names` that is set, with its name.
const char* FirstEnv(std::initializer_list<const char*> names, const char** which) {
  for (const char* n : names) {
    const char* v = std::getenv(n);
    if (v != nullptr && *v != '\0') {
      *which = n;
      return v;
    }
  }
  return nullptr;
}

Status BadEnv(const char* name, const char* value, const std::string& expected) {
  return Status::InvalidArgument(std::string("environment variable ") + name + "='" + value +
                                 "' is not " + expected);
}

}  // namespace

Result<ClientOptions> ClientOptions::FromEnvironment(ClientOptions o) {
  const char* name = nullptr;
  uint32_t v = 0;
  if (const char* s = FirstEnv({"SERENE_SWITCH"}, &name)) o.switch_address = s;
  if (const char* s = FirstEnv({"SERENE_BIND"}, &name)) o.bind_address = s;
  if (const char* s = FirstEnv({"SERENE_JOB"}, &name)) {
    if (!ParseUint32(s, &v) || v < 1 || v > 65535) {
      return BadEnv(name, s, "a job id 1..65535");
    }
    o.job = static_cast<uint16_t>(v);
  }
  if (const char* s = FirstEnv({"SERENE_KEY"}, &name)) {
    if (!ParseUint32(s, &v)) return BadEnv(name, s, "a 32-bit decimal or 0x-hex key");
    o.key = v;
  }
  if (const char* s = FirstEnv(
          {"RANK", "SERENE_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}, &name)) {
    if (!ParseUint32(s, &v) || v > 65535) return BadEnv(name, s, "a rank 0..65535");
    o.rank = v;
  }
  if (const char* s = FirstEnv({"WORLD_SIZE", "SERENE_WORLD_SIZE", "OMPI_COMM_WORLD_SIZE",
                                "PMI_SIZE", "SLURM_NTASKS"},
                               &name)) {
    if (!ParseUint32(s, &v) || v < 1 || v > 65536) {
      return BadEnv(name, s, "a world size 1..65536");
    }
    o.world_size = v;
  }
  if (const char* s = FirstEnv({"SERENE_WINDOW"}, &name)) {
    if (!ParseUint32(s, &v) || v < 1 || v > 65536) {
      return BadEnv(name, s, "a window of 1..65536 packets");
    }
    o.window = v;
  }
  if (const char* s = FirstEnv({"SERENE_TIMEOUT_MS"}, &name)) {
    if (!ParseUint32(s, &v) || v < 1) return BadEnv(name, s, "a timeout in ms >= 1");
    o.initial_timeout = std::chrono::milliseconds(v);
    if (o.max_timeout < o.initial_timeout) o.max_timeout = o.initial_timeout;
  }
  if (const char* s = FirstEnv({"SERENE_DEADLINE_S"}, &name)) {
    if (!ParseUint32(s, &v) || v < 1) return BadEnv(name, s, "a deadline in s >= 1");
    o.deadline = std::chrono::seconds(v);
  }
  if (const char* s = FirstEnv({"SERENE_OFFLOAD"}, &name)) {
    const std::string_view text = s;
    if (text != "on" && text != "off") return BadEnv(name, s, "on or off");
    o.offload = text == "on";
  }
  if (const char* s = FirstEnv({"SERENE_GROUP"}, &name)) {
    const std::string_view text = s;
    if (text != "on" && text != "off") return BadEnv(name, s, "on or off");
    o.group = text == "on";
  }
  if (o.world_size != 0 && o.rank >= o.world_size) {
    return Status::InvalidArgument("rank " + std::to_string(o.rank) + " is not below world size " +
                                   std::to_string(o.world_size));
  }
  return o;
}

}  // namespace serene
