// serene-ctl's subcommands (docs/serene-ctl.md), one function each: it takes
// the runtime API client and the parsed options, writes what it prints to
// `io` (tables for people, or JSON with `json`) and returns the exit code
// (ctl/exit_code.h). The command line itself is in ctl/cli.h.
//
// Each function is a sequence of blocking calls on `client`; top and control
// run until the job ends, their iterations are done, or `interrupt` fires.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "control/runtime_client.h"
#include "ctl/exit_code.h"
#include "ctl/interrupt.h"

namespace serene::ctl {

using control::RuntimeClient;

// ------------------------------------------------------------------ jobs

struct JobsOptions {
  bool json = false;
};
// `jobs`: a table of every job (or ListJobsResponse as JSON).
int ListJobs(RuntimeClient& client, const JobsOptions& options, Io io);

struct JobCreateOptions {
  std::optional<uint32_t> id;  // nullopt: the lowest id not in use
  uint32_t workers = 0;
  uint64_t elements = 0;
  uint32_t row = 0;                        // values per row; 0 = the switch's default (256)
  uint32_t scale_log2 = 0;                 // 0 = the switch's default (24)
  std::string policy;                      // a SPEC; "" = the switch's default (sync)
  std::optional<uint32_t> evict_after_ms;  // nullopt = the switch's default (10 s)
  std::string group;                       // reply group "A.B.C.D:PORT"; empty = none
  bool json = false;
};
// `job create`: the job as created, its key, and what its workers need.
int CreateJob(RuntimeClient& client, const JobCreateOptions& options, Io io);

struct JobOptions {
  uint32_t job = 0;
  bool json = false;
};
// `job delete JOB`.
int DeleteJob(RuntimeClient& client, const JobOptions& options, Io io);
// `finish JOB`: releases every waiting rank with FINISHED.
int FinishJob(RuntimeClient& client, const JobOptions& options, Io io);

struct EvictOptions {
  uint32_t job = 0;
  uint32_t rank = 0;
  bool json = false;
};
// `evict JOB RANK`.
int EvictRank(RuntimeClient& client, const EvictOptions& options, Io io);

// ------------------------------------------------------------------ policy

// `policy get JOB`: the rule in force, a pending change, the last released clock.
int GetPolicy(RuntimeClient& client, const JobOptions& options, Io io);

struct PolicySetOptions {
  uint32_t job = 0;
  std::string policy;               // SPEC or FILE.lua (static)
  std::vector<std::string> params;  // --param k=v, for a script
  std::optional<uint32_t> at;       // --at: overrides the script's rule:at
  bool json = false;
};
// `policy set JOB SPEC|FILE.lua`: the new epoch and its effective clock.
int SetPolicy(RuntimeClient& client, const PolicySetOptions& options, Io io);

struct PolicyCancelOptions {
  uint32_t job = 0;
  std::optional<uint32_t> epoch;  // --epoch: only this pending change
  bool json = false;
};
// `policy cancel JOB`: withdraws the pending change, if no rank reached it.
int CancelPolicy(RuntimeClient& client, const PolicyCancelOptions& options, Io io);

// ------------------------------------------------------------------ telemetry

// `telemetry JOB`: job summary lines and a table per rank (or JobTelemetry as JSON).
int Telemetry(RuntimeClient& client, const JobOptions& options, Io io);

struct TopOptions {
  std::optional<uint32_t> job;  // nullopt: the only job, else the first
  std::chrono::milliseconds period{1000};
  std::optional<uint64_t> iterations;  // stop after this many frames
  bool ansi = true;                // redraw in place (a terminal); else frames one after another
  uint32_t screen_rows = 0;        // the terminal's height (0 = unknown): a frame fits it
  Interrupt* interrupt = nullptr;  // stops it cleanly (exit 0); may be null
};
// `top`: a live view from StreamTelemetry.
int Top(RuntimeClient& client, const TopOptions& options, Io io);

// ------------------------------------------------------------------ control

struct ControlOptions {
  uint32_t job = 0;
  std::string script;               // FILE.lua
  std::vector<std::string> params;  // --param k=v
  std::chrono::milliseconds period{1000};
  bool json = false;               // events as JSON lines
  Interrupt* interrupt = nullptr;  // stops it cleanly (exit 0); may be null
};
// `control JOB FILE.lua`: runs a Controller until the job ends, one line per event.
int Control(RuntimeClient& client, const ControlOptions& options, Io io);

}  // namespace serene::ctl
