#include "control/job_admission.h"

#include <fstream>
#include <string>

#include "dataplane/job_state.h"

namespace serene::control {
namespace {

std::string MiB(uint64_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB"; }

}  // namespace

std::optional<uint64_t> AvailableMemoryBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  uint64_t value = 0;
  while (in >> key >> value) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return value * 1024;  // the file's unit is kB
  }
  return std::nullopt;
}

Status AdmitJob(const dataplane::JobConfig& config, std::optional<uint64_t> available) {
  if (!available) available = AvailableMemoryBytes();
  if (!available) return Status::Ok();
  const uint64_t need = dataplane::JobStateBytes(config);
  if (need <= *available) return Status::Ok();
  return Status::ResourceExhausted(
      "job " + std::to_string(config.id) + " (workers=" + std::to_string(config.workers) +
      ", elements=" + std::to_string(config.elements) + ", row=" +
      std::to_string(config.row_width) + ") needs " + MiB(need) +
      " of switch memory but the host has " + MiB(*available) +
      " available; use fewer elements or workers, or a larger row width");
}

}  // namespace serene::control
