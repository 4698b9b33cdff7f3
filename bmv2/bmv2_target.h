// Bmv2Target: the SwitchTarget of p4/serene.p4 running in BMv2's
// simple_switch. Jobs are `jobs` table entries plus register state, written
// through simple_switch_CLI (CliSession); what must be atomic with the
// barrier — policy installs, evictions, finishing a job, re-running the
// barrier pass — is asked of the data plane itself with kick packets
// (KickChannel). The contract is docs/p4.md "Control".
//
// Register space: each job gets a slot (per-job and per-rank registers) and
// ranges of the row and exactly-once tag arrays. Ranges are handed out in
// order and reclaimed all at once when the switch holds no job any more (every
// register array is then reset): a fresh range is all zeros, which is a job's
// initial state, so creating a job writes only its slot and its table entry.
//
// Limits of the P4 program (docs/p4.md "What the P4 version cannot do") are
// checked at CreateJob with a message naming the field.
//
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>

#include "bmv2/cli_session.h"
#include "bmv2/kick_channel.h"
#include "control/switch_target.h"

namespace serene::bmv2 {

// The program's compile-time capacities (p4/serene.p4's SERENE_* constants).
struct ProgramLimits {
  uint32_t max_width = 64;      // SERENE_MAX_W: values per row
  uint32_t max_ranks = 16;      // SERENE_MAX_RANKS
  uint32_t job_slots = 64;      // SERENE_JOB_SLOTS
  uint32_t row_slots = 8192;    // SERENE_ROW_SLOTS
  uint32_t tag_slots = 131072;  // SERENE_TAG_SLOTS
};

class Bmv2Target final : public control::SwitchTarget {
 public:
  // `cli` and `kicks` must be connected to the same simple_switch.
  // `switch_started` is when simple_switch started (its timestamps count
  // from there).
  Bmv2Target(std::unique_ptr<CliSession> cli, std::unique_ptr<KickChannel> kicks,
             ProgramLimits limits, std::chrono::steady_clock::time_point switch_started);

  std::vector<uint16_t> JobIds() const override;
  Result<dataplane::JobTelemetry> Telemetry(uint16_t job) const override;
  Result<dataplane::JobConfig> JobConfig(uint16_t job) const override;
  Status CreateJob(const dataplane::JobConfig& config) override;
  Status DeleteJob(uint16_t job) override;
  Result<control::TargetPolicyChange> SetPolicy(uint16_t job,
                                                const dataplane::BarrierParams& params,
                                                std::optional<uint32_t> effective_clock) override;
  // Unimplemented: the P4 program has no kick to withdraw a change, and a
  // cancel must be atomic with the CLOCKs the data plane judges.
  Result<dataplane::PolicyChange> CancelPolicyChange(uint16_t job,
                                                     std::optional<uint32_t> epoch) override;
  Result<control::TargetEviction> Evict(uint16_t job, uint16_t rank) override;
  Result<uint32_t> Finish(uint16_t job) override;
  dataplane::Timestamp Now() const override;

  // Evicts every joined, live rank of every job silent for at least its
  // job's evict_after (the software switch's SilenceEvictor; the P4 program
  // re-checks the silence atomically). Returns how many were evicted.
  uint32_t EvictSilent();

  // Drop and packet counters of the whole switch (global_drops), for the
  // exit report: {name, count}.
  Result<std::vector<std::pair<std::string, uint64_t>>> GlobalCounters() const;

 private:
  struct Job {
    dataplane::JobConfig config;
    uint32_t slot = 0;
    uint32_t row_base = 0;
    uint32_t tag_base = 0;
    uint32_t incarnation = 0;
    uint64_t handle = 0;  // the `jobs` table entry
  };
  Result<Job> Find(uint16_t job) const;
  Result<KickReply> KickJob(const Job& j, uint8_t op, uint16_t worker,
                            const std::vector<uint32_t>& values);
  // Writes zero to every register and counter cell of `slot`.
  Status ClearSlot(uint32_t slot);

  const std::unique_ptr<CliSession> cli_;
  const std::unique_ptr<KickChannel> kicks_;
  const ProgramLimits limits_;
  const std::chrono::steady_clock::time_point switch_started_;

  mutable std::mutex mu_;
  std::map<uint16_t, Job> jobs_;  // guarded by mu_
  uint32_t next_row_ = 0;         // guarded by mu_: first never-used row cell
  uint32_t next_tag_ = 0;         // guarded by mu_
  std::vector<bool> slot_used_;   // guarded by mu_: slot ever held a job since the last reset
  std::mt19937 incarnations_;     // guarded by mu_
  bool cookie_secret_set_ = false;  // guarded by mu_: the P4 cookie_secret register written
};

}  // namespace serene::bmv2
