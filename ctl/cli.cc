#include "ctl/cli.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <memory>

#include "common/check.h"
#include "common/duration.h"
#include "common/secret_file.h"
#include "ctl/commands.h"
#include "dataplane/consts.h"
#include "dataplane/job_config.h"

namespace serene::ctl {
namespace {

using control::RuntimeClient;
using std::chrono::milliseconds;

constexpr uint64_t kMs = 1'000'000;  // ns

// A duration flag in whole milliseconds within [min_ms, max_ms].
CLI::Validator DurationCheck(uint64_t min_ms, uint64_t max_ms) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        uint64_t ns = 0;
        if (!ParseDuration(text, &ns) || ns % kMs != 0) {
          return "expected a duration in whole milliseconds like 500ms or 1.5s, got '" + text + "'";
        }
        if (ns < min_ms * kMs || ns > max_ms * kMs) {
          return "'" + text + "' out of range " + FormatDuration(min_ms * kMs) + ".." +
                 FormatDuration(max_ms * kMs);
        }
        return "";
      },
      "");
}

milliseconds ToMillis(const std::string& text) {
  uint64_t ns = 0;
  ParseDuration(text, &ns);  // checked by DurationCheck
  return milliseconds(ns / kMs);
}

CLI::Validator ScaleCheck() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        uint32_t log2 = 0;
        return dataplane::ParseScale(text, &log2)
                   ? ""
                   : "expected a power of two 2^1..2^30, written 2^24 or 16777216; got '" + text +
                         "'";
      },
      "");
}

CLI::Validator ParamCheck() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const size_t eq = text.find('=');
        return eq == std::string::npos || eq == 0
                   ? "expected KEY=VALUE, e.g. --param w=4; got '" + text + "'"
                   : "";
      },
      "");
}

// The JOB positional of most subcommands.
void AddJob(CLI::App* sub, uint32_t* job) {
  sub->add_option("JOB", *job, "Job id")->required()->check(CLI::Range(1, 65535));
}

void AddJson(CLI::App* sub, bool* json) {
  sub->add_flag("--json", *json, "Print the result as one JSON document (runtime.proto names)");
}

void AddParams(CLI::App* sub, std::vector<std::string>* params) {
  sub->add_option("--param", *params, "KEY=VALUE for the script's `params` table (repeatable)")
      ->allow_extra_args(false)
      ->type_name("KEY=VALUE")
      ->check(ParamCheck());
}

}  // namespace

CommandLine::CommandLine(CLI::App* app) {
  app->add_option("--control", control_address_, "The switch's runtime API")
      ->type_name("HOST:PORT")
      ->envname("SERENE_CONTROL")
      ->default_val("127.0.0.1:7001");
  app->add_option("--token-file", token_file_, "File holding the switch's token, if it has one")
      ->type_name("FILE")
      ->envname("SERENE_TOKEN_FILE");
  app->add_option("--timeout", timeout_, "Deadline of each call")
      ->type_name("DURATION")
      ->capture_default_str()
      ->check(DurationCheck(1, 3'600'000));
  app->require_subcommand(1);
  app->fallthrough();  // the global flags may follow the subcommand too
  app->footer(
      "Exit codes: 0 ok, 1 the switch refused the call or could not be reached, 2 bad "
      "command line.\nSee docs/serene-ctl.md.");
  AddJobCommands(app);
  AddPolicyCommands(app);
  AddTelemetryCommands(app);
  AddControlCommand(app);
}

void CommandLine::Add(CLI::App* app, bool interruptible,
                      std::function<int(RuntimeClient&, Io, Interrupt*, bool)> run) {
  commands_.push_back({app, interruptible, std::move(run)});
}

