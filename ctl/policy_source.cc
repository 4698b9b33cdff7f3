#include "ctl/policy_source.h"

#include "control/telemetry_convert.h"
#include "dataplane/barrier_params.h"

namespace serene::ctl {

bool IsScriptPath(std::string_view spec_or_file) { return spec_or_file.ends_with(".lua"); }

Result<control::PolicyScript::Params> ParseParams(const std::vector<std::string>& pairs) {
  control::PolicyScript::Params params;
  for (const std::string& pair : pairs) {
    const size_t eq = pair.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument("--param '" + pair +
                                     "': expected KEY=VALUE, e.g. --param w=4");
    }
    const std::string key = pair.substr(0, eq);
    if (!params.emplace(key, pair.substr(eq + 1)).second) {
      return Status::InvalidArgument("--param '" + pair + "': " + key + " is given twice");
    }
  }
  return params;
}

Result<std::unique_ptr<control::PolicyScript>> LoadScript(const std::string& path,
                                                          const std::vector<std::string>& params) {
  auto parsed = ParseParams(params);
  if (!parsed.ok()) return parsed.status();
  auto script = control::PolicyScript::LoadFile(path, *parsed);
  if (!script.ok()) return Status::InvalidArgument(script.status().message());
  return std::move(*script);
}

Result<StaticPolicy> ResolveStaticPolicy(const std::string& spec_or_file,
                                         const std::vector<std::string>& params) {
  StaticPolicy policy;
  if (!IsScriptPath(spec_or_file)) {
    if (!params.empty()) {
      return Status::InvalidArgument(
          "--param is for a policy script (FILE.lua), not for the "
          "spec '" +
          spec_or_file + "'");
    }
    auto rule = dataplane::BarrierParams::Parse(spec_or_file);
    if (!rule.ok()) return Status::InvalidArgument(rule.status().message());
    policy.rule = control::RuleToProto(*rule);
    policy.source = policy.rule.text();
    return policy;
  }
  auto script = LoadScript(spec_or_file, params);
  if (!script.ok()) return script.status();
  if ((*script)->adaptive()) {
    return Status::InvalidArgument(
        spec_or_file +
        " defines on_telemetry: it is an adaptive policy, which needs a "
        "controller watching the job; run it with `serene-ctl control JOB " +
        spec_or_file + "`");
  }
  // A script that is not adaptive returned a rule (LoadFile refuses others).
  const control::PolicyDecision& decision = *(*script)->initial();
  policy.rule = control::RuleToProto(decision.rule);
  policy.effective_clock = decision.effective_clock;
  policy.source = decision.text + " from " + (*script)->name();
  policy.log = (*script)->TakeLog();
  return policy;
}

}  // namespace serene::ctl
