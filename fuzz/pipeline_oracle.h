// Oracle of the pipeline fuzzer: what the fuzzer knows about each job from
// what it did and what the pipeline said, and the invariants checked after
// every action (docs/fuzzing.md lists them and what is deliberately left out).
//
// The oracle never reads a register: it sees the pipeline only through its
// public API (Process results, emitted packets, Telemetry, Model,
// global_counters), so every check is a property a caller can rely on.
// A failed check prints the action and the property to stderr and aborts,
// which libFuzzer reports as a crash with the input that caused it.
//
// Not thread-safe; one Oracle per Pipeline.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "dataplane/pipeline.h"
#include "proto/codec.h"
#include "proto/endpoint.h"

namespace serene::fuzz {

// Everything the oracle compares across one action, read through the API.
struct JobSnapshot {
  bool exists = false;
  uint64_t generation = 0;  // the oracle's count of CreateJob calls for the slot
  dataplane::JobTelemetry t;
  std::vector<int32_t> model;
};
struct Snapshot {
  dataplane::GlobalCounters g;
  std::array<JobSnapshot, 2> jobs;
};

// A decoded emitted packet.
struct Emitted {
  proto::Endpoint dst;
  proto::Endpoint from;  // the switch address to send from (Output::Packet::src)
  proto::Header h;
  std::vector<int32_t> v;
};

// What the fuzzer knows about one job instance.
struct JobExpect {
  bool exists = false;
  uint64_t generation = 0;
  dataplane::JobConfig config;
  std::optional<uint32_t> incarnation;
  std::vector<int64_t> sum;  // exact sum of every INC reported kApplied
  struct Inc {
    uint32_t clock;
    uint32_t row;
    std::vector<int32_t> values;
  };
  std::vector<Inc> incs;                                       // every applied INC, in order
  std::set<std::tuple<uint32_t, uint32_t, uint32_t>> applied;  // (rank, clock, row)
  std::map<uint32_t, dataplane::BarrierParams> params_of_epoch;
  uint32_t installs = 0;                        // successful SetPolicy calls
  std::map<uint32_t, uint32_t> epoch_of_clock;  // first new RELEASE of each clock
  std::vector<std::optional<std::pair<uint32_t, uint32_t>>> last_release;  // (clock, epoch)
};

class Oracle {
 public:
  // Slot s holds job kJobs[s] (pipeline_actions.h) whenever it exists.
  explicit Oracle(dataplane::Pipeline* pipeline);

  // Names the action being checked, for failure messages.
  void SetContext(size_t index, const char* what) {
    index_ = index;
    what_ = what;
  }

  Snapshot Take() const;
  const JobExpect& expect(size_t slot) const { return jobs_[slot]; }
  // The slot of an existing job with this id, or -1.
  int SlotOf(uint16_t job_id) const;

  // Bookkeeping of control operations that succeeded.
  void Created(size_t slot, const dataplane::JobConfig& config);
  void Deleted(size_t slot);
  void PolicyInstalled(size_t slot, uint32_t epoch, const dataplane::BarrierParams& params);
  // The change installed as `epoch` was withdrawn: a RELEASE with that epoch
  // is from then on an unknown epoch.
  void PolicyCancelled(size_t slot, uint32_t epoch);

  // After Process(datagram, src) returned `r` and wrote `out`.
  // `now` is the time Process was given (JOIN cookies depend on it).
  void AfterPacket(const Snapshot& before, const Snapshot& after, std::span<const uint8_t> datagram,
                   const proto::Endpoint& src, const proto::Endpoint& local,
                   dataplane::Timestamp now, const dataplane::ProcessResult& r,
                   const dataplane::Output& out);
  // After a control operation on `slot` (SetPolicy, Evict, EvictIfSilent,
  // Finish): no packet counted, only RELEASEs emitted.
  void AfterControl(size_t slot, const Snapshot& before, const Snapshot& after,
                    const dataplane::Output& out);
  // Invariants of the state, and of its change across the action.
  void CheckState(const Snapshot& before, const Snapshot& after);

  [[noreturn]] void Fail(const char* file, int line, const std::string& what) const;

  // Known findings (fuzz/regressions/README.md) are failures unless named in
  // SERENE_FUZZ_TOLERATE (comma-separated ids), so a long run can go past a
  // bug that is reported but not fixed yet.
  static bool Tolerated(const char* finding_id);

 private:
  struct Request {
    proto::Header h;
    proto::Endpoint src;
    proto::Endpoint local;
    dataplane::ProcessResult r;
    dataplane::Timestamp now = 0;
  };
  // The pipeline's JOIN cookie secret: the fuzzer's pipeline takes the default.
  static constexpr dataplane::CookieSecret kCookieSecret{};
  std::vector<Emitted> DecodeAll(const dataplane::Output& out) const;
  void CheckAuthenticated(size_t slot, const Snapshot& before, const Snapshot& after,
                          const proto::PacketView& pkt, const Request& req,
                          const std::vector<Emitted>& emitted);
  void CheckEmitted(size_t slot, const Snapshot& after, const std::vector<Emitted>& emitted,
                    const Request* req);
  void CheckRelease(size_t slot, const Snapshot& after, const Emitted& e, const Request* req);
  void CheckReadReply(size_t slot, const Emitted& e);
  void CheckNack(size_t slot, const Snapshot& after, const Emitted& e);
  void CheckJobState(size_t slot, const JobSnapshot* before, const JobSnapshot& after);

  dataplane::Pipeline* pipeline_;
  std::array<JobExpect, 2> jobs_;
  size_t index_ = 0;
  const char* what_ = "";
};

// Why a rank that completed `clock` may not start the next one under `p`
// in the state `t` (docs/protocol.md, "The barrier"); empty if it may.
std::string Ineligible(const dataplane::JobTelemetry& t, const dataplane::BarrierParams& p,
                       uint32_t clock);

// Everything a packet can change, as bytes; with_counters = false leaves out
// the counters and last_seen (which an authenticated packet updates even
// when it is refused: it proves the rank is alive).
std::string Digest(const JobSnapshot& j, bool with_counters);

}  // namespace serene::fuzz

#define ORACLE_CHECK(oracle, cond, msg)                                                \
  do {                                                                                 \
    if (!(cond)) (oracle).Fail(__FILE__, __LINE__, std::string(#cond) + ": " + (msg)); \
  } while (0)