void CommandLine::AddJobCommands(CLI::App* app) {
  auto jobs = std::make_shared<JobsOptions>();
  CLI::App* list = app->add_subcommand("jobs", "List the switch's jobs");
  AddJson(list, &jobs->json);
  Add(list, false,
      [jobs](RuntimeClient& c, Io io, Interrupt*, bool) { return ListJobs(c, *jobs, io); });

  CLI::App* job = app->add_subcommand("job", "Create or delete a job");
  job->require_subcommand(1);

  auto create = std::make_shared<JobCreateOptions>();
  CLI::App* c = job->add_subcommand("create", "Create a job; prints its fresh key");
  c->add_option("--workers", create->workers, "Ranks")
      ->required()
      ->check(CLI::Range(uint32_t{1}, static_cast<uint32_t>(dataplane::kMaxWorkers)));
  c->add_option("--elements", create->elements, "Model size in int32 values")
      ->required()
      ->check(CLI::Range(uint64_t{1}, dataplane::kMaxElements));
  c->add_option_function<uint32_t>(
       "--id", [create](const uint32_t& id) { create->id = id; },
       "Job id (default: the lowest id not in use)")
      ->check(CLI::Range(1, 65535));
  c->add_option("--row", create->row, "Values per row (datagram); default 256")
      ->check(CLI::Range(uint32_t{1}, dataplane::kMaxRowWidth));
  c->add_option_function<std::string>(
       "--scale", [create](const std::string& s) { dataplane::ParseScale(s, &create->scale_log2); },
       "Fixed-point scale, 2^B; default 2^24")
      ->type_name("2^B")
      ->check(ScaleCheck());
  c->add_option("--policy", create->policy,
                "Initial policy: sync, ssp:W, async, quorum:K:L or window=W,quorum=K,lag=L; "
                "default sync")
      ->type_name("SPEC");
  c->add_option_function<std::string>(
       "--evict-after",
       [create](const std::string& s) {
         create->evict_after_ms = static_cast<uint32_t>(ToMillis(s).count());
       },
       "Evict ranks silent this long; 0 = never; default 10s")
      ->type_name("DURATION")
      ->check(DurationCheck(0, dataplane::kMaxEvictAfterMs));
  c->add_option("--group", create->group,
                "Reply group, an IPv4 multicast address and port: exact rows a subscribed "
                "rank READs reach every subscribed rank in one send; default none")
      ->type_name("ADDR:PORT");
  AddJson(c, &create->json);
  Add(c, false, [create](RuntimeClient& client, Io io, Interrupt*, bool) {
    return CreateJob(client, *create, io);
  });

  auto del = std::make_shared<JobOptions>();
  CLI::App* d = job->add_subcommand("delete", "Delete a job and its state");
  AddJob(d, &del->job);
  AddJson(d, &del->json);
  Add(d, false, [del](RuntimeClient& client, Io io, Interrupt*, bool) {
    return DeleteJob(client, *del, io);
  });

  auto evict = std::make_shared<EvictOptions>();
  CLI::App* e = app->add_subcommand("evict", "Take a rank out of the barrier");
  AddJob(e, &evict->job);
  e->add_option("RANK", evict->rank, "Rank")
      ->required()
      ->check(CLI::Range(uint32_t{0}, static_cast<uint32_t>(dataplane::kMaxWorkers - 1)));
  AddJson(e, &evict->json);
  Add(e, false, [evict](RuntimeClient& client, Io io, Interrupt*, bool) {
    return EvictRank(client, *evict, io);
  });

  auto finish = std::make_shared<JobOptions>();
  CLI::App* f = app->add_subcommand("finish", "End a job: waiting ranks are released, FINISHED");
  AddJob(f, &finish->job);
  AddJson(f, &finish->json);
  Add(f, false, [finish](RuntimeClient& client, Io io, Interrupt*, bool) {
    return FinishJob(client, *finish, io);
  });
}

void CommandLine::AddPolicyCommands(CLI::App* app) {
  CLI::App* policy = app->add_subcommand("policy", "Show or change a job's policy");
  policy->require_subcommand(1);

  auto get = std::make_shared<JobOptions>();
  CLI::App* g = policy->add_subcommand("get", "The rule in force and any pending change");
  AddJob(g, &get->job);
  AddJson(g, &get->json);
  Add(g, false, [get](RuntimeClient& client, Io io, Interrupt*, bool) {
    return GetPolicy(client, *get, io);
  });

  auto set = std::make_shared<PolicySetOptions>();
  CLI::App* s = policy->add_subcommand(
      "set", "Install a rule (hot swap): a SPEC, or a static policy script FILE.lua");
  AddJob(s, &set->job);
  s->add_option("POLICY", set->policy,
                "sync, ssp:W, async, quorum:K:L, window=W,quorum=K,lag=L, or FILE.lua")
      ->type_name("SPEC|FILE.lua")
      ->required();
  AddParams(s, &set->params);
  s->add_option_function<uint32_t>(
      "--at", [set](const uint32_t& clock) { set->at = clock; },
      "First clock the rule judges (default: as soon as possible, or the script's rule:at)");
  AddJson(s, &set->json);
  Add(s, false, [set](RuntimeClient& client, Io io, Interrupt*, bool) {
    return SetPolicy(client, *set, io);
  });

  auto cancel = std::make_shared<PolicyCancelOptions>();
  CLI::App* c = policy->add_subcommand(
      "cancel", "Withdraw the pending change, while no rank has reached its effective clock");
  AddJob(c, &cancel->job);
  c->add_option_function<uint32_t>(
      "--epoch", [cancel](const uint32_t& epoch) { cancel->epoch = epoch; },
      "Cancel only this pending epoch (as policy get shows it)");
  AddJson(c, &cancel->json);
  Add(c, false, [cancel](RuntimeClient& client, Io io, Interrupt*, bool) {
    return CancelPolicy(client, *cancel, io);
  });
}

