// Admission of a job by the memory it needs: a job whose registers do not fit
// the host's available memory is refused with a message before anything is
// allocated (zeroing them would otherwise bring the OOM killer to the whole
// switch). Used for static jobs at start-up and for CreateJob.
#pragma once

#include <cstdint>
#include <optional>

#include "common/status.h"
#include "dataplane/job_config.h"

namespace serene::control {

// MemAvailable from /proc/meminfo, in bytes; nullopt if it cannot be read.
std::optional<uint64_t> AvailableMemoryBytes();

// ResourceExhausted naming the job, what it needs and what is available when
// dataplane::JobStateBytes(config) exceeds `available` (AvailableMemoryBytes()
// when nullopt; admitted if that is unknown too).
Status AdmitJob(const dataplane::JobConfig& config,
                std::optional<uint64_t> available = std::nullopt);

}  // namespace serene::control
