// The policy subcommands: policy get, policy set, policy cancel.
#include <fmt/format.h>

#include "ctl/commands.h"
#include "ctl/format.h"
#include "ctl/policy_source.h"

namespace serene::ctl {

int GetPolicy(RuntimeClient& client, const JobOptions& options, Io io) {
  auto p = client.GetPolicy(options.job);
  if (!p.ok()) return Failed(p.status(), io);
  if (options.json) {
    io.out << ToJson(*p) << '\n';
    return kExitOk;
  }
  io.out << fmt::format("job {}\n", p->job());
  io.out << fmt::format("  active        {} (epoch {})\n", RuleText(p->active()),
                        p->active_epoch());
  if (p->swap_pending()) {
    io.out << fmt::format("  pending       {} from clock {} (epoch {})\n", RuleText(p->next()),
                          p->swap_clock(), p->next_epoch());
  } else {
    io.out << "  pending       -\n";
  }
  io.out << fmt::format("  max released  {}\n", FormatClock(p->max_released()));
  return kExitOk;
}

int SetPolicy(RuntimeClient& client, const PolicySetOptions& options, Io io) {
  auto policy = ResolveStaticPolicy(options.policy, options.params);
  if (!policy.ok()) return UsageError(policy.status().message(), io);
  for (const std::string& line : policy->log) io.err << "policy log: " << line << '\n';
  const std::optional<uint32_t> at = options.at ? options.at : policy->effective_clock;

  auto r = client.SetPolicy(options.job, policy->rule, at);
  if (!r.ok()) return Failed(r.status(), io);
  if (options.json) {
    io.out << ToJson(*r) << '\n';
    return kExitOk;
  }
  const std::string rule = RuleText(policy->rule);
  io.out << fmt::format(
      "job {}: policy {}{}: epoch {}, effective from clock {}, {} rank(s) "
      "released at once\n",
      options.job, rule, policy->source == rule ? "" : " (" + policy->source + ")", r->epoch(),
      r->effective_clock(), r->released());
  return kExitOk;
}

int CancelPolicy(RuntimeClient& client, const PolicyCancelOptions& options, Io io) {
  auto r = client.CancelPolicyChange(options.job, options.epoch);
  if (!r.ok()) return Failed(r.status(), io);
  if (options.json) {
    io.out << ToJson(*r) << '\n';
    return kExitOk;
  }
  io.out << fmt::format("job {}: cancelled {} from clock {} (epoch {}); the rule in force stays\n",
                        options.job, r->has_rule() ? RuleText(r->rule()) : "the change",
                        r->effective_clock(), r->epoch());
  return kExitOk;
}

}  // namespace serene::ctl