void CommandLine::AddTelemetryCommands(CLI::App* app) {
  auto telemetry = std::make_shared<JobOptions>();
  CLI::App* t = app->add_subcommand("telemetry", "One telemetry snapshot of a job");
  AddJob(t, &telemetry->job);
  AddJson(t, &telemetry->json);
  Add(t, false, [telemetry](RuntimeClient& client, Io io, Interrupt*, bool) {
    return Telemetry(client, *telemetry, io);
  });

  auto top = std::make_shared<TopOptions>();
  CLI::App* p = app->add_subcommand("top", "A live view of a job's ranks (Ctrl-C quits)");
  p->add_option_function<uint32_t>(
       "JOB", [top](const uint32_t& job) { top->job = job; },
       "Job id (default: the only job, else the first)")
      ->check(CLI::Range(1, 65535));
  p->add_option_function<std::string>(
       "--period", [top](const std::string& s) { top->period = ToMillis(s); },
       "Refresh period; default 1s")
      ->type_name("DURATION")
      ->check(DurationCheck(10, 60'000));
  p->add_option_function<uint64_t>(
       "--iterations", [top](const uint64_t& n) { top->iterations = n; },
       "Stop after N refreshes (default: until Ctrl-C)")
      ->check(CLI::PositiveNumber);
  Add(p, true, [top](RuntimeClient& client, Io io, Interrupt* interrupt, bool ansi) {
    TopOptions options = *top;
    options.interrupt = interrupt;
    options.ansi = ansi;
    winsize size{};
    if (ansi && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0) options.screen_rows = size.ws_row;
    return Top(client, options, io);
  });
}

void CommandLine::AddControlCommand(CLI::App* app) {
  auto control = std::make_shared<ControlOptions>();
  CLI::App* c = app->add_subcommand(
      "control", "Run a policy script against a job until it ends (Ctrl-C stops)");
  AddJob(c, &control->job);
  c->add_option("SCRIPT", control->script, "Policy script")->type_name("FILE.lua")->required();
  AddParams(c, &control->params);
  c->add_option_function<std::string>(
       "--period", [control](const std::string& s) { control->period = ToMillis(s); },
       "Telemetry period (on_telemetry calls); default 1s")
      ->type_name("DURATION")
      ->check(DurationCheck(10, 60'000));
  c->add_flag("--json", control->json, "Print each event as a line of JSON");
  Add(c, true, [control](RuntimeClient& client, Io io, Interrupt* interrupt, bool) {
    ControlOptions options = *control;
    options.interrupt = interrupt;
    return Control(client, options, io);
  });
}

const CommandLine::Command* CommandLine::Chosen() const {
  for (const Command& c : commands_) {
    if (c.app->parsed()) return &c;
  }
  return nullptr;
}

bool CommandLine::Interruptible() const {
  const Command* c = Chosen();
  return c != nullptr && c->interruptible;
}

int CommandLine::Run(Io io, Interrupt* interrupt, bool ansi) {
  const Command* command = Chosen();
  SERENE_CHECK(command != nullptr, "CLI11 parsed no command");
  std::string token;
  if (!token_file_.empty()) {
    auto t = serene::ReadTokenFile(token_file_);
    if (!t.ok()) return UsageError("--token-file: " + t.status().message(), io);
    token = std::move(*t);
  }
  auto client = RuntimeClient::Create(control_address_, std::move(token), ToMillis(timeout_));
  if (!client.ok()) return UsageError("--control: " + client.status().message(), io);
  return command->run(**client, io, interrupt, ansi);
}

}  // namespace serene::ctl
