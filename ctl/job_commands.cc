// The job subcommands: jobs, job create, job delete, evict, finish.
#include <fmt/format.h>

#include <set>

#include "common/duration.h"
#include "control/telemetry_convert.h"
#include "ctl/commands.h"
#include "ctl/format.h"
#include "dataplane/barrier_params.h"
#include "dataplane/job_config.h"

namespace serene::ctl {
namespace {

constexpr uint32_t kMaxJobId = 65535;

// The lowest job id not in use.
Result<uint32_t> LowestFreeId(RuntimeClient& client) {
  auto jobs = client.ListJobs();
  if (!jobs.ok()) return jobs.status();
  std::set<uint32_t> used;
  for (const v1::JobSummary& s : *jobs) used.insert(s.job().id());
  for (uint32_t id = 1; id <= kMaxJobId; ++id) {
    if (!used.contains(id)) return id;
  }
  return Status::ResourceExhausted("every job id 1.." + std::to_string(kMaxJobId) +
                                   " is in use; delete a job first");
}

std::string EvictAfterText(const v1::Job& job) {
  if (!job.has_evict_after_ms()) return "default";
  if (job.evict_after_ms() == 0) return "never";
  return FormatDuration(uint64_t{job.evict_after_ms()} * 1'000'000);
}

}  // namespace

int ListJobs(RuntimeClient& client, const JobsOptions& options, Io io) {
  auto jobs = client.ListJobs();
  if (!jobs.ok()) return Failed(jobs.status(), io);
  if (options.json) {
    v1::ListJobsResponse response;
    for (const v1::JobSummary& s : *jobs) *response.add_jobs() = s;
    io.out << ToJson(response) << '\n';
    return kExitOk;
  }
  if (jobs->empty()) {
    io.out << "no jobs on " << client.address() << '\n';
    return kExitOk;
  }
  Table table({{"JOB", true},
               {"WORKERS", true},
               {"LIVE", true},
               {"ELEMENTS", true},
               {"ROW", true},
               {"LOW", true},
               {"HIGH", true},
               {"POLICY"},
               {"EPOCH", true},
               {"SWAP PENDING"},
               {"FINISHED"},
               {"SATURATED"}});
  for (const v1::JobSummary& s : *jobs) {
    const v1::Job& j = s.job();
    table.AddRow({std::to_string(j.id()), std::to_string(j.workers()),
                  std::to_string(s.live_workers()), std::to_string(j.elements()),
                  std::to_string(j.row_width()), FormatClock(s.low()), FormatClock(s.high()),
                  RuleText(j.policy()), std::to_string(s.epoch()), YesNo(s.swap_pending()),
                  YesNo(s.finished()), YesNo(s.saturated())});
  }
  io.out << table.Render();
  return kExitOk;
}

int CreateJob(RuntimeClient& client, const JobCreateOptions& options, Io io) {
  v1::Job job;
  job.set_workers(options.workers);
  job.set_elements(options.elements);
  job.set_row_width(options.row);
  job.set_scale_log2(options.scale_log2);
  if (!options.policy.empty()) {
    auto rule = dataplane::BarrierParams::Parse(options.policy);
    if (!rule.ok()) return UsageError("--policy: " + rule.status().message(), io);
    *job.mutable_policy() = control::RuleToProto(*rule);
  }
  if (options.evict_after_ms) job.set_evict_after_ms(*options.evict_after_ms);
  if (!options.group.empty()) {
    auto group = dataplane::ParseGroup(options.group);
    if (!group.ok()) return UsageError("--group: " + group.status().message(), io);
    job.set_group(options.group);
  }
  if (options.id) {
    job.set_id(*options.id);
  } else {
    auto id = LowestFreeId(client);
    if (!id.ok()) return Failed(id.status(), io);
    job.set_id(*id);
  }

  auto created = client.CreateJob(job);
  if (!created.ok()) return Failed(created.status(), io);
  if (options.json) {
    io.out << ToJson(*created) << '\n';
    return kExitOk;
  }
  const v1::Job& c = *created;
  io.out << fmt::format(
      "created job {}: workers={} elements={} row={} scale=2^{} policy={} evict_after={}\n", c.id(),
      c.workers(), c.elements(), c.row_width(), c.scale_log2(), RuleText(c.policy()),
      EvictAfterText(c));
  io.out << "key=" << HexKey(c.key()) << '\n';
  // The key goes to the workers in a private file or their environment,
  // never on their command lines (docs/security.md, "Secrets").
  io.out << "workers join with:\n";
  io.out << fmt::format("  SERENE_JOB={} SERENE_KEY={}\n", c.id(), HexKey(c.key()));
  io.out << fmt::format("  --job {} --key-file FILE   (FILE: mode 0600, holding {})\n", c.id(),
                        HexKey(c.key()));
  return kExitOk;
}

int DeleteJob(RuntimeClient& client, const JobOptions& options, Io io) {
  Status s = client.DeleteJob(options.job);
  if (!s.ok()) return Failed(s, io);
  if (options.json) {
    io.out << ToJson(v1::DeleteJobResponse()) << '\n';
  } else {
    io.out << "deleted job " << options.job << '\n';
  }
  return kExitOk;
}

int FinishJob(RuntimeClient& client, const JobOptions& options, Io io) {
  auto r = client.Finish(options.job);
  if (!r.ok()) return Failed(r.status(), io);
  if (options.json) {
    io.out << ToJson(*r) << '\n';
  } else {
    io.out << fmt::format("finished job {}: {} waiting rank(s) released\n", options.job,
                          r->released());
  }
  return kExitOk;
}

int EvictRank(RuntimeClient& client, const EvictOptions& options, Io io) {
  auto r = client.Evict(options.job, options.rank);
  if (!r.ok()) return Failed(r.status(), io);
  if (options.json) {
    io.out << ToJson(*r) << '\n';
  } else if (r->was_live()) {
    io.out << fmt::format("job {}: evicted rank {}; {} rank(s) released\n", options.job,
                          options.rank, r->released());
  } else {
    io.out << fmt::format("job {}: rank {} was not in the barrier (evicted or not joined)\n",
                          options.job, options.rank);
  }
  return kExitOk;
}

}  // namespace serene::ctl
